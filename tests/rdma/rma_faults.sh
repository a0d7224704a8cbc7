#!/usr/bin/env bash
# One-sided faults, in the soft-RoCE guest (run by run-in-guest.sh):
#  silent_peer   a target that sits in an MPI call hotbuf does not see while
#                its origin puts from a hot buffer: no hang, identical
#                results, the peer left on PMPI after HOTBUF_CONNECT_TIMEOUT
#                and named in the report (one line: who, to whom, why).
#                With the progress hook the target's MPI_Barrier answers
#                (tests/rdma/progress_hook.sh): the hook is left out here
#                (test switch HOTBUF_TEST_PROGRESS_HOOK=0), as on an MPI
#                without a hook (MPICH on a device other than ch4:ucx)
#  absent_peer   one rank without RDMA (HOTBUF_DEVICE names no device there):
#                the others keep RDMA among themselves, never toward it
#  rfault        Rput/Rget whose RDMA fails (test-only HOTBUF_TEST_RMA_FAIL):
#                complete only with the operation redone on MPI
# Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.."
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
work=${KEEP:-$(mktemp -d /tmp/rma_faults.XXXXXX)}; mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; [ -f "${3:-}" ] && sed 's/^/    | /' "$3" | tail -15; }
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

prog=build/openmpi/tests/rma_silent_peer
timeout 120 mpiexec.openmpi -n 2 $prog 3 >"$work/plain.out" 2>"$work/plain.err"
HOTBUF_TEST_PROGRESS_HOOK=0 HOTBUF_INTRANODE=1 HOTBUF_THRESHOLD=2 HOTBUF_CONNECT_TIMEOUT=1 \
    HOTBUF_REPORT=both HOTBUF_REPORT_FILE=$work/silent timeout 120 tools/hotbuf-run -- \
    mpiexec.openmpi -n 2 $prog 3 >"$work/silent.out" 2>"$work/silent.err"
rc=$?
r=$work/silent.json
if [ $rc = 0 ] && grep -q 'wrong elements 0' "$work/plain.out" && cmp -s "$work/plain.out" "$work/silent.out" &&
   [ "$(json $r 'r["rma"]["ops_pmpi"]["connecting"] > 0 and r["rma"]["ops_pmpi"]["peer_failed"] > 0')" = True ] &&
   [ "$(json $r 'r["classes"]["put"]["rerouted_calls"]')" = 0 ] &&
   [ "$(json $r 'sum(r["rma"]["ops_pmpi"].values()) == r["classes"]["put"]["hot_calls"]')" = True ] &&
   [ "$(json $r '[(f["rank"], f["peer"]) for f in r["rdma"]["failed_peers"]]')" = "[(0, 1)]" ] &&
   grep -q '^  rank 0 -> rank 1 on PMPI: .' "$work/silent.txt"; then
    pass rma/silent_peer
else
    cat "$work/silent.txt" >>"$work/silent.err" 2>/dev/null
    fail rma/silent_peer "expected identical results, the peer failed after the time-out and named once (exit $rc)" "$work/silent.err"
fi

# absent_peer: rank 1 runs without RDMA.  Its window is not registered, so
# operations to it stay on MPI ("window"), the job is unchanged.
prog=build/openmpi/tests/rma_patterns
timeout 120 mpiexec.openmpi -n 2 $prog >"$work/plain2.out" 2>&1
cat >"$work/rank1-nodev.sh" <<'EOF'
#!/bin/sh
[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export HOTBUF_DEVICE=nodev
exec "$@"
EOF
chmod +x "$work/rank1-nodev.sh"
HOTBUF_INTRANODE=1 HOTBUF_THRESHOLD=4 HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$work/absent \
    timeout 120 tools/hotbuf-run -- mpiexec.openmpi -n 2 "$work/rank1-nodev.sh" $prog \
    >"$work/absent.out" 2>"$work/absent.err"
rc=$?
r=$work/absent.json
if [ $rc = 0 ] && cmp -s "$work/plain2.out" "$work/absent.out" &&
   [ "$(json $r 'r["rdma"]["ranks_up"]')" = 1 ] &&
   [ "$(json $r 'r["rma"]["ops_pmpi"]["window"] > 0')" = True ] &&
   [ "$(json $r 'r["rma"]["ops_rdma"]')" = 0 ] &&
   [ "$(json $r 'sum(r["rma"]["ops_pmpi"].values()) == r["classes"]["put"]["hot_calls"] + r["classes"]["get"]["hot_calls"]')" = True ]; then
    pass rma/absent_peer
else
    cat "$r" >>"$work/absent.err" 2>/dev/null
    fail rma/absent_peer "expected identical results with operations toward the rank without RDMA on MPI (exit $rc)" "$work/absent.err"
fi

# rfault: every 3rd RDMA operation of the one-sided path reports failure
# (test-only HOTBUF_TEST_RMA_FAIL; Rget and Rput alternate, so both fail);
# Rget/Rput requests must complete only with the operation redone on MPI (the buffers are checked right after
# MPI_Wait), with both MPIs.
prog=rma_rfault
export OMPI_MCA_osc=sm,ucx UCX_TLS=self,sm # Open MPI 4.1's osc for Win_create
for mpi in openmpi mpich; do
    timeout 120 mpiexec.$mpi -n 2 build/$mpi/tests/$prog >"$work/rf_$mpi.plain" 2>&1
    HOTBUF_TEST_RMA_FAIL=3 HOTBUF_INTRANODE=1 HOTBUF_THRESHOLD=2 HOTBUF_REPORT=json \
        HOTBUF_REPORT_FILE=$work/rf_$mpi timeout 120 tools/hotbuf-run -- \
        mpiexec.$mpi -n 2 build/$mpi/tests/$prog >"$work/rf_$mpi.out" 2>"$work/rf_$mpi.err"
    rc=$?
    r=$work/rf_$mpi.json
    if [ $rc = 0 ] && grep -q 'wrong elements 0' "$work/rf_$mpi.plain" &&
       cmp -s "$work/rf_$mpi.plain" "$work/rf_$mpi.out" &&
       [ "$(json $r 'r["rma"]["reissued"] > 0 and r["rma"]["ops_rdma"] > r["rma"]["reissued"]')" = True ]; then
        pass rma/rfault/$mpi
    else
        { cat "$work/rf_$mpi.out"; cat "$r"; } >>"$work/rf_$mpi.err" 2>/dev/null
        fail rma/rfault/$mpi "expected identical results with operations redone on MPI (exit $rc)" "$work/rf_$mpi.err"
    fi
done
