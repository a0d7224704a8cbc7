# make install / uninstall, and the demo job from the installed tree with
# the source tree out of sight (sourced by tests/run-tests.sh: uses its
# top, work, pass, fail, selected).
#
# "Out of sight": the installed hotbuf-run runs in a mount namespace where
# an empty tmpfs covers the source tree, from /, so any path back into the
# tree (a library, a script, a man page) fails there.

# Runs CMD with the source tree hidden; status 125 when this host cannot
# make a mount namespace.
install_hidden() { # CMD...
    local ns=(--mount --propagation private)
    [ "$(id -u)" = 0 ] || ns+=(--user --map-root-user) # a user's own namespace may mount
    unshare "${ns[@]}" sh -c \
        'mount -t tmpfs -o size=1m hotbuf-hidden "$0" || exit 125
         [ -z "$(ls -A "$0")" ] || { echo "source tree still visible" >&2; exit 125; }
         cd / && exec "$@"' "$top" "$@"
}

# The files make install must put under PREFIX, sorted.
install_expected() {
    local f
    {
        echo bin/hotbuf-run
        [ -f tools/hotbuf-report ] && echo bin/hotbuf-report && echo share/man/man1/hotbuf-report.1
        for f in openmpi mpich; do
            echo lib/hotbuf/$f/libhotbuf.so
            echo libexec/hotbuf/$f/hotbuf-demo
        done
        echo share/doc/hotbuf/README.md share/doc/hotbuf/hotbuf-demo.c | tr ' ' '\n'
        echo share/man/man1/hotbuf-run.1
        echo share/man/man7/hotbuf.7
        echo "share/modulefiles/hotbuf/$1"
    } | sort
}

install_files() { (cd "$1" && find . -type f -o -type l | sed 's|^\./||' | sort); }

