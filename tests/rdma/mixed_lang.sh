#!/usr/bin/env bash
# A C program and a Fortran program in one MPMD job, on the same
# communicator and the same windows, with hotbuf rerouting (in the
# soft-RoCE guest, run by run-in-guest.sh): tests/mpi/mixed_lang.c against
# mixed_lang_f.f90 (`use mpi`) and mixed_lang_f08.f90 (`use mpi_f08`),
# Open MPI and MPICH, 2 ranks.  Allgather (64 B and 64 KiB blocks, in
# place), MPI_Win_create and MPI_Win_allocate windows with fence Put/Get
# from reused buffers, lock/unlock epochs.  The output must equal the
# plain MPI run's (no wrong element on either rank), and the report must
# show the Fortran call sites of Allgather, Put and Get with rerouted
# calls: the Fortran bindings take the same path as the C ones.
# MPI itself stays on shared memory; hotbuf uses rxe0 (HOTBUF_INTRANODE=1).
#   BASE_LIB=DIR  use DIR/libhotbuf-<mpi>.so (e.g. an older build)
#   MIXED_TIMEOUT=s  time-out of each hotbuf run (600)
# Prints PASS/FAIL lines.
set -u
cd "$(dirname "$0")/../.."
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_osc=sm,ucx UCX_TLS=self,sm
work=${KEEP:-$(mktemp -d /tmp/mixed_lang.XXXXXX)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; [ -f "${3:-}" ] && sed 's/^/    | /' "$3" | tail -20; }

# check_json FILE FORTRAN_SOURCE: Fortran sites of Allgather, Put and Get
# rerouted, and the Allgather's both paths taken.
check_json() {
    python3 - "$@" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])); src = sys.argv[2]
errors = []
def need(cond, what):
    if not cond: errors.append(what)
for op in ("allgather", "put", "get"):
    f = [s for s in r["sites"] if s["op"] == op and "(%s:" % src in s["name"]]
    need(f, "no %s site in %s" % (op, src))
    need(sum(s["rerouted_calls"] for s in f) > 0, "%s: no Fortran call rerouted" % op)
    c = [s for s in r["sites"] if s["op"] == op and "(mixed_lang.c:" in s["name"]]
    need(sum(s["rerouted_calls"] for s in c) > 0, "%s: no C call rerouted" % op)
alg = r["allgather"]["algorithms"]
need(alg["rd_copy"] + alg["ring_copy"] > 0, "allgather copy path not taken")
need(alg["rd_zcopy"] + alg["ring_zcopy"] > 0, "allgather zero-copy path not taken")
need(r["rma"]["windows_rdma"] >= 4, "windows served: %d, want 4" % r["rma"]["windows_rdma"])
for e in errors:
    print("report:", e)
sys.exit(1 if errors else 0)
EOF
}

# run MPI LAUNCHER FORTRAN_PROGRAM
run() {
    local mpi=$1 launch=$2 fprog=$3 name=$1_$3
    local c=build/$mpi/tests/mixed_lang f=build/$mpi/tests/$fprog lib=()
    [ -n "${BASE_LIB:-}" ] && lib=(--lib="$BASE_LIB/libhotbuf-$mpi.so")
    timeout 300 $launch -n 1 $c : -n 1 $f >"$work/$name.plain" 2>&1
    # HOTBUF_AG_ZCOPY/RING: the 64 KiB Allgather must take the zero-copy
    # path (the defaults since issue 16 take it copy-based)
    HOTBUF_INTRANODE=1 HOTBUF_THRESHOLD=4 HOTBUF_REPORT=both HOTBUF_REPORT_SITES=100 \
        HOTBUF_AG_ZCOPY=8K HOTBUF_AG_RING=64K HOTBUF_REPORT_FILE=$work/$name timeout ${MIXED_TIMEOUT:-600} tools/hotbuf-run "${lib[@]}" -- \
        $launch -n 1 $c : -n 1 $f >"$work/$name.out" 2>"$work/$name.err"
    local rc=$?
    if [ $rc = 0 ] && [ "$(grep -c 'wrong 0, 64KiB wrong 0, in place wrong 0; .*get wrong 0; checksum' \
                          "$work/$name.plain")" = 2 ] &&
       cmp -s "$work/$name.plain" "$work/$name.out" &&
       check_json "$work/$name.json" "$fprog.f90" >"$work/$name.check" 2>&1; then
        pass "mixed_lang/$name"
    else
        cat "$work/$name.check" "$work/$name.out" >>"$work/$name.err" 2>/dev/null
        diff "$work/$name.plain" "$work/$name.out" >>"$work/$name.err"
        fail "mixed_lang/$name" "output must equal plain MPI's, Fortran sites rerouted (exit $rc)" \
            "$work/$name.err"
    fi
}

run openmpi mpiexec.openmpi mixed_lang_f
run openmpi mpiexec.openmpi mixed_lang_f08
run mpich mpiexec.mpich mixed_lang_f
run mpich mpiexec.mpich mixed_lang_f08
