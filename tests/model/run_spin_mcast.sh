#!/usr/bin/env bash
# Checks the multicast Allgather model (tests/model/ag_mcast.pml, the
# protocol of shim/coll/allgather_mcast.c) with spin: the correct model
# must pass in every configuration (0 errors), and every broken variant must
# fail (spin finds its counter-example, printed).  Exit status 0 only when
# all of that holds; the last line counts the runs that met their
# expectation and those that did not.
#   tests/model/run_spin_mcast.sh [NAME...]  NAME: correct, or a run below;
#                                            no NAME: everything
#   tests/model/run_spin_mcast.sh --broken   the broken variants' names
# Each run: spin -a, cc -O0 pan.c, ./pan exhaustive with -DCOLLAPSE, in a
# temp dir, SPIN_JOBS at a time (default: one per CPU).
# "cycles" checks that the model has no cycle at all (-DNP, ./pan -l), so
# every execution is finite and spin's invalid end state check covers C2.
set -u
here=$(cd "$(dirname "$0")" && pwd)
model=$here/ag_mcast.pml
# Configurations (see the model's header for the bounds):
#  r2c3      2 ranks, 3 calls, 1 packet a block, any loss, any delay
#  r2c4      the same, 4 calls
#  npk2      2 ranks, 2 calls, 2 packets a block (2 WQEs a ring)
#  npk2c3    2 ranks, 3 calls, 2 packets a block, budget 3
#  r3c1      3 ranks, 1 call, budget 4 (losses + spurious NACKs)
#  r3c2      3 ranks, 2 calls, budget 2
#  mixed     2 ranks, 4 calls: mcast, other, mcast, mcast
#  mixed4    2 ranks, 4 calls: mcast, mcast, other, mcast
#  mixed3r   3 ranks, 3 calls: mcast, other, mcast, budget 2
#  unreduced r2c3 without the model's reductions (same verdict expected)
#  unreduced3  3 ranks, 1 call, budget 2, without the reductions
#  cycles    r2c3 with -DNP: no cycle
#  blocked, blocked3  r2c3, r3c2 with BLOCK_BETWEEN (a rank that returned
#            sits in another MPI call until every rank returned)
#  any_order_max  r2c3 with RC in any order and the nack word keeping the
#            largest value (every claim holds without RC order)
# Broken: NO_SEQ_CHECK, EARLY_LEAVE, NO_REPAIR_WAIT (all calls mcast: C4;
# with an other call between: C3), and rc_any_order, a broken assumption:
# RC in any order with the design's nack word (C2).
r2c3="-DNRANK=2 -DNCALL=3"
r3c2="-DNRANK=3 -DNCALL=2 -DBUDGET=2"

# name | expectation | flags
runs=(
    "r2c3|pass|$r2c3"
    "r2c4|pass|-DNRANK=2 -DNCALL=4"
    "npk2|pass|-DNRANK=2 -DNCALL=2 -DNPK=2"
    "npk2c3|pass|-DNRANK=2 -DNCALL=3 -DNPK=2 -DBUDGET=3"
    "r3c1|pass|-DNRANK=3 -DNCALL=1 -DBUDGET=4"
    "r3c2|pass|$r3c2"
    "mixed|pass|-DNRANK=2 -DNCALL=4 -DOTHER=2"
    "mixed4|pass|-DNRANK=2 -DNCALL=4 -DOTHER=4"
    "mixed3r|pass|-DNRANK=3 -DNCALL=3 -DOTHER=2 -DBUDGET=2"
    "unreduced|pass|$r2c3 -DUNREDUCED"
    "unreduced3|pass|-DNRANK=3 -DNCALL=1 -DBUDGET=2 -DUNREDUCED"
    "cycles|pass|$r2c3 -DNP"
    "blocked|pass|$r2c3 -DBLOCK_BETWEEN"
    "blocked3|pass|$r3c2 -DBLOCK_BETWEEN"
    "any_order_max|pass|$r2c3 -DRC_ANY_ORDER -DNACK_MAX -DQL=8"
    "no_seq_check|fail|$r2c3 -DNO_SEQ_CHECK"
    "early_leave|fail|$r2c3 -DEARLY_LEAVE"
    "no_repair_wait|fail|$r2c3 -DNO_REPAIR_WAIT"
    "no_repair_wait_mixed|fail|-DNRANK=2 -DNCALL=2 -DOTHER=2 -DNO_REPAIR_WAIT"
    "rc_any_order|fail|$r2c3 -DRC_ANY_ORDER -DQL=8"
)

if [ "${1:-}" = --broken ]; then
    for run in "${runs[@]}"; do
        IFS='|' read -r name expect flags <<<"$run"
        [ "$expect" = fail ] && echo "$name"
    done
    exit 0
fi

for tool in spin cc bc; do
    command -v $tool >/dev/null || { echo "run_spin_mcast: $tool not found"; exit 2; }
done
work=$(mktemp -d /tmp/hotbuf-spin-mcast.XXXXXX)
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
    case " $flags " in *" -DNP "*) mode=-DNP panflags=-l ;; esac # not -DNPK
    if ! spin -a $flags ag_mcast.pml >spin.log 2>&1 ||
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
        spin -t -p $flags ag_mcast.pml 2>&1 | grep -E '^ +(R[0-9]|NET):|Error|assertion' | tail -40
        return 1
    fi
    if [ "$errors" = 0 ] || [ ! -f ag_mcast.pml.trail ]; then
        echo "FAIL $name: the broken variant was not caught ($summary)"
        return 1
    fi
    trace=$(spin -t -p $flags ag_mcast.pml 2>&1)
    line=$(echo "$trace" | sed -n 's/^spin: ag_mcast.pml:\([0-9]*\), Error.*/\1/p' | head -1)
    if [ -n "$line" ]; then
        kind="$(echo "$trace" | sed -n 's/^spin: ag_mcast.pml:[0-9]*, Error: //p' | head -1): $(sed -n "${line}p" ag_mcast.pml | sed -n 's|.*/\* *\(.*\) \*/.*|\1|p')"
    else
        kind=$(grep -m1 'pan:1' pan.log | sed 's/^pan:1: //')
    fi
    echo "PASS $name: fails as it must ($kind; $summary)"
    echo "    spin: $(grep -m1 'pan:1' pan.log)"
    echo "    the counter-example (the model's printfs):"
    echo "$trace" | grep -E '^ +(R[0-9]|NET):' | sed 's/^ */      /' | tail -25
}

t0=$(date +%s.%N)
jobs=${SPIN_JOBS:-$(nproc)}
names=()
for run in "${runs[@]}"; do
    IFS='|' read -r name expect flags <<<"$run"
    wanted "$name" "$@" || continue
    names+=("$name")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    (check "$name" "$expect" "$flags" >"$work/$name.out" 2>&1; echo $? >"$work/$name.rc") &
done
wait
[ ${#names[@]} -gt 0 ] || { echo "run_spin_mcast: no run named $*"; exit 2; }
ok=0 bad=0
for name in "${names[@]}"; do
    cat "$work/$name.out"
    if [ "$(cat "$work/$name.rc" 2>/dev/null)" = 0 ]; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
done
printf 'ag_mcast: %d passed, %d failed (%.0f s, %d jobs)\n' $ok $bad \
    "$(echo "$(date +%s.%N) - $t0" | bc)" "$jobs"
[ $bad -eq 0 ]
