#!/usr/bin/env bash
# Verbs tests, run inside the soft-RoCE guest by tests/run-tests.sh through
# scripts/rxe-vm.sh (the guest has rxe0; MPI itself uses shared memory).
# Prints PASS/FAIL lines and ends with "rdma: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
work=$(mktemp -d /tmp/rdma.XXXXXX)
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "PASS rdma/$1"; }
fail() { failed=$((failed + 1)); echo "FAIL rdma/$1: $2"; [ -f "${3:-}" ] && sed 's/^/    | /' "$3" | tail -15; }
took=""  # "seconds name" lines: the slowest programs, printed at the end
timed() { took="$took$((SECONDS - $1)) $2
"; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# run_prog NAME CMD...: a program that prints its own PASS/FAIL lines; its
# lines join the count, and a crash or time-out without them is a failure.
run_prog() {
    local name=$1 t0=$SECONDS; shift
    timeout "${RUN_TIMEOUT:-300}" "$@" >"$work/$name.log" 2>&1
    local rc=$? p f
    timed $t0 "$name"
    sed -n 's/^\(PASS\|FAIL\) \(.*\)/\1 rdma\/\2/p; /^    |/p' "$work/$name.log"
    p=$(grep -c '^PASS ' "$work/$name.log") f=$(grep -c '^FAIL ' "$work/$name.log")
    passed=$((passed + p)) failed=$((failed + f))
    if [ $rc != 0 ] && [ "$f" = 0 ]; then fail "$name" "exit $rc" "$work/$name.log"; fi
}

# unit_prog NAME: a unit test binary (exit status = failed checks).
unit_prog() {
    if timeout 300 "build/unit/$1" >"$work/$1.log" 2>&1; then pass "unit/$1"; else fail "unit/$1" "exit $?" "$work/$1.log"; fi
}

# 1. The guest really has a verbs device with an active port.
if ibv_devinfo -d rxe0 >"$work/devinfo" 2>&1 && grep -q PORT_ACTIVE "$work/devinfo"; then
    pass device
else
    fail device "rxe0 missing or port not active" "$work/devinfo"
fi

# 2. With a device, hotbuf measures R with ibv_reg_mr and times its two copy
#    routines (pieces chosen only at half memcpy's time); results unchanged.
prog=build/openmpi/tests/reuse_known
timeout 300 mpiexec.openmpi -n 2 $prog >"$work/plain.out" 2>"$work/plain.err"
HOTBUF_THRESHOLD=100 HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$work/r \
    timeout 300 tools/hotbuf-run -- mpiexec.openmpi -n 2 $prog >"$work/hb.out" 2>"$work/hb.err"
if [ -s "$work/plain.out" ] && cmp -s "$work/plain.out" "$work/hb.out" &&
   [ "$(json "$work/r.json" 'r["cost_model"]["reg_source"]')" = measured ] &&
   [ "$(json "$work/r.json" 'r["cost_model"]["reg_base_us"] > 0')" = True ] &&
   [ "$(json "$work/r.json" 'r["cost_model"]["copy_routine_source"]')" = measured ] &&
   [ "$(json "$work/r.json" '(lambda c: c["probe_memcpy_ns"] > 0 and (c["copy_routine"] == "pieces") == (2 * c["probe_pieces_ns"] <= c["probe_memcpy_ns"]))(r["cost_model"])')" = True ] &&
   [ "$(json "$work/r.json" 'r["rdma"]["ranks_up"]')" = 2 ] &&
   [ "$(json "$work/r.json" 'r["rdma"]["status"].startswith("RDMA on rxe0 port 1")')" = True ] &&
   python3 tests/check_report.py reuse_known "$work/r.json" 2 >"$work/check" 2>&1; then
    pass reg_cost_measured
else
    cat "$work/check" >>"$work/hb.err" 2>/dev/null
    fail reg_cost_measured "R not measured on rxe0, or the job changed" "$work/hb.err"
fi

# 3. Bad RDMA set-ups: one clear line on rank 0, RDMA off, the job unchanged.
#    bad_setup NAME PATTERN [ENV...] [-- WRAPPER...]
bad_setup() {
    local name=$1 pattern=$2; shift 2
    local envs=() wrap=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift && wrap=("$@")
    env "${envs[@]}" HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$work/$name \
        timeout 300 "${wrap[@]}" tools/hotbuf-run -- mpiexec.openmpi -n 2 $prog \
        >"$work/$name.out" 2>"$work/$name.err"
    if cmp -s "$work/plain.out" "$work/$name.out" &&
       [ "$(grep -c "^hotbuf: RDMA off (.*$pattern" "$work/$name.err")" = 1 ] &&
       [ "$(json "$work/$name.json" 'r["rdma"]["ranks_up"]')" = 0 ]; then
        pass "$name"
    else
        fail "$name" "expected one 'RDMA off ($pattern...' line and an unchanged job" "$work/$name.err"
    fi
}
bad_setup missing_device "mlx5_9" HOTBUF_DEVICE=mlx5_9
bad_setup port_down "port 2" HOTBUF_PORT=2
# root ignores RLIMIT_MEMLOCK while it holds CAP_IPC_LOCK: drop it
bad_setup memlock_64k "RLIMIT_MEMLOCK" -- setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock \
    prlimit --memlock=65536

# 4. The registration cache and the memory-change monitor (userfaultfd on
#    the guest's Debian kernel): their unit tests, then against the device,
#    then memlock exhaustion (root ignores RLIMIT_MEMLOCK while it holds
#    CAP_IPC_LOCK, so the capability is dropped for that run).
unit_prog test_regcache
unit_prog test_regcache_itree
unit_prog test_memmon
unit_prog test_memmon_regcache
run_prog regcache_verbs build/rdma/regcache_verbs_test
run_prog regcache_memlock setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock \
    prlimit --memlock=65536 build/rdma/regcache_verbs_test memlock

# 5. The verbs transport: on-demand connections, RDMA write/read/immediate,
#    failure cases (tests/rdma/transport.sh has the list).
RUN_TIMEOUT=900 run_prog transport tests/rdma/transport.sh

# 6. No stale registration, end to end: 10^4 RDMA writes from buffers that
#    are freed/unmapped/remapped/madvised and reused at the same address,
#    0 mismatches; with the monitor muted the same test must see stale data.
RUN_TIMEOUT=900 run_prog integrity_clean mpiexec.openmpi -n 2 build/rdma/integrity_test 10000 clean
run_prog integrity_stale env HOTBUF_MEMMON=off \
    mpiexec.openmpi -x HOTBUF_MEMMON -n 2 build/rdma/integrity_test 2000 stale

# 7. Hot MPI_Put/MPI_Get on hotbuf's queue pairs: every synchronization
#    pattern, both MPIs, results identical to plain MPI, rerouting per call
#    site in the report; then a silent peer and a rank without RDMA.
RUN_TIMEOUT=900 run_prog rma tests/rdma/rma_routing.sh
RUN_TIMEOUT=600 run_prog rma_faults tests/rdma/rma_faults.sh
#    A passive target that only waits in MPI_Barrier: its connection is
#    served by the progress hook inside MPI, Puts rerouted (and none
#    without the hook).
RUN_TIMEOUT=600 run_prog progress_hook tests/rdma/progress_hook.sh
#    Hot MPI_Send on hotbuf's own channels (point-to-point part 2,
#    HOTBUF_P2P_RING=1): a ping-pong and a halo exchange, results as plain
#    MPI, every hot send on a live pair zero-copy.
RUN_TIMEOUT=1800 run_prog p2p_ring tests/rdma/p2p_ring.sh

# 8. MPI_Allgather on hotbuf's RDMA: bit-identical to PMPI_Allgather at
#    2, 3, 4 and 8 ranks (both algorithms, copy-based and zero-copy).
RUN_TIMEOUT=900 run_prog allgather tests/rdma/allgather_rdma.sh

# 9. A C and a Fortran program in one job (MPMD), rerouting on: Allgather,
#    windows, fence and lock epochs meet across the languages, Open MPI and
#    MPICH, `use mpi` and `use mpi_f08`.
RUN_TIMEOUT=900 run_prog mixed_lang tests/rdma/mixed_lang.sh

# 10. Correct programs an earlier hotbuf broke (issue 11): a window
#     madvised by its target, mremap of a partly registered mapping, a
#     receive pending on MPI_COMM_SELF, 1200 windows, unregistrable
#     Allgather receive buffers, spawn + merge.
RUN_TIMEOUT=1500 run_prog defects tests/rdma/defects.sh

# 11. The MPI's own RDMA beside hotbuf: dynamic windows (linked lists under
#     lock_all, shared locks, NOCHECK) over rxe0, plain and with hotbuf.
RUN_TIMEOUT=900 run_prog mpi_rdma_beside tests/rdma/mpi_rdma_beside.sh

echo "rdma: slowest: $(printf '%s' "$took" | sort -rn | head -5 | awk '{printf "%s%s %ss", (NR > 1 ? ", " : ""), $2, $1}')"
echo "rdma: $passed passed, $failed failed"
rm -rf "$work"
[ $failed = 0 ]
