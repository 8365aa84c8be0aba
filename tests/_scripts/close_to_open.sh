#!/usr/bin/env bash
# The shell loops of tests/fuse/test_fuse_close_to_open.py: real tools (echo, cat, rm,
# mv, ls) acting through mount A and checking through mount B at once, ROUNDS times,
# with no sleep, so a race shows as a failed round. Prints one line per failed round
# (nothing when every round held).
#
# Usage: close_to_open.sh CASE A B ROUNDS
set -u
case_name=$1 a=$2 b=$3 rounds=$4

exclusive_create() {  # O_CREAT|O_EXCL of $1; fails if the name exists
  python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL))' "$1"
}

case $case_name in
delete)
  for i in $(seq "$rounds"); do
    echo "old$i" > "$a/d$i.md"; cat "$b/d$i.md" > /dev/null || echo "unseen $i"
    rm "$a/d$i.md"
    cat "$b/d$i.md" 2> /dev/null && echo "stale $i"
    echo "new$i" > "$b/d$i.md" || echo "refused $i"
  done
  ;;
move)
  for i in $(seq "$rounds"); do
    echo "m$i" > "$a/m$i.md"; cat "$b/m$i.md" > /dev/null || echo "unseen $i"
    mv "$a/m$i.md" "$a/n$i.md"
    cat "$b/m$i.md" 2> /dev/null && echo "stale $i"
    echo "again$i" >> "$b/m$i.md" || echo "refused $i"
    exclusive_create "$b/gone$i.md" 2> /dev/null || true
  done
  ;;
exclusive)
  for i in $(seq "$rounds"); do
    echo "e$i" > "$a/e$i.md"; cat "$b/e$i.md" > /dev/null || echo "unseen $i"
    rm "$a/e$i.md"
    exclusive_create "$b/e$i.md" || echo "EEXIST $i"
  done
  ;;
listing)
  ls "$b" > /dev/null
  for i in $(seq "$rounds"); do
    echo "f$i" > "$a/f$i.md"
    n=$(ls "$b" | wc -l); [ "$n" -eq $((i + 1)) ] || echo "after create $i: $n"
  done
  for i in $(seq "$rounds"); do
    rm "$a/f$i.md"
    n=$(ls "$b" | wc -l); [ "$n" -eq $((rounds - i + 1)) ] || echo "after rm $i: $n"
  done
  find "$b" -type f | wc -l
  ;;
directory_move)
  for i in $(seq "$rounds"); do
    mkdir -p "$a/dir$i"; echo x > "$a/dir$i/f.md"; ls "$b/dir$i" > /dev/null
    mv "$a/dir$i" "$a/moved$i"
    ls "$b/dir$i" > /dev/null 2>&1 && echo "listed $i"
    [ "$(ls "$b/moved$i")" = "f.md" ] || echo "moved $i missing"
  done
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac
