#!/usr/bin/env bash
# hotbuf's raw RDMA latency next to perftest, on the same soft-RoCE device
# in one guest run; plus ibv_reg_mr cost per size.
#
#   tools/bench/run-bench-rdma.sh          on the host: builds build/rdma/rdma_lat
#                                          if needed, then runs itself in the guest
#                                          (scripts/rxe-vm.sh)
#   scripts/rxe-vm.sh tools/bench/run-bench-rdma.sh      the same, binary prebuilt
# Knobs: BENCH_ITERS (200, as perftest -n 200), BENCH_SIZES ("8 16 ... 65536").
#
# 1. write: hotbuf ping-pong (write + poll the last byte, half round trip)
#    vs ib_write_lat (hotbuf runs before and after perftest; the table uses
#    the mean of its two runs and shows their spread as the noise floor); write_imm: the same with WRITE WITH IMMEDIATE, each
#    side waiting for the immediate's completion (no perftest twin: shown
#    against ib_write_lat); send: SEND WITH IMMEDIATE into receives posted
#    in advance (inline up to max_inline; send_ni never inline) vs
#    ib_send_lat; read: post + wait vs ib_read_lat.  rdma_lat runs the
#    ping-pong modes interleaved size by size, so compare hotbuf's columns
#    with each other first: perftest runs minutes apart.  Typical =
#    median (perftest's t_typical); ratio = hotbuf / perftest.
# 2. reg: ibv_reg_mr and ibv_dereg_mr of 4 KiB .. 4 MiB, memcpy of the same
#    size, and R/C (how many reuses registration needs to pay off).
# Timings are emulated (TCG): compare the columns, not absolute values.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
bin=build/rdma/rdma_lat

