#!/usr/bin/env bash
# The MPI's own RDMA beside hotbuf (issue 11, defect 13), in the soft-RoCE
# guest: the MPI itself runs one-sided communication over rxe0 (Open MPI's
# osc rdma on the openib btl, osc ucx; MPICH's ch4:ucx), while hotbuf,
# rerouting on (HOTBUF_INTRANODE=1, HOTBUF_THRESHOLD=2), uses the same
# device.  hotbuf leaves dynamic windows to the MPI; the MPI's attach and
# registrations must work as without hotbuf.  Programs: a linked list in a
# dynamic window (tests/mpi/dyn_linked_list.c: lock_all, shared lock,
# shared lock with NOCHECK), as in MPICH's test/mpi/rma/linked_list*.c.
# Each runs plain and under hotbuf: same output, same exit status.
# Prints PASS/FAIL lines; BESIDE_FILTER=regex runs a subset.  A
# configuration that fails without hotbuf says SKIP with the MPI's first
# error: that is the MPI's own limit on rxe (in the Debian 12 guest the
# openib btl finds no connection scheme for rxe0, and osc ucx fails the
# flush of a dynamic window with MPI_ERR_RMA_SYNC), not hotbuf's doing.
set -u
cd "$(dirname "$0")/../.."
export UCX_NET_DEVICES=rxe0:1 UCX_TLS=rc,ud
export OMPI_MCA_btl_vader_single_copy_mechanism=none
work=${KEEP:-$(mktemp -d /tmp/beside.XXXXXX)}
mkdir -p "$work"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
pass() { echo "PASS $1"; }
skip() { echo "SKIP $1: $2"; }
fail() {
    echo "FAIL $1: $2"
    [ -f "${3:-}" ] && sed 's/^/    | /' "$3" | tail -20
}

# Open MPI's RDMA paths to rxe0.  openib refuses InfiniBand-class devices
# unless allowed, and RoCE needs the rdmacm connection manager.
OPENIB="--mca btl_openib_allow_ib 1 --mca btl_openib_if_include rxe0"
OPENIB+=" --mca btl_openib_cpc_include rdmacm"
declare -A OMPI=(
    [osc_rdma_ucx]="--mca pml ucx --mca osc rdma --mca btl self,openib $OPENIB"
    [osc_rdma_ob1]="--mca pml ob1 --mca osc rdma --mca btl self,vader,openib
                    $OPENIB"
    [osc_ucx]="--mca pml ucx --mca osc ucx"
)

# pair NAME LAUNCHER... -- PROGRAM ARGS: plain and hotbuf, same result
pair() {
    local name=$1; shift
    [[ $name =~ ${BESIDE_FILTER:-.} ]] || return 0
    local d=$work/${name//\//_}
    timeout 300 "$@" >"$d.plain" 2>"$d.plain.err"
    local prc=$?
    HOTBUF_INTRANODE=1 HOTBUF_THRESHOLD=2 HOTBUF_REPORT=json \
        HOTBUF_REPORT_FILE=$d timeout 300 tools/hotbuf-run -- "$@" \
        >"$d.hb" 2>"$d.hb.err"
    local rc=$?
    if [ $prc != 0 ] || [ ! -s "$d.plain" ]; then
        skip "beside/$name" "fails without hotbuf (exit $prc): $(grep -m1 \
            -E 'MPI_ERR|error|No OpenFabrics' "$d.plain.err")"
    elif [ $rc != $prc ] || ! cmp -s "$d.plain" "$d.hb"; then
        { echo "plain:"; cat "$d.plain"; echo "hotbuf (exit $rc):";
          cat "$d.hb"; grep -v '^  HOTBUF' "$d.hb.err" | tail -8; } >"$d.diff"
        fail "beside/$name" "differs from plain MPI" "$d.diff"
    else
        pass "beside/$name"
    fi
}

for cfg in osc_rdma_ucx osc_rdma_ob1 osc_ucx; do
    for mode in lock_all shared nocheck; do
        # shellcheck disable=SC2086
        pair openmpi/$cfg/$mode mpiexec.openmpi -n 2 ${OMPI[$cfg]} \
            build/openmpi/tests/dyn_linked_list $mode
    done
done
for mode in lock_all shared nocheck; do
    pair mpich/ucx/$mode mpiexec.mpich -n 2 \
        build/mpich/tests/dyn_linked_list $mode
done
