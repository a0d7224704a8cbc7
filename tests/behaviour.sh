# Behaviour tests, sourced by tests/run-tests.sh (uses its pass/fail/work/
# launcher/selected).  Each runs a real MPI job, with and without hotbuf
# where the point is "nothing changes", and asserts on exit codes, stdout
# and stderr.

# job FLAVOUR NRANKS OUT HOTBUF(0|1) PROGRAM [ARGS]: OUT.out, OUT.err, OUT.rc
job() {
    local mpi=$1 n=$2 out=$3 hb=$4 prog=build/$1/tests/$5; shift 5
    local l; l=$(launcher "$mpi" "$n")
    if [ "$hb" = 1 ]; then
        timeout 120 tools/hotbuf-run --mpi=$mpi -- $l "$prog" "$@" >"$out.out" 2>"$out.err"
    else
        timeout 120 $l "$prog" "$@" >"$out.out" 2>"$out.err"
    fi
    echo $? >"$out.rc"
}

behaviour_invalid_config() { # one line per bad variable, rank 0 only, defaults used
    local mpi=$1 d=$work/invalid-$1; mkdir -p "$d"
    job "$mpi" 4 "$d/plain" 0 reuse_known
    HOTBUF_HASH_BITS=abc HOTBUF_SPECULATIVE=-1 HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$d/r \
        HOTBUF_MIN_SIZE=12Q job "$mpi" 4 "$d/hb" 1 reuse_known
    local lines; lines=$(grep -c 'HOTBUF_HASH_BITS="abc" is invalid (expected an integer in 8..28); using the default 20' "$d/hb.err")
    if [ "$(cat "$d/hb.rc")" != 0 ] || ! cmp -s "$d/plain.out" "$d/hb.out"; then
        fail "$mpi/invalid_config" "job broken by bad variables" "$d/hb.err"
    elif [ "$lines" != 1 ] || [ "$(grep -c 'HOTBUF_SPECULATIVE="-1" is invalid' "$d/hb.err")" != 1 ] ||
         [ "$(grep -c 'HOTBUF_MIN_SIZE="12Q" is invalid' "$d/hb.err")" != 1 ]; then
        fail "$mpi/invalid_config" "expected exactly one line per invalid variable" "$d/hb.err"
    elif ! python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["config"]; sys.exit(c["HOTBUF_HASH_BITS"]["value"] != "20" or c["HOTBUF_MIN_SIZE"]["value"] != "128")' "$d/r.json"; then
        fail "$mpi/invalid_config" "defaults not in effect" "$d/r.json"
    else
        pass "$mpi/invalid_config"
    fi
}

behaviour_enable_off() { # plain forwarding: same output, no report, silent
    local mpi=$1 d=$work/off-$1; mkdir -p "$d"
    job "$mpi" 2 "$d/plain" 0 reuse_known
    HOTBUF_ENABLE=0 HOTBUF_REPORT_FILE=$d/r job "$mpi" 2 "$d/hb" 1 reuse_known
    if ! cmp -s "$d/plain.out" "$d/hb.out" || [ "$(cat "$d/hb.rc")" != 0 ]; then
        fail "$mpi/enable_off" "output differs" "$d/hb.err"
    elif [ -e "$d/r.txt" ] || grep -q hotbuf "$d/hb.err"; then
        fail "$mpi/enable_off" "HOTBUF_ENABLE=0 still reported" "$d/hb.err"
    else
        pass "$mpi/enable_off"
    fi
}

behaviour_default_report() { # text on rank 0's stderr, once
    local mpi=$1 d=$work/default-$1; mkdir -p "$d"
    job "$mpi" 2 "$d/hb" 1 reuse_known
    if [ "$(grep -c '==== hotbuf buffer-reuse report: 2 rank(s)' "$d/hb.err")" != 1 ] ||
       [ "$(grep -c '==== end of hotbuf report' "$d/hb.err")" != 1 ]; then
        fail "$mpi/default_report" "expected one text report on stderr" "$d/hb.err"
    else
        pass "$mpi/default_report"
    fi
}

