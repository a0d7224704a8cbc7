#!/usr/bin/env bash
# Hot MPI_Put/MPI_Get on hotbuf's queue pairs, in the soft-RoCE guest (run
# by run-in-guest.sh).  tests/mpi/rma_epochs (fence, PSCW, locks, lock_all
# with flushes and Rput/Rget, the spectrum pattern, other windows) runs
# without hotbuf and with it; the outputs must be identical (every target
# checks what it got: "wrong elements 0"), and the report must show the
# rerouting per call site.  MPI itself stays on shared memory; hotbuf uses
# rxe0 (HOTBUF_INTRANODE=1: every rank is on this one node).  The
# threshold is fixed (4 uses) so that the hot buffers are known.
# Open MPI: osc sm (shared windows) + osc ucx on UCX's shared memory (the
# osc pt2pt of Open MPI 4.1 needs MPI_THREAD_MULTIPLE).
# Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.."
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_osc=sm,ucx UCX_TLS=self,sm
work=${KEEP:-$(mktemp -d /tmp/rma_routing.XXXXXX)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; [ -f "${3:-}" ] && sed 's/^/    | /' "$3" | tail -20; }

# check_json FILE MODE: the report's promises (see the python below).
check_json() {
    python3 - "$@" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])); mode = sys.argv[2]
c, rma = r["classes"], r["rma"]
errors = []
def need(cond, what):
    if not cond: errors.append(what)
rer = {op: c[op]["rerouted_calls"] for op in ("put", "get")}
sites = [s for s in r["sites"] if s["op"] in ("put", "get")]
# every hot operation is either moved or counted with its reason
need(rer["put"] + rer["get"] == rma["ops_rdma"], "rerouted put+get != ops_rdma")
need(rma["ops_rdma"] + sum(rma["ops_pmpi"].values()) == c["put"]["hot_calls"] + c["get"]["hot_calls"]
     or mode == "off", "rerouted + left on PMPI != hot calls")
for op in ("put", "get"):
    need(rer[op] <= c[op]["hot_calls"], op + ": rerouted > hot")
    need(sum(s["rerouted_calls"] for s in sites if s["op"] == op) == rer[op],
         op + ": sites do not add up to the class")
if mode == "on":
    for fn, ops in (("fence_pattern", ("put", "get")), ("pscw_pattern", ("put", "get")),
                    ("lock_pattern", ("put", "get")), ("lockall_pattern", ("put", "get")),
                    ("spectrum_pattern", ("put",)), ("created_window", ("put",)),
                    ("large_window", ("put",))):
        for op in ops:
            n = sum(s["rerouted_calls"] for s in sites if s["name"].startswith(fn + " ") and s["op"] == op)
            need(n > 0, "%s: no %s rerouted" % (fn, op))
    need(sum(s["rerouted_calls"] for s in sites
             if s["name"].startswith(("shared_window ", "dynamic_window "))) == 0,
         "puts on shared or dynamic windows must stay on MPI")
    need(rma["windows_pmpi"]["shared"] > 0 and rma["windows_pmpi"]["dynamic"] > 0,
         "shared and dynamic windows not counted")
    need(rma["ops_pmpi"]["datatype"] > 0 and rma["ops_pmpi"]["self"] > 0,
         "the vector and self puts not counted")
    need(rma["windows_rdma"] > 0, "no window served")
    # over max_msg_sz: left to MPI, and the target still reached by RDMA
    need(rma["ops_pmpi"].get("too_large", 0) > 0, "the 9 MiB Put not counted too_large")
    need(rma["ops_pmpi"]["peer_failed"] == 0, "hot operations counted peer_failed (the 9 MiB Put's reason?)")
    need(r["allgather"]["comms_rdma"] > 0, "no Allgather on RDMA (large_window's)")
else:
    need(rer["put"] + rer["get"] == 0, "rerouted with " + mode)
    if mode == "intranode":
        need(rma["ops_pmpi"]["intranode"] > 0, "intranode reason not counted")
for e in errors:
    print("report:", e)
sys.exit(1 if errors else 0)
EOF
}

# run NAME MODE LAUNCHER... : plain run once per launcher, then hotbuf
run() {
    local name=$1 mode=$2; shift 2
    local plain="$work/plain-$(echo "$*" | tr -c 'a-z0-9' _).out"
    [ -f "$plain" ] || timeout 300 "$@" build/$flavour/tests/rma_epochs >"$plain" 2>&1
    # EAGER_LIMIT: large_window's 9 MiB Put may be hot (over rxe's 8 MiB
    # max_msg_sz; the default 8K leaves it cold)
    local envs=(HOTBUF_THRESHOLD=4 HOTBUF_EAGER_LIMIT=16M HOTBUF_REPORT=both HOTBUF_REPORT_SITES=100
                HOTBUF_REPORT_FILE=$work/$name)
    case $mode in
        on) envs+=(HOTBUF_INTRANODE=1) ;;
        off) envs+=(HOTBUF_INTRANODE=1 HOTBUF_RMA=0) ;;
    esac
    env "${envs[@]}" timeout 600 tools/hotbuf-run -- "$@" build/$flavour/tests/rma_epochs \
        >"$work/$name.out" 2>"$work/$name.err"
    local rc=$?
    if [ $rc = 0 ] && grep -q 'wrong elements 0$' "$plain" && cmp -s "$plain" "$work/$name.out" &&
       check_json "$work/$name.json" "$mode" >"$work/$name.check" 2>&1; then
        pass "rma/$name"
    else
        cat "$work/$name.check" "$work/$name.out" >>"$work/$name.err" 2>/dev/null
        fail "rma/$name" "results must match plain MPI and the report must show the rerouting (exit $rc)" "$work/$name.err"
    fi
}

flavour=openmpi
run openmpi_np2 on mpiexec.openmpi -n 2
run openmpi_np4 on mpiexec.openmpi --oversubscribe -n 4
run openmpi_np2_rma_off off mpiexec.openmpi -n 2
run openmpi_np2_intranode_off intranode mpiexec.openmpi -n 2
flavour=mpich
run mpich_np2 on mpiexec.mpich -n 2
run mpich_np4 on mpiexec.mpich -n 4 # about 30 s of busy-polling in the guest
