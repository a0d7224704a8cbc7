#!/usr/bin/env bash
# Checks the multicast Allgather model (tests/model/ag_mcast.pml, the
# protocol of shim/coll/allgather_mcast.c) with spin: the correct model
# must pass in every configuration (0 errors), and every broken variant must
# fail (spin finds its counter-example, printed).  Exit status 0 only when
# all of that holds; the last line counts the runs that met their
# expectation and those that did not.
#   tests/model/run_spin_mcast.sh [NAME...]  NAME: correct, or a run below;
#                                            no NAME: everything
#   tests/model/run_spin_mcast.sh --broken   the broken variants' names
# Each run: spin -a, cc -O0 pan.c, ./pan exhaustive with -DCOLLAPSE, in a
# temp dir, SPIN_JOBS at a time (default: one per CPU; tests/model/
# spin_lib.sh, shared with run_spin.sh).
# "cycles" checks that the model has no cycle at all (-DNP, ./pan -l), so
# every execution is finite and spin's invalid end state check covers C2.
set -u
here=$(cd "$(dirname "$0")" && pwd)
spin_model=$here/ag_mcast.pml
# Configurations (see the model's header for the bounds):
#  r2c3      2 ranks, 3 calls, 1 packet a block, any loss, any delay
#  r2c4      the same, 4 calls
#  npk2      2 ranks, 2 calls, 2 packets a block (2 WQEs a ring)
#  npk2c3    2 ranks, 3 calls, 2 packets a block, budget 3
#  r3c1      3 ranks, 1 call, budget 4 (losses + spurious NACKs)
#  r3c2      3 ranks, 2 calls, budget 2
#  mixed     2 ranks, 4 calls: mcast, other, mcast, mcast
#  mixed4    2 ranks, 4 calls: mcast, mcast, other, mcast
#  mixed3r   3 ranks, 3 calls: mcast, other, mcast, budget 2
#  unreduced r2c3 without the model's reductions (same verdict expected)
#  unreduced3  3 ranks, 1 call, budget 2, without the reductions
#  cycles    r2c3 with -DNP: no cycle
#  blocked, blocked3  r2c3, r3c2 with BLOCK_BETWEEN (a rank that returned
#            sits in another MPI call until every rank returned)
#  any_order_max  r2c3 with RC in any order and the nack word keeping the
#            largest value (every claim holds without RC order)
# Broken: NO_SEQ_CHECK, EARLY_LEAVE, NO_REPAIR_WAIT (all calls mcast: C4;
# with an other call between: C3), and rc_any_order, a broken assumption:
# RC in any order with the design's nack word (C2).
r2c3="-DNRANK=2 -DNCALL=3"
r3c2="-DNRANK=3 -DNCALL=2 -DBUDGET=2"

# name | expectation | flags
runs=(
    "r2c3|pass|$r2c3"
    "r2c4|pass|-DNRANK=2 -DNCALL=4"
    "npk2|pass|-DNRANK=2 -DNCALL=2 -DNPK=2"
    "npk2c3|pass|-DNRANK=2 -DNCALL=3 -DNPK=2 -DBUDGET=3"
    "r3c1|pass|-DNRANK=3 -DNCALL=1 -DBUDGET=4"
    "r3c2|pass|$r3c2"
    "mixed|pass|-DNRANK=2 -DNCALL=4 -DOTHER=2"
    "mixed4|pass|-DNRANK=2 -DNCALL=4 -DOTHER=4"
    "mixed3r|pass|-DNRANK=3 -DNCALL=3 -DOTHER=2 -DBUDGET=2"
    "unreduced|pass|$r2c3 -DUNREDUCED"
    "unreduced3|pass|-DNRANK=3 -DNCALL=1 -DBUDGET=2 -DUNREDUCED"
    "cycles|pass|$r2c3 -DNP"
    "blocked|pass|$r2c3 -DBLOCK_BETWEEN"
    "blocked3|pass|$r3c2 -DBLOCK_BETWEEN"
    "any_order_max|pass|$r2c3 -DRC_ANY_ORDER -DNACK_MAX -DQL=8"
    "no_seq_check|fail|$r2c3 -DNO_SEQ_CHECK"
    "early_leave|fail|$r2c3 -DEARLY_LEAVE"
    "no_repair_wait|fail|$r2c3 -DNO_REPAIR_WAIT"
    "no_repair_wait_mixed|fail|-DNRANK=2 -DNCALL=2 -DOTHER=2 -DNO_REPAIR_WAIT"
    "rc_any_order|fail|$r2c3 -DRC_ANY_ORDER -DQL=8"
)

# What spin -t shows: -p, every step, of which the model's printfs
# ("R0: ...", "NET: ...") are kept; the spin: lines name the failed check.
spin_trace=-p
spin_summary=ag_mcast
spin_error_trace() { grep -E '^ +(R[0-9]|NET):|Error|assertion' | tail -40; }
spin_counterexample() {
    echo "    spin: $(grep -m1 'pan:1' pan.log)"
    echo "    the counter-example (the model's printfs):"
    grep -E '^ +(R[0-9]|NET):' | sed 's/^ */      /' | tail -25
}
# shellcheck source-path=SCRIPTDIR source=spin_lib.sh
. "$here/spin_lib.sh"
spin_main "$@"