behaviour_unwritable_report() { # a bad HOTBUF_REPORT_FILE falls back to stderr
    local mpi=$1 d=$work/unwritable-$1; mkdir -p "$d"
    HOTBUF_REPORT_FILE=/nonexistent/dir/r job "$mpi" 2 "$d/hb" 1 reuse_known
    if [ "$(cat "$d/hb.rc")" = 0 ] && grep -q 'cannot write /nonexistent/dir/r.txt' "$d/hb.err" &&
       grep -q 'hotbuf buffer-reuse report' "$d/hb.err"; then
        pass "$mpi/unwritable_report"
    else
        fail "$mpi/unwritable_report" "no fallback to stderr" "$d/hb.err"
    fi
}

behaviour_abort() { # MPI_Abort: same exit status as without hotbuf, no hang, no crash
    local mpi=$1 d=$work/abort-$1; mkdir -p "$d"
    job "$mpi" 2 "$d/plain" 0 abort_early abort
    job "$mpi" 2 "$d/hb" 1 abort_early abort
    local a b; a=$(cat "$d/plain.rc") b=$(cat "$d/hb.rc")
    if [ "$b" = 124 ] || grep -qiE 'segmentation|core dumped' "$d/hb.err"; then
        fail "$mpi/abort" "hung or crashed (exit $b)" "$d/hb.err"
    elif [ "$a" != "$b" ] || [ "$a" = 0 ]; then
        # stdout is not compared: Hydra may drop the aborting rank's last
        # output whether hotbuf is there or not
        fail "$mpi/abort" "exit $b with hotbuf, $a without" "$d/hb.err"
    else
        pass "$mpi/abort"
    fi
}

behaviour_no_finalize() { # exit without MPI_Finalize: same status, a note, no hang
    local mpi=$1 d=$work/nofin-$1; mkdir -p "$d"
    job "$mpi" 2 "$d/plain" 0 abort_early exit
    job "$mpi" 2 "$d/hb" 1 abort_early exit
    local a b; a=$(cat "$d/plain.rc") b=$(cat "$d/hb.rc")
    # Hydra may or may not kill the second rank (exit 9) depending on which
    # rank leaves first: a status the plain job can also end with is fine.
    for retry in 1 2 3; do
        [ "$a" = "$b" ] && break
        job "$mpi" 2 "$d/plain" 0 abort_early exit
        a=$(cat "$d/plain.rc")
    done
    if [ "$b" = 124 ] || grep -qiE 'segmentation|core dumped' "$d/hb.err"; then
        fail "$mpi/no_finalize" "hung or crashed (exit $b)" "$d/hb.err"
    elif [ "$a" != "$b" ] || ! cmp -s "$d/plain.out" "$d/hb.out"; then
        fail "$mpi/no_finalize" "exit $b with hotbuf, $a without" "$d/hb.err"
    elif ! grep -q 'hotbuf: MPI_Finalize was not called; no buffer-reuse report' "$d/hb.err"; then
        fail "$mpi/no_finalize" "no note about the missing report" "$d/hb.err"
    else
        pass "$mpi/no_finalize"
    fi
}

behaviour_callsite_depth() { # deeper call sites name the caller's caller too
    local mpi=$1 d=$work/depth-$1; mkdir -p "$d"
    HOTBUF_CALLSITE_DEPTH=2 HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$d/r job "$mpi" 2 "$d/hb" 1 reuse_known
    if python3 - "$d/r.json" <<'PY'
import json, sys
sites = json.load(open(sys.argv[1]))["sites"]
hot = [s for s in sites if s["name"].startswith("sends (reuse_known.c:26) < main (reuse_known.c:")]
sys.exit(not (len(hot) == 1 and hot[0]["calls"] == 2000))
PY
    then pass "$mpi/callsite_depth2"; else fail "$mpi/callsite_depth2" "no two-frame site" "$d/r.json"; fi
}

