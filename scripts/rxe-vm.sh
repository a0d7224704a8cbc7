#!/bin/bash
# rxe-vm.sh -- run a command as root in a throw-away QEMU guest with a soft-RoCE
# verbs device rxe0 (kernel rdma_rxe on a dummy netdev, 10.11.12.13/24).
#
# Usage: scripts/rxe-vm.sh [--] CMD [ARGS...]
#   scripts/rxe-vm.sh ibv_devinfo
#   scripts/rxe-vm.sh tests/mpi/run.sh             (any script of the project)
# CMD runs in the caller's working directory.  Its stdout+stderr are printed
# on stdout; the harness's own messages go to stderr.
#
# Guest: the Debian kernel of the host (TCG, 2 vCPUs, 2 GiB), host / READ-ONLY
# over virtio-9p, the project folder (git top containing this script) and the
# results folder READ-WRITE at their host paths, fresh tmpfs on /tmp /var/tmp
# /run /root /dev/shm (so host /tmp is NOT visible: build there -> use
# RXEVM_RESULTS).  Verbs apps: device rxe0, GID index 1 (RoCE v2, -g 1 / -x 1);
# rdma_cm apps: 10.11.12.13 (lo has no RDMA device).  ulimit -l is unlimited.
# Guest env: sane PATH, HOME=/root, OMPI_ALLOW_RUN_AS_ROOT{,_CONFIRM}=1,
# RXEVM=1, RXEVM_RESULTS, RXEVM_DEV=rxe0, RXEVM_GID_INDEX=1, RXEVM_IP, plus the
# caller's HOTBUF_* OMPI_MCA_* UCX_* MPIR_CVAR_* variables and those in RXEVM_ENV.
# Everything is emulated: slow (~0.1-1 s per exec); let clients retry.
#
# Knobs (environment):
#   RXEVM_TIMEOUT=sec   wall-clock limit for the whole VM (default 900)
#   RXEVM_RESULTS=dir   extra read-write folder (default <project>/results;
#                       created if missing), exported as RXEVM_RESULTS
#   RXEVM_ENV="A B"     more variable names to pass into the guest
#   RXEVM_MEM=MiB (2048)  RXEVM_SMP=n (2)  RXEVM_KVER=version (newest with rdma_rxe)
#   RXEVM_CONSOLE=1     stream the guest console to stderr; RXEVM_KEEP=1 keep temp dir
#   RXEVM_CACHE=dir     cache of the extracted vmlinux (default /var/tmp/rxevm-cache)
# Exit status: CMD's status; 124 time-out; 125 the VM failed before CMD ran
# (the console log tail is printed on stderr).
set -euo pipefail
me=rxe-vm
die() { echo "$me: $*" >&2; exit 125; }

[ "${1:-}" = "--" ] && shift
[ $# -ge 1 ] || die "usage: $0 [--] CMD [ARGS...]"
HERE=$(cd "$(dirname "$0")" && pwd -P)
PROJECT=$(cd "$HERE/.." && pwd -P)
WORKDIR=$(pwd -P)
RESULTS=${RXEVM_RESULTS:-$PROJECT/results}
mkdir -p "$RESULTS" && RESULTS=$(cd "$RESULTS" && pwd -P) || die "bad RXEVM_RESULTS"
TMO=${RXEVM_TIMEOUT:-900}
for p in "$PROJECT" "$RESULTS"; do
  case $p in *[,\ ]*) die "path must not contain ',' or ' ' (qemu syntax): $p" ;; esac
done

"$HERE/install-deps.sh" --vm >&2 || die "scripts/install-deps.sh --vm failed"

# ---- kernel: newest with rdma_rxe; boot the extracted ELF vmlinux via PVH ----
KVER=${RXEVM_KVER:-}
if [ -z "$KVER" ]; then
  for k in $(cd /boot && ls vmlinuz-* 2>/dev/null | sed 's/^vmlinuz-//' | sort -V); do
    ls /lib/modules/"$k"/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko* >/dev/null 2>&1 && KVER=$k
  done
fi
[ -n "$KVER" ] && [ -r /boot/vmlinuz-"$KVER" ] || die "no readable /boot/vmlinuz-* with rdma_rxe"
KERNEL=/boot/vmlinuz-$KVER
CACHE=${RXEVM_CACHE:-/var/tmp/rxevm-cache}
VMLINUX=$CACHE/vmlinux-$KVER
# PVH skips the BIOS and the xz decompression (~5 s under TCG); fall back to bzImage
if ! [ "$VMLINUX" -nt "$KERNEL" ] && command -v xz >/dev/null && mkdir -p "$CACHE"; then
  off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$KERNEL" | head -1 | cut -d: -f1 || true)
  [ -n "$off" ] && tail -c +$((off + 1)) "$KERNEL" | xz -dcq > "$VMLINUX.$$" 2>/dev/null || true
  if [ "$(head -c 4 "$VMLINUX.$$" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
    mv -f "$VMLINUX.$$" "$VMLINUX"
  else rm -f "$VMLINUX.$$"; fi
fi
[ "$VMLINUX" -nt "$KERNEL" ] && KERNEL=$VMLINUX

# ---- control dir (shared with the guest at /run/rxevm) ----
CTL=$(mktemp -d /tmp/rxevm.XXXXXX)
QPID="" TPIDS=""
cleanup() {
  for p in $QPID $TPIDS; do kill "$p" 2>/dev/null || true; done
  if [ "${RXEVM_KEEP:-0}" = 1 ]; then echo "$me: kept $CTL" >&2; else rm -rf "$CTL"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- initramfs: static busybox, stage-1 init, modules, /etc/hosts ----
IR=$CTL/ir
mkdir -p "$IR"/{bin,dev,proc,sys,newroot,mods,etc}
cp -L "$(command -v busybox)" "$IR/bin/busybox"
ldd "$IR/bin/busybox" >/dev/null 2>&1 && die "busybox is not static (install busybox-static)"
cp "$HERE/rxe-vm/init" "$IR/init" && chmod 755 "$IR/init"
printf '127.0.0.1 localhost rxevm\n::1 localhost ip6-localhost ip6-loopback\n' > "$IR/etc/hosts"
# crc32 shash before rdma_rxe (its ICRC uses crypto "crc32"; no modprobe in the guest)
seen=" "
for m in virtio_pci 9pnet_virtio 9p crc32_pclmul crc32_generic dummy rdma_rxe rdma_ucm ib_umad; do
  for f in $(modprobe -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" {print $2}'); do
    case $seen in *" $f "*) continue ;; esac
    seen="$seen$f "
    b=$(basename "$f")
    case $f in
      *.xz)  b=${b%.xz};  xz -dc "$f" > "$IR/mods/$b" ;;
      *.zst) b=${b%.zst}; zstd -qdc "$f" > "$IR/mods/$b" ;;
      *)     cp "$f" "$IR/mods/$b" ;;
    esac
    echo "$b" >> "$IR/mods/order"
  done
