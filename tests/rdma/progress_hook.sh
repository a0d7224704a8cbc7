#!/usr/bin/env bash
# Progress inside MPI (shim/core/progress_hook.c), in the soft-RoCE guest
# (run by run-in-guest.sh): a passive target.  tests/mpi/rma_silent_peer:
# rank 1 only waits in MPI_Barrier while rank 0 runs lock/put/unlock from
# a hot buffer for 3 s.  The target answers hotbuf's connection request
# only from inside MPI_Barrier, through the progress hook:
#  passive_target/FLAVOUR      hook on: results identical to plain MPI,
#                              Puts rerouted once the connection formed,
#                              no failed peer, the hook active on both ranks
#  passive_target_nohook/...   hook left out (test switch HOTBUF_TEST_
#                              PROGRESS_HOOK=0): no Put rerouted, the peer
#                              failed after the connection time-out; the
#                              same results.  Shows the first test fails
#                              without the hook.
#  passive_target_pml_ucx/openmpi  hook on, Open MPI's pml ucx (on shared
#                              memory, rxe0 present as pml ucx requires a
#                              network device): it runs opal_progress only every
#                              100th poll, and hotbuf's start-up check,
#                              64 probes then, found no hook (pull off,
#                              every grant refused).
# Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.."
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export UCX_TLS=self,sm # MPICH ch4:ucx on shared memory; hotbuf on rxe0
work=${KEEP:-$(mktemp -d /tmp/progress_hook.XXXXXX)}; mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; [ -f "${3:-}" ] && sed 's/^/    | /' "$3" | tail -15; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# passive MPI HOOK(1|0) NAME [ENV...]
passive() {
    local mpi=$1 hook=$2 name=$3 prog=build/$1/tests/rma_silent_peer; shift 3
    local plain=$work/plain-$mpi.out r=$work/$name-$mpi
    [ -f "$plain" ] || timeout 120 mpiexec.$mpi -n 2 $prog 3 >"$plain" 2>"$work/plain-$mpi.err"
    env "$@" HOTBUF_TEST_PROGRESS_HOOK=$hook HOTBUF_INTRANODE=1 HOTBUF_THRESHOLD=2 \
        HOTBUF_CONNECT_TIMEOUT=$([ "$hook" = 1 ] && echo 60 || echo 1) \
        HOTBUF_REPORT=both HOTBUF_REPORT_FILE=$r timeout 180 tools/hotbuf-run -- \
        mpiexec.$mpi -n 2 $prog 3 >"$r.out" 2>"$r.err"
    local rc=$? counts
    counts=$(json "$r.json" '"%d of %d hot Puts rerouted, hook %s" % (r["classes"]["put"]["rerouted_calls"], r["classes"]["put"]["hot_calls"], r["progress_hook"]["status"])' 2>&1)
    if [ $rc != 0 ] || ! grep -q 'wrong elements 0' "$plain" || ! cmp -s "$plain" "$r.out"; then
        cat "$r.out" >>"$r.err"
        fail "progress_hook/$name/$mpi" "results differ from plain MPI (exit $rc)" "$r.err"
    elif [ "$hook" = 1 ] &&
         [ "$(json "$r.json" 'r["classes"]["put"]["rerouted_calls"] > 0 and r["rdma"]["failed_peers"] == [] and r["progress_hook"]["ranks_active"] == 2')" != True ]; then
        cat "$r.txt" >>"$r.err" 2>/dev/null
        fail "progress_hook/$name/$mpi" "no Put rerouted to a target waiting in MPI_Barrier ($counts)" "$r.err"
    elif [ "$hook" = 0 ] &&
         [ "$(json "$r.json" 'r["classes"]["put"]["rerouted_calls"] == 0 and r["rma"]["ops_pmpi"]["connecting"] > 0 and r["progress_hook"]["ranks_active"] == 0')" != True ]; then
        cat "$r.txt" >>"$r.err" 2>/dev/null
        fail "progress_hook/$name/$mpi" "without the hook the target must stay unreachable ($counts)" "$r.err"
    else
        pass "progress_hook/$name/$mpi ($counts)"
    fi
}

for mpi in openmpi mpich; do
    passive $mpi 1 passive_target
    passive $mpi 0 passive_target_nohook
done
passive openmpi 1 passive_target_pml_ucx OMPI_MCA_pml=ucx UCX_TLS=self,sm,rc UCX_NET_DEVICES=rxe0:1