behaviour_launcher() { # picks the flavour from the launcher, passes HOTBUF_* to ranks
    local o m
    o=$(HOTBUF_X_TEST=1 tools/hotbuf-run --hash-bits=12 --dry-run -- mpiexec.openmpi -n 2 ./a.out)
    m=$(tools/hotbuf-run --dry-run -- mpiexec.mpich -n 2 ./a.out)
    if [[ $o == *"build/openmpi/libhotbuf.so"*"-x HOTBUF_HASH_BITS"*"-x HOTBUF_X_TEST"* ]] &&
       [[ $m == *"-genv LD_PRELOAD"*"build/mpich/libhotbuf.so"* ]] &&
       ! tools/hotbuf-run --bogus -- true 2>/dev/null; then
        pass "launcher"
    else
        fail "launcher" "unexpected command: $o / $m"
    fi
}

behaviour_launcher_srun() { # srun: flavour from the program, LD_PRELOAD via --export only
    local d=$work/launcher-srun o m n e x; mkdir -p "$d/bin"
    printf '#!/bin/sh\necho "srun: $*"\n' >"$d/bin/srun" && chmod +x "$d/bin/srun"
    local run=(env PATH="$d/bin:$PATH" tools/hotbuf-run --dry-run)
    local ol ml; ol=$(readlink -f build/openmpi/libhotbuf.so) ml=$(readlink -f build/mpich/libhotbuf.so)
    o=$(HOTBUF_X_TEST=1 "${run[@]}" -- srun -n 2 --mpi=pmix build/openmpi/tests/reuse_known 2>&1 | tr -d '\\')
    m=$(LD_PRELOAD=libm.so.6 "${run[@]}" -- srun -N 1 -n 2 build/mpich/tests/reuse_known 2>&1 | tr -d '\\')
    n=$(HOTBUF_X_TEST=1 "${run[@]}" --mpi=mpich -- srun --export NONE -n 1 ./a.out 2>&1 | tr -d '\\')
    e=$(HOTBUF_X_TEST=1 SLURM_EXPORT_ENV=PATH,HOME "${run[@]}" -- srun -n 1 build/mpich/tests/reuse_known 2>&1 | tr -d '\\')
    x=$("${run[@]}" -- srun -n 2 sh -c true 2>&1)
    if [ "$o" = "srun --export=ALL,LD_PRELOAD=$ol -n 2 --mpi=pmix build/openmpi/tests/reuse_known " ] &&
       [ "$m" = "srun --export=ALL,LD_PRELOAD=$ml:libm.so.6 -N 1 -n 2 build/mpich/tests/reuse_known " ] &&
       [ "$n" = "srun --export LD_PRELOAD=$ml,HOTBUF_X_TEST -n 1 ./a.out " ] &&
       [ "$e" = "srun --export=PATH,HOME,LD_PRELOAD=$ml,HOTBUF_X_TEST -n 1 build/mpich/tests/reuse_known " ] &&
       [[ $x == "hotbuf-run: cannot tell which MPI 'srun' runs; pass --mpi="* ]]; then
        pass "launcher_srun"
    else
        fail "launcher_srun" "unexpected srun command: $o / $m / $n / $e / $x"
    fi
}

behaviour_mpmd() { # every application context of an MPMD launch runs with hotbuf
    local mpi=$1 d=$work/mpmd-$1 prog=build/$1/tests/reuse_known; mkdir -p "$d"
    local l; l=$(launcher "$mpi" 1)
    timeout 120 $l "$prog" : -n 1 "$prog" >"$d/plain.out" 2>"$d/plain.err"
    HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$d/r \
        timeout 120 tools/hotbuf-run -- $l "$prog" : -n 1 "$prog" >"$d/hb.out" 2>"$d/hb.err"
    local rc=$?
    if [ $rc != 0 ] || ! cmp -s "$d/plain.out" "$d/hb.out"; then
        fail "$mpi/mpmd" "MPMD job broken (exit $rc) or output differs" "$d/hb.err"
    elif ! python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["ranks"] != 2)' "$d/r.json"; then
        fail "$mpi/mpmd" "the report does not cover both contexts' ranks" "$d/r.json"
    else
        pass "$mpi/mpmd"
    fi
}

