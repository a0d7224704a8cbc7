#!/usr/bin/env python3
"""The receive side is wrapped completely (make runs this for each flavour).

    check_wrapped.py --mpi openmpi|mpich --lib LIBHOTBUF ALLOW_LIST
        Reads the prototypes of the target mpi.h (mpicc.<mpi> -E) and lists
        every function that takes a request, a message or a status (it
        receives, probes, completes, cancels, frees or inspects one),
        creates or frees a communicator, or reads MPI_TAG_UB.  Each must be
        wrapped (its C binding, and every Fortran name the MPI's Fortran
        libraries export, defined by LIBHOTBUF) or listed in ALLOW_LIST
        (pmpi/unwrapped.def) under a reason.  Prints one line per problem
        and exits 1 if there is one: the build fails.

    check_wrapped.py --mpi openmpi|mpich --version-c OUT.c ALLOW_LIST
        Writes the MPI version this build checks (from mpi.h) and whether
        ALLOW_LIST was reviewed for it ("checked:" lines), for
        pmpi/wrap_version.c: on another version at run time, or on one that
        was never reviewed, point-to-point rerouting stays off.
"""
import argparse
import re
import subprocess
import sys

LIBDIR = "/usr/lib/x86_64-linux-gnu"
FORTRAN_LIBS = {
    "openmpi": [f"{LIBDIR}/openmpi/lib/libmpi_mpifh.so",
                f"{LIBDIR}/openmpi/lib/libmpi_usempif08.so"],
    "mpich": [f"{LIBDIR}/libmpichfort.so"],
}
# Takes a request, a message or a status: receive-, probe- or
# request-taking.
TAKES = re.compile(r"\bMPI_(Request|Message|Status)\b")
# Creates or frees a communicator (an MPI_Comm written by the call).
COMM_OUT = re.compile(r"\bMPI_Comm\s*\*")
TAG_UB_QUERIES = {"MPI_Comm_get_attr", "MPI_Attr_get"}


def run(*cmd, stdin=None):
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          input=stdin).stdout


def prototypes(mpi):
    """{name: parameter text} of every MPI_ / MPIX_ function in mpi.h."""
    text = run(f"mpicc.{mpi}", "-E", "-P", "-x", "c", "-",
               stdin="#include <mpi.h>\n")
    text = " ".join(text.split())
    return {m.group(1): m.group(2) for m in re.finditer(
        r"\bint\s+(MPIX?_\w+)\s*\(([^()]*)\)", text)}


def relevant(protos):
    return sorted(n for n, params in protos.items()
                  if TAKES.search(params) or COMM_OUT.search(params)
                  or n in TAG_UB_QUERIES)


def exported(path):
    out = run("nm", "-D", "--defined-only", path)
    return {l.split()[-1] for l in out.split("\n") if l.strip()}


def fortran_forms(name):
    """The Fortran entry points of MPI_X that take the application's call
    straight to the library: mpif.h / `use mpi` (four spellings), Open
    MPI's ompi_x_f and mpi_f08's mpi_x_f08_.  (MPICH's mpi_x_f08ts_ and
    *_large_ end in the C binding: tests/check_bindings.py.)"""
    low = name.lower()
    x = low[4:]
    return [low + "_", low + "__", low, name.upper(), f"ompi_{x}_f",
            f"{low}_f08_"]


def read_allow(path):
    """({name: reason}, {flavour: [major.minor, ...]}); exits on a name
    without a reason."""
    allow, checked, reason = {}, {}, None
    for no, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or (line.startswith("#") and not line.startswith("##")):
            continue
        if line.startswith("##"):
            reason = line[2:].strip()
            continue
        m = re.match(r"^checked:\s*(openmpi|mpich)\s+(\d+\.\d+)$", line)
        if m:
            checked.setdefault(m.group(1), []).append(m.group(2))
            continue
        if not re.match(r"^MPIX?_\w+$", line):
            sys.exit(f"{path}:{no}: not a function name: {line}")
        if not reason:
            sys.exit(f"{path}:{no}: {line}: no reason (a '## reason' line "
                     "above it)")
        allow[line] = reason
    return allow, checked


def check(mpi, lib, allow):
    protos = prototypes(mpi)
    mine = exported(lib)
    theirs = set().union(*(exported(l) for l in FORTRAN_LIBS[mpi]))
    problems, wrapped = [], 0
    for n in relevant(protos):
        if n not in mine:
            if n not in allow:
                problems.append(f"{n}: takes a request, message or status, "
                                "or makes or frees a communicator, and is "
                                "neither wrapped (pmpi/mpi_calls.def) nor "
                                "listed in pmpi/unwrapped.def")
            continue
        wrapped += 1
        if n in allow:
            problems.append(f"{n}: wrapped, but listed in pmpi/unwrapped.def "
                            f"({allow[n]})")
        missing = [f for f in fortran_forms(n) if f in theirs and f not in mine]
        if missing:
            problems.append(f"{n}: C binding wrapped, Fortran entry points "
                            f"not: {' '.join(missing)}")
    for p in problems:
        print(f"check_wrapped ({mpi}): {p}")
    print(f"check_wrapped ({mpi}): {len(relevant(protos))} functions take a "
          f"request, message or status or make a communicator: {wrapped} "
          f"wrapped, {len(relevant(protos)) - wrapped} listed unwrapped, "
          f"{len(problems)} problems")
    return not problems


def mpi_h_version(mpi):
    macros = run(f"mpicc.{mpi}", "-E", "-dM", "-x", "c", "-",
                 stdin="#include <mpi.h>\n")
    if mpi == "openmpi":
        v = [re.search(rf"#define OMPI_{k}_VERSION (\d+)", macros)
             for k in ("MAJOR", "MINOR")]
        return int(v[0].group(1)), int(v[1].group(1))
    m = re.search(r'#define MPICH_VERSION "(\d+)\.(\d+)', macros)
    return int(m.group(1)), int(m.group(2))


def version_c(mpi, out, checked):
    major, minor = mpi_h_version(mpi)
    listed = int(f"{major}.{minor}" in checked.get(mpi, []))
    text = f"""\
/* Generated by pmpi/check_wrapped.py ({mpi}): do not edit. */
#include "pmpi/wrap_version.h"

/* The MPI version this build's receive-side wrapping was checked against
 * (mpi.h), and whether pmpi/unwrapped.def was reviewed for it. */
const struct hb_wrap_checked hb_wrap_checked = {{{major}, {minor}, {listed}}};
"""
    with open(out + ".tmp", "w") as f:
        f.write(text)
    import os
    os.replace(out + ".tmp", out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mpi", choices=("openmpi", "mpich"), required=True)
    ap.add_argument("--lib")
    ap.add_argument("--version-c")
    ap.add_argument("allow")
    a = ap.parse_args()
    allow, checked = read_allow(a.allow)
    if a.version_c:
        version_c(a.mpi, a.version_c, checked)
    if a.lib and not check(a.mpi, a.lib, allow):
        sys.exit(1)


if __name__ == "__main__":
    main()
