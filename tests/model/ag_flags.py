#!/usr/bin/env python3
"""Exhaustive check of the RDMA Allgather's flags (shim/coll/allgather_int.h).

Model: P ranks run a schedule of copy-based calls, each with recursive
doubling ("rd") or the ring ("ring"), as HOTBUF_AG_RING < HOTBUF_AG_ZCOPY
allows on 2^k ranks.  At every step a rank posts one write (data, then
its flag, on the in-order connection to that peer) and waits until the
flag it expects holds a value of this call or later.  Writes are placed
in any interleaving, in order per (writer, target) pair; at the end of a
call a rank waits until its writes completed.  Every interleaving of every
schedule of CALLS calls is explored.

Checked: whenever a wait passes, the write it waits for (that writer, that
call, that step) has landed; and no state is stuck.

  --layout split   rd[] and data[] are separate words (hotbuf's layout:
                   every word has one writer): must hold.
  --layout shared  both algorithms use data[] (the old layout): a violation
                   is expected; the trace is printed.
Exit 0 when the property holds, 1 with a trace when it does not.
"""
import argparse
import itertools
import sys


def steps(algo, rank, p):
    """(peer written to, peer waited for, step) of each step of one call."""
    if algo == "rd":
        return [(rank ^ (1 << k), rank ^ (1 << k), k) for k in range(p.bit_length() - 1)]
    return [((rank + 1) % p, (rank - 1) % p, s) for s in range(p - 1)]


def word(layout, algo, step):
    return ("data" if layout == "shared" or algo == "ring" else "rd", step)


def check(p, schedule, layout):
    """None, or a violation: (message, trace)."""
    plans = [[steps(a, r, p) for a in schedule] for r in range(p)]
    # rank state: (call, step, phase) phase 0 post, 1 wait, 2 drain
    start = (tuple((0, 0, 0) for _ in range(p)),
             tuple(() for _ in range(p * p)),     # channels (src, dst)
             tuple(() for _ in range(p)),         # flag words: sorted (word, value)
             frozenset())                         # landed (writer, target, call, step)
    seen = {start}
    stack = [(start, ())]
    while stack:
        state, trace = stack.pop()
        ranks, chans, flags, landed = state
        moves = []
        for r, (c, s, ph) in enumerate(ranks):
            if c == len(schedule):
                continue
            to, frm, st = plans[r][c][s] if ph < 2 else (None, None, None)
            if ph == 0:
                msg = (word(layout, schedule[c], st), c + 1, (r, to, c + 1, st))
                ch = list(chans)
                ch[r * p + to] = chans[r * p + to] + (msg,)
                nr = list(ranks)
                nr[r] = (c, s, 1)
                moves.append(((tuple(nr), tuple(ch), flags, landed),
                              f"rank {r} call {c + 1} ({schedule[c]}) step {st}: writes rank {to}"))
            elif ph == 1:
                w = word(layout, schedule[c], st)
                val = dict(flags[r]).get(w, 0)
                if val >= c + 1:
                    if (frm, r, c + 1, st) not in landed:
                        return (f"rank {r} call {c + 1} ({schedule[c]}) step {st}: "
                                f"{w} = {val} passes the wait, but rank {frm}'s write "
                                f"has not landed", trace)
                    nr = list(ranks)
                    nr[r] = (c, s + 1, 0) if s + 1 < len(plans[r][c]) else (c, 0, 2)
                    moves.append(((tuple(nr), chans, flags, landed),
                                  f"rank {r} call {c + 1} step {st}: wait passes"))
            elif all(not chans[r * p + d] for d in range(p)):
                nr = list(ranks)
                nr[r] = (c + 1, 0, 0)
                moves.append(((tuple(nr), chans, flags, landed), f"rank {r} ends call {c + 1}"))
        for i, ch in enumerate(chans):
            if ch:
                (w, val, tag), dst = ch[0], i % p
                f = dict(flags[dst])
                f[w] = val
                nf = list(flags)
                nf[dst] = tuple(sorted(f.items()))
                nc = list(chans)
                nc[i] = ch[1:]
                moves.append(((ranks, tuple(nc), tuple(nf), landed | {tag}),
                              f"write {tag[0]}->{tag[1]} call {tag[2]} step {tag[3]} "
                              f"lands: {w} = {val}"))
        if not moves and any(c < len(schedule) for c, _, _ in ranks):
            return ("stuck", trace)
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
    args = ap.parse_args()
    assert args.ranks >= 2 and args.ranks & (args.ranks - 1) == 0, "2^k ranks"
    for schedule in itertools.product(("rd", "ring"), repeat=args.calls):
        bad = check(args.ranks, schedule, args.layout)
        if bad:
            msg, trace = bad
            print(f"ag_flags: {args.layout}, {args.ranks} ranks, calls {' '.join(schedule)}: "
                  f"VIOLATION: {msg}")
            for line in trace[-40:]:
                print("   ", line)
            return 1
    print(f"ag_flags: {args.layout}, {args.ranks} ranks, every schedule of {args.calls} "
          f"calls: holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
