# hotbuf-run under SLURM's srun, on a real single-node SLURM (sourced by
# tests/run-tests.sh: uses its work, pass, fail, selected).
#
# The test starts slurmctld and slurmd itself, as root, in the foreground
# of background jobs, with a configuration in its work folder: own ports,
# auth/none (Debian 12's slurm 22.05 still has it, so no munge key or
# daemon), no cgroups (proctrack/linuxproc, task/none), and stops them by
# their PIDs at the end.  That takes a few seconds.  It is skipped with one
# SKIP line when the SLURM daemons are not installed (scripts/install-deps.sh
# installs them) or when not root (slurmd must run tasks as their user).

slurm_work=""
slurm_pids=()

slurm_stop() {
    local p
    for p in "${slurm_pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${slurm_pids[@]}"; do wait "$p" 2>/dev/null; done
    slurm_pids=()
}

# Two free TCP ports (the kernel's choice), for slurmctld and slurmd.
slurm_ports() {
    python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))'
}

slurm_start() { # DIR
    local d=$1 node ports i
    node=$(hostname -s)
    ports=$(slurm_ports) || return 1
    mkdir -p "$d/state" "$d/spool"
    # config_overrides: the node has the CPUs written here whatever the
    # host has, so -n 2 runs on a one-core CI machine too.
    cat >"$d/slurm.conf" <<EOF
ClusterName=hotbuftest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=${ports% *}
SlurmdPort=${ports#* }
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
SlurmdParameters=config_overrides
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP
EOF
    export SLURM_CONF=$d/slurm.conf
    slurmctld -D -i -f "$SLURM_CONF" >"$d/slurmctld.out" 2>&1 &
    slurm_pids+=($!)
    slurmd -D -N "$node" -f "$SLURM_CONF" >"$d/slurmd.out" 2>&1 &
    slurm_pids+=($!)
    for i in $(seq 60); do
        [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && return 0
        sleep 0.5
    done
    return 1
}

# The demo, plain srun against hotbuf-run -- srun: same output, and the
# report of all ranks on stderr.
slurm_demo() { # FLAVOUR PMI-PLUGIN
    local mpi=$1 plugin=$2 d=$slurm_work/demo-$1 prog=build/$1/tools/hotbuf-demo; mkdir -p "$d"
    selected "slurm/$mpi" || return 0
    if ! timeout 120 srun -n 2 --mpi="$plugin" "$prog" >"$d/plain.out" 2>"$d/plain.err" ||
       [ "$(grep -c '^demo checksums' "$d/plain.out")" != 1 ]; then
        fail "slurm/$mpi" "the demo fails under plain srun --mpi=$plugin" "$d/plain.err"; return
    fi
    if ! timeout 120 tools/hotbuf-run -- srun -n 2 --mpi="$plugin" "$prog" >"$d/hb.out" 2>"$d/hb.err"; then
        fail "slurm/$mpi" "the demo fails under hotbuf-run -- srun" "$d/hb.err"
    elif ! cmp -s "$d/plain.out" "$d/hb.out"; then
        fail "slurm/$mpi" "output differs with hotbuf" "$d/hb.out"
    elif [ "$(grep -c '^==== hotbuf buffer-reuse report: 2 rank(s)' "$d/hb.err")" != 1 ]; then
        fail "slurm/$mpi" "no report of 2 ranks" "$d/hb.err"
    else
        pass "slurm/$mpi"
    fi
}

# LD_PRELOAD reaches the ranks but not srun: hotbuf-run execs srun (same
# PID), whose environment and mappings are read while its one task
# sleeps.  The same check on srun started with LD_PRELOAD in its own
# environment must see the library (the check can fail).
slurm_srun_clean() { # PID -> "clean" or what it found
    local found=""
    [ -r "/proc/$1/maps" ] || { echo "srun ended before the check"; return; }
    tr '\0' '\n' <"/proc/$1/environ" | grep -q '^LD_PRELOAD=' && found="LD_PRELOAD in srun's environment"
    grep -q libhotbuf "/proc/$1/maps" && found="$found libhotbuf mapped in srun"
    echo "${found:-clean}"
}

slurm_watch() { # OUT-FILE PID: waits for the task's line, then looks at srun
    local i
    for i in $(seq 600); do # the task then sleeps 3 s
        [ -s "$1" ] && break
        sleep 0.1
    done
    slurm_srun_clean "$2"
}

# Runs CMD in the background with its own PID (no timeout in between:
# that PID must be srun's once hotbuf-run has exec'd it), killed after 60 s.
slurm_bg() { # OUT-FILE CMD...
    local out=$1; shift
    "$@" >"$out" 2>"$out.err" &
    slurm_bg_pid=$!
    (sleep 60; kill $slurm_bg_pid 2>/dev/null) &
    slurm_bg_dog=$!
}

slurm_preload_path() {
    selected slurm/preload_ranks_only || return 0
    local d=$slurm_work/preload lib hb ctl; mkdir -p "$d"
    local task=(sh -c 'echo "rank LD_PRELOAD=$LD_PRELOAD"; sleep 3')
    lib=$(readlink -f build/openmpi/libhotbuf.so)
    slurm_bg "$d/hb.out" tools/hotbuf-run --mpi=openmpi -- srun -n 1 "${task[@]}"
    hb=$(slurm_watch "$d/hb.out" $slurm_bg_pid)
    wait $slurm_bg_pid; kill $slurm_bg_dog 2>/dev/null; wait $slurm_bg_dog 2>/dev/null
    slurm_bg "$d/ctl.out" env LD_PRELOAD="$lib" srun -n 1 "${task[@]}"
    ctl=$(slurm_watch "$d/ctl.out" $slurm_bg_pid)
    wait $slurm_bg_pid; kill $slurm_bg_dog 2>/dev/null; wait $slurm_bg_dog 2>/dev/null
    if [ "$(cat "$d/hb.out")" != "rank LD_PRELOAD=$lib" ]; then
        fail slurm/preload_ranks_only "the rank did not get LD_PRELOAD=$lib" "$d/hb.out.err"
    elif [ "$hb" != clean ]; then
        fail slurm/preload_ranks_only "hotbuf-run's srun: $hb"
    elif [ "$ctl" != "LD_PRELOAD in srun's environment libhotbuf mapped in srun" ]; then
        fail slurm/preload_ranks_only "the check does not see a preloaded srun ($ctl)"
    else
        pass slurm/preload_ranks_only
    fi
}

# A user's --export is extended, not overridden (srun keeps the last
# --export): NONE still gets LD_PRELOAD and the HOTBUF_* variables.
slurm_export() {
    selected slurm/export || return 0
    local d=$slurm_work/export lib; mkdir -p "$d"
    lib=$(readlink -f build/mpich/libhotbuf.so)
    HOTBUF_X_TEST=7 timeout 60 tools/hotbuf-run --mpi=mpich -- srun -n 1 --export=NONE /usr/bin/env \
        >"$d/none.out" 2>"$d/none.err"
    HOTBUF_X_TEST=7 SLURM_EXPORT_ENV=PATH timeout 60 tools/hotbuf-run --mpi=mpich -- srun -n 1 /usr/bin/env \
        >"$d/env.out" 2>"$d/env.err"
    local ok=1 f
    for f in none env; do
        grep -qx "LD_PRELOAD=$lib" "$d/$f.out" && grep -qx 'HOTBUF_X_TEST=7' "$d/$f.out" || ok=0
    done
    # NONE and PATH alone: the rest of the environment stays behind
    grep -q '^HOME=' "$d/none.out" "$d/env.out" && ok=0
    if [ $ok = 1 ]; then pass slurm/export; else fail slurm/export "--export=NONE / SLURM_EXPORT_ENV=PATH" "$d/none.out"; fi
}

slurm_tests() {
    local missing="" c any=0
    for c in openmpi mpich preload_ranks_only export; do selected "slurm/$c" && any=1; done
    [ $any = 1 ] || return 0
    for c in slurmctld slurmd srun sinfo; do command -v $c >/dev/null || missing="$missing $c"; done
    if [ -n "$missing" ]; then
        echo "SKIP slurm/*: not installed:$missing (scripts/install-deps.sh installs slurm-wlm)"
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "SKIP slurm/*: the test's own slurmd must run as root"
        return 0
    fi
    slurm_work=$work/slurm
    mkdir -p "$slurm_work"
    local t0=$SECONDS
    if ! slurm_start "$slurm_work"; then
        fail slurm/start "slurmctld + slurmd did not come up in 30 s" "$slurm_work/slurmctld.log"
        cat "$slurm_work/slurmd.log" "$slurm_work"/*.out 2>/dev/null | tail -20 | sed 's/^/    | /'
    else
        echo "slurm: up in $((SECONDS - t0)) s ($(srun --version))"
        slurm_demo openmpi pmix
        slurm_demo mpich pmi2
        slurm_preload_path
        slurm_export
    fi
    slurm_stop
    unset SLURM_CONF
    echo "slurm: $((SECONDS - t0)) s in all"
}
