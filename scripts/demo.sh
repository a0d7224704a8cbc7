#!/usr/bin/env bash
# The README's first command: install what hotbuf needs (Debian 12, as
# root), build it for the MPI behind `mpicc`, and run the bundled demo
# (hot and cold buffers on send, put, get and allgather) on 4 ranks under
# hotbuf, which prints its buffer-reuse report at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make --no-print-directory -s
mpi=$(make --no-print-directory -s print-mpi)
make --no-print-directory -s MPI="$mpi" tools
if [ "$(id -u)" = 0 ]; then # Open MPI refuses root unless told twice
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
case $mpi in
    openmpi) launch=(mpiexec.openmpi --oversubscribe -n 4) ;;
    mpich) launch=(mpiexec.mpich -n 4) ;;
esac
echo "hotbuf demo: tools/hotbuf-run -- ${launch[*]} build/$mpi/tools/hotbuf-demo" >&2
exec tools/hotbuf-run -- "${launch[@]}" "build/$mpi/tools/hotbuf-demo"
