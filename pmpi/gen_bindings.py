#!/usr/bin/env python3
"""Generate hotbuf's C and Fortran bindings from pmpi/mpi_calls.def.

    gen_bindings.py --mpi openmpi|mpich TABLE OUTDIR

writes OUTDIR/bodies.h (one static inline body per MPI function: hooks
and the PMPI call), OUTDIR/c_bindings.c (MPI_X, calling the body),
OUTDIR/f_bindings.c (the Fortran entry points: arguments converted, then
the same body) and OUTDIR/f_symbols.txt (the Fortran names exported, for
tests/check_bindings.sh).

Why a script and not X-macros: a Fortran wrapper differs per parameter
(handles are f2c'd, out-handles c2f'd after the call, statuses, arrays,
LOGICALs, choice buffers, an optional ierror), which X-macros can only
express with one macro per arity and kind; here each row is its C
prototype and the code comes out as it would be written by hand, one
function per entry point, readable in build/<mpi>/gen/.
"""
import argparse
import os
import re
import sys

HANDLES = {  # C handle type -> prefix of its f2c/c2f functions
    "MPI_Comm": "Comm", "MPI_Datatype": "Type", "MPI_Win": "Win",
    "MPI_Group": "Group", "MPI_Info": "Info", "MPI_Request": "Request",
    "MPI_Op": "Op", "MPI_Message": "Message",
}
HOOK_KEYS = ("pre", "post", "route", "coll", "before", "after", "p2p",
             "fast", "always")
ROW_KEYS = HOOK_KEYS + ("openmpi-also", "mpi", "fortran")


class Param:
    """One parameter: its C declaration and how Fortran passes it."""

    def __init__(self, text, where):
        decl, _, kind = text.partition(":")
        decl, kind = decl.strip(), kind.strip()
        m = re.match(r"^(.*?)(\w+)\s*(?:\[(\w*)\])?$", decl)
        if not m:
            sys.exit(f"{where}: cannot read parameter '{text}'")
        self.ctype = m.group(1).strip()
        self.name = m.group(2)
        self.count = m.group(3)          # array length (a parameter name)
        self.is_array = m.group(3) is not None
        self.kind = self.classify(kind, where)

    def classify(self, kind, where):
        t = self.ctype
        base = t.replace("const", "").replace("*", "").strip()
        m = re.match(r"^out\((\w+)\)$", kind)
        self.out_count = m.group(1) if m else None   # "out(outcount)"
        if self.is_array:
            if base == "int" and kind in ("", "logical", "weights"):
                return "weights" if kind == "weights" else "ints"
            if t == "MPI_Status" and kind in ("", "out") or (
                    t == "MPI_Status" and m):
                return "statuses"
            if t == "MPI_Request" and kind in ("in", "out", "inout"):
                return "requests_" + kind
            if t == "int" and m:
                return "indices"
        elif t.endswith("*"):
            if base == "void":
                return "addr" if kind == "addr" else "buf"
            if base == "MPI_Status":
                return "status"
            if base == "int" and kind in ("logical", "out", "index"):
                return {"logical": "logical", "out": "int_out",
                        "index": "index"}[kind]
            if base in HANDLES and kind in ("in", "out", "inout"):
                return "handle_" + kind
        elif kind == "":
            if t == "int":
                return "int"
            if t == "MPI_Aint":
                return "aint"
            if t == "MPI_Count":
                return "count"
            if t in HANDLES:
                return "handle"
        sys.exit(f"{where}: no Fortran conversion for '{t} {self.name}"
                 f"{'[]' if self.is_array else ''}: {kind}'")

    def c_decl(self):
        """As in the C prototype (arrays as [], which mpi.h uses)."""
        sep = "" if self.ctype.endswith("*") else " "
        return f"{self.ctype}{sep}{self.name}{'[]' if self.is_array else ''}"


