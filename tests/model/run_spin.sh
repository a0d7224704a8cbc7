#!/usr/bin/env bash
# Checks the receiver-pull protocol model (tests/model/p2p_pull.pml) with
# spin: the correct model must pass in every configuration (0 errors), and
# every broken variant must fail (spin finds its counter-example, printed).
# Exit status 0 only when all of that holds.
#   tests/model/run_spin.sh [NAME...]   NAME: correct, or a variant below;
#                                       no NAME: everything
#   tests/model/run_spin.sh --broken    the broken variants' names
# Each run: spin -a, cc -O0 pan.c (compiling with -O1 costs more than it
# saves on these sizes), ./pan exhaustive with -DCOLLAPSE, in a temp dir.
# "cycles" checks that the model has no cycle at all (-DNP, ./pan -l), so
# every execution is finite and the progress rule checked where nothing
# can move (the model's Watchdog) covers liveness.
set -u
here=$(cd "$(dirname "$0")" && pwd)
model=$here/p2p_pull.pml
# Bounds per configuration (see the model's header).  The state space grows
# with every nondeterministic choice of B's program, so each configuration
# keeps only the choices its properties need:
#  order  3 A + 1 C messages, 3 receives (src A|ANY, tag 0|ANY): grant,
#         markers, stamps, credits, migration, the collective
#  probe  2 A + 1 C messages, 2 receives, every pattern, Probe+Recv,
#         Mprobe+Mrecv, Cancel
#  fault  3 A messages, 2 receives, one QP error
#  stamps 5 A messages, 5 receives (ANY, ANY): three markers in one period
#         (MARKER{0} comes with the first ring record, so a stale stamp
#         needs ring, MPI, ring, MPI, ring, all of them received)
#  cycles 2 A + 1 C messages, 2 receives (ANY, ANY), every operation, one
#         QP error
#  revoke 4 A messages, 4 receives (ANY, ANY), 2 revokes: grants again
#         (the region reused, or freed and made anew), markers after a
#         revoke, records in flight when REVOKE comes
#  revoke_fault  3 A messages, 2 receives, 1 revoke, one QP error racing it
#         (NR < NA: B never frees c, see "freed" below)
#  freed  2 A + 1 C messages, 3 receives: every message can be received,
#         so B frees c at the end (nothing of hotbuf's may be left in MPI).
#  freed_fault  the same with one QP error: a record placed at B, whose
#         completion A never saw before the error, is resent by MPI; B
#         received it already and frees c, and the real free waits for
#         A's CLOSE, which follows the duplicate (NO_CLOSE: it stays in MPI)
#  rndv   order's bounds with rendezvous (A: Send, Ssend or large), Probe
#         and Mprobe kept (a matched probe reads before its hand-out), no
#         Cancel: reads completing in any order against merge and matching
#  rndv_fault  fault's bounds with rendezvous, Probe and Mprobe: a QP error
#         before, during or after a read, the RESEND before or after the
#         read fails, or before the match
#  rndv_cycles  cycles' bounds with rendezvous: the reads keep every
#         execution finite (what the Watchdog's liveness checks rely on)
order="-DNA=3 -DNC=1 -DNR=3 -DPAT_SMALL -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
probe="-DNA=2 -DNC=1 -DNR=2"
fault="-DFAULT -DNA=3 -DNC=0 -DNR=2 -DPAT_SMALL -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
stamps="-DNA=5 -DNC=0 -DNR=5 -DPAT_FIXED -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
cycles="-DFAULT -DNA=2 -DNC=1 -DNR=2 -DPAT_FIXED"
freed="-DNA=2 -DNC=1 -DNR=3 -DPAT_SMALL -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
revoke="-DREVOKE -DNREV=2 -DNA=4 -DNC=0 -DNR=4 -DPAT_FIXED -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
rndv="-DRNDV -DNA=3 -DNC=1 -DNR=3 -DPAT_SMALL -DNO_CANCEL"
rndv_fault="-DRNDV -DFAULT -DNA=3 -DNC=0 -DNR=2 -DPAT_SMALL -DNO_CANCEL"
rndv_cycles="-DRNDV $cycles"
revoke_fault="-DREVOKE -DNREV=1 -DFAULT -DNA=3 -DNC=0 -DNR=2 -DPAT_SMALL -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"

# name | expectation | flags
runs=(
    "order|pass|$order"
    "probe|pass|$probe"
    "fault|pass|$fault"
    "stamps|pass|$stamps"
    "cycles|pass|$cycles -DNP"
    "freed|pass|$freed"
    "freed_fault|pass|$freed -DFAULT"
    "revoke|pass|$revoke"
    "revoke_fault|pass|$revoke_fault"
    "rndv|pass|$rndv"
    "rndv_fault|pass|$rndv_fault"
    "rndv_cycles|pass|$rndv_cycles -DNP"
    "no_hook|fail|$order -DNO_HOOK"
    "count_grant|fail|$order -DCOUNT_GRANT"
    "grant_marker|fail|$freed -DGRANT_MARKER -DNO_CLOSE"
    "no_gone|fail|$freed -DNO_GONE"
    "gone_closes|fail|$revoke -DGONE_CLOSES"
    "broken_release|fail|$order -DBROKEN_RELEASE"
    "reset_stamps|fail|$stamps -DRESET_STAMPS"
    "resend_in_order|fail|$fault -DRESEND_IN_ORDER"
    "naive_resend|fail|$fault -DNAIVE_RESEND"
    "resend_no_force|fail|$fault -DRESEND_NO_FORCE"
    "recover_no_marker|fail|$fault -DRECOVER_NO_MARKER"
    "migrate_partial|fail|$probe -DMIGRATE_PARTIAL"
    "migrate_forward|fail|$order -DMIGRATE_FORWARD"
    "free_early|fail|$revoke -DFREE_EARLY"
    "revoke_no_marker|fail|$revoke -DREVOKE_NO_MARKER"
    "free_undrained|fail|$revoke -DFREE_UNDRAINED"
    "rndv_early_ack|fail|$rndv -DRNDV_EARLY_ACK"
    "rndv_drop_resend|fail|$rndv_fault -DRNDV_DROP_RESEND"
    "free_no_close|fail|$freed -DFAULT -DNO_CLOSE"
)

