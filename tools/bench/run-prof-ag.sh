#!/usr/bin/env bash
# Where the CPU goes in an Allgather on the soft-RoCE guest, plain MPI
# against hotbuf's RDMA Allgather: the figures behind the README's "why"
# for the sizes where hotbuf does not gain.
#   1. memcpy rates in the guest (bench-ag memcpy): what a copy costs
#      under the emulator;
#   2. per size and variant (HOTBUF_ALLGATHER=0: the MPI's Allgather
#      under the same preload; 1: hotbuf's), bench-ag loop runs long
#      enough that perf samples the whole guest (cpu-clock) in a window
#      after start-up: the steady state only.  Printed: us per call, the
#      share of samples by command and object (kernel, libc, libhotbuf,
#      UCX, idle), then the busiest symbols.
#
#   tools/bench/run-prof-ag.sh        on the host: builds, then runs itself in the guest
# Knobs: PROF_AG_SPECS ("4096:30000 65536:3000", block:calls, calls long
# enough to outlast PROF_AG_DELAY + PROF_AG_WINDOW), PROF_AG_RANKS (4),
# PROF_AG_DELAY (35 s: start-up under the emulator), PROF_AG_WINDOW (10 s).
# About 6 minutes.  Emulated (TCG): shares and ratios, not absolute times.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
if [ "${RXEVM:-0}" != 1 ]; then
    make -s MPI=openmpi && make -s MPI=openmpi tools || exit 1
    RXEVM_ENV="PROF_AG_SPECS PROF_AG_RANKS PROF_AG_DELAY PROF_AG_WINDOW" RXEVM_TIMEOUT=${RXEVM_TIMEOUT:-1800} \
        exec timeout 1900 scripts/rxe-vm.sh tools/bench/run-prof-ag.sh
fi
command -v perf >/dev/null || { echo "run-prof-ag: no perf (apt-get install linux-perf)"; exit 1; }

work=$(mktemp -d /tmp/prof-ag.XXXXXX)
trap 'rm -rf "$work"' EXIT
export UCX_NET_DEVICES=rxe0:1 UCX_TLS=self,rc,ud
ompi=(mpiexec.openmpi --oversubscribe --mca pml ucx --mca btl self
      -x UCX_NET_DEVICES -x UCX_TLS -x UCX_IB_GID_INDEX)
n=${PROF_AG_RANKS:-4}

echo "== memcpy in the guest"
build/openmpi/tools/bench-ag memcpy

for spec in ${PROF_AG_SPECS:-4096:30000 65536:3000}; do
    block=${spec%:*} calls=${spec#*:}
    for ag in 0 1; do
        name=$([ $ag = 1 ] && echo hotbuf || echo plain)
        env HOTBUF_ALLGATHER=$ag HOTBUF_INTRANODE=1 HOTBUF_REPORT=off \
            timeout 900 tools/hotbuf-run -- "${ompi[@]}" -n "$n" \
            build/openmpi/tools/bench-ag loop "$block" "$calls" >"$work/run" 2>&1 &
        job=$!
        sleep "${PROF_AG_DELAY:-35}"
        if ! kill -0 $job 2>/dev/null; then
            echo "== $name, $block B: the run ended before the window (raise the calls)"
            cat "$work/run"; continue
        fi
        perf record -q -a -e cpu-clock -F 2000 -o "$work/perf.data" -- sleep "${PROF_AG_WINDOW:-10}" 2>/dev/null
        wait $job
        echo "== $name, $block B, $n ranks: $(grep 'per call' "$work/run")"
        perf report -i "$work/perf.data" --stdio --no-children --sort comm,dso 2>/dev/null |
            grep -v '^#' | grep -v '^$' | head -12
        echo "-- busiest symbols"
        perf report -i "$work/perf.data" --stdio --no-children --sort comm,dso,sym 2>/dev/null |
            grep -v '^#' | grep -v '^$' | head -25
    done
done
