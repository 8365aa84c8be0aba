"""A caller bound to an engine: who writes (``actor``) and what it may see (``viewer``),
and one facade per aggregate acting for it.

:meth:`memfs.store.Engine.for_caller` returns one; the engine's own attributes of the
same names are the facades of the unrestricted caller without actor. The facades are
made on first use — their modules are imported then, so a command that uses one
aggregate loads only that one's (``memfs store list``: README "Performance") — and
share the caller's binding, so a front end binds once per
request (the API) or per mount (the embedded backend) and calls
``caller.memories.create(…)`` without threading ``actor=``/``viewer=`` through.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memfs.core.model import Actor
    from memfs.core.visibility import Viewer
    from memfs.store._facade import Parts
    from memfs.store.blobs import Blobs
    from memfs.store.credentials import ApiKeys, Sessions
    from memfs.store.dreams import Dreams
    from memfs.store.feed import Feed
    from memfs.store.folds import Folds
    from memfs.store.forks import ForkingHistory
    from memfs.store.identities import Identities
    from memfs.store.memories import Memories
    from memfs.store.records import Records
    from memfs.store.restores import Restores
    from memfs.store.retention import Retention
    from memfs.store.search import Search
    from memfs.store.sign_ins import ConsoleSignIns
    from memfs.store.snapshots import Snapshots
    from memfs.store.stores import Stores
    from memfs.store.transcripts import Transcripts
    from memfs.store.versions import Versions

__all__ = ["Caller"]


class Caller:
    """One caller's facades over an open engine.

    Attributes:
        actor: who writes: the versions, changes and audit entries of its writes name it
            (None: a local, unattributed caller).
        viewer: what it may see (SPEC §6 visibility); None is an unrestricted caller.
    """

    def __init__(self, parts: Parts, *, actor: Actor | None, viewer: Viewer | None) -> None:
        self._parts = parts
        self.actor = actor
        self.viewer = viewer

    @cached_property
    def stores(self) -> Stores:
        """Stores: create, find, patch, list, archive, delete (:mod:`memfs.store.stores`)."""
        from memfs.store.stores import Stores

        return Stores(self._parts, self.actor, self.viewer)

    @cached_property
    def memories(self) -> Memories:
        """Memories: write, read, delete, restore, rename, list (:mod:`memfs.store.memories`)."""
        from memfs.store.memories import Memories

        return Memories(self._parts, self.actor, self.viewer)

    @cached_property
    def folds(self) -> Folds:
        """Folding a mount's own intermediate writes into one save (:mod:`memfs.store.folds`)."""
        from memfs.store.folds import Folds

        return Folds(self._parts, self.actor, self.viewer)

    @cached_property
    def versions(self) -> Versions:
        """Versions and their redaction (:mod:`memfs.store.versions`)."""
        from memfs.store.versions import Versions

        return Versions(self._parts, self.actor, self.viewer)

    @cached_property
    def blobs(self) -> Blobs:
        """Content-addressed blobs (:mod:`memfs.store.blobs`)."""
        from memfs.store.blobs import Blobs

        return Blobs(self._parts, self.actor, self.viewer)

    @cached_property
    def feed(self) -> Feed:
        """The change feed and the audit log (:mod:`memfs.store.feed`)."""
        from memfs.store.feed import Feed

        return Feed(self._parts, self.actor, self.viewer)

    @cached_property
    def sessions(self) -> Sessions:
        """Sessions and their tokens (:mod:`memfs.store.credentials`)."""
        from memfs.store.credentials import Sessions

        return Sessions(self._parts, self.actor, self.viewer)

    @cached_property
    def api_keys(self) -> ApiKeys:
        """API keys and their secrets (:mod:`memfs.store.credentials`)."""
        from memfs.store.credentials import ApiKeys

        return ApiKeys(self._parts, self.actor, self.viewer)

    @cached_property
    def identities(self) -> Identities:
        """Mounts on (identity, template) pairs, default stores (:mod:`memfs.store.identities`)."""
        from memfs.store.identities import Identities

        return Identities(self._parts, self.actor, self.viewer)

    @cached_property
    def search(self) -> Search:
        """Ranked search and its index (:mod:`memfs.store.search`)."""
        from memfs.store.search import Search

        return Search(self._parts, self.actor, self.viewer)

    @cached_property
    def records(self) -> Records:
        """The record index (:mod:`memfs.store.records`)."""
        from memfs.store.records import Records

        return Records(self._parts, self.actor, self.viewer)

    @cached_property
    def retention(self) -> Retention:
        """Version retention and pruning (:mod:`memfs.store.retention`)."""
        from memfs.store.retention import Retention

        return Retention(self._parts, self.actor, self.viewer)

    @cached_property
    def console_sign_ins(self) -> ConsoleSignIns:
        """Console sign-ins (:mod:`memfs.store.sign_ins`, SPEC §12)."""
        from memfs.store.sign_ins import ConsoleSignIns

        return ConsoleSignIns(self._parts, self.actor, self.viewer)

    @cached_property
    def history(self) -> ForkingHistory:
        """A store as it was: points, as-of reads, diffs (:mod:`memfs.store.history`), and
        forks (:mod:`memfs.store.forks`)."""
        from memfs.store.forks import ForkingHistory

        return ForkingHistory(self._parts, self.actor, self.viewer)

    @cached_property
    def snapshots(self) -> Snapshots:
        """Named points of a store's history (:mod:`memfs.store.snapshots`)."""
        from memfs.store.snapshots import Snapshots

        return Snapshots(self._parts, self.actor, self.viewer)

    @cached_property
    def restores(self) -> Restores:
        """Restoring a whole store to a point (:mod:`memfs.store.restores`)."""
        from memfs.store.restores import Restores

        return Restores(self._parts, self.actor, self.viewer)

    @cached_property
    def transcripts(self) -> Transcripts:
        """Sessions' events (:mod:`memfs.store.transcripts`, SPEC §11)."""
        from memfs.store.transcripts import Transcripts

        return Transcripts(self._parts, self.actor, self.viewer)

    @cached_property
    def dreams(self) -> Dreams:
        """Dreams and their lifecycle (:mod:`memfs.store.dreams`, SPEC §11)."""
        from memfs.store.dreams import Dreams

        return Dreams(self._parts, self.actor, self.viewer)