# --broken: the names of the broken variants, one a line (make test runs
# each as its own test: tests/run-tests.sh)
if [ "${1:-}" = --broken ]; then
    for run in "${runs[@]}"; do
        IFS='|' read -r name expect flags <<<"$run"
        [ "$expect" = fail ] && echo "$name"
    done
    exit 0
fi

for tool in spin cc; do
    command -v $tool >/dev/null || { echo "run_spin: $tool not found"; exit 2; }
done
work=$(mktemp -d /tmp/hotbuf-spin.XXXXXX)
trap 'rm -rf "$work"' EXIT

wanted() { # run name: selected by the arguments?
    [ $# -eq 1 ] && return 0
    local name=$1; shift
    for w in "$@"; do
        [ "$w" = "$name" ] && return 0
        [ "$w" = correct ] && [ "${expect:-}" = pass ] && return 0
    done
    return 1
}

# check NAME EXPECT FLAGS: one run, in $work/NAME; prints its verdict,
# exit status 1 when it is not what EXPECT says
check() {
    local name=$1 expect=$2 flags=$3 dir=$work/$1
    mkdir -p "$dir" && cp "$model" "$dir/" && cd "$dir" || return 2
    local mode=-DSAFETY panflags=
    case $flags in *-DNP*) mode=-DNP panflags=-l ;; esac
    if ! spin -a $flags p2p_pull.pml >spin.log 2>&1 ||
        ! cc -O0 -w $mode -DCOLLAPSE -o pan pan.c >cc.log 2>&1; then
        echo "FAIL $name: the verifier does not build"; cat spin.log cc.log | tail -5
        return 1
    fi
    local start secs errors states depth summary trace line kind
    start=$(date +%s.%N)
    ./pan -m100000 $panflags >pan.log 2>&1
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.log | head -1)
    states=$(awk '/states, stored/ {print $1; exit}' pan.log)
    depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.log | head -1)
    summary=$(printf '%s states, depth %s, %.1f s' "${states:-?}" "${depth:-?}" "$secs")
    if [ -z "$errors" ] || grep -q 'max search depth too small' pan.log; then
        echo "FAIL $name: the search did not complete ($summary)"; tail -5 pan.log
        return 1
    fi
    if [ "$expect" = pass ]; then
        if [ "$errors" = 0 ]; then
            echo "PASS $name: 0 errors, $summary"
            return 0
        fi
        echo "FAIL $name: $errors error(s), $summary"; grep 'pan:1' pan.log
        spin -t -T $flags p2p_pull.pml 2>&1 | grep -v '^\s*$' | sed -n '1,40p'
        return 1
    fi
    if [ "$errors" = 0 ] || [ ! -f p2p_pull.pml.trail ]; then
        echo "FAIL $name: the broken variant was not caught ($summary)"
        return 1
    fi
    trace=$(spin -t -T $flags p2p_pull.pml 2>&1)
    line=$(echo "$trace" | sed -n 's/^spin: p2p_pull.pml:\([0-9]*\), Error.*/\1/p' | head -1)
    if [ -n "$line" ]; then
        kind="$(echo "$trace" | sed -n 's/^spin: p2p_pull.pml:[0-9]*, Error: //p' | head -1): $(sed -n "${line}p" p2p_pull.pml | sed -n 's|.*/\* *\(.*\) \*/.*|\1|p')"
    else
        kind=$(grep -m1 'pan:1' pan.log | sed 's/^pan:1: //')
    fi
    echo "PASS $name: fails as it must ($kind; $summary); the counter-example:"
    echo "$trace" | sed -n '/^spin: /q; /^\s*$/d; s/^/    /p' | tail -25
}

# The runs go SPIN_JOBS at a time (default: one per CPU; each ./pan is
# single-threaded), their verdicts printed in the table's order at the end.
jobs=${SPIN_JOBS:-$(nproc)}
status=0 names=()
for run in "${runs[@]}"; do
    IFS='|' read -r name expect flags <<<"$run"
    wanted "$name" "$@" || continue
    names+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    (check "$name" "$expect" "$flags" >"$work/$name.out" 2>&1; echo $? >"$work/$name.rc") &
done
wait
[ ${#names[@]} -gt 0 ] || { echo "run_spin: no run named $*"; exit 2; }
for name in "${names[@]}"; do
    cat "$work/$name.out"
    [ "$(cat "$work/$name.rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
