#!/usr/bin/env bash
# Runs an MPI program on two "hosts" made of network namespaces.
#
#   two_host_mpirun.sh [--min-veth-bytes N] NP PROGRAM [ARGS...]
#
# Creates namespaces A and B joined by a veth pair (10.77.0.1/24 in A,
# 10.77.0.2/24 in B; the veth end is called gcveth0 in both), each with its
# own hostname (a UTS namespace), so Open MPI sees two nodes: session
# directories and shared-memory segment names do not collide. mpirun runs in
# A; netns_rsh_agent.sh stands in for ssh and starts the orted for 10.77.0.2
# inside B. Ranks are mapped round-robin over the nodes, so every ring
# neighbour is on the other host. Open MPI's out-of-band channel and TCP BTL
# and UCX (UCX_TLS=tcp,self, UCX_NET_DEVICES=gcveth0) are all confined to the
# veth subnet; nothing leaves the two namespaces.
#
# Afterwards it prints the bytes that crossed the veth pair and, with
# --min-veth-bytes, fails if fewer did. Namespaces, the veth pair and any
# process left in them are removed on exit (trap).
#
# Exit status: the program's (through mpirun); 77 (skipped) when not root or
# when namespaces cannot be created here; 1 on a setup failure.
set -u

SKIP=77
ADDR_A=10.77.0.1
ADDR_B=10.77.0.2
SUBNET=10.77.0.0/24
IFNAME=gcveth0
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AGENT=$HERE/netns_rsh_agent.sh

min_veth_bytes=0
if [[ ${1:-} == --min-veth-bytes ]]; then
    min_veth_bytes=$2
    shift 2
fi
if [[ $# -lt 2 ]]; then
    echo "usage: $0 [--min-veth-bytes N] NP PROGRAM [ARGS...]" >&2
    exit 2
fi
np=$1
shift

skip() {
    echo "SKIP: $*"
    exit $SKIP
}
[[ $(id -u) -eq 0 ]] || skip "needs root to create network namespaces"
MPIRUN=${MPIRUN:-mpirun} # the tests set the mpirun of the Open MPI they were built against
for tool in ip unshare hostname "$MPIRUN"; do
    command -v $tool >/dev/null 2>&1 || skip "$tool not found"
done

# Unique per run, so concurrent runs do not meet (interface names <= 15 chars).
tag=$$
NS_A=gcnsA$tag
NS_B=gcnsB$tag
HOST_A=gchostA$tag
HOST_B=gchostB$tag
workdir=$(mktemp -d /tmp/gcnetns.XXXXXX)

cleanup() {
    local ns pids
    for ns in $NS_A $NS_B; do
        [[ -e /var/run/netns/$ns ]] || continue
        # Only processes of this run live in these namespaces.
        pids=$(ip netns pids $ns 2>/dev/null)
        [[ -n $pids ]] && kill -9 $pids 2>/dev/null
        ip netns delete $ns 2>/dev/null # takes the veth pair with it
    done
    rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# A run killed with SIGKILL (e.g. by a test driver) cannot clean up after
# itself: remove namespaces of earlier runs whose script is gone.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^gcns[AB][0-9]+$'); do
    owner=${ns#gcns?}
    [[ -d /proc/$owner ]] && continue
    stale=$(ip netns pids $ns 2>/dev/null)
    [[ -n $stale ]] && kill -9 $stale 2>/dev/null
    ip netns delete $ns 2>/dev/null && echo "netns: removed stale namespace $ns"
done

if ! err=$(ip netns add $NS_A 2>&1); then
    skip "ip netns add is not permitted here: $err"
fi
unshare --uts true 2>/dev/null || skip "unshare --uts is not permitted here"
set -e
ip netns add $NS_B
ip link add gcva$tag type veth peer name gcvb$tag
ip link set gcva$tag netns $NS_A
ip link set gcvb$tag netns $NS_B
ip -n $NS_A link set gcva$tag name $IFNAME
ip -n $NS_B link set gcvb$tag name $IFNAME
ip -n $NS_A addr add $ADDR_A/24 dev $IFNAME
ip -n $NS_B addr add $ADDR_B/24 dev $IFNAME
for ns in $NS_A $NS_B; do
    ip -n $ns link set lo up
    ip -n $ns link set $IFNAME up
done
set +e

veth_bytes() { # bytes sent by the veth end in namespace $1
    ip netns exec $1 cat /sys/class/net/$IFNAME/statistics/tx_bytes
}

slots=$(((np + 1) / 2))
printf '%s slots=%d\n%s slots=%d\n' $ADDR_A $slots $ADDR_B $slots >"$workdir/hostfile"
# What the agent needs: address -> "namespace hostname".
export GCNETNS_MAP="$ADDR_A=$NS_A:$HOST_A $ADDR_B=$NS_B:$HOST_B"

before_a=$(veth_bytes $NS_A)
before_b=$(veth_bytes $NS_B)
echo "netns: $NS_A ($HOST_A, $ADDR_A) <-> $NS_B ($HOST_B, $ADDR_B) over $IFNAME; $np ranks"
# In the background so that a signal reaches the trap at once (bash runs
# traps only between foreground commands). mpirun's own --timeout ends the
# run before a test driver's timeout would kill this script.
ip netns exec $NS_A unshare --uts /bin/sh -c 'hostname "$1" && shift && exec "$@"' sh "$HOST_A" \
    "$MPIRUN" -n "$np" --hostfile "$workdir/hostfile" --map-by node --bind-to none --oversubscribe \
    --timeout 280 \
    --mca plm_rsh_agent "$AGENT" \
    --mca oob_tcp_if_include $SUBNET --mca btl_tcp_if_include $SUBNET \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=$IFNAME -x UCX_WARN_UNUSED_ENV_VARS=n \
    "$@" &
wait $!
status=$?
crossed_a=$(($(veth_bytes $NS_A) - before_a))
crossed_b=$(($(veth_bytes $NS_B) - before_b))
echo "netns: veth carried $crossed_a bytes A->B and $crossed_b bytes B->A"
if [[ $status -eq 0 ]] && ((crossed_a < min_veth_bytes || crossed_b < min_veth_bytes)); then
    echo "netns: FAIL: expected at least $min_veth_bytes bytes each way across the veth pair"
    status=1
fi
exit $status