class Row:
    def __init__(self, proto, hooks, where):
        m = re.match(r"^MPI_(\w+)\s*\((.*)\)$", proto, re.S)
        if not m:
            sys.exit(f"{where}: not a prototype: {proto}")
        self.name = m.group(1)                     # "Send"
        self.params = [Param(p, where) for p in split_params(m.group(2))]
        self.hooks = hooks
        self.p2p = hooks.get("p2p")
        self.fast = hooks.get("fast")
        keys = set(hooks) - {"openmpi-also", "mpi", "fortran", "p2p", "fast"}
        if self.fast and keys != {"pre"}:
            sys.exit(f"{where}: MPI_{self.name}: fast goes with pre: only")
        if self.p2p and not keys:
            self.kind = "p2p"
        elif self.p2p and keys != {"pre"}:
            sys.exit(f"{where}: MPI_{self.name}: p2p goes with pre: only")
        elif keys <= {"before", "after"} and keys:
            self.kind = "sync"
        elif len(keys) == 1 and keys <= {"pre", "post", "route", "coll",
                                         "always"}:
            self.kind = keys.pop()
        else:
            sys.exit(f"{where}: MPI_{self.name}: bad hooks {sorted(keys)}")
        self.flavours = hooks.get("mpi", "openmpi mpich").split()
        self.fortran = hooks.get("fortran", "yes") != "no"
        names = {p.name for p in self.params}
        for p in self.params:
            if p.is_array and p.count not in names and not (
                    p.kind in ("ints", "weights") and not p.count):
                sys.exit(f"{where}: {p.name}[{p.count}]: no such parameter")
            if p.out_count and p.out_count not in names:
                sys.exit(f"{where}: {p.name}: out({p.out_count}): "
                         "no such parameter")
            if p.kind == "count" and self.fortran:
                sys.exit(f"{where}: MPI_Count {p.name}: large-count rows are "
                         "C only (fortran: no); Fortran reaches them through "
                         "the C binding")

    @property
    def lower(self):
        return self.name.lower()

    def has_index(self):
        return any(p.kind in ("index", "indices") for p in self.params)

    def has_buffer(self):
        return any(p.kind == "buf" for p in self.params)


def split_params(text):
    return [p.strip() for p in " ".join(text.split()).split(",") if p.strip()]


