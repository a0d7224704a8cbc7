#!/usr/bin/env python3
"""Exhaustive check of the RDMA Allgather's immediates (shim/coll/allgather_int.h).

Model: P ranks run a schedule of copy-based calls, each with recursive
doubling ("rd"), the ring ("ring") or direct ("direct"), as the
thresholds allow on 2^k ranks.  At every step a rank posts one RDMA WRITE
WITH IMMEDIATE to that step's peer and waits until the flag word it
expects holds a value of this call or later (direct: it writes every
other rank, then waits for each one's word direct[writer]).  Messages are delivered in any
interleaving, in order per (writer, target) pair.  Delivering one runs the
receiver's dispatcher (hb_ag_on_imm): it rebuilds the call number from the
immediate's 3 bits and the receiver's own call count, and raises a word:
rd[k] for recursive doubling (k from the immediate), data[n] for the n-th
ring immediate of that call (counted: one writer, in order), direct[r]
for rank r's direct write.  The data goes through the two halves of
the collective buffer: call N reads and writes half N&1 at every rank.
A rank's writes of call N read its half N&1 until they complete: the
receiver's acknowledgement reaches the writer, a separate event after
the delivery (until then the NIC may send the data again, from the
half).  The writer waits for that when it begins call N+2, the next one
to write the half (hotbuf's hb_ag_settle), so it may end a call with its
writes unacknowledged, even undelivered.  Acknowledgements are not
separate moves (they multiply the states past the time limit): one
always arrives eventually, and only its writer waits for it, so a wait
for it only delays that rank; what the model tracks is which writes a
rank has posted per call (every rank posts in every call), and a rank may begin call N+2 only
after its writes of call N were delivered (then it waits for their
acknowledgements) -- without the wait, one may still be missing.  Every interleaving of every
schedule of CALLS calls is explored.

Checked: whenever a wait passes, the write it waits for (that writer, that
call, that step) has landed; the call number rebuilt from 3 bits is the
writer's, whatever the receiver's progress (before or after it counted
its own call); no write of call N lands at a rank that has not finished
call N-2 (whose half it would overwrite); no rank begins call N+2 while a
write of its call N still reads its half; and no state is stuck.

  --layout split     rd[] and data[] are separate words (hotbuf's layout:
                     every word has one writer): must hold.
  --layout shared    recursive doubling raises data[k] too (the old shared
                     layout): a violation is expected.
  --placement cqe    a message's data is in place when its immediate is
                     taken (what the InfiniBand specification promises for
                     the receive completion of a WRITE WITH IMMEDIATE): must
                     hold.
  --placement trailer  the flag is a trailer in the data's own write,
                     polled in memory: the specification does not order
                     placement within a message, so the trailer may land
                     first; a violation is expected.
  --seq-bits N       bits of the call number in the immediate (3); 1 must
                     fail on 4 ranks (a peer one call ahead of a receiver
                     that has not counted its own call yet is 2 ahead).
  --settle after-next  a rank waits for its writes of call N when it begins
                     call N+2 (hotbuf's): must hold.
  --settle next      ... when it ends call N (hotbuf before): must hold.
  --settle none      never: a violation is expected (a half is written
                     again while a write still reads it).
  --algos A,B       the algorithms schedules mix (rd,ring,direct); direct
                     multiplies the states: make test mixes all three over
                     2 calls and rd,ring over 3.
Exit 0 when the property holds, 1 with a trace when it does not.
"""
import argparse
import itertools
import sys


def actions(algo, rank, p, layout):
    """One call's actions in order: ("post", to, step) or ("wait", word,
    from, step); a write is tagged (writer, target, call, step)."""
    if algo == "rd":
        out = []
        for k in range(p.bit_length() - 1):
            w = ("data" if layout == "shared" else "rd", k)
            out += [("post", rank ^ (1 << k), k), ("wait", w, rank ^ (1 << k), k)]
        return out
    if algo == "ring":
        out = []
        for s in range(p - 1):
            out += [("post", (rank + 1) % p, s), ("wait", ("data", s), (rank - 1) % p, s)]
        return out
    # direct: this rank's block to every other rank, then wait for theirs
    return ([("post", (rank + i) % p, 0) for i in range(1, p)] +
            [("wait", ("direct", (rank - i) % p), (rank - i) % p, 0) for i in range(1, p)])


def rebuild(low, seq, bits):
    """hotbuf's imm_seq(): the call nearest seq with these low bits."""
    m = 1 << bits
    d = (low - seq) % m
    return seq + d if d < m // 2 else seq - (m - d)


def counted(rank_state):
    """The receiver's call counts (c->seq) it may hold in this state: at the
    very start of call c+1 it may not have counted it yet."""
    call, i = rank_state
    return (call, call + 1) if i == 0 else (call + 1,)


