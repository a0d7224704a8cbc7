#!/bin/bash
# rxe-vm.sh -- run CMD as root in a throw-away QEMU guest that has a soft-RoCE
# verbs device rxe0 (rdma_rxe on dummy netdev rxenet0, 10.11.12.13/24).
#
# Usage: scripts/rxe-vm.sh [--] CMD [ARGS...]      e.g. scripts/rxe-vm.sh ibv_devinfo
#   CMD runs in the caller's directory; its stdout+stderr go to stdout, the
#   harness's own messages to stderr.  Guest: host kernel under TCG (2 vCPUs,
#   2 GiB); host / read-only over 9p; the project folder and the results folder
#   read-write at their host paths; tmpfs on /tmp /var/tmp /run /root /dev/shm
#   (host /tmp is hidden: put binaries/outputs in the project or RXEVM_RESULTS).
#   Verbs apps: rxe0, GID index 1 (-g 1 / -x 1); rdma_cm: 10.11.12.13.
#   Env: PATH, HOME=/root, ulimit -l unlimited, OMPI_ALLOW_RUN_AS_ROOT{,_CONFIRM}=1,
#   RXEVM=1 RXEVM_DEV RXEVM_GID_INDEX RXEVM_IP RXEVM_RESULTS, UCX_IB_GID_INDEX=0
#   (UCX 1.13 UD wire-up times out on rxe with the default GID), then the
#   caller's HOTBUF_* OMPI_MCA_* UCX_* MPIR_CVAR_* and RXEVM_ENV variables.
#   MPI over rxe: UCX_NET_DEVICES=rxe0:1 UCX_TLS=rc,ud (no sm: else shared
#   memory is used), plus --mca pml ucx for Open MPI.  Emulated, so slow:
#   ~10 s boot, 0.1-1 s per exec; start servers first and let clients retry.
# Knobs: RXEVM_TIMEOUT=sec (900, whole VM)   RXEVM_RESULTS=dir (<project>/results)
#   RXEVM_ENV="VAR..."  RXEVM_MEM=MiB (2048)  RXEVM_SMP=n (2)  RXEVM_KVER=version
#   RXEVM_CACHE=dir (/var/tmp/rxevm-cache: extracted vmlinux for PVH boot)
#   RXEVM_CONSOLE=1 (guest console to stderr)  RXEVM_KEEP=1 (keep the temp dir)
# Exit: CMD's status; 124 time-out; 125 VM failed before CMD ran (or died under
#   it); on 124/125 before CMD, the qemu log and console tail go to stderr.
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
if ! [ "$VMLINUX" -nt "$KERNEL" ] && command -v xz >/dev/null && mkdir -p "$CACHE" 2>/dev/null; then
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
  echo "export UCX_IB_GID_INDEX=0"    # UCX 1.13 UD times out on rxe with GID 1 (auto)
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
