#!/usr/bin/env bash
# On the GPU machine, last in a call: the device tool brings back at most 8
# files from $OUT, so pack everything there (but earlier archives) into one
# archive, $OUT/NAME.tgz (default out.tgz), and keep beside it only the files
# named in KEEP (a space-separated list of names under $OUT, e.g. a summary).
#   KEEP="gpu_done.txt" scripts/device_pack_out.sh call2
set -u
OUT=${OUT:-/tmp/out}
name=${1:-out}
[ -d "$OUT" ] || exit 0
tmp=$(mktemp /tmp/pack.XXXXXX.tgz)
tar czf "$tmp" -C "$OUT" --exclude='*.tgz' . || { echo "pack: tar failed"; rm -f "$tmp"; exit 1; }
keep=" ${KEEP:-} "
( cd "$OUT" && find . -mindepth 1 -maxdepth 1 ! -name '*.tgz' | while read -r f; do
    case "$keep" in *" ${f#./} "*) ;; *) rm -rf "$f";; esac
  done )
mv "$tmp" "$OUT/$name.tgz"
echo "pack: $OUT/$name.tgz ($(du -h "$OUT/$name.tgz" | cut -f1))"
