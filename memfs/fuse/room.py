"""Refusing a new file in a full store at ``create``, before any byte is accepted.

Owns :class:`RoomCheck` (SPEC §4 errno table: store full → ENOSPC, "fail early"): bash
ignores errors of close(2), so a refusal only at close would look like a save.
"""

from __future__ import annotations

import time

from memfs.backend import Backend
from memfs.core.errors import StoreFull
from memfs.core.rules import is_scratch_name
from memfs.fuse.inodes import Attachment, InodeTable

__all__ = ["ROOM_CACHE_S", "ROOM_MARGIN", "RoomCheck"]

# A store known to have more than ROOM_MARGIN free memories is not asked again at
# each create for ROOM_CACHE_S (one engine round trip fewer per new file: cp -r). The
# estimate goes down by one per create; near the limit every create asks. Another
# writer filling the store inside that window is still refused at close (ENOSPC).
ROOM_MARGIN = 64
ROOM_CACHE_S = 1.0


class RoomCheck:
    """How many more memories each attached store takes, asked at ``create``.

    Args:
        backend: the store.
        table: the inode table (a name a parked memory holds reuses that memory).
    """

    def __init__(self, backend: Backend, table: InodeTable) -> None:
        self._backend = backend
        self._table = table
        self._room: dict[str, tuple[float, int]] = {}  # store_id -> (monotonic s, room)

    async def check(self, attachment: Attachment, name: str, path: str) -> None:
        """Refuses a new file in a full store (see the module docstring). Scratch names
        never reach the store and stay allowed; a name a parked memory holds reuses that
        memory. A backend that can't tell (None) leaves the refusal to the commit. Far
        from the limit the room is remembered for :data:`ROOM_CACHE_S` (see
        :data:`ROOM_MARGIN`).

        Raises:
            StoreFull: the store holds as many live memories as it may.
        """
        if is_scratch_name(name) or self._table.parked_holder(attachment, path) is not None:
            return
        now = time.monotonic()
        known = self._room.get(attachment.store_id)
        if known is not None and now - known[0] < ROOM_CACHE_S and known[1] > ROOM_MARGIN:
            self._room[attachment.store_id] = (known[0], known[1] - 1)
            return
        room = await self._backend.memory_room(attachment.store_id)
        if room is not None:
            self._room[attachment.store_id] = (now, room - 1)
        if room is not None and room <= 0:
            raise StoreFull(f"memory store {attachment.name!r} is full: delete a memory first")
