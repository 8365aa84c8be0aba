"""The FUSE layer: memory stores mounted as directories (SPEC §4). The only package that
imports pyfuse3. It talks to a store only through :class:`memfs.backend.Backend`.

==========================  ====================================================
module                      concern
==========================  ====================================================
``operations``              the pyfuse3 request handlers (SPEC §4 mapping table)
``content``                 a file's working copy and its named transitions
``namespace``               a node's placement (held, parked, created here, stale)
                            and its named transitions
``attributes``              what stat(2) and statfs(2) show; kernel cache timeouts
``commits``                 commit / keep-both / reject of a working copy
``renames``                 rename(2): parking, the atomic save, directories
``xattrs``                  ``user.meta.*`` and ``user.memfs.*`` attributes
``feed``                    the change-feed follower (changes made elsewhere)
``reading``                 content cache, read-ahead, purge marks
``inodes``                  the inode table: nodes, layouts, where memories are
                            placed, lookup counts
``errno_table``             exceptions → errno, one table (SPEC §4 errno table);
                            the handler decorator that applies it
``handles``                 open file and directory handles
``names``                   kernel names as text, store paths, scratch files
``notices``                 kernel cache invalidation (a task of its own)
``room``                    refusing a create in a full store (ENOSPC, early)
``errors``                  conditions only a mount has (EXDEV, ENOTEMPTY, …)
``cache``                   content cache keyed by blob key
``status``                  status file, rejected writes, conflict-copy names
``mounts``                  /proc mount table, fusermount3, daemon liveness
``daemon``                  the mount daemon's main and its named tasks
``sandbox``                 who may use a mount; why a mount would be refused;
                            the private-namespace watch (SPEC §4 Sandboxes)
``sdnotify``                systemd readiness (sd_notify over $NOTIFY_SOCKET)
==========================  ====================================================
"""
