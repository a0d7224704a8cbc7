# Point-to-point acceptance of issue 12, sourced by tests/run-tests.sh (uses
# its pass/fail/work/launcher/selected/run_pair).
#   p2p_random    seeded randomized programs: the per-seed digest lines of
#                 plain MPI against hotbuf with pull forced from the first
#                 message (all) and after 3 receive calls (after:3)
#   p2p_progress  receives completed while the receiver sits in Allreduce
#                 or Barrier; and that it catches a receive side without
#                 progress inside MPI (tests/broken/lazy_recv.c)
P2P_SEEDS=${P2P_SEEDS:-300}

# p2p_random_check NAME FLAVOUR NRANKS: plain (its own checks), then each
# pull mode against it, line by line.
p2p_random_check() {
    local name=$1 mpi=$2 n=$3 dir=$work/$1 l; l=$(launcher "$2" "$3")
    local prog=build/$mpi/tests/p2p_random
    selected "$name" || return 0
    mkdir -p "$dir"
    timeout 600 $l $prog 0 $P2P_SEEDS >"$dir/plain.out" 2>"$dir/plain.err"
    local rc=$?
    if [ $rc != 0 ] || [ "$(grep -c '^seed .* errors 0 digest' "$dir/plain.out")" != "$P2P_SEEDS" ]; then
        fail "$name" "plain MPI: exit $rc, wrong matches or missing seeds (replay one seed: $l $prog SEED 1 trace)" \
            "$dir/plain.err"
        return
    fi
    pass "$name"
    local mode
    for mode in all after:3; do
        local tn="$name/pull_${mode/:/}" out=$dir/pull-${mode/:/}
        HOTBUF_P2P_PULL=$mode timeout 600 tools/hotbuf-run --mpi=$mpi -- $l $prog 0 $P2P_SEEDS \
            >"$out.out" 2>"$out.err"
        rc=$?
        local bad; bad=$(diff <(cat "$dir/plain.out") <(cat "$out.out") | grep -m1 '^[<>] seed' |
                         sed 's/^[<>] seed \([0-9]*\):.*/\1/')
        if [ -n "$bad" ] || [ $rc != 0 ]; then
            [ -n "$bad" ] || bad=$(($(wc -l <"$out.out")))
            {
                echo "first differing seed: $bad"
                echo "plain:  $(grep "^seed $bad:" "$dir/plain.out")"
                echo "hotbuf: $(grep "^seed $bad:" "$out.out")"
                echo "replay: $l $prog $bad 1 trace >plain.txt"
                echo "        HOTBUF_P2P_PULL=$mode tools/hotbuf-run --mpi=$mpi -- $l $prog $bad 1 trace >hotbuf.txt"
                echo "        diff <(sort plain.txt) <(sort hotbuf.txt)"
                grep -m5 -E '^p2p_random|HANG|signal' "$out.err" || tail -5 "$out.err"
            } >"$out.why"
            fail "$tn" "exit $rc; digests differ from plain MPI from seed $bad" "$out.why"
        else
            pass "$tn"
        fi
    done
}

# p2p_progress_caught FLAVOUR: without progress inside MPI the test must hang
# and say so (its watchdog after 8 s).
p2p_progress_caught() {
    local mpi=$1 name=$1/np2/p2p_progress_catches_no_hook dir=$work/$1-lazy l; l=$(launcher $1 2)
    selected "$name" || return 0
    mkdir -p "$dir"
    if ! mpicc.$mpi -shared -fPIC -O2 -o "$dir/lazy.so" tests/broken/lazy_recv.c 2>"$dir/err"; then
        fail "$name" "tests/broken/lazy_recv.c does not build" "$dir/err"; return
    fi
    local pre="-x LD_PRELOAD=$dir/lazy.so"; [ $mpi = mpich ] && pre="-genv LD_PRELOAD $dir/lazy.so"
    timeout 60 $l $pre build/$mpi/tests/p2p_progress allreduce 3 8 >"$dir/out" 2>"$dir/err"
    if grep -q 'p2p_progress: HANG' "$dir/err" && ! grep -q rounds "$dir/out"; then
        pass "$name"
    else
        fail "$name" "a receive side without progress was not caught" "$dir/err"
    fi
}

p2p_tests() {
    local mpi n v
    for mpi in openmpi mpich; do
        for n in 2 4; do
            [ $mpi = mpich ] && [ $n = 4 ] && continue
            p2p_random_check "$mpi/np$n/p2p_random" $mpi $n
            for v in allreduce barrier; do
                HOTBUF_P2P_PULL=all run_pair "$mpi/np$n/p2p_progress_$v" $mpi $n - p2p_progress $v
            done
        done
        p2p_progress_caught $mpi
    done
}
