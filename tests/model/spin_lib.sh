# shellcheck shell=bash disable=SC2154  # runs, spin_model, spin_trace: the runner sets them
# What the spin runners (tests/model/run_spin.sh, run_spin_mcast.sh) share:
# selecting runs, building and running one verifier, judging its verdict,
# and running the table in parallel.  It is kept in one place because
# tests/run-tests.sh and people read the verdict lines ("PASS name: ...",
# "FAIL name: ...") and the exit status, which must mean the same thing for
# every model; a fix made in one runner's copy would not reach the other's.
# Sourced, not run.  The runner sets, then calls spin_main "$@":
#   spin_model       the model's path (copied into each run's directory)
#   spin_trace       how `spin -t` prints the trail: -T (the model's printfs
#                    only) or -p (every step, for models whose printfs need
#                    the step lines around them)
#   spin_summary     if set, the label of a last line counting the runs that
#                    met their expectation and those that did not
#   spin_caught_tail if set, appended to a caught broken variant's PASS line
#   runs             the table, "name|pass or fail|spin flags" each
# and defines two filters, reading spin -t's output on stdin:
#   spin_error_trace      what to show of a correct run that found errors
#   spin_counterexample   what to show after a caught broken variant's line
# Each run: spin -a, cc -O0 pan.c (compiling with -O1 costs more than it
# saves on these sizes), ./pan exhaustive with -DCOLLAPSE, in a temp dir.
# A run whose flags hold -DNP checks for non-progress cycles (./pan -l).

spin_prog=$(basename "$0" .sh)

# spin_wanted NAME [ARG...]: is run NAME selected by the runner's
# arguments?  None selects everything; "correct" every run expected to
# pass (reads $expect, the run's, from spin_main's loop).
spin_wanted() {
    [ $# -eq 1 ] && return 0
    local name=$1 w; shift
    for w in "$@"; do
        [ "$w" = "$name" ] && return 0
        [ "$w" = correct ] && [ "${expect:-}" = pass ] && return 0
    done
    return 1
}

# spin_check NAME EXPECT FLAGS: one run, in $spin_work/NAME; prints its
# verdict, exit status 1 when it is not what EXPECT says.  $flags is
# left unquoted on purpose: it is a list of flags, one word each.
# shellcheck disable=SC2086
spin_check() {
    local name=$1 expect=$2 flags=$3 dir=$spin_work/$1
    local pml
    pml=$(basename "$spin_model")
    mkdir -p "$dir" && cp "$spin_model" "$dir/" && cd "$dir" || return 2
    local mode=-DSAFETY panflags=
    # Whole words: a flag such as -DNPK must not select the cycle search.
    case " $flags " in *" -DNP "*) mode=-DNP panflags=-l ;; esac
    if ! spin -a $flags "$pml" >spin.log 2>&1 ||
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
    # A truncated search proves nothing either way, whatever is expected.
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
        spin -t "$spin_trace" $flags "$pml" 2>&1 | spin_error_trace
        return 1
    fi
    # A broken variant counts as caught only with a trail to show for it.
    if [ "$errors" = 0 ] || [ ! -f "$pml.trail" ]; then
        echo "FAIL $name: the broken variant was not caught ($summary)"
        return 1
    fi
    trace=$(spin -t "$spin_trace" $flags "$pml" 2>&1)
    # Name the violated check by the comment on the model's line, when spin
    # gives one (an assertion); else by pan's own message (e.g. invalid end
    # state, non-progress cycle).
    line=$(echo "$trace" | sed -n "s/^spin: $pml:\([0-9]*\), Error.*/\1/p" | head -1)
    if [ -n "$line" ]; then
        kind="$(echo "$trace" | sed -n "s/^spin: $pml:[0-9]*, Error: //p" | head -1): $(sed -n "${line}p" "$pml" | sed -n 's|.*/\* *\(.*\) \*/.*|\1|p')"
    else
        kind=$(grep -m1 'pan:1' pan.log | sed 's/^pan:1: //')
    fi
    echo "PASS $name: fails as it must ($kind; $summary)${spin_caught_tail:-}"
    echo "$trace" | spin_counterexample
}

# spin_main [NAME...|--broken]: the runner's whole job; exit status 0 only
# when every selected run met its expectation, 2 when it could not start.
spin_main() {
    local run name expect flags
    # --broken: the names of the broken variants, one a line (make test runs
    # each as its own test: tests/run-tests.sh); needs no tool.
    if [ "${1:-}" = --broken ]; then
        for run in "${runs[@]}"; do
            IFS='|' read -r name expect flags <<<"$run"
            [ "$expect" = fail ] && echo "$name"
        done
        exit 0
    fi
    local tool
    for tool in spin cc bc; do
        command -v $tool >/dev/null || { echo "$spin_prog: $tool not found"; exit 2; }
    done
    local tag=${spin_prog#run_}
    spin_work=$(mktemp -d "/tmp/hotbuf-${tag//_/-}.XXXXXX")
    trap 'rm -rf "$spin_work"' EXIT

    # The runs go SPIN_JOBS at a time (default: one per CPU; each ./pan is
    # single-threaded), their verdicts printed in the table's order at the
    # end, so the output does not depend on which run finishes first.
    local t0 jobs names=() ok=0 bad=0
    t0=$(date +%s.%N)
    jobs=${SPIN_JOBS:-$(nproc)}
    for run in "${runs[@]}"; do
        IFS='|' read -r name expect flags <<<"$run"
        spin_wanted "$name" "$@" || continue
        names+=("$name")
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        (spin_check "$name" "$expect" "$flags" >"$spin_work/$name.out" 2>&1
         echo $? >"$spin_work/$name.rc") &
    done
    wait
    [ ${#names[@]} -gt 0 ] || { echo "$spin_prog: no run named $*"; exit 2; }
    for name in "${names[@]}"; do
        cat "$spin_work/$name.out"
        if [ "$(cat "$spin_work/$name.rc" 2>/dev/null)" = 0 ]; then
            ok=$((ok + 1))
        else
            bad=$((bad + 1))
        fi
    done
    if [ -n "${spin_summary:-}" ]; then
        printf '%s: %d passed, %d failed (%.0f s, %d jobs)\n' "$spin_summary" $ok $bad \
            "$(echo "$(date +%s.%N) - $t0" | bc)" "$jobs"
    fi
    [ $bad -eq 0 ]
}
