"""The FUSE layer: memory stores mounted as directories (SPEC §4). The only package that
imports pyfuse3.

==========================  ====================================================
module                      concern
==========================  ====================================================
``backend``                 the async interface to a store; the embedded engine
``inodes``                  the inode table: nodes, layouts, placement, lookup counts
``operations``              the pyfuse3 request handlers (SPEC §4 mapping table)
``errno_table``             exceptions → errno, one table (SPEC §4 errno table)
``errors``                  conditions only a mount has (EXDEV, ENOTEMPTY, …)
``cache``                   content cache keyed by blob key
``status``                  status file, rejected writes, conflict-copy names
``mounts``                  /proc mount table, fusermount3, daemon liveness
``daemon``                  the mount daemon's main and its named tasks
==========================  ====================================================
"""
