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
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# 1. The guest really has a verbs device with an active port.
if ibv_devinfo -d rxe0 >"$work/devinfo" 2>&1 && grep -q PORT_ACTIVE "$work/devinfo"; then
    pass device
else
    fail device "rxe0 missing or port not active" "$work/devinfo"
fi

# 2. With a device, hotbuf measures R with ibv_reg_mr; results unchanged.
prog=build/openmpi/tests/reuse_known
timeout 300 mpiexec.openmpi -n 2 $prog >"$work/plain.out" 2>"$work/plain.err"
HOTBUF_THRESHOLD=100 HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$work/r \
    timeout 300 tools/hotbuf-run -- mpiexec.openmpi -n 2 $prog >"$work/hb.out" 2>"$work/hb.err"
if [ -s "$work/plain.out" ] && cmp -s "$work/plain.out" "$work/hb.out" &&
   [ "$(json "$work/r.json" 'r["cost_model"]["reg_source"]')" = measured ] &&
   [ "$(json "$work/r.json" 'r["cost_model"]["reg_base_us"] > 0')" = True ] &&
   python3 tests/check_report.py reuse_known "$work/r.json" 2 >"$work/check" 2>&1; then
    pass reg_cost_measured
else
    cat "$work/check" >>"$work/hb.err" 2>/dev/null
    fail reg_cost_measured "R not measured on rxe0, or the job changed" "$work/hb.err"
fi

# 3. HOTBUF_DEVICE naming a missing device: one clear line, defaults, job fine.
HOTBUF_DEVICE=mlx5_9 HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$work/m \
    timeout 300 tools/hotbuf-run -- mpiexec.openmpi -n 2 $prog >"$work/m.out" 2>"$work/m.err"
if cmp -s "$work/plain.out" "$work/m.out" &&
   [ "$(grep -c 'verbs device mlx5_9 not found' "$work/m.err")" = 1 ] &&
   [ "$(json "$work/m.json" 'r["cost_model"]["reg_source"]')" = default ]; then
    pass missing_device
else
    fail missing_device "no single clear line for a missing HOTBUF_DEVICE" "$work/m.err"
fi

echo "rdma: $passed passed, $failed failed"
rm -rf "$work"
[ $failed = 0 ]
