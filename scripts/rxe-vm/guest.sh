#!/bin/bash
# rxe-vm guest stage 2: PID 1 on the host's (read-only) root, see scripts/rxe-vm.sh.
# Adds rxe0, runs the command from /run/rxevm/cmd.sh, stores its status in
# /run/rxevm/rc and powers off (PID 1 must never exit: that panics the guest).
C=/run/rxevm
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8 USER=root LOGNAME=root
exec 9<> <(:)                       # never written: "read -t" on it is a builtin sleep
nap() { read -r -t "$1" -u 9 || true; }
up() { read -r UP _ < /proc/uptime; }
off() { sync; echo b > /proc/sysrq-trigger; while :; do nap 60; done; }  # qemu -no-reboot exits
fail() { echo "rxe-vm guest: FAILED: $*"; echo "$*" > $C/setupfail; off; }

rdma link add rxe0 type rxe netdev rxenet0 || fail "rdma link add rxe0 type rxe netdev rxenet0"
# wait (<= 10 s) for port ACTIVE and GID 1 = ::ffff:10.11.12.13 (RoCE v2)
for ((t = 0; t < 100; t++)); do
  st=; g=
  read -r st < /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null
  read -r g < /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null
  [[ $st == *ACTIVE* && $g == 0000:0000:0000:0000:0000:ffff:* ]] && break
  nap 0.1
done
[[ $st == *ACTIVE* ]] || fail "rxe0 port not ACTIVE (state '$st', gid1 '$g')"
ulimit -l unlimited
. $C/env.sh
cd "$RXEVM_WORKDIR" || fail "cd $RXEVM_WORKDIR (not visible in the guest: under /tmp, /run, /var/tmp or /root? set RXEVM_RESULTS to it)"
up; echo "$UP" > $C/started
setsid bash $C/cmd.sh < /dev/null >> $C/output.log 2>&1 9>&-
echo $? > $C/rc
up; echo "$UP" > $C/ended
off