behaviour_mixed_env() { # ranks with different settings still agree: no hang, one note
    local mpi=$1 d=$work/mixed-$1 prog=build/$1/tests/reuse_known; mkdir -p "$d"
    local l; l=$(launcher "$mpi" 1)
    timeout 120 $l "$prog" : -n 1 "$prog" >"$d/plain.out" 2>"$d/plain.err"
    timeout 120 tools/hotbuf-run -- $l env HOTBUF_ENABLE=0 "$prog" : -n 1 "$prog" \
        >"$d/off.out" 2>"$d/off.err"
    local rc_off=$?
    HOTBUF_REPORT_FILE=$d/r timeout 120 tools/hotbuf-run -- $l "$prog" : -n 1 \
        env HOTBUF_AG_BUFFER=16K "$prog" >"$d/ag.out" 2>"$d/ag.err"
    local rc_ag=$?
    if [ $rc_off != 0 ] || [ $rc_ag != 0 ] || ! cmp -s "$d/plain.out" "$d/off.out" ||
       ! cmp -s "$d/plain.out" "$d/ag.out"; then
        fail "$mpi/mixed_env" "job broken (exit $rc_off, $rc_ag) or output differs" "$d/off.err"
    elif [ "$(grep -c '^hotbuf: HOTBUF_ENABLE differs between ranks (0..1); all ranks use 0$' "$d/off.err")" != 1 ] ||
         grep -q 'hotbuf buffer-reuse report' "$d/off.err"; then
        fail "$mpi/mixed_env" "expected one note and no report when one rank has HOTBUF_ENABLE=0" "$d/off.err"
    elif [ "$(grep -c 'HOTBUF_AG_BUFFER differs between ranks (16384..524288); all ranks use 16384' "$d/ag.err")" != 1 ] ||
         ! grep -q 'HOTBUF_AG_BUFFER=16384' "$d/r.txt"; then
        fail "$mpi/mixed_env" "expected one note and a report with the agreed HOTBUF_AG_BUFFER" "$d/ag.err"
    else
        pass "$mpi/mixed_env"
    fi
}

behaviour_mpmd_fortran() { # a C and a Fortran program in one job: same results, Fortran sites
    local mpi=$1 f d l rc; l=$(launcher "$mpi" 1)
    for f in mixed_lang_f mixed_lang_f08; do
        d=$work/mpmd-fortran-$mpi-$f; mkdir -p "$d"
        selected "$mpi/mpmd_$f" || continue
        local cmd=($l build/$mpi/tests/mixed_lang : -n 1 build/$mpi/tests/$f)
        # (Open MPI's default one-sided component needs MPI_THREAD_MULTIPLE)
        export OMPI_MCA_osc=sm,ucx UCX_TLS=self,sm
        timeout 120 "${cmd[@]}" >"$d/plain.out" 2>"$d/plain.err"
        HOTBUF_REPORT=json HOTBUF_REPORT_SITES=100 HOTBUF_REPORT_FILE=$d/r \
            timeout 120 tools/hotbuf-run --mpi=$mpi -- "${cmd[@]}" >"$d/hb.out" 2>"$d/hb.err"
        rc=$?
        unset OMPI_MCA_osc UCX_TLS
        if [ $rc != 0 ] || [ "$(grep -c 'wrong 0, 64KiB wrong 0, in place wrong 0; .*get wrong 0; checksum' \
                                 "$d/plain.out")" != 2 ] || ! cmp -s "$d/plain.out" "$d/hb.out"; then
            fail "$mpi/mpmd_$f" "MPMD C+Fortran job broken (exit $rc) or output differs" "$d/hb.err"
        elif ! python3 - "$d/r.json" "$f.f90" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
calls = {op: sum(s["calls"] for s in r["sites"] if s["op"] == op and "(%s:" % sys.argv[2] in s["name"])
         for op in ("allgather", "put", "get")}
# per Fortran rank: 3 x 12 Allgathers; 12 fence + 12 lock + 12 allocated-window Puts, Gets
sys.exit(calls != {"allgather": 36, "put": 36, "get": 36})
PY
        then
            fail "$mpi/mpmd_$f" "Fortran call sites missing from the report" "$d/r.json"
        else
            pass "$mpi/mpmd_$f"
        fi
    done
}

