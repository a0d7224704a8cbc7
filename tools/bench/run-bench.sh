#!/usr/bin/env bash
# `make bench`: hotbuf's pass-through overhead, three measurements, each
# comparing variants inside one run and printing ratios.
#   1. 2-rank ping-pong 8 B..8 KiB: PMPI_Send vs MPI_Send through hotbuf's
#      tracking, alternating rounds in the same processes (and the same
#      program without hotbuf, as a sanity line).
#   2. Instructions per intercepted MPI_Send (wrapper + reuse-table
#      lookup), from callgrind: MPI_Send inclusive minus PMPI_Send inside it.
#   2b. Instructions hotbuf adds to one cold message (Send + Irecv + Wait,
#      2 ranks, callgrind), pull off and, with the receive side, pull forced.
#   3. Reuse-table lookup cost with 10^2 .. 10^6 tracked buffers: ns and
#      instructions per lookup.
# Output lines start with a keyword (pingpong, send_instructions, table)
# followed by key=value pairs; a summary with the targets closes it.
set -euo pipefail
mpi=${1:-openmpi}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
lib=$top/build/$mpi/libhotbuf.so
tools=$top/build/$mpi/tools
work=$(mktemp -d /tmp/hotbuf-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
case $mpi in
    openmpi) launch="mpiexec.openmpi -n 2" ;;
    mpich) launch="mpiexec.mpich -n 2" ;;
esac

echo "== 1. ping-pong, $mpi, 2 ranks: PMPI_Send (plain) vs MPI_Send (hotbuf tracking)"
HOTBUF_REPORT=off timeout 600 tools/hotbuf-run --mpi=$mpi -- $launch "$tools/bench-pingpong" \
    ${BENCH_ITERS:-300} ${BENCH_ROUNDS:-101} | tee "$work/pp.txt"
echo "   control: the same binary without hotbuf (both columns take the plain path;"
echo "   its ratios are the noise floor of this machine)"
timeout 600 $launch "$tools/bench-pingpong" ${BENCH_ITERS:-300} ${BENCH_ROUNDS:-101} | grep pingpong >"$work/control.txt"
sed 's/^/   /' "$work/control.txt"

echo "== 2. instructions per intercepted MPI_Send (callgrind, 1 rank, 10000 sends of 1 KiB to self)"
calls=10000
timeout 600 valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$work/cg.%p" \
    env LD_PRELOAD="$lib" HOTBUF_REPORT=off "$tools/bench-send1" $calls >/dev/null 2>&1
cg=$(ls -S "$work"/cg.* | head -1)
callgrind_annotate --inclusive=yes "$cg" >"$work/cg.txt" 2>/dev/null
# Inclusive cost as seen from the caller ("=> file:FUNC (10,000x)"): that
# counts the code of the wrapper inlined from other files too.
incl() { grep -E "=> .*[:]$2 [(][0-9,]+x[)]" "$1" | head -1 | awk '{gsub(",","",$1); print $1}'; }
# PMPI_Send is reached from more than one place inside the wrapper (the
# inline fast path and the out-of-line slow one): the sum of its arcs.
incl_all() { { grep -E "=> .*[:]$2 [(][0-9,]+x[)]" "$1" || true; } | awk '{gsub(",","",$1); s += $1} END {print s + 0}'; }
send=$(incl "$work/cg.txt" MPI_Send) psend=$(incl_all "$work/cg.txt" PMPI_Send)
per_call=$(( (send - psend) / calls ))
echo "send_instructions per_call=$per_call mpi_send_inclusive=$send pmpi_send_inclusive=$psend calls=$calls"

