#!/usr/bin/env bash
# hotbuf's verbs transport (shim/transport/) in the soft-RoCE guest:
#   scripts/rxe-vm.sh tests/rdma/transport.sh
# Needs build/rdma/transport_test (built on the host, see the Makefile rule).
# Prints PASS/FAIL lines and ends with "transport: N passed, N failed".
#   TRANSPORT_TEST=path   another binary;  TRANSPORT_NP="2 4"  rank counts
set -u
cd "$(dirname "$0")/../.."
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
bin=${TRANSPORT_TEST:-build/rdma/transport_test}
dev=${RXEVM_DEV:-rxe0}
work=$(mktemp -d /tmp/transport.XXXXXX)
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS transport/$1"; }
fail() { failed=$((failed + 1)); echo "FAIL transport/$1: $2"; [ -f "${3:-}" ] && sed 's/^/    | /' "$3" | tail -25; }

# run_prog NAME SECONDS CMD...: CMD prints its own PASS/FAIL lines; they are
# counted, and an exit without any FAIL line but a bad status is a failure.
run_prog() {
    local name=$1 secs=$2; shift 2
    timeout -k 5 "$secs" "$@" >"$work/$name.log" 2>"$work/$name.err"
    local rc=$? p f
    grep -E '^(PASS|FAIL) |^    ' "$work/$name.log"
    p=$(grep -c '^PASS ' "$work/$name.log") f=$(grep -c '^FAIL ' "$work/$name.log")
    passed=$((passed + p)) failed=$((failed + f))
    if [ "$f" != 0 ] && [ -s "$work/$name.err" ]; then sed 's/^/    ! /' "$work/$name.err" | tail -20; fi
    if [ $rc != 0 ] && [ "$f" = 0 ]; then
        cat "$work/$name.err" >>"$work/$name.log"
        fail "$name" "exit $rc" "$work/$name.log"
    elif [ "$p" = 0 ] && [ "$f" = 0 ]; then
        fail "$name" "no result lines" "$work/$name.err"
    fi
}

if [ ! -x "$bin" ]; then
    fail build "$bin missing: build it on the host first (make build/rdma/transport_test)"
    echo "transport: $passed passed, $failed failed"
    exit 1
fi

# 1. opening: a working device, then every way it can fail (no MPI needed)
run_prog open_ok 60 "$bin" open --name ok --expect-ok
run_prog open_missing 60 "$bin" open --name missing_device --device mlx5_9 --expect "not found"
run_prog open_port2 60 "$bin" open --name no_port_2 --device "$dev" --port 2 --expect "has no port 2"
# root ignores RLIMIT_MEMLOCK while it holds CAP_IPC_LOCK: drop it
nocap="setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock"
run_prog open_memlock 60 $nocap prlimit --memlock=65536 "$bin" open --name memlock_64k --expect "RLIMIT_MEMLOCK is 64 KiB"
# the same path at the registration itself (pre-check off, 16 KiB < the 24 KiB area)
run_prog open_memlock_reg 60 $nocap prlimit --memlock=16384 "$bin" open --name memlock_register \
    --no-memlock-check --expect "cannot register the 24 KiB control area"
# no device at all: libibverbs without its provider list (an empty
# /etc/libibverbs.d in a private mount namespace) lists no device, as on a
# host without RDMA hardware
run_prog open_nodev 60 unshare -m sh -c \
    'mount -t tmpfs none /etc/libibverbs.d && exec "$0" open --name no_device --expect "no verbs device"' "$bin"

# 2. the MPI program: 2 and 4 ranks (2 vCPUs: 4 is oversubscribed)
for np in ${TRANSPORT_NP:-2 4}; do
    run_prog mpi_$np 300 mpiexec.openmpi -n "$np" "$bin" mpi
done

# 3. port down: take the netdev under rxe0 down, both ways of opening must
#    say so, then bring it back
netdev=$(rdma link show "$dev/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
state() { cat "/sys/class/infiniband/$dev/ports/1/state" 2>/dev/null; }
wait_state() { for _ in $(seq 100); do [[ $(state) == *$1* ]] && return 0; sleep 0.1; done; return 1; }
if [ -n "$netdev" ] && ip link set "$netdev" down && wait_state DOWN; then
    run_prog open_port_down 60 "$bin" open --name port_down --device "$dev" --expect "is not ACTIVE"
    run_prog open_port_down_any 60 "$bin" open --name port_down_any --expect "no verbs device with an ACTIVE port 1"
    ip link set "$netdev" up
    wait_state ACTIVE || fail port_up "port 1 of $dev did not come back: $(state)"
else
    fail port_down "cannot take the netdev of $dev ('$netdev') down: $(state)"
    [ -n "$netdev" ] && ip link set "$netdev" up
fi

echo "transport: $passed passed, $failed failed"
rm -rf "$work"
[ $failed = 0 ]
