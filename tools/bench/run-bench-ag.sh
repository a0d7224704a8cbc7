#!/usr/bin/env bash
# Allgather benchmark in the soft-RoCE guest: plain MPI (PMPI_Allgather)
# against hotbuf's RDMA Allgather (MPI_Allgather) in the same processes
# (tools/bench/bench-ag.c), 4 B .. 1 MiB on 4 and 8 ranks, one reused
# receive buffer and a fresh one per call; column aa is plain against
# plain in the same run (the noise floor).  MPI itself runs over rxe0
# through UCX (Open MPI: pml ucx), so plain MPI is an RDMA baseline too.
# After "|", what a call cost each variant: packets rxe sent (all ranks)
# and CPU time (all ranks; about twice the wall time when the guest's two
# CPUs are saturated, as they are at 4 and 8 ranks), retransmissions per
# 100 calls, and the guest's busy time (its CPUs' user, system, irq and
# softirq: the kernel's packet work that no rank's CPU time counts).
#
#   tools/bench/run-bench-ag.sh        on the host: builds, then runs itself in the guest
# Knobs: BENCH_ROUNDS (9; three times as many up to 4 KiB), BENCH_AG_MIN
# (4), BENCH_AG_MAX (1048576), BENCH_AG_RANKS ("4 8"), BENCH_AG_MTU (the
# guest netdev's MTU; unset: the test bed's 1500, a 1024 B RDMA path MTU;
# 9000 gives rxe0 4096 B, as on InfiniBand and RoCE with jumbo frames).
# The whole run takes about 9 minutes on an idle host, far longer when
# other guests share its CPUs; BENCH_AG_MIN/MAX split it.
# The guest has 2 CPUs: 4 and 8 ranks are oversubscribed, which weighs on
# both variants (MPI yields when oversubscribed; so does hotbuf).
# Timings are emulated (TCG): compare the columns, not absolute values.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
if [ "${RXEVM:-0}" != 1 ]; then
    make -s MPI=openmpi && make -s MPI=openmpi tools || exit 1
    RXEVM_ENV="BENCH_ROUNDS BENCH_AG_MIN BENCH_AG_MAX BENCH_AG_RANKS BENCH_AG_MTU" RXEVM_TIMEOUT=${RXEVM_TIMEOUT:-4200} \
        exec timeout 4300 scripts/rxe-vm.sh tools/bench/run-bench-ag.sh
fi

work=$(mktemp -d /tmp/bench-ag.XXXXXX)
trap 'rm -rf "$work"' EXIT
export UCX_NET_DEVICES=rxe0:1 UCX_TLS=self,rc,ud
if [ -n "${BENCH_AG_MTU:-}" ]; then
    ip link set rxenet0 mtu "$BENCH_AG_MTU" || exit 1
fi
echo "rxe0 active MTU: $(ibv_devinfo -d rxe0 | sed -n 's/.*active_mtu:[[:space:]]*//p')"
# packets per call: rxe's counter (every rank is in this guest)
export BENCH_AG_PKTS=/sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts
export BENCH_AG_RETRIES=/sys/class/infiniband/rxe0/ports/1/hw_counters/completer_retry_err
export BENCH_AG_STAT=/proc/stat
ompi=(mpiexec.openmpi --oversubscribe --mca pml ucx --mca btl self
      -x UCX_NET_DEVICES -x UCX_TLS -x UCX_IB_GID_INDEX -x BENCH_AG_PKTS -x BENCH_AG_RETRIES -x BENCH_AG_STAT)
hb=(env HOTBUF_INTRANODE=1 HOTBUF_REPORT=json)

for n in ${BENCH_AG_RANKS:-4 8}; do
    echo "== Allgather latency, openmpi over UCX on rxe0, $n ranks (us per call, slowest rank)"
    "${hb[@]}" HOTBUF_REPORT_FILE=$work/ag$n timeout 4000 tools/hotbuf-run -- "${ompi[@]}" -n $n \
        build/openmpi/tools/bench-ag "${BENCH_AG_MAX:-1048576}" "${BENCH_ROUNDS:-9}" "${BENCH_AG_MIN:-4}" \
        >"$work/ag$n.txt" 2>"$work/ag$n.err" ||
        { echo "bench-allgather failed:"; tail -20 "$work/ag$n.err"; continue; }
    cat "$work/ag$n.txt"
    python3 - "$work/ag$n.json" "$n" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
a = r["allgather"]
print("hotbuf's RDMA Allgather: %d of %d calls x ranks; algorithms %s%s" % (
      a["calls_rdma"], r["classes"]["allgather"]["calls"],
      {k: v for k, v in a["algorithms"].items() if v},
      "" if a["calls_rdma"] else "   <== NOT REROUTED"))
# bench-ag calls on MPI_COMM_WORLD alone: operations per call and rank as
# each algorithm is designed (recursive doubling log2 p, and a ready record
# per partner when zero-copy; the ring p-1, and one ready record; direct p-1;
# multicast one send and p-1 READYs, plus a NACK and a repair per loss)
n, alg = int(sys.argv[2]), a["algorithms"]
lg = n.bit_length() - 1 if n & (n - 1) == 0 else 0
want = (alg["rd_copy"] * lg + alg["rd_zcopy"] * 2 * lg + alg["ring_copy"] * (n - 1) +
        alg["ring_zcopy"] * n + alg["direct"] * (n - 1) + alg["mcast"] * n +
        a["mc_nacks"] + a["mc_repairs"])
if alg["mcast"]:
    print("multicast: %d blocks asked for again, %d sent again, %d stale packets" % (
          a["mc_nacks"], a["mc_repairs"], a["mc_stale"]))
print("RDMA operations: %d for %d calls x ranks (%.2f per call and rank), as designed: %d%s" % (
      a["ops"], a["calls_rdma"], a["ops"] / max(a["calls_rdma"], 1), want,
      "" if a["ops"] == want else "   <== MORE OR FEWER THAN DESIGNED"))
PY
done
