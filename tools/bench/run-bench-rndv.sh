#!/usr/bin/env bash
# Rendezvous benchmark of issue 14 in the soft-RoCE guest: plain MPI over
# UCX on rxe0 against hotbuf's ring rendezvous (HOTBUF_P2P_RING=1: the
# receiver RDMA-reads a large message straight into the matched buffer),
# 2 ranks of Open MPI (pml ucx), 16 KiB .. 4 MiB.
#
#   tools/bench/run-bench-rndv.sh   on the host: builds, then runs itself in
#                                   the guest (scripts/rxe-vm.sh)
# Share the guest: flock /tmp/hotbuf-guest.lock tools/bench/run-bench-rndv.sh
#
#  1. reused: one buffer per size and rank (tools/bench/bench-p2p.c):
#     plain (PMPI on a communicator hotbuf never sees), hotbuf (MPI_Send/
#     MPI_Recv on MPI_COMM_WORLD) and plain2 in rotating rounds of the
#     same processes; ratio = hotbuf/plain, aa = plain2/plain (the noise
#     floor); ping-pong (latency, us one way) and stream (us per message:
#     bandwidth = bytes / us).
#  2. fresh: the same with every message in new pages at both ends (a
#     registration per message for hotbuf's cache and UCX's alike).
#  3. first message of a fresh buffer, plain and hotbuf, with and without
#     a persistent request (bench-p2p first): MPI_Send against
#     Send_init/Recv_init + Start + Wait, the init timed apart.
# After each launch, from hotbuf's report: rendezvous messages and reads,
# registrations (cache misses) and hits, persistent registrations.
# Speed on rxe is emulated (TCG): an RDMA operation is software in the
# guest's kernel, so the ratios show what the paths cost on rxe, not on a
# NIC; the registration counts are the mechanism.
#
# Knobs: BENCH_ITERS (8), BENCH_ROUNDS (5), BENCH_WARMUP (6), BENCH_WINDOW
# (4), BENCH_MIN/BENCH_MAX (16384/4194304), BENCH_FIRST_SIZES ("65536
# 1048576 4194304"), BENCH_FIRST_TRIALS (7), BENCH_RUN_TIMEOUT (900 s per
# launch).  Outputs in $RXEVM_RESULTS/bench-rndv/ (default results/).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
if [ "${RXEVM:-0}" != 1 ]; then
    { timeout 900 make -s MPI=openmpi && timeout 600 make -s MPI=openmpi tools; } ||
        { echo "run-bench-rndv: build failed"; exit 1; }
    export RXEVM_ENV="${RXEVM_ENV:-} BENCH_ITERS BENCH_ROUNDS BENCH_WARMUP BENCH_WINDOW BENCH_MIN BENCH_MAX BENCH_FIRST_SIZES BENCH_FIRST_TRIALS BENCH_RUN_TIMEOUT"
    export RXEVM_TIMEOUT=${RXEVM_TIMEOUT:-2400}
    exec timeout $((RXEVM_TIMEOUT + 60)) scripts/rxe-vm.sh tools/bench/run-bench-rndv.sh
fi