echo "== 2b. instructions hotbuf adds to a cold message (callgrind, 2 ranks, 10000 messages of 64 B:"
echo "   MPI_Send on rank 0, MPI_Irecv + MPI_Wait on rank 1; each call minus the PMPI call inside it)"
msgs=10000
msg_run() { # tag, then extra environment
    local tag=$1; shift
    mkdir -p "$work/$tag"
    timeout 600 $launch valgrind --tool=callgrind --trace-children=yes \
        --callgrind-out-file="$work/$tag/cg.%p" env LD_PRELOAD="$lib" HOTBUF_REPORT=off "$@" \
        "$tools/bench-msg" $msgs >/dev/null 2>&1 || true
    for f in $(ls -S "$work/$tag"/cg.* 2>/dev/null | head -2); do
        callgrind_annotate --inclusive=yes "$f" >"$f.txt" 2>/dev/null
    done
    local total=0 line="" recv=0 mpi_recv=0
    for x in Send Irecv Wait; do
        # an unwrapped call adds nothing (MPI_X is MPI's own symbol)
        local a p o
        a=$(cat "$work/$tag"/*.txt 2>/dev/null | incl_all /dev/stdin MPI_$x)
        p=$(cat "$work/$tag"/*.txt 2>/dev/null | incl_all /dev/stdin PMPI_$x)
        o=$(( a > 0 ? (a - p) / msgs : 0 ))
        total=$((total + o)) line="$line ${x,,}=$o"
        # the receive's whole cost, and MPI's own part of it
        [ $x = Send ] || recv=$((recv + a / msgs)) mpi_recv=$((mpi_recv + p / msgs))
    done
    echo "msg_instructions mode=$tag added_per_message=$total$line recv_total=$recv recv_in_pmpi=$mpi_recv"
}
msg_run pull_off HOTBUF_P2P_PULL=auto | tee "$work/msg.txt"
# With every communicator pulled (the receive side's test mode), once the
# receive-side wrappers exist: the cost of hotbuf's own matching.
if grep -q hb_p2p_engaged build/$mpi/gen/bodies.h 2>/dev/null; then
    msg_run pull_all HOTBUF_P2P_PULL=all | tee -a "$work/msg.txt"
fi

echo "== 3. reuse-table lookup cost vs tracked buffers (2^20 buckets)"
for n in 100 1000 10000 100000 1000000; do
    line=$(build/tools/bench-table $n 2000000)
    timeout 600 valgrind --tool=callgrind --callgrind-out-file="$work/tb.$n" \
        --toggle-collect=bench_lookups build/tools/bench-table $n 100000 >/dev/null 2>&1
    ir=$(callgrind_annotate "$work/tb.$n" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
    # two bench_lookups calls of 100000 lookups each
    echo "$line instructions_per_lookup=$(awk -v i="$ir" 'BEGIN{printf "%.1f", i/200000}')"
done | tee "$work/table.txt"

echo "== summary"
ratios() {
    awk -v what="$1" '/^pingpong/ { split($0, f, " ratio="); r = f[2] + 0; if (r > max) max = r; sum += r; n++ }
         END { printf "%s ratio over 8 B..8 KiB: mean %.4f, worst %.4f\n", what, sum / n, max }' "$2"
}
ratios "pingpong hotbuf/plain" "$work/pp.txt"
ratios "pingpong control (no hotbuf)" "$work/control.txt"
awk '/^pingpong/ { split($0, f, " aa_ratio="); r = f[2] + 0; if (r > max) max = r; sum += r; n++ }
     END { if (n) printf "pingpong A/A plain/plain in the same run (noise floor): mean %.4f, worst %.4f\n", sum / n, max }' "$work/pp.txt"
echo "   (target: hotbuf/plain <= 1.02)"
echo "instructions per MPI_Send: $per_call (target <= 150)"
awk '/mode=pull_off/ { split($3, f, "="); printf "instructions hotbuf adds per cold message, pull off: %d (target <= 120)\n", f[2] }' "$work/msg.txt"
# Under pull hotbuf receives by Improbe + Imrecv itself (no PMPI_Irecv):
# its Irecv + Wait against MPI's own Irecv + Wait of the pull-off run.
awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[$2, kv[1]] = kv[2] } }
     END { if (v["mode=pull_all", "recv_total"] != "")
             printf "receive (Irecv + Wait) under pull: %d instructions, MPI alone %d: x%.1f\n",
                    v["mode=pull_all", "recv_total"], v["mode=pull_off", "recv_in_pmpi"],
                    v["mode=pull_all", "recv_total"] / v["mode=pull_off", "recv_in_pmpi"] }' "$work/msg.txt"
awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
       if (NR == 1) { n0 = v["ns_per_lookup"]; h0 = v["ns_hot_set"]; i0 = v["instructions_per_lookup"] }
       n1 = v["ns_per_lookup"]; h1 = v["ns_hot_set"]; i1 = v["instructions_per_lookup"] }
     END { printf "table lookup 10^6 vs 10^2 buffers: instructions x%.2f, time x%.2f for a hot set, x%.2f uniform over all (cache-bound) (target: flat)\n",
           i1 / i0, h1 / h0, n1 / n0 }' "$work/table.txt"