def deliver(state, i, p, opts):
    """Delivers the head of channel i: (new state, what), or a violation."""
    ranks, chans, words, rings, landed, unplaced = state
    (algo, step, call, tag), dst = chans[i][0], i % p
    if ranks[dst][0] < call - 2:
        return None, (f"write {tag[0]}->{tag[1]} of call {call} lands in half "
                      f"{call % 2} of rank {dst}, which has not finished call "
                      f"{call - 2} with it")
    for seq in counted(ranks[dst]):
        got = rebuild(call % (1 << opts.seq_bits), seq, opts.seq_bits)
        if got != call:
            return None, (f"rank {dst} counted {seq} call(s): an immediate of call {call} "
                          f"is taken for call {got}")
    ring_seq, ring_next = rings[dst]
    if algo == "ring":
        if call != ring_seq:
            ring_seq, ring_next = call, 0
        w = ("data", ring_next)
        ring_next += 1
    elif algo == "direct":
        w = ("direct", tag[0])
    else:
        w = ("data" if opts.layout == "shared" else "rd", step)
    f = dict(words[dst])
    f[w] = max(f.get(w, 0), call)
    nw, nr, nc = list(words), list(rings), list(chans)
    nw[dst] = tuple(sorted(f.items()))
    nr[dst] = (ring_seq, ring_next)
    nc[i] = chans[i][1:]
    if opts.placement == "cqe":
        landed, unplaced = landed | {tag}, unplaced
    else:  # the trailer may be placed before the rest of the write
        unplaced = unplaced | {tag}
    return ((ranks, tuple(nc), tuple(nw), tuple(nr), landed, unplaced),
            f"write {tag[0]}->{tag[1]} call {call} step {tag[3]}: immediate taken, "
            f"{w} = {f[w]}"), None


def moves_of(state, p, schedule, plans, opts):
    """Every move from state: [(state, what)], or a violation."""
    ranks, chans, words, rings, landed, unplaced = state
    moves = []
    for r, (c, i) in enumerate(ranks):
        if c == len(schedule):
            continue
        nr = list(ranks)
        nr[r] = (c, i + 1)
        if i == len(plans[r][c]):  # end of call c+1: settle, then call c+2 may begin
            # call c+2 writes half c&1: call c's writes must have read it
            limit = {"next": c + 1, "after-next": c, "none": -1}[opts.settle]
            if all(m[2] > limit for d in range(p) for m in chans[r * p + d]):
                if limit < c and c >= 1:  # call c's writes posted, none waited for
                    return None, (f"rank {r} begins call {c + 2} (half {c % 2}) while "
                                  f"a write of its call {c} may be unacknowledged: "
                                  f"the NIC may still read that half")
                nr[r] = (c + 1, 0)
                moves.append(((tuple(nr), chans, words, rings, landed, unplaced),
                              f"rank {r} ends call {c + 1}"))
            continue
        act = plans[r][c][i]
        if act[0] == "post":
            _, to, st = act
            ch = list(chans)
            ch[r * p + to] = chans[r * p + to] + ((schedule[c], st, c + 1, (r, to, c + 1, st)),)
            moves.append(((tuple(nr), tuple(ch), words, rings, landed, unplaced),
                          f"rank {r} call {c + 1} ({schedule[c]}) step {st}: writes rank {to}"))
            continue
        _, w, frm, st = act
        val = dict(words[r]).get(w, 0)
        if val >= c + 1:
            if (frm, r, c + 1, st) not in landed:
                return None, (f"rank {r} call {c + 1} ({schedule[c]}) step {st}: "
                              f"{w} = {val} passes the wait, but rank {frm}'s write "
                              f"has not landed")
            moves.append(((tuple(nr), chans, words, rings, landed, unplaced),
                          f"rank {r} call {c + 1} step {st}: wait for {w} passes"))
    for i, ch in enumerate(chans):
        if ch:
            nxt, bad = deliver(state, i, p, opts)
            if bad:
                return None, bad
            moves.append(nxt)
    for tag in unplaced:
        moves.append(((ranks, chans, words, rings, landed | {tag}, unplaced - {tag}),
                      f"write {tag[0]}->{tag[1]} call {tag[2]} step {tag[3]}: data placed"))
    return moves, None


def check(p, schedule, opts):
    """None, or a violation: (message, trace)."""
    plans = [[actions(a, r, p, opts.layout) for a in schedule] for r in range(p)]
    start = (tuple((0, 0) for _ in range(p)),     # rank: (call, next action; past the last: drain)
             tuple(() for _ in range(p * p)),     # channels (src, dst), in order
             tuple(() for _ in range(p)),         # flag words: sorted (word, value)
             tuple((0, 0) for _ in range(p)),     # ring counting: (call, next step)
             frozenset(),                         # landed (writer, target, call, step)
             frozenset())                         # immediate seen, data not placed
    seen = {start}
    stack = [(start, ())]
    while stack:
        state, trace = stack.pop()
        moves, bad = moves_of(state, p, schedule, plans, opts)
        if bad:
            return bad, trace
        if not moves and any(c < len(schedule) for c, _ in state[0]):
            return "stuck", trace
        for nxt, what in moves:
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, trace + (what,)))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--layout", choices=("split", "shared"), default="split")
    ap.add_argument("--placement", choices=("cqe", "trailer"), default="cqe")
    ap.add_argument("--seq-bits", type=int, default=3)
    ap.add_argument("--settle", choices=("after-next", "next", "none"), default="after-next")
    ap.add_argument("--algos", default="rd,ring,direct",
                    help="algorithms the schedules mix (direct multiplies the states)")
    opts = ap.parse_args()
    assert opts.ranks >= 2 and opts.ranks & (opts.ranks - 1) == 0, "2^k ranks"
    name = (f"{opts.layout}, {opts.placement}, {opts.seq_bits} seq bits, settle "
            f"{opts.settle}, {opts.ranks} ranks, {opts.algos}")
    for schedule in itertools.product(opts.algos.split(","), repeat=opts.calls):
        bad = check(opts.ranks, schedule, opts)
        if bad:
            msg, trace = bad
            print(f"ag_flags: {name}, calls {' '.join(schedule)}: VIOLATION: {msg}")
            for line in trace[-40:]:
                print("   ", line)
            return 1
    print(f"ag_flags: {name}, every schedule of {opts.calls} calls: holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