def parse(path):
    rows, cur, where = [], None, path
    lines = open(path).read().split("\n")
    for no, line in enumerate(lines + ["MPI_end"], 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("MPI_"):                 # a new row
            if cur:
                rows.append(Row(cur[0].strip(), cur[1], cur[2]))
            cur = [line, {}, f"{path}:{no}", None]  # prototype, hooks, where, last key
            continue
        if cur is None:
            sys.exit(f"{path}:{no}: text before the first row")
        m = re.match(r"^\s+([a-z0-9-]+):\s*(.*)$", line)
        if m and m.group(1) in ROW_KEYS:
            cur[1][m.group(1)] = m.group(2).strip()
            cur[3] = m.group(1)
        elif cur[3]:                                # a hook goes on
            cur[1][cur[3]] += " " + line.strip()
        else:                                       # the prototype goes on
            cur[0] += " " + line.strip()
    return rows


# ---- C: the bodies and the C bindings ---------------------------------------

def wrap_call(lead, args, end=")"):
    """lead + "(" + args + end, broken after commas to stay within 80
    columns, continuation lines aligned after the parenthesis."""
    out, line = [], lead + "("
    pad = " " * len(line.split("\n")[-1])
    for i, a in enumerate(args):
        piece = a + (", " if i < len(args) - 1 else end)
        if len(line) + len(piece.rstrip()) > 80 and not line.endswith("("):
            out.append(line.rstrip())
            line = pad
        line += piece
    out.append(line)
    return "\n".join(out)


def top_level_split(text):
    """Arguments of a call, split at commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return parts + [cur.strip()] if cur.strip() else parts


def wrap_stmt(lead, expr, end=""):
    """lead + expr + end; a call expression is wrapped like wrap_call."""
    m = re.match(r"^(\w+)\((.*)\)$", expr)
    if not m or len(lead + expr + end) <= 80:
        return lead + expr + end
    return wrap_call(lead + m.group(1), top_level_split(m.group(2)), ")" + end)


def hook(row, key):
    return row.hooks[key].replace("HB_CALLER", "caller")


def pmpi_call(row, lead, end=";"):
    return wrap_call(lead + f"PMPI_{row.name}", [p.name for p in row.params],
                     ")" + end)


def p2p_branch(row):
    """The receive side's one load and branch: hotbuf's point-to-point
    subsystem does the whole call while it is engaged (shim/p2p/p2p.h)."""
    if not row.p2p:
        return []
    return ["    if (__builtin_expect(hb_p2p_engaged, 0))",
            wrap_stmt("        return ", hook(row, "p2p"), ";")]


def fast_body(row):
    """A row with a fast: hook gets two bodies: the whole call out of line
    (hb_call_X_slow, the usual body), and an inline one that forwards to
    PMPI_X when the fast expression says it has recorded the call.  That
    expression makes no call, so the inline body is a leaf up to its tail
    jump to PMPI_X: no register is saved, no argument moved.  With a p2p:
    hook the engaged test comes first: the fast expression counts the call,
    and the slow body would count it again."""
    decls = [p.c_decl() for p in row.params] + ["void *caller"]
    args = [p.name for p in row.params] + ["caller"]
    slow = body(row, f"hb_call_{row.name}_slow",
                "static __attribute__((noinline)) int")
    engaged = "!hb_p2p_engaged && " if row.p2p else ""
    return "\n".join([slow, "", "static inline __attribute__((always_inline)) int",
                      wrap_call(f"hb_call_{row.name}", decls), "{",
                      wrap_stmt("    if (__builtin_expect(" + engaged,
                                hook(row, "fast"), ", 1))"),
                      pmpi_call(row, "        return "),
                      wrap_call(f"    return hb_call_{row.name}_slow", args,
                                ");"), "}"])


def body(row, name=None,
         lead="static inline __attribute__((always_inline)) int"):
    if row.fast and name is None:
        return fast_body(row)
    decls = [p.c_decl() for p in row.params] + ["void *caller"]
    out = [lead, wrap_call(name or f"hb_call_{row.name}", decls), "{"]
    if row.kind == "pre":
        out += ["    if (hb_tracks(&caller)) {",
                wrap_stmt("        ", hook(row, "pre"), ";"), "    }"]
        out += p2p_branch(row) + [pmpi_call(row, "    return ")]
    elif row.kind == "p2p":
        out += p2p_branch(row) + [pmpi_call(row, "    return ")]
    elif row.kind == "always":
        out.append(wrap_stmt("    return ", hook(row, "always"), ";"))
    elif row.kind in ("route", "coll"):
        test = "hb_tracks" if row.kind == "route" else "hb_joins"
        out += [f"    if ({test}(&caller))",
                wrap_stmt("        return ", hook(row, row.kind), ";"),
                pmpi_call(row, "    return ")]
    else:  # post and sync: PMPI between the two hook points
        first = "track" if row.kind == "post" else "join"
        test = "hb_tracks" if row.kind == "post" else "hb_joins"
        after = "post" if row.kind == "post" else "after"
        out.append(f"    int {first} = {test}(&caller);")
        if "before" in row.hooks:
            out += [f"    if ({first})",
                    wrap_stmt("        ", hook(row, "before"), ";")]
        out.append(pmpi_call(row, "    int rc = "))
        if after in row.hooks:
            out += [f"    if ({first} && rc == MPI_SUCCESS)",
                    wrap_stmt("        ", hook(row, after), ";")]
        out.append("    return rc;")
    return "\n".join(out + ["}"])


def c_binding(row):
    decls = [p.c_decl() for p in row.params] or ["void"]
    args = [p.name for p in row.params] + ["HB_CALLER"]
    return "\n".join([wrap_call(f"HB_EXPORT int MPI_{row.name}", decls), "{",
                      wrap_call(f"    return hb_call_{row.name}", args, ");"),
                      "}"])


# ---- Fortran ---------------------------------------------------------------------

def f_decl(p):
    if p.kind in ("buf", "addr"):
        return f"void *{p.name}"
    if p.kind == "handle_in":
        return f"const MPI_Fint *{p.name}"
    if p.kind == "aint":
        return f"const MPI_Aint *{p.name}"
    if p.kind in ("ints", "weights"):
        return f"const MPI_Fint *{p.name}"
    if p.kind in ("int", "handle"):
        return f"const MPI_Fint *{p.name}"
    return f"MPI_Fint *{p.name}"


def no_mem(call, done):
    """An array's allocation; on failure the ones before it are released
    and the call fails with MPI_ERR_NO_MEM."""
    return ([f"if ({call} != MPI_SUCCESS) {{"] + ["    " + d for d in done] +
            ["    hb_f_ierr(ierr, MPI_ERR_NO_MEM);", "    return;", "}"])


def f_convert(row, base="1"):
    """(locals, C arguments, statements after a successful call, cleanup);
    base: what Fortran indices count from (a C expression)."""
    pre, args, post, done = [], [], [], []
    scalar = {q.name: f"*{q.name}" for q in row.params}
    for p in row.params:
        n, h = p.name, HANDLES.get(p.ctype.replace("*", "").strip())
        if p.kind == "buf":
            args.append(f"hb_f_buf({n})")
        elif p.kind == "addr":
            args.append(n)
        elif p.kind in ("int", "aint"):
            args.append(f"*{n}")
        elif p.kind == "handle":
            args.append(f"PMPI_{h}_f2c(*{n})")
        elif p.kind == "ints":      # INTEGER or LOGICAL array (gfortran's
            args.append(f"(const int *){n}")  # .TRUE. is 1): as it is
        elif p.kind == "weights":   # MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY
            args.append(f"hb_f_weights({n})")
        elif p.kind == "handle_in":
            pre.append(f"{p.ctype.rstrip('* ')} {n}_c = PMPI_{h}_f2c(*{n});")
            args.append(f"&{n}_c")
        elif p.kind in ("handle_out", "handle_inout"):
            init = f" = PMPI_{h}_f2c(*{n})" if p.kind == "handle_inout" else ""
            pre.append(f"{p.ctype.rstrip('* ')} {n}_c{init};")
            args.append(f"&{n}_c")
            post.append(f"*{n} = PMPI_{h}_c2f({n}_c);")
        elif p.kind == "status":
            pre.append(f"MPI_Status {n}_c;")
            args.append(f"hb_f_status({n}, &{n}_c)")
            post.append(f"hb_f_status_out({n}, &{n}_c);")
        elif p.kind in ("logical", "int_out", "index"):
            pre.append(f"int {n}_c = 0;")
            args.append(f"&{n}_c")
            post.append({"logical": f"*{n} = hb_f_logical({n}_c);",
                         "int_out": f"*{n} = {n}_c;",
                         "index": f"*{n} = hb_f_index({n}_c, {base});"}[p.kind])
        elif p.kind == "indices":                   # Waitsome, Testsome
            cnt, got = scalar[p.count], f"{p.out_count}_c"
            pre.append(f"struct hb_f_indices {n}_c;")
            pre += no_mem(f"hb_f_indices_in(&{n}_c, {cnt})", done)
            args.append(f"{n}_c.c")
            post.append(f"hb_f_indices_out(&{n}_c, {got}, {n}, {base});")
            done.append(f"hb_f_indices_done(&{n}_c);")
        elif p.kind.startswith("requests_") or p.kind == "statuses":
            what = "statuses" if p.kind == "statuses" else "requests"
            direction = "out" if p.kind == "statuses" else p.kind[9:]
            cnt = scalar[p.count]
            pre.append(f"struct hb_f_{what} {n}_c;")
            pre += no_mem(f"hb_f_{what}_in(&{n}_c, {cnt}, {n}, "
                          f"{int(direction != 'out')})", done)
            args.append(f"{n}_c.c")
            if p.out_count:     # only the first *outcount were written
                post.append(f"hb_f_{what}_out(&{n}_c, "
                            f"hb_f_some({p.out_count}_c), {n});")
            elif direction != "in":
                post.append(f"hb_f_{what}_out(&{n}_c, {cnt}, {n});")
            done.append(f"hb_f_{what}_done(&{n}_c);")
    return pre, args, post, done


def f_binding(row, fname, base="1"):
    decls = [f_decl(p) for p in row.params] + ["MPI_Fint *ierr"]
    pre, args, post, done = f_convert(row, base)
    out = [wrap_call(f"HB_EXPORT void {fname}", decls), "{"]
    out += ["    " + s for s in pre]
    out.append(wrap_call(f"    int rc = hb_call_{row.name}",
                         args + ["HB_CALLER"], ");"))
    # MPI_ERR_IN_STATUS: the statuses say which request failed, and the
    # requests that completed were freed: both go back to Fortran.
    ok = "rc == MPI_SUCCESS"
    if any(p.kind == "statuses" for p in row.params):
        ok = "rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS"
    if len(post) == 1:
        out += [f"    if ({ok})", "        " + post[0]]
    elif post:
        out += [f"    if ({ok}) {{"] + ["        " + s for s in post]
        out.append("    }")
    out += ["    " + s for s in done] + ["    hb_f_ierr(ierr, rc);", "}"]
    return "\n".join(out)


def name_forms(name):
    """The mpif.h / `use mpi` spellings of MPI_<Name>."""
    low = "mpi_" + name.lower()
    return [low + "_", low + "__", low, "MPI_" + name.upper()]


def f08ts_passthrough(row):
    """MPICH's mpi_f08 entry for a routine with a choice buffer: its
    descriptor handling is MPICH's; it ends in the C MPI_X, which adopts
    this entry's return address as the call site."""
    sym = f"mpi_{row.lower}_f08ts_"
    n = len(row.params) + 1
    params = ", ".join(f"void *a{i}" for i in range(1, n + 1))
    args = ", ".join(f"a{i}" for i in range(1, n + 1))
    return "\n".join([
        f"/* mpi_f08: MPICH converts the descriptors and calls MPI_{row.name}, "
        "which\n * adopts this caller (pmpi/bindings.h). */",
        wrap_call(f"HB_EXPORT void {sym}", params.split(", ")), "{",
        wrap_call("    typedef void next_fn", ["void *"] * n, ");"),
        "    static next_fn *next;",
        "    if (!next)",
        f"        next = (next_fn *)hb_mpi_library_symbol(\"{sym}\");",
        "    hb_f08_enter(HB_CALLER);",
        f"    next({args});",
        "    hb_f08_leave();", "}"])


def fortran(row, mpi):
    """The code for one row and the names it exports."""
    main = name_forms(row.name)[0]
    parts = [f_binding(row, main)]
    aliases = name_forms(row.name)[1:]
    if mpi == "openmpi":
        aliases += [f"ompi_{row.lower}_f", f"mpi_{row.lower}_f08_"]
        also = row.hooks.get("openmpi-also")
        if also:
            aliases += name_forms(also[4:]) + [f"ompi_{also[4:].lower()}_f"]
    elif row.has_buffer():
        parts.append(f08ts_passthrough(row))
    elif row.has_index():   # MPICH 4.0's mpi_f08 indices (f_convert.h)
        parts.append(f_binding(row, f"mpi_{row.lower}_f08_",
                               "HB_F08_INDEX_BASE_MPICH"))
    else:
        aliases.append(f"mpi_{row.lower}_f08_")
    parts += [f"HB_F_ALIAS({main}, {a})" for a in aliases]
    names = [main] + aliases
    if mpi == "mpich" and row.has_index() and not row.has_buffer():
        names.append(f"mpi_{row.lower}_f08_")
    if mpi == "mpich" and row.has_buffer():
        names.append(f"mpi_{row.lower}_f08ts_")
    return "\n".join(parts), names


# ---- files ----------------------------------------------------------------------

HEAD = """/* Generated by pmpi/gen_bindings.py from pmpi/mpi_calls.def ({mpi}):
 * do not edit; change the table or the generator. */
"""


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mpi", choices=("openmpi", "mpich"), required=True)
    ap.add_argument("table")
    ap.add_argument("outdir")
    a = ap.parse_args()
    rows = [r for r in parse(a.table) if a.mpi in r.flavours]
    os.makedirs(a.outdir, exist_ok=True)
    head = HEAD.format(mpi=a.mpi)

    write(os.path.join(a.outdir, "bodies.h"), head + """\
/* One body per intercepted function: the hooks and the PMPI call.  The C
 * binding and every Fortran binding call it with the application's return
 * address (caller), so both languages take the same path. */
#ifndef HOTBUF_GEN_BODIES_H
#define HOTBUF_GEN_BODIES_H

#include "pmpi/bindings.h"

""" + "\n\n".join(body(r) for r in rows) + "\n\n#endif\n")

    write(os.path.join(a.outdir, "c_bindings.c"), head + """\
/* The C bindings MPI_X (Init, Finalize and Abort: pmpi/c_wrappers.c). */
#include "bodies.h"

""" + "\n\n".join(c_binding(r) for r in rows) + "\n")

    code, names = [], []
    for r in (r for r in rows if r.fortran):
        c, n = fortran(r, a.mpi)
        code.append(f"/* MPI_{r.name} */\n" + c)
        names += n
    write(os.path.join(a.outdir, "f_bindings.c"), head + """\
/* The Fortran bindings: arguments converted (pmpi/f_convert.h), then the
 * body the C binding calls (bodies.h).  See pmpi/f_convert.h for which
 * entry points each MPI's Fortran interfaces use. */
#include "bodies.h"
#include "pmpi/f_convert.h"
#include "pmpi/f_weights.h"
#include "pmpi/mpi_library.h"

""" + "\n\n".join(code) + "\n")
    write(os.path.join(a.outdir, "f_symbols.txt"), "\n".join(names) + "\n")


if __name__ == "__main__":
    main()
