#!/bin/sh
# sanitize.sh SANITIZER TOOL COMMAND...: COMMAND under compute-sanitizer's
# TOOL; fails on any error it reports, 77 (skipped) where there is no GPU.
san=$1
tool=$2
shift 2
nvidia-smi -L >/dev/null 2>&1 || { echo "no GPU: skipped"; exit 77; }
exec "$san" --tool "$tool" --error-exitcode 99 --print-limit 20 "$@"
