#!/usr/bin/env bash
# Installs what hotbuf needs to build, test and benchmark on Debian 12.
# Idempotent: skips apt entirely when every package is already present.
#   scripts/install-deps.sh          build + host tests (Open MPI, MPICH, verbs headers;
#                                    SLURM for the srun tests, Environment Modules and
#                                    man for the installation tests, spin for the
#                                    protocol models, matplotlib for hotbuf-report's
#                                    plots and Chromium to load its pages)
#   scripts/install-deps.sh --vm     also the soft-RoCE guest (qemu, kernel, busybox, perftest,
#                                    perf for tools/bench/run-prof-ag.sh)
set -eu

pkgs="build-essential gfortran pkg-config
      openmpi-bin libopenmpi-dev mpich libmpich-dev
      libunwind-dev libibverbs-dev rdma-core ibverbs-providers ibverbs-utils
      uthash-dev libdw-dev valgrind python3
      slurmctld slurmd slurm-client man-db spin
      python3-matplotlib chromium"
# The module-file test needs a module system: Lmod if the host has it
# (it conflicts with Environment Modules), else Environment Modules.
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
installed lmod || pkgs="$pkgs environment-modules"
if [ "${1:-}" = "--vm" ]; then
    pkgs="$pkgs qemu-system-x86 linux-image-amd64 busybox-static cpio kmod
          perftest iproute2 linux-perf"
fi

missing=""
for p in $pkgs; do
    installed "$p" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "hotbuf: need root to install:$missing" >&2
    exit 1
fi
echo "hotbuf: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt (an unattended upgrade, a second flavour's build)
# instead of failing on its lock.
lock="-o DPkg::Lock::Timeout=900"
# shellcheck disable=SC2086
apt-get $lock update -qq
# shellcheck disable=SC2086
apt-get $lock install -y -qq --no-install-recommends $missing >/dev/null
