#!/bin/sh
# Runs an MPI test program with coll_gpu_verbose=60 (the caller passes it)
# and checks that coll/gpu reported each expected route at least once, e.g.
#   route_said.sh ": allreduce: staged|: nonblocking bcast: staged" mpiexec -n 2 ... coll_check --quick
# The program's own checks must pass too. Exit 77 where it skipped (no GPU).
expect=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v "^coll:gpu: .*: \(nonblocking \)\?[a-z_]*: " | tail -5
if printf '%s\n' "$out" | grep -q "skipped"; then exit 77; fi
if [ $rc -ne 0 ]; then
    echo "FAIL: the program exited with $rc"
    exit 1
fi
missing=0
IFS='|'
for line in $expect; do
    if ! printf '%s\n' "$out" | grep -qF -- "$line"; then
        echo "FAIL: coll/gpu never said '$line'"
        missing=$((missing + 1))
    fi
done
[ $missing -eq 0 ] && echo "every expected route was taken"
exit $missing