done
grep -q '^rdma_rxe.ko$' "$IR/mods/order" || die "rdma_rxe module not found for $KVER"
(cd "$IR" && find . | cpio -o -H newc --quiet | gzip -1) > "$CTL/initrd.gz"
rm -rf "$IR"

# ---- what the guest runs ----
echo "$HERE/rxe-vm/guest.sh" > "$CTL/guest"
SHARES=(-fsdev "local,id=ctl,path=$CTL,security_model=none"
        -device "virtio-9p-pci,fsdev=ctl,mount_tag=rxevmctl"
        -fsdev "local,id=proj,path=$PROJECT,security_model=none"
        -device "virtio-9p-pci,fsdev=proj,mount_tag=rxevmproj")
echo "rxevmproj $PROJECT" > "$CTL/shares"
case $RESULTS/ in
  "$PROJECT"/*) ;;
  *) echo "rxevmres $RESULTS" >> "$CTL/shares"
     SHARES+=(-fsdev "local,id=res,path=$RESULTS,security_model=none"
              -device "virtio-9p-pci,fsdev=res,mount_tag=rxevmres") ;;
esac
{
  echo "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RXEVM=1"
  echo "export RXEVM_DEV=rxe0 RXEVM_GID_INDEX=1 RXEVM_IP=10.11.12.13"
  printf 'export RXEVM_WORKDIR=%q RXEVM_RESULTS=%q\n' "$WORKDIR" "$RESULTS"
  for v in $(compgen -e | grep -E '^(HOTBUF_|OMPI_MCA_|UCX_|MPIR_CVAR_)' || true) ${RXEVM_ENV:-}; do
    [ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
  done
} > "$CTL/env.sh"
{ printf '%q ' "$@"; echo; } > "$CTL/cmd.sh"
: > "$CTL/output.log"; : > "$CTL/console.log"

# ---- boot (always TCG: KVM stops with an emulation failure on these hosts) ----
T0=$SECONDS
timeout --kill-after=10 "$TMO" qemu-system-x86_64 \
  -machine pc -accel tcg,thread=multi -cpu max \
  -smp "${RXEVM_SMP:-2}" -m "${RXEVM_MEM:-2048}" \
  -nodefaults -no-user-config -display none -no-reboot \
  -kernel "$KERNEL" -initrd "$CTL/initrd.gz" \
  -append "console=ttyS0 panic=-1 quiet loglevel=3 mitigations=off" \
  -serial "file:$CTL/console.log" \
  -fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap" \
  -device "virtio-9p-pci,fsdev=root,mount_tag=hostroot" \
  "${SHARES[@]}" > "$CTL/qemu.log" 2>&1 < /dev/null &
QPID=$!
tail -s 0.2 -n +1 -f --pid=$QPID "$CTL/output.log" & TPIDS=$!
if [ "${RXEVM_CONSOLE:-0}" = 1 ]; then
  tail -s 0.2 -n +1 -f --pid=$QPID "$CTL/console.log" >&2 & TPIDS="$TPIDS $!"
fi
qrc=0; wait $QPID || qrc=$?
QPID=""
for p in $TPIDS; do wait "$p" 2>/dev/null || true; done
TPIDS=""
started=$(cat "$CTL/started" 2>/dev/null || true) ended=$(cat "$CTL/ended" 2>/dev/null || true)
echo "$me: booted ${KERNEL##*/}; rxe0 ready at ${started:-?}s, command done at" \
     "${ended:-?}s guest uptime; $((SECONDS - T0))s wall" >&2
[ -s "$CTL/rc" ] && exit "$(cat "$CTL/rc")"
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
  echo "$me: time-out after ${TMO}s (RXEVM_TIMEOUT)" >&2
  [ -n "$started" ] && exit 124
  rc=124
else
  rc=125
  when="before the command ran"; [ -n "$started" ] && when="while the command ran"
  echo "$me: the VM stopped $when (qemu exit $qrc)" >&2
fi
[ -s "$CTL/setupfail" ] && echo "$me: guest setup failed: $(cat "$CTL/setupfail")" >&2
echo "$me: qemu log and guest console tail:" >&2
cat "$CTL/qemu.log" >&2
tr -d '\r' < "$CTL/console.log" | tail -40 >&2
exit $rc
