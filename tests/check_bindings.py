#!/usr/bin/env python3
"""Check what the generated Fortran bindings assume about the MPI library.

    check_bindings.py openmpi|mpich BUILD_DIR

1. Every Fortran name hotbuf defines (BUILD_DIR/gen/f_symbols.txt) is
   exported by libhotbuf.so and by the MPI's Fortran libraries (a name the
   library lacks would be a wrapper nobody calls).
2. The mpi_f08 paths, read from the library's machine code:
   Open MPI  mpi_x_f08_ calls ompi_x_f or pmpi_x_ with the same arguments
             (ierror aside), so hotbuf defines it as its mpi_x_
   MPICH     mpi_x_f08_ calls PMPI_X directly (so hotbuf must define it);
             mpi_x_f08ts_ reaches the C MPI_X through one helper (so the
             C binding sees it, and adopts the caller).
Prints one line per problem; exit status 1 if any.
"""
import re
import subprocess
import sys

LIBDIR = "/usr/lib/x86_64-linux-gnu"
LIBS = {
    "openmpi": [f"{LIBDIR}/openmpi/lib/libmpi_mpifh.so",
                f"{LIBDIR}/openmpi/lib/libmpi_usempif08.so"],
    "mpich": [f"{LIBDIR}/libmpichfort.so"],
}


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def exported(path):
    return {l.split()[-1] for l in run("nm", "-D", "--defined-only", path).split("\n")
            if l.strip()}


def disassembly(path):
    """[(address, callee or None, is_ret)] in order, and {name: address}."""
    addr = {}
    for l in run("nm", "-D", "--defined-only", path).split("\n"):
        f = l.split()
        if len(f) == 3:
            addr[f[2]] = int(f[0], 16)
    code = []
    for l in run("objdump", "-d", "--no-show-raw-insn", path).split("\n"):
        m = re.match(r"^\s+([0-9a-f]+):\s+(\w+)\s*(.*)$", l)
        if m:
            op, arg = m.group(2), m.group(3)
            callee = re.search(r"<([^>]+@plt)>" if op == "jmp" else r"<([^>]+)>", arg)
            callee = callee if op in ("call", "jmp") else None
            target = int(arg.split()[0], 16) if callee else None
            # a jmp to another function is a tail call: it ends this one
            code.append((int(m.group(1), 16), callee and (target, callee.group(1)),
                         op == "ret" or bool(callee and op == "jmp")))
    return code, addr


def calls_from(code, index, start):
    """Calls from start up to the first ret: [(target, name)]."""
    i, out = index[start], []
    while i < len(code):
        if code[i][1]:
            out.append(code[i][1])
        if code[i][2]:
            break
        i += 1
    return out


def main():
    mpi, build = sys.argv[1], sys.argv[2]
    names = open(f"{build}/gen/f_symbols.txt").read().split()
    problems = []
    mine = exported(f"{build}/libhotbuf.so")
    theirs = set().union(*(exported(l) for l in LIBS[mpi]))
    problems += [f"{n}: not exported by libhotbuf" for n in names if n not in mine]
    problems += [f"{n}: the MPI library has no such entry point"
                 for n in names if n not in theirs]
    for lib in LIBS[mpi]:
        code, addr = disassembly(lib)
        index = {a: i for i, (a, _, _) in enumerate(code)}
        for n in names:
            m = re.match(r"^mpi_(\w+?)_f08(ts)?_$", n)
            if not m or n not in addr:
                continue
            low, ts = m.group(1), m.group(2)
            first = calls_from(code, index, addr[n])
            direct = [c for _, c in first]
            deeper = [c for a, _ in first if a in index for _, c in calls_from(code, index, a)]
            if mpi == "openmpi" and not {f"ompi_{low}_f@plt", f"pmpi_{low}_@plt"} & set(direct):
                problems.append(f"{n}: calls neither ompi_{low}_f nor pmpi_{low}_ ({direct})")
            if mpi == "mpich" and not ts and not any(
                    c.lower() == f"pmpi_{low}@plt" for c in direct):
                problems.append(f"{n}: does not call PMPI_X directly ({direct})")
            if mpi == "mpich" and ts and not any(
                    c.lower() == f"mpi_{low}@plt" for c in direct + deeper):
                problems.append(f"{n}: does not end in the C MPI_X ({direct} {deeper})")
    for p in problems:
        print(f"{mpi}: {p}")
    print(f"{mpi}: {len(names)} Fortran entry points, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