install_tree() { # PREFIX
    local p=$1 version
    selected install/tree || return 0
    version=$(make --no-print-directory -s print-version)
    if ! diff <(install_expected "$version") <(install_files "$p") >"$work/install/tree.diff"; then
        fail install/tree "installed files differ from the expected list" "$work/install/tree.diff"
    elif grep -rIl -- "$top" "$p" >"$work/install/refs"; then
        fail install/tree "installed text names the source tree" "$work/install/refs"
    elif readelf -d "$p"/lib/hotbuf/*/libhotbuf.so | grep -E 'RPATH|RUNPATH' >"$work/install/refs"; then
        fail install/tree "the library has a run path" "$work/install/refs"
    elif ! grep -qx "set prefix $p" "$p/share/modulefiles/hotbuf/$version"; then
        fail install/tree "the module file does not name PREFIX" "$p/share/modulefiles/hotbuf/$version"
    else
        pass install/tree
    fi
}

# The demo from the installed tree, plain and under the installed
# hotbuf-run, with the source tree hidden: same output, a report of all
# ranks, and the library taken from PREFIX.
install_demo() { # PREFIX FLAVOUR NRANKS
    local p=$1 mpi=$2 n=$3 d=$work/install/demo-$2 l
    selected "install/demo_$mpi" || return 0
    mkdir -p "$d"
    case $mpi in
        openmpi) l=(mpiexec.openmpi --oversubscribe -n "$n") ;;
        mpich) l=(mpiexec.mpich -n "$n") ;;
    esac
    local prog=$p/libexec/hotbuf/$mpi/hotbuf-demo
    timeout 120 "${l[@]}" "$prog" >"$d/plain.out" 2>"$d/plain.err"
    install_hidden "$p/bin/hotbuf-run" --dry-run -- "${l[@]}" "$prog" >"$d/dry.out" 2>"$d/dry.err"
    local rc=$?
    if [ $rc != 0 ]; then # 125: the tmpfs over the tree; 1: unshare itself
        fail "install/demo_$mpi" "hiding the source tree (unshare --mount) or hotbuf-run --dry-run failed (exit $rc)" "$d/dry.err"
        return
    fi
    install_hidden timeout 120 "$p/bin/hotbuf-run" -- "${l[@]}" "$prog" >"$d/hb.out" 2>"$d/hb.err"
    rc=$?
    if [ "$(grep -c '^demo checksums' "$d/plain.out")" != 1 ]; then
        fail "install/demo_$mpi" "the installed demo fails without hotbuf" "$d/plain.err"
    elif [[ $(cat "$d/dry.out") != *"$p/lib/hotbuf/$mpi/libhotbuf.so"* ]]; then
        fail "install/demo_$mpi" "hotbuf-run does not take the installed library" "$d/dry.out"
    elif [ $rc != 0 ] || ! cmp -s "$d/plain.out" "$d/hb.out"; then
        fail "install/demo_$mpi" "the demo under the installed hotbuf-run fails (exit $rc) or differs" "$d/hb.err"
    elif [ "$(grep -c "^==== hotbuf buffer-reuse report: $n rank(s)" "$d/hb.err")" != 1 ]; then
        fail "install/demo_$mpi" "no report of $n ranks" "$d/hb.err"
    else
        pass "install/demo_$mpi"
    fi
}

# DESTDIR stages the tree; the staged tree works where it is (moved, and
# through a symbolic link to hotbuf-run) and uninstall empties it.
install_destdir() {
    selected install/destdir || return 0
    local s=$work/install/stage m=$work/install/moved o
    make --no-print-directory -s install DESTDIR="$s" PREFIX=/opt/hotbuf >"$work/install/destdir.log" 2>&1
    cp -a "$s/opt/hotbuf" "$m"
    mkdir -p "$work/install/links" && ln -sf "$m/bin/hotbuf-run" "$work/install/links/hotbuf-run"
    o=$("$work/install/links/hotbuf-run" --dry-run -- mpiexec.mpich -n 2 ./a.out 2>&1)
    make --no-print-directory -s uninstall DESTDIR="$s" PREFIX=/opt/hotbuf >>"$work/install/destdir.log" 2>&1
    if ! grep -qx 'set prefix /opt/hotbuf' "$m"/share/modulefiles/hotbuf/*; then
        fail install/destdir "the module file does not name PREFIX without DESTDIR" "$work/install/destdir.log"
    elif [[ $o != *"-genv LD_PRELOAD $m/lib/hotbuf/mpich/libhotbuf.so"* ]]; then
        fail install/destdir "a moved tree's hotbuf-run (through a link) does not use its library: $o"
    elif [ -n "$(install_files "$s")" ]; then
        fail install/destdir "uninstall left files" "$work/install/destdir.log"
    else
        pass install/destdir
    fi
}

# The module file loads (Environment Modules or Lmod, whichever is there)
# and puts hotbuf-run and its man page within reach, and unloads cleanly.
install_module() { # PREFIX
    local p=$1 init=""
    selected install/module || return 0
    for init in /usr/share/modules/init/bash /usr/share/lmod/lmod/init/bash ""; do
        [ -z "$init" ] || [ -f "$init" ] && break
    done
    if [ -z "$init" ]; then
        echo "SKIP install/module: neither environment-modules nor lmod is installed"
        return 0
    fi
    local o
    o=$(env -u MANPATH -u LOADEDMODULES -u MODULEPATH bash -c '
        source "$1"; module use "$2/share/modulefiles" && module load hotbuf || exit 1
        echo "run=$(command -v hotbuf-run)"; echo "man=$(man -w hotbuf-run)"; echo "sys=$(man -w man)"
        echo "root=$HOTBUF_ROOT"; module unload hotbuf; echo "after=$(command -v hotbuf-run)"' \
        _ "$init" "$p" 2>&1)
    if [ "$o" = "run=$p/bin/hotbuf-run
man=$p/share/man/man1/hotbuf-run.1
sys=$(man -w man)
root=$p
after=" ]; then
        pass install/module
    else
        fail install/module "module load/unload with $init: $o"
    fi
}

# The man pages render without warnings, and hotbuf-run --help names
# every option hotbuf-run accepts.
install_man() { # PREFIX
    local p=$1 page opt bad=""
    selected install/man || return 0
    for page in "$p"/share/man/man*/*; do
        man --warnings -l "$page" 2>&1 >/dev/null | grep -q . && bad="$bad $(basename "$page")(warnings)"
        [ "$(man -l "$page" 2>/dev/null | wc -l)" -gt 20 ] || bad="$bad $(basename "$page")(empty)"
    done
    for opt in $(sed -n '/^while/,/^done/p' tools/hotbuf-run | grep -oE '^ +--[a-z-]+(=\*)?(\|-h)?\)'  | tr -d ' )*' | cut -d'|' -f1); do
        "$p/bin/hotbuf-run" --help | grep -qe "^  $opt" || bad="$bad --help-lacks:$opt"
    done
    if [ -z "$bad" ]; then pass install/man; else fail install/man "$bad"; fi
}

install_tests() {
    local n any=0
    for n in tree demo_openmpi demo_mpich module man destdir uninstall; do
        selected "install/$n" && any=1
    done
    [ $any = 1 ] || return 0
    local p=$work/install/prefix t0=$SECONDS
    mkdir -p "$work/install"
    if ! make --no-print-directory -s install PREFIX="$p" >"$work/install/make.log" 2>&1; then
        fail install/make "make install failed" "$work/install/make.log"
        return
    fi
    install_tree "$p"
    install_demo "$p" openmpi 4
    install_demo "$p" mpich 2
    install_module "$p"
    install_man "$p"
    install_destdir
    if selected install/uninstall; then
        make --no-print-directory -s uninstall PREFIX="$p" >"$work/install/uninstall.log" 2>&1
        if [ -z "$(install_files "$p")" ]; then pass install/uninstall; else
            install_files "$p" >>"$work/install/uninstall.log"
            fail install/uninstall "files left" "$work/install/uninstall.log"
        fi
    fi
    echo "install: $((SECONDS - t0)) s"
}