iters=${BENCH_ITERS:-8} rounds=${BENCH_ROUNDS:-5} warm=${BENCH_WARMUP:-6}
win=${BENCH_WINDOW:-4} tmo=${BENCH_RUN_TIMEOUT:-900}
min=${BENCH_MIN:-16384} max=${BENCH_MAX:-4194304}
out=${RXEVM_RESULTS:-$top/results}/bench-rndv
mkdir -p "$out" || exit 1
rm -rf "${out:?}"/*
bench=build/openmpi/tools/bench-p2p
[ -x $bench ] || { echo "run-bench-rndv: $bench missing (build on the host)"; exit 1; }

export UCX_NET_DEVICES=${RXEVM_DEV:-rxe0}:1 UCX_TLS=self,rc,ud
# opal_common_ucx_progress_iterations 32: see run-bench-p2p.sh (with the
# default hotbuf finds no progress hook inside pml ucx and never pulls)
ompi=(mpiexec.openmpi --oversubscribe --mca pml ucx --mca btl self
      --mca opal_common_ucx_progress_iterations 32
      -x UCX_NET_DEVICES -x UCX_TLS -x UCX_IB_GID_INDEX)
ring=(HOTBUF_P2P_RING=1 HOTBUF_INTRANODE=1)
status=0

# launched NAME ARGS...: bench-p2p under hotbuf, output in $out/NAME.*
launched() {
    local name=$1 t0=$SECONDS rc; shift
    env "${ring[@]}" HOTBUF_REPORT=json HOTBUF_REPORT_FILE="$out/$name" timeout "$tmo" \
        tools/hotbuf-run -- "${ompi[@]}" -n 2 $bench "$@" >"$out/$name.txt" 2>"$out/$name.err"
    rc=$?
    echo "   $name: exit $rc, $((SECONDS - t0)) s"
    if [ $rc != 0 ]; then
        echo "   $name FAILED; last lines:"; tail -12 "$out/$name.err" | sed 's/^/     /'
        status=1
        return 1
    fi
    grep -q '^# data check: ok' "$out/$name.txt" || { echo "   $name: DATA CHECK FAILED"; status=1; }
    counts "$name"
}

# counts NAME: what the report says hotbuf did (both ranks summed)
counts() {
    python3 - "$out/$1.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    g, d = r["p2p"]["ring"], r["rdma"]
except (OSError, ValueError, KeyError) as e:
    print("   !!!!!! no report (%s) !!!!!!" % e)
    sys.exit(1)
print("   report: pairs live %d, ring_msgs %d, rendezvous %d (%d MiB), reads %d (bounced %d, failed %d), "
      "registrations (cache misses) %d, cache hits %d, invalidated %d, persistent registered %d send + %d recv; "
      "for their churn: %d sends by MPI, %d reads bounced"
      % (g["live"], g["ring_msgs"], g["rndv_msgs"], g["rndv_bytes"] >> 20, g["rndv_reads"],
         g["rndv_bounced"], g["rndv_read_failed"], d["cache_misses"], d["cache_hits"],
         d["cache_invalidations"], g["persistent_registered"], g["persistent_recv_registered"],
         g["rndv_churned"], g["rndv_churned_rx"]))
if g["rndv_msgs"] == 0:
    print("   !!!!!! no message went by rendezvous: hotbuf's column is MPI's path !!!!!!")
    sys.exit(1)
PY
    [ $? = 0 ] || status=1
}

table() {
    grep -v '^RESULT \|^SENDS\|^FIRST' "$out/$1.txt" | sed 's/^/   /'
    python3 - "$out/$1.txt" <<'PY'
import sys
for l in open(sys.argv[1]):
    if l.startswith("RESULT ") and "pattern=stream" in l:
        kv = dict(f.split("=", 1) for f in l.split()[1:])
        b = int(kv["size"])
        print("   bandwidth %8d B: plain %7.1f MB/s, hotbuf %7.1f MB/s" % (
              b, b / float(kv["plain_us"]), b / float(kv["hotbuf_us"])))
PY
}

echo "== rendezvous, 2 ranks, Open MPI over UCX on $UCX_NET_DEVICES; hotbuf: ${ring[*]}"
echo "   $rounds rounds of $iters per variant and size, $warm warm-up, stream window $win"
T0=$SECONDS
for mode in reused fresh; do
    echo
    echo "== $mode buffers: us one way (pingpong) / per message (stream); ratio = hotbuf/plain, aa = plain2/plain"
    launched "$mode" "$iters" "$rounds" "$warm" "$win" "$min" "$max" "$mode" && table "$mode"
done
echo
echo "== first message of a fresh buffer (us to the send's completion, rank 0; init_us: the init call)"
for size in ${BENCH_FIRST_SIZES:-65536 1048576 4194304}; do
    launched "first-$size" first "${BENCH_FIRST_TRIALS:-7}" "$size" &&
        grep '^FIRST' "$out/first-$size.txt" | sed 's/^/   /'
done
echo
echo "guest run $((SECONDS - T0)) s; outputs in $out"
exit $status
