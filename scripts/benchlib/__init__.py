"""Modules of ``scripts/bench`` (issue 5): the side-by-side benchmark of memfs.

- :mod:`benchlib.trees`: the file trees the workloads use (generated markdown, a real
  corpus found on the machine).
- :mod:`benchlib.host`: facts about the machine and the kernel (mount table, page cache,
  daemon memory, versions).
- :mod:`benchlib.systems`: the filesystems under test, each able to mount, go cold and
  unmount: kernel tmpfs, ``rclone mount``, the pyfuse3 floor (``scripts/floorfs.py``)
  and memfs.
- :mod:`benchlib.workloads`: the timed workloads and their correctness checks.
- :mod:`benchlib.report`: the table, the targets and the JSON document.

``scripts/bench.py`` drives them; ``scripts/bench`` is the command to run.
"""
