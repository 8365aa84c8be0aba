#!/bin/sh
# memfs-container: the entrypoint of the image the top-level Dockerfile builds (README
# "Containers", "Kubernetes").
#
#   serve [ARGS]   (the default) `memfs serve` on 0.0.0.0:$MEMFS_PORT with JSON logs,
#                  as whoever the container runs as (the image's user memfs, uid 10001).
#                  The database: $MEMFS_DATABASE (a postgresql:// URL from a Secret), else
#                  $MEMFS_HOME/memfs.db on the volume.
#   mount [ARGS]   the privileged sidecar: as root, `memfs mount --foreground` at
#                  $MEMFS_MOUNT (default /mnt/memory, an emptyDir shared with the agent
#                  container by mount propagation) for uid/gid $MEMFS_AGENT_UID/GID
#                  (default 1000) only (--allow-other --umask 077). ARGS are the stores
#                  and options of `memfs mount` ("--api URL" with the session token in
#                  $MEMFS_TOKEN, or "--store notes"). SIGTERM commits and unmounts; the
#                  pod's preStop runs `memfs umount` first so the agent sees it go.
#   anything else  run as given (`memfs store create notes`, `sh`).
set -eu
case "${1:-serve}" in
  serve)
    [ "$#" -eq 0 ] || shift
    exec memfs serve --host "${MEMFS_HOST:-0.0.0.0}" --port "${MEMFS_PORT:-8765}" \
      --log-format "${MEMFS_LOG_FORMAT:-json}" "$@"
    ;;
  mount)
    shift
    [ "$(id -u)" -eq 0 ] || {
      echo "memfs-container mount: run as root in a privileged container (uid $(id -u))" >&2
      exit 2
    }
    [ -c /dev/fuse ] || {
      echo "memfs-container mount: no /dev/fuse (privileged: true, or the device mounted in)" >&2
      exit 2
    }
    mountpoint="${MEMFS_MOUNT:-/mnt/memory}"
    mkdir -p "$mountpoint"
    # A mount left by a killed sidecar would make the mount point busy: lift it first.
    if mountpoint -q "$mountpoint"; then fusermount3 -u -z "$mountpoint" || true; fi
    exec memfs mount "$mountpoint" --foreground --allow-other \
      --uid "${MEMFS_AGENT_UID:-1000}" --gid "${MEMFS_AGENT_GID:-1000}" --umask 077 \
      --log-format "${MEMFS_LOG_FORMAT:-json}" "$@"
    ;;
  *)
    exec "$@"
    ;;
esac
