#!/usr/bin/env bash
# Checks the receiver-pull protocol model (tests/model/p2p_pull.pml) with
# spin: the correct model must pass in every configuration (0 errors), and
# every broken variant must fail (spin finds its counter-example, printed).
# Exit status 0 only when all of that holds.
#   tests/model/run_spin.sh [NAME...]   NAME: correct, or a variant below;
#                                       no NAME: everything
#   tests/model/run_spin.sh --broken    the broken variants' names
# Each run: spin -a, cc -O0 pan.c, ./pan exhaustive with -DCOLLAPSE, in a
# temp dir, SPIN_JOBS at a time (tests/model/spin_lib.sh, shared with
# run_spin_mcast.sh).
# "cycles" checks that the model has no cycle at all (-DNP, ./pan -l), so
# every execution is finite and the progress rule checked where nothing
# can move (the model's Watchdog) covers liveness.
set -u
here=$(cd "$(dirname "$0")" && pwd)
spin_model=$here/p2p_pull.pml
# Bounds per configuration (see the model's header).  The state space grows
# with every nondeterministic choice of B's program, so each configuration
# keeps only the choices its properties need:
#  order  3 A + 1 C messages, 3 receives (src A|ANY, tag 0|ANY): grant,
#         markers, stamps, credits, migration, the collective
#  probe  2 A + 1 C messages, 2 receives, every pattern, Probe+Recv,
#         Mprobe+Mrecv, Cancel
#  fault  3 A messages, 2 receives, one QP error
#  stamps 5 A messages, 5 receives (ANY, ANY): three markers in one period
#         (MARKER{0} comes with the first ring record, so a stale stamp
#         needs ring, MPI, ring, MPI, ring, all of them received)
#  cycles 2 A + 1 C messages, 2 receives (ANY, ANY), every operation, one
#         QP error
#  revoke 4 A messages, 4 receives (ANY, ANY), 2 revokes: grants again
#         (the region reused, or freed and made anew), markers after a
#         revoke, records in flight when REVOKE comes
#  revoke_fault  3 A messages, 2 receives, 1 revoke, one QP error racing it
#         (NR < NA: B never frees c, see "freed" below)
#  freed  2 A + 1 C messages, 3 receives: every message can be received,
#         so B frees c at the end (nothing of hotbuf's may be left in MPI).
#  freed_fault  the same with one QP error: a record placed at B, whose
#         completion A never saw before the error, is resent by MPI; B
#         received it already and frees c, and the real free waits for
#         A's CLOSE, which follows the duplicate (NO_CLOSE: it stays in MPI)
#  rndv   order's bounds with rendezvous (A: Send, Ssend or large), Probe
#         and Mprobe kept (a matched probe reads before its hand-out), no
#         Cancel: reads completing in any order against merge and matching
#  rndv_fault  fault's bounds with rendezvous, Probe and Mprobe: a QP error
#         before, during or after a read, the RESEND before or after the
#         read fails, or before the match
#  rndv_cycles  cycles' bounds with rendezvous: the reads keep every
#         execution finite (what the Watchdog's liveness checks rely on)
order="-DNA=3 -DNC=1 -DNR=3 -DPAT_SMALL -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
probe="-DNA=2 -DNC=1 -DNR=2"
fault="-DFAULT -DNA=3 -DNC=0 -DNR=2 -DPAT_SMALL -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
stamps="-DNA=5 -DNC=0 -DNR=5 -DPAT_FIXED -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
cycles="-DFAULT -DNA=2 -DNC=1 -DNR=2 -DPAT_FIXED"
freed="-DNA=2 -DNC=1 -DNR=3 -DPAT_SMALL -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
revoke="-DREVOKE -DNREV=2 -DNA=4 -DNC=0 -DNR=4 -DPAT_FIXED -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"
rndv="-DRNDV -DNA=3 -DNC=1 -DNR=3 -DPAT_SMALL -DNO_CANCEL"
rndv_fault="-DRNDV -DFAULT -DNA=3 -DNC=0 -DNR=2 -DPAT_SMALL -DNO_CANCEL"
rndv_cycles="-DRNDV $cycles"
revoke_fault="-DREVOKE -DNREV=1 -DFAULT -DNA=3 -DNC=0 -DNR=2 -DPAT_SMALL -DNO_PROBE -DNO_MPROBE -DNO_CANCEL"

# name | expectation | flags
runs=(
    "order|pass|$order"
    "probe|pass|$probe"
    "fault|pass|$fault"
    "stamps|pass|$stamps"
    "cycles|pass|$cycles -DNP"
    "freed|pass|$freed"
    "freed_fault|pass|$freed -DFAULT"
    "revoke|pass|$revoke"
    "revoke_fault|pass|$revoke_fault"
    "rndv|pass|$rndv"
    "rndv_fault|pass|$rndv_fault"
    "rndv_cycles|pass|$rndv_cycles -DNP"
    "no_hook|fail|$order -DNO_HOOK"
    "count_grant|fail|$order -DCOUNT_GRANT"
    "grant_marker|fail|$freed -DGRANT_MARKER -DNO_CLOSE"
    "no_gone|fail|$freed -DNO_GONE"
    "gone_closes|fail|$revoke -DGONE_CLOSES"
    "broken_release|fail|$order -DBROKEN_RELEASE"
    "reset_stamps|fail|$stamps -DRESET_STAMPS"
    "resend_in_order|fail|$fault -DRESEND_IN_ORDER"
    "naive_resend|fail|$fault -DNAIVE_RESEND"
    "resend_no_force|fail|$fault -DRESEND_NO_FORCE"
    "recover_no_marker|fail|$fault -DRECOVER_NO_MARKER"
    "migrate_partial|fail|$probe -DMIGRATE_PARTIAL"
    "migrate_forward|fail|$order -DMIGRATE_FORWARD"
    "free_early|fail|$revoke -DFREE_EARLY"
    "revoke_no_marker|fail|$revoke -DREVOKE_NO_MARKER"
    "free_undrained|fail|$revoke -DFREE_UNDRAINED"
    "rndv_early_ack|fail|$rndv -DRNDV_EARLY_ACK"
    "rndv_drop_resend|fail|$rndv_fault -DRNDV_DROP_RESEND"
    "free_no_close|fail|$freed -DFAULT -DNO_CLOSE"
)

# What spin -t shows: -T, the model's printfs only (each step of B's
# program prints what it does).
spin_trace=-T
spin_caught_tail="; the counter-example:"
spin_error_trace() { grep -v '^\s*$' | sed -n '1,40p'; }
spin_counterexample() { sed -n '/^spin: /q; /^\s*$/d; s/^/    /p' | tail -25; }
# shellcheck source-path=SCRIPTDIR source=spin_lib.sh
. "$here/spin_lib.sh"
spin_main "$@"
