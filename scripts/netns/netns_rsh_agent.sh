#!/usr/bin/env bash
# Stands in for ssh as Open MPI's launch agent (--mca plm_rsh_agent) inside
# two_host_mpirun.sh: "ssh HOST COMMAND..." becomes "run COMMAND in the
# network namespace that owns HOST, under that namespace's hostname".
#
# GCNETNS_MAP (set by two_host_mpirun.sh) maps addresses to namespaces:
#   "10.77.0.1=nsA:hostA 10.77.0.2=nsB:hostB"
set -u

# ssh-style options before the host are accepted and ignored.
while [[ $# -gt 0 && $1 == -* ]]; do shift; done
if [[ $# -lt 2 ]]; then
    echo "netns_rsh_agent: usage: $0 HOST COMMAND..." >&2
    exit 255
fi
host=$1
shift

target=""
for entry in ${GCNETNS_MAP:-}; do
    [[ ${entry%%=*} == "$host" ]] && target=${entry#*=}
done
if [[ -z $target ]]; then
    echo "netns_rsh_agent: no namespace for host '$host' (GCNETNS_MAP='${GCNETNS_MAP:-}')" >&2
    exit 255
fi
ns=${target%%:*}
name=${target#*:}

# Like sshd: the words form one command line for a shell on the "remote" side.
exec ip netns exec "$ns" unshare --uts /bin/sh -c 'hostname "$1" && exec /bin/sh -c "$2"' sh "$name" "$*"
