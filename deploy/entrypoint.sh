#!/bin/sh
# memfs-sandbox: the entrypoint of deploy/Dockerfile (README "Running in a sandbox or
# container"). As root, it mounts the stores at $MEMFS_MOUNT for the agent user only
# (--allow-other with the agent as owner, umask 077), runs the command as that user,
# and unmounts when the command ends or the container is stopped, so every write is
# committed before the container goes away.
#
#   MEMFS_MOUNT       the mount point (default /mnt/memory)
#   MEMFS_MOUNT_ARGS  the stores and options of `memfs mount` (word-split), e.g.
#                     "--store notes --store wiki:ro" or "--api https://memfs:8765"
#                     (the session token in $MEMFS_TOKEN)
#   MEMFS_AGENT_USER  the user the command runs as (default agent, uid 1000)
#   MEMFS             the memfs command (default memfs)
set -eu
mountpoint="${MEMFS_MOUNT:-/mnt/memory}"
agent="${MEMFS_AGENT_USER:-agent}"
memfs="${MEMFS:-memfs}"
[ "$(id -u)" -eq 0 ] || { echo "memfs-sandbox: run as root (it mounts, then drops to $agent)" >&2; exit 2; }
mkdir -p "$mountpoint"
# shellcheck disable=SC2086  # MEMFS_MOUNT_ARGS is a list of words on purpose
$memfs mount "$mountpoint" ${MEMFS_MOUNT_ARGS:-} --allow-other --uid "$agent" --gid "$(id -g "$agent")" --umask 077 >&2
unmount() { $memfs umount "$mountpoint" >&2 || true; }
trap 'unmount; exit 143' TERM
trap 'unmount; exit 130' INT
home="$(getent passwd "$agent" | cut -d: -f6)"
status=0
# The agent keeps the environment but not the session token (its mount holds it).
setpriv --reuid "$agent" --regid "$(id -g "$agent")" --init-groups -- \
  env -u MEMFS_TOKEN HOME="${home:-/}" USER="$agent" LOGNAME="$agent" "$@" || status=$?
unmount
exit "$status"