# progress_hook_ran ERR: rank 1 of tests/mpi/progress_hook ran hotbuf's
# progress in each of MPI_Barrier, MPI_Allreduce and MPI_Recv, and the
# test probe claimed all 5 of its messages from inside them.
progress_hook_ran() {
    grep -qE '^progress_hook: rank 1 passes barrier [1-9][0-9]* allreduce [1-9][0-9]* recv [1-9][0-9]* claimed 5$' "$1"
}

# Progress inside MPI (core/progress_hook.c): with the hook, hotbuf's
# progress runs while rank 1 sits in MPI calls, and PMPI calls made from
# inside it (the test probe: Iprobe, Improbe + Imrecv + Test) neither
# recurse nor hang; with the hook left out (test switch) the same check
# must fail.  Output identical to plain MPI either way.
behaviour_progress_hook() {
    local mpi=$1 d=$work/phook-$1; mkdir -p "$d"
    job "$mpi" 2 "$d/plain" 0 progress_hook
    for hook in 1 0; do
        HOTBUF_TEST_PROGRESS_HOOK=$hook HOTBUF_TEST_PROGRESS_PROBE=1 HOTBUF_REPORT=json \
            HOTBUF_REPORT_FILE=$d/r$hook job "$mpi" 2 "$d/hb$hook" 1 progress_hook
    done
    local active; active=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["progress_hook"]["ranks_active"])' "$d/r1.json" 2>&1)
    if [ "$(cat "$d/hb1.rc")" != 0 ] || [ "$(cat "$d/hb0.rc")" != 0 ] ||
       ! grep -q 'probe messages 5$' "$d/plain.out" ||
       ! cmp -s "$d/plain.out" "$d/hb1.out" || ! cmp -s "$d/plain.out" "$d/hb0.out"; then
        fail "$mpi/progress_hook" "output differs from plain MPI" "$d/hb1.err"
    elif ! progress_hook_ran "$d/hb1.err" || [ "$active" != 2 ]; then
        fail "$mpi/progress_hook" "hotbuf's progress did not run inside MPI_Barrier/Allreduce/Recv" "$d/hb1.err"
    elif progress_hook_ran "$d/hb0.err"; then
        fail "$mpi/progress_hook" "the check passes with the hook left out: it proves nothing" "$d/hb0.err"
    else
        pass "$mpi/progress_hook"
    fi
}

behaviour_spawn_report() { # a spawned job's report goes to a file of its own
    # The child of tests/mpi/spawn_merge disconnects from its parent before
    # MPI_Finalize, so MPI_Comm_get_parent is null there; hotbuf must know
    # from MPI_Init that it was spawned.  Both wrote PREFIX.json before
    # (sometimes a parse error in it, always no PREFIX.spawned-PID.json).
    local mpi=$1 d=$work/spawn-$1; mkdir -p "$d"
    job "$mpi" 1 "$d/plain" 0 spawn_merge
    HOTBUF_REPORT=json HOTBUF_REPORT_FILE=$d/r job "$mpi" 1 "$d/hb" 1 spawn_merge
    local kids; kids=$(ls "$d"/r.spawned-*.json 2>/dev/null | wc -l)
    if [ "$(cat "$d/hb.rc")" != 0 ] || ! cmp -s "$d/plain.out" "$d/hb.out"; then
        fail "$mpi/spawn_report" "the spawned job differs from plain MPI" "$d/hb.err"
    elif [ "$kids" != 1 ] ||
         ! python3 -c 'import json,sys; [json.load(open(f)) for f in sys.argv[1:]]' \
             "$d/r.json" "$d"/r.spawned-*.json 2>"$d/json.err"; then
        fail "$mpi/spawn_report" "want r.json and one r.spawned-PID.json, each one report ($kids spawned files)" \
            "$d/json.err"
    else
        pass "$mpi/spawn_report"
    fi
}

# MPICH's spawn is not tested (it fails without hotbuf in the guest).
selected openmpi/spawn_report && behaviour_spawn_report openmpi

for mpi in openmpi mpich; do
    for b in invalid_config enable_off default_report unwritable_report abort no_finalize \
             callsite_depth mpmd mixed_env progress_hook; do
        selected "$mpi/$b" && behaviour_$b $mpi
    done
    behaviour_mpmd_fortran $mpi
done
selected launcher && behaviour_launcher
selected launcher_srun && behaviour_launcher_srun
