"""Where a node stands in the mount's namespace: held, parked, created here, stale.

Owns :class:`Placement`, the namespace state of one node, as
:class:`memfs.fuse.content.WorkingCopy` is its content state: one object whose named
transitions are its only writers. It is pure state: no store call, no kernel call, no
tree walk; the layers above decide *when* a transition happens
(:mod:`memfs.fuse.inodes` as entries are placed and removed, :mod:`memfs.fuse.commits`
on a close, :mod:`memfs.fuse.renames` on rename(2), :mod:`memfs.fuse.feed` on a change
made elsewhere, :mod:`memfs.fuse.operations` as the kernel is handed entries).

Files (SPEC §4 mapping and atomic save)::

    local ──created──▶ stored, created here ──saved_over──▶ stored
      │                   │        ▲                            │
      │                   park     unpark (a real name, or      park
      │                   ▼        the memory is gone)          ▼
      └───────────────── parked ◀───────────────────────────── parked

* **local** (no memory): exists only in the mount until its first close.
* **stored**: shows its memory at its own path.
* **created here**: this mount created the memory (an ``O_EXCL`` claim or a new
  file's first commit). Renamed over another stored file of its store, it is the
  temporary file of an atomic save (any temporary name): the target keeps its id and
  metadata (:meth:`Placement.saved_over`).
* **parked**: renamed to a scratch name (:func:`memfs.core.rules.is_scratch_name`); its
  memory stays at its path until the name is reused, the scratch file is removed (a
  delete), or it is renamed back to a real name.

Directories (SPEC §4 mapping: a directory is a path prefix)::

    prefix ──hold (mkdir, emptied through the mount)──▶ held ──filled──▶ prefix

A *held* directory stays without any memory below it until a file is placed in it or
it is removed; a store root is neither (it is always there).

Every node, as the kernel knows it::

    fresh ──went_stale (deleted or moved elsewhere)──▶ stale ──handed_out──▶ fresh

A *stale* node may still be named by a dentry the kernel holds for a path it no longer
has: an open or a change by inode answers ``ESTALE`` (the kernel looks the path up
again) until a lookup or a listing hands the node out anew.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Placement"]


@dataclass(eq=False, slots=True)
class Placement:
    """The namespace state of one node (see the module docstring for the states).

    Attributes:
        store_root: the root of a store's paths (a store directory, or the flat root);
            fixed when the node is made.
        held: directories: kept without memories below them.
        parked: files: renamed to a scratch name; the memory stays at its path in the
            store until the name is reused, the scratch file is unlinked (the memory is
            deleted) or renamed back to a real name.
        created_here: files: this mount created the memory the file shows.
        linked_away: files: ``link(2)`` copied the content to another name; an
            ``unlink`` of a file created here then completes a no-clobber rename.
        stale_path: a change made elsewhere deleted or moved the node since the kernel
            was last handed it by name (lookup, readdir).
    """

    store_root: bool = False
    held: bool = False
    parked: bool = False
    created_here: bool = False
    linked_away: bool = False
    stale_path: bool = False

    # ------------------------------------------------------------- directories

    def hold(self) -> None:
        """prefix → held: made by ``mkdir``, or emptied through the mount (``rm -r``
        removes the files, then the directory). A store root is never held."""
        if not self.store_root:
            self.held = True

    def filled(self) -> None:
        """held → prefix: a file was placed below; the directory is a path prefix of a
        memory again."""
        self.held = False

    # ------------------------------------------------------------------- files

    def created(self) -> None:
        """This mount created the memory the file shows (an ``O_EXCL`` claim, a new
        file's first commit, an atomic save that created its target)."""
        self.created_here = True

    def linked(self) -> None:
        """``link(2)`` gave its content another name (SPEC §4): removing this name next
        is the second half of a no-clobber rename (``link`` then ``unlink``)."""
        self.linked_away = True

    def saved_over(self, *, target_created_here: bool) -> None:
        """The file was renamed over a target (an atomic save): from now on it shows
        the target's memory, created here when the target's was
        (``target_created_here``: ``cp f g; sed -i … g; mv g f`` — after the ``sed -i``,
        ``g`` is still the copy this mount made, so its rename over ``f`` is an atomic
        save of ``f`` too, not a replacement of it)."""
        self.created_here = target_created_here

    def park(self) -> None:
        """stored → parked: renamed to a scratch name; its memory stays at its path."""
        self.parked = True

    def unpark(self) -> None:
        """parked → stored or local: renamed to a real name, or the memory it kept was
        deleted, taken over, or left the tree."""
        self.parked = False

    # ------------------------------------------------------- the kernel's view

    def went_stale(self) -> None:
        """fresh → stale: a change made elsewhere deleted or moved the node (or it left
        with its last close); the kernel may still reach it by its old name."""
        self.stale_path = True

    def handed_out(self) -> None:
        """stale → fresh: a lookup or a listing gave the kernel this node by its name."""
        self.stale_path = False
