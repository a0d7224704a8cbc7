#!/usr/bin/env bash
# MPI_Allgather on hotbuf's RDMA, in the soft-RoCE guest (run by
# run-in-guest.sh).  tests/mpi/allgather_check compares MPI_Allgather
# (through hotbuf) with PMPI_Allgather (the library's own) in the same run,
# bit for bit, over many sizes, datatypes, MPI_IN_PLACE, reused and fresh
# buffers and several communicators (one an intercommunicator, which must
# stay on MPI), at 2, 3, 4 and 8 ranks (the comparison
# inside one run is the "with and without hotbuf" one: a separate plain run
# would only add guest time); the report must show which algorithms ran.
# MPI itself stays on shared memory; hotbuf uses rxe0 (HOTBUF_INTRANODE=1).
# MPICH busy-polls: it runs at 2 ranks here.
# Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.."
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
work=${KEEP:-$(mktemp -d /tmp/allgather.XXXXXX)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; [ -f "${3:-}" ] && sed 's/^/    | /' "$3" | tail -20; }

# check_json FILE MODE NRANKS
check_json() {
    python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); mode, n = sys.argv[2], int(sys.argv[3])
ag, cls = r["allgather"], r["classes"]["allgather"]
alg = ag["algorithms"]
errors = []
def need(cond, what):
    if not cond: errors.append(what)
need(cls["rerouted_calls"] == ag["calls_rdma"], "rerouted_calls != calls_rdma")
need(sum(s["rerouted_calls"] for s in r["sites"] if s["op"] == "allgather") == cls["rerouted_calls"],
     "sites do not add up")
if mode == "on":
    need(cls["rerouted_calls"] > 0, "nothing rerouted")
    pow2 = n & (n - 1) == 0
    if pow2:
        need(alg["rd_copy"] > 0 and alg["rd_zcopy"] > 0, "recursive doubling not used")
    else:
        need(alg["ring_copy"] > 0, "ring copy-based not used")
    need(alg["ring_zcopy"] > 0, "ring zero-copy not used")
    need(ag["comms_rdma"] > 0, "no communicator served")
    need(ag["comms_pmpi"]["intercomm"] > 0, "intercommunicator not left to MPI")
else:
    need(cls["rerouted_calls"] == 0, "rerouted although " + mode)
    if mode == "intranode":
        need(ag["comms_pmpi"]["intranode"] > 0, "intranode reason not counted")
for e in errors:
    print("report:", e)
sys.exit(1 if errors else 0)
PY
}

# run NAME MODE NRANKS LAUNCHER...
run() {
    local name=$1 mode=$2 n=$3; shift 3
    local envs=(HOTBUF_REPORT=both HOTBUF_REPORT_SITES=100 HOTBUF_REPORT_FILE=$work/$name)
    case $mode in
        on) envs+=(HOTBUF_INTRANODE=1) ;;
        off) envs+=(HOTBUF_INTRANODE=1 HOTBUF_ALLGATHER=0) ;;
    esac
    env "${envs[@]}" timeout 600 tools/hotbuf-run -- "$@" build/$flavour/tests/allgather_check $ARGS \
        >"$work/$name.out" 2>"$work/$name.err"
    local rc=$?
    if [ $rc = 0 ] && grep -q "^allgather_check: $n ranks, [1-9][0-9]* checks, 0 mismatches" "$work/$name.out" &&
       check_json "$work/$name.json" "$mode" "$n" >"$work/$name.check" 2>&1; then
        pass "allgather/$name"
    else
        cat "$work/$name.check" "$work/$name.out" >>"$work/$name.err" 2>/dev/null
        fail "allgather/$name" "results must equal PMPI_Allgather's, algorithms as expected (exit $rc)" "$work/$name.err"
    fi
}

flavour=openmpi
ARGS=
for n in 2 4; do
    run openmpi_np$n on $n mpiexec.openmpi --oversubscribe -n $n
done
ARGS=quick # blocks up to 64 KiB + 1: 3 and 8 ranks on 2 emulated CPUs are slow
for n in 3 8; do
    run openmpi_np$n on $n mpiexec.openmpi --oversubscribe -n $n
done
run openmpi_np2_off off 2 mpiexec.openmpi -n 2
run openmpi_np2_intranode_off intranode 2 mpiexec.openmpi -n 2
ARGS=
flavour=mpich
run mpich_np2 on 2 mpiexec.mpich -n 2
