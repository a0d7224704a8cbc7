#!/usr/bin/env python3
"""Instructions per message from bench-p2p's callgrind dumps.

    cg_dumps.py DIR N1 N2 REPS SIZE...

DIR holds one run's dumps of the sender's main thread, cg.PID.PART-01
(callgrind --separate-threads=yes --dump-after=measured): per size, REPS
pairs of measured(N1), measured(N2), in that order.  Per size it prints

    CG size=S ir_per_msg=X copy_per_msg=Y ir_n1=.. ir_n2=.. spread=..

ir_per_msg = (min Ir(N2) - min Ir(N1)) / (N2 - N1): the least of the
repetitions, because a sender that waits (a full flow-control window, a
receiver not scheduled) only adds empty polls; copy_per_msg the same for
the self cost of memcpy/memmove (the copy hotbuf's zero-copy avoids);
spread = (max - min) / min of Ir(N2), how much waiting the repetitions saw.
"""
import glob
import os
import re
import sys

COPY = re.compile(r"mem(cpy|move)|ucp_dt_contig_pack")


def parse(path):
    """(total Ir, self Ir of memcpy/memmove) of one dump."""
    names, fn, total, copy, skip = {}, "", 0, 0, False
    with open(path) as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                if skip:  # a call's inclusive cost, not the caller's own
                    skip = False
                    continue
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 else 0
                total += ir
                if COPY.search(fn):
                    copy += ir
            elif line.startswith(("fn=", "cfn=")):
                # name compression: "(id) name" the first time, in either
                m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
                if m and m.group(2) is not None:
                    names[m.group(1)] = m.group(2)
                if line.startswith("fn="):
                    fn = names.get(m.group(1), "") if m else line[3:].strip()
            elif line.startswith("calls="):
                skip = True
    return total, copy


def part(path):
    m = re.search(r"\.(\d+)-01$", path)
    return int(m.group(1)) if m else -1


def main():
    d, n1, n2, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    sizes = [int(s) for s in sys.argv[5:]]
    dumps = sorted((p for p in glob.glob(os.path.join(d, "cg.*.*-01")) if part(p) > 0), key=part)
    if len(dumps) != 2 * reps * len(sizes):
        print("CG error=dumps found=%d expected=%d" % (len(dumps), 2 * reps * len(sizes)))
        return 1
    costs = [parse(p) for p in dumps]
    for i, size in enumerate(sizes):
        mine = costs[i * 2 * reps:(i + 1) * 2 * reps]
        a, b = mine[0::2], mine[1::2]  # measured(N1), measured(N2)
        ir1, ir2 = min(x[0] for x in a), min(x[0] for x in b)
        c1, c2 = min(x[1] for x in a), min(x[1] for x in b)
        spread = (max(x[0] for x in b) - ir2) / ir2 if ir2 else 0
        print("CG size=%d ir_per_msg=%.0f copy_per_msg=%.0f ir_n1=%d ir_n2=%d spread=%.2f" % (
            size, (ir2 - ir1) / (n2 - n1), (c2 - c1) / (n2 - n1), ir1, ir2, spread))
    return 0


if __name__ == "__main__":
    sys.exit(main())
