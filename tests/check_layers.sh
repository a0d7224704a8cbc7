#!/usr/bin/env bash
# hotbuf's layering, checked from the #include lines (make test: "layers").
#
# Layers, lowest first.  A file may include headers of its own folder and
# of lower layers; never a higher layer, and never another folder of its
# own layer (two subsystems do not know each other):
#
#   0  shim/util                           MPI-free helpers (clock, list, pool, why, ...)
#   1  shim/transport  regcache            MPI-free leaves: verbs transport, registration cache
#   2  shim/config                         settings (track reads them: config is below track)
#   3  shim/track                          reuse table, tracker, call sites, cost model
#   4  shim/report                         report pipeline (sections registered from above)
#   5  shim/rdma                           RDMA bring-up; owns the report's RDMA section
#   6  shim/core                           runtime, subsystem list, progress
#   7  shim/rma  shim/coll  shim/persist  shim/p2p  shim/mem   subsystems
#   8  pmpi                                the bindings
#
# System headers: <mpi.h> never below the report layer (util, transport,
# regcache, config and track stay MPI-free and unit-testable);
# <infiniband/...> never in config, report, core or pmpi (verbs stay
# behind the transport, the cache and the subsystems that post RDMA).
# A folder under shim/ that is not in the table is an error: place it.
#
# Usage: tests/check_layers.sh [ROOT]   (exit 0 clean, 1 violations)
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# The one table: "layer folder..." per line.
LAYERS='
0 shim/util
1 shim/transport regcache
2 shim/config
3 shim/track
4 shim/report
5 shim/rdma
6 shim/core
7 shim/rma shim/coll shim/persist shim/p2p shim/mem
8 pmpi
'
NO_MPI='shim/util shim/transport regcache shim/config shim/track'
NO_VERBS='shim/config shim/report shim/core pmpi'

declare -A layer_of
while read -r n dirs; do
    [ -n "$n" ] || continue
    for d in $dirs; do layer_of[$d]=$n; done
done <<<"$LAYERS"

bad=0
violation() { echo "layers: $*"; bad=$((bad + 1)); }

for d in shim/*/; do
    d=${d%/}
    [ -n "${layer_of[$d]:-}" ] || violation "$d: folder not in the layer table (tests/check_layers.sh)"
done

for f in shim/*; do
    [ -f "$f" ] && violation "$f: a file directly under shim/ (put it in a folder of the table)"
done

in_list() { local x=$1; shift; for y in "$@"; do [ "$x" = "$y" ] && return 0; done; return 1; }

# Where a quoted include resolves, as the compiler looks (-I. -Ishim):
# the including file's folder, then the root, then shim/.
resolve() {
    local dir=$1 inc=$2
    for c in "$dir/$inc" "$inc" "shim/$inc"; do
        [ -f "$c" ] && { realpath --relative-to=. "$c"; return 0; }
    done
    return 1
}

folder_of() { # the table's folder a path lies in, or ""
    local p=$1
    for d in "${!layer_of[@]}"; do
        case $p in "$d"/*) echo "$d"; return ;; esac
    done
}

check_file() {
    local f=$1 from; from=$(folder_of "$f")
    local lf=${layer_of[$from]}
    local lineno=0 line
    while IFS= read -r line; do
        lineno=$((lineno + 1))
        [[ $line =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*([\"\<])([^\"\>]+) ]] || continue
        local kind=${BASH_REMATCH[1]} inc=${BASH_REMATCH[2]}
        if [ "$kind" = '<' ]; then
            if [ "$inc" = mpi.h ] && in_list "$from" $NO_MPI; then
                violation "$f:$lineno: <mpi.h> in $from (must stay MPI-free)"
            elif [[ $inc == infiniband/* ]] && in_list "$from" $NO_VERBS; then
                violation "$f:$lineno: <$inc> in $from (verbs stay below it)"
            fi
            continue
        fi
        local target to
        if ! target=$(resolve "$(dirname "$f")" "$inc"); then
            violation "$f:$lineno: \"$inc\" not found"
            continue
        fi
        to=$(folder_of "$target")
        [ -n "$to" ] || continue        # outside the table (none today)
        [ "$to" = "$from" ] && continue
        local lt=${layer_of[$to]}
        if [ "$lt" -gt "$lf" ]; then
            violation "$f:$lineno: includes $target (layer $lt $to above layer $lf $from)"
        elif [ "$lt" -eq "$lf" ]; then
            violation "$f:$lineno: includes $target ($to and $from are one layer: neither may use the other)"
        fi
    done <"$f"
}

for f in $(find shim regcache pmpi -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sort); do
    [ -n "$(folder_of "$f")" ] || continue
    check_file "$f"
done

if [ $bad = 0 ]; then
    echo "layers: clean"
    exit 0
fi
echo "layers: $bad violation(s)"
exit 1