if [ "${RXEVM:-0}" != 1 ]; then
    if [ ! -x $bin ] || [ -n "$(find tools/bench/rdma_lat.c shim/transport -newer $bin 2>/dev/null)" ]; then
        mkdir -p build/rdma
        mpicc.openmpi -O2 -g -std=gnu11 -Wall -Wextra -Wno-unused-parameter -I. -Ishim \
            -o $bin tools/bench/rdma_lat.c shim/transport/*.c shim/util/why.c shim/util/memlock.c shim/util/ibdev.c -libverbs || exit 1
    fi
    exec timeout 1500 scripts/rxe-vm.sh tools/bench/run-bench-rdma.sh
fi

export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
dev=${RXEVM_DEV:-rxe0} gid=${RXEVM_GID_INDEX:-1}
iters=${BENCH_ITERS:-200}
sizes=${BENCH_SIZES:-"8 16 32 64 128 256 512 1024 2048 4096 8192 16384 32768 65536"}
work=$(mktemp -d /tmp/bench-rdma.XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -x $bin ] || { echo "run-bench-rdma: $bin missing (build on the host)"; exit 1; }

# hotbuf runs twice, before and after perftest: the difference between its
# two runs shows how much the emulated machine drifts meanwhile.
hb_run() { # N
    echo "== hotbuf transport, run $1 (tools/bench/rdma_lat, 2 ranks, $iters iterations + 20 warm-up)"
    timeout 900 mpiexec.openmpi -n 2 $bin "$iters" >"$work/hb$1.txt" 2>"$work/hb$1.err"
    local rc=$?
    cat "$work/hb$1.txt"
    [ $rc = 0 ] || { echo "run-bench-rdma: rdma_lat failed (exit $rc)"; cat "$work/hb$1.err"; exit 1; }
}
hb_run 1

# perftest: one server/client pair per size; the client retries until the
# server listens.  Prints "t_min t_typical t_avg" of the client's result line
# ("- - -" when it never ran).
port=18600
perf() { # TOOL SIZE
    local tool=$1 size=$2 out="" try
    port=$((port + 1))
    timeout 120 "$tool" -d "$dev" -x "$gid" -s "$size" -n "$iters" -F -p $port >"$work/srv.txt" 2>&1 &
    local spid=$!
    for try in $(seq 40); do
        sleep 0.25
        out=$(timeout 60 "$tool" -d "$dev" -x "$gid" -s "$size" -n "$iters" -F -p $port 127.0.0.1 2>&1) &&
            echo "$out" | grep -q "^ *$size " && break
    done
    wait $spid 2>/dev/null
    echo "$out" | awk -v s="$size" '$1 == s && !done { print $3, $5, $6; done = 1 } END { if (!done) print "- - -" }'
}

val1() { # FILE OP SIZE KEY: a field of a RESULT line
    awk -v op="op=$2" -v sz="size=$3" -v key="$4" '$1 == "RESULT" && $2 == op && $3 == sz {
        for (i = 4; i <= NF; i++) if (index($i, key "=") == 1) { print substr($i, length(key) + 2); exit } }' "$1"
}
val() { val1 "$work/hb1.txt" "$@"; }
# mean of both hotbuf runs, and their spread in % of it
hbm() { awk -v a="$(val1 "$work/hb1.txt" "$@")" -v b="$(val1 "$work/hb2.txt" "$@")" \
        'BEGIN { if (a != "" && b != "") printf "%.2f", (a + b) / 2 }'; }
spread() { awk -v a="$(val1 "$work/hb1.txt" "$@")" -v b="$(val1 "$work/hb2.txt" "$@")" \
        'BEGIN { if (a != "" && b != "" && a + b > 0) printf "%.0f%%", 200 * (a > b ? a - b : b - a) / (a + b); else printf "-" }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else printf "-" }'; }

echo
echo "== perftest on the same device ($iters iterations per size)"
for s in $sizes; do
    echo "$s $(perf ib_write_lat "$s") $(perf ib_read_lat "$s") $(perf ib_send_lat "$s")" | tee -a "$work/perf.txt" |
        awk '{ printf "perftest size=%s ib_write_lat min/typical/avg=%s/%s/%s ib_read_lat min/typical/avg=%s/%s/%s ib_send_lat min/typical/avg=%s/%s/%s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
done
echo
hb_run 2

echo
echo "== latency, us (typical = median; hotbuf = mean of its two runs, spread = their"
echo "   difference; ratio = hotbuf / perftest)"
printf "%7s | %8s %6s %8s %6s | %8s %6s | %8s %8s %8s %6s | %8s %6s %8s %6s\n" size hb_write spread ib_write ratio \
    hb_wimm ratio hb_send hb_sndni ib_send ratio hb_read spread ib_read ratio
for s in $sizes; do
    pwt=$(awk -v s="$s" '$1 == s { print $3 }' "$work/perf.txt")
    prt=$(awk -v s="$s" '$1 == s { print $6 }' "$work/perf.txt")
    pst=$(awk -v s="$s" '$1 == s { print $9 }' "$work/perf.txt")
    hw=$(hbm write "$s" typical) hi=$(hbm write_imm "$s" typical) hr=$(hbm read "$s" typical)
    hs=$(hbm send "$s" typical) hn=$(hbm send_noinline "$s" typical)
    printf "%7s | %8s %6s %8s %6s | %8s %6s | %8s %8s %8s %6s | %8s %6s %8s %6s\n" "$s" "${hw:--}" "$(spread write "$s" typical)" \
        "${pwt:--}" "$(ratio "$hw" "$pwt")" "${hi:--}" "$(ratio "$hi" "$pwt")" "${hs:--}" "${hn:--}" "${pst:--}" \
        "$(ratio "$hs" "$pst")" "${hr:--}" "$(spread read "$s" typical)" "${prt:--}" "$(ratio "$hr" "$prt")"
    echo "BENCH op=lat size=$s hb_write=${hw:-} ib_write_lat=${pwt:-} hb_write_imm=${hi:-} hb_send=${hs:-} hb_send_noinline=${hn:-} ib_send_lat=${pst:-} hb_read=${hr:-} ib_read_lat=${prt:-} write_ratio=$(ratio "$hw" "$pwt") write_imm_ratio=$(ratio "$hi" "$pwt") send_ratio=$(ratio "$hs" "$pst") read_ratio=$(ratio "$hr" "$prt")" >>"$work/bench.txt"
done

echo
echo "== ibv_reg_mr cost (rank 0, median): R, per 4 KiB page, vs R(4 KiB), memcpy C, R/C"
printf "%8s %10s %10s %10s %8s %10s %8s\n" size reg_us dereg_us us/page xR4K copy_us R/C
r4=$(val reg 4096 reg)
for s in 4096 8192 16384 32768 65536 131072 262144 524288 1048576 2097152 4194304; do
    r=$(val reg "$s" reg) d=$(val reg "$s" dereg) pp=$(val reg "$s" per_page) c=$(val reg "$s" copy)
    printf "%8s %10s %10s %10s %8s %10s %8s\n" "$s" "${r:--}" "${d:--}" "${pp:--}" "$(ratio "$r" "$r4")" \
        "${c:--}" "$(ratio "$r" "$c")"
done
echo
cat "$work/bench.txt"
