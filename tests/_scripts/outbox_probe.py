"""Another process at an outbox (tests/remote/test_remote_outbox.py), doing ACTION:

- ``read_pending DIR``: prints each pending entry (seq, path, content) read without the
  lock.
- ``kill_9 DIR REJECTED STORE``: appends three creates, prints ``appended``, then kills
  itself with SIGKILL.
- ``lock DIR REJECTED``: prints ``locked`` when opening the outbox finds it locked.

Usage: outbox_probe ACTION DIR [REJECTED [STORE]]
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from memfs.remote.outbox import Outbox, OutboxLocked, PendingWrite, WriteOperation, read_pending


def main(action: str, directory: str, rejected: str = "", store: str = "") -> None:
    if action == "read_pending":
        for entry in read_pending(Path(directory)):
            print(entry.seq, entry.write.path, entry.write.content)
    elif action == "kill_9":
        outbox = Outbox(Path(directory), rejected_dir=Path(rejected))
        for n in range(3):
            outbox.append(PendingWrite(store, WriteOperation.CREATE, f"/f{n}.md",
                                       content=f"c{n}"))
        print("appended", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "lock":
        try:
            Outbox(Path(directory), rejected_dir=Path(rejected))
        except OutboxLocked:
            print("locked")
    else:
        raise SystemExit(f"unknown action {action!r}")


if __name__ == "__main__":
    main(*sys.argv[1:5])
