#!/usr/bin/env python3
"""Checks a hotbuf JSON report against what a test program is known to do.

usage: check_report.py CHECK REPORT.json NRANKS [REPORT.txt]
Exits non-zero with one line per failed assertion.  CHECK names a function
below; each knows the exact traffic of one program in tests/mpi/.
"""
import json
import sys

failures = []


def expect(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def expect_true(what, cond):
    if not cond:
        failures.append(what)


def site(report, op, name_part):
    hits = [s for s in report["sites"] if s["op"] == op and name_part in s["name"]]
    expect_true(f"a {op} site named *{name_part}* in {[s['name'] for s in report['sites']]}",
                len(hits) == 1)
    return hits[0] if hits else None


def check_reuse_known(r, n, text):
    """tests/mpi/reuse_known.c with HOTBUF_THRESHOLD=100."""
    expect("ranks", r["ranks"], n)
    s = r["classes"]["send"]
    expect("send calls", s["calls"], n * (1000 + 500 + 25 + 7 + 3))
    expect("send buffers", s["buffers"], n * (1 + 500 + 1))
    expect("send reuse calls", s["reuse_calls"], n * (999 + 24))
    expect("send reuse %", round(s["reuse_pct"], 2), round(100 * 1023 / 1525, 2))
    expect("send max reuse", s["max_reuse"], {"min": 1000, "max": 1000, "avg": 1000.0})
    expect("send most frequent size", s["most_frequent_size"],
           {"min": 1024, "max": 1024, "avg": 1024.0})
    expect("send top sizes", s["top_sizes"],
           [{"size": 1024, "calls": 1000 * n}, {"size": 256, "calls": 500 * n},
            {"size": 2048, "calls": 25 * n}])
    expect("send hot buffers", s["hot_buffers"], n)
    expect("send hot calls", s["hot_calls"], n * 901)
    expect("send proc_null", s["proc_null_calls"], 7 * n)
    expect("send zero-byte", s["zero_byte_calls"], 3 * n)
    expect("send bytes", s["bytes"], n * (1000 * 1024 + 500 * 256 + 25 * 2048))
    expect("send untracked", s["untracked_calls"], 0)

    p = r["classes"]["put"]
    expect("put calls", p["calls"], 55 * n)
    expect("put buffers", p["buffers"], 10 * n)
    expect("put reuse calls", p["reuse_calls"], 45 * n)
    expect("put max reuse", p["max_reuse"], {"min": 10, "max": 10, "avg": 10.0})
    expect("put hot", p["hot_buffers"], 0)

    g = r["classes"]["get"]
    expect("get calls", g["calls"], 20 * n)
    expect("get buffers", g["buffers"], n)
    expect("get top sizes", g["top_sizes"], [{"size": 4096, "calls": 20 * n}])

    a = r["classes"]["allgather"]
    expect("allgather calls", a["calls"], 31 * n)
    expect("allgather buffers", a["buffers"], 2 * n)
    expect("allgather max reuse", a["max_reuse"]["max"], 30)
    expect("allgather bytes", a["bytes"], n * 31 * 128 * n)

    hot = site(r, "send", "reuse_known.c:26")
    if hot:
        expect("hot site calls", hot["calls"], 1000 * n)
        expect("hot site buffers", hot["buffers"], n)
        expect("hot site ranks", hot["ranks"], n)
        expect("hot site max reuse", hot["max_reuse"], 1000)
        expect_true("hot site lists its hot buffers",
                    all(b["hot"] and b["uses"] == 1000 for b in hot["top_buffers"]))
        expect("hot site top buffers", len(hot["top_buffers"]), min(n, 3))
    cold = site(r, "send", "reuse_known.c:33")
    if cold:
        expect("cold site calls", cold["calls"], 500 * n)
        expect("cold site buffers", cold["buffers"], 500 * n)
        expect("cold site reuse calls", cold["reuse_calls"], 0)
    pers = site(r, "send", "reuse_known.c:39")
    if pers:
        expect("persistent site calls (one per MPI_Start)", pers["calls"], 25 * n)
    expect("table stopped", r["table"]["ranks_stopped_adapted"] + r["table"]["ranks_stopped_full"], 0)
    expect("config shows the threshold", r["config"]["HOTBUF_THRESHOLD"],
           {"value": "100", "default": False})
    if text:
        for needle in ["hotbuf buffer-reuse report", "reuse_known.c:26", "HOTBUF_THRESHOLD=100*"]:
            expect_true(f"text report mentions {needle!r}", needle in text)
    check_reuse_known_advice(r, n, text)
    # buffers by uses, in powers of two (1, 2-3, 4-7, 8-15, 16-31, ...)
    expect("send uses histogram", s["uses_histogram"], [500 * n, 0, 0, 0, n, 0, 0, 0, 0, n])
    expect("put uses histogram", p["uses_histogram"], [n, 2 * n, 4 * n, 3 * n])
    expect("get uses histogram", g["uses_histogram"], [0, 0, 0, 0, n])
    expect("allgather uses histogram", a["uses_histogram"], [n, 0, 0, 0, n])


def expect_advice(r, op, name_part, want, text):
    """The site's advice line, in the JSON and the same line in the text."""
    s = site(r, op, name_part)
    if not s:
        return
    expect(f"advice of {op} site {name_part}", s.get("advice"), want)
    if text is not None:
        expect_true(f"text has the advice {want!r}", f"      advice: {want}\n" in text)


def check_reuse_known_advice(r, n, text):
    """The advice per site of reuse_known (HOTBUF_THRESHOLD=100): its
    deterministic sites (the hot one's depends on the measured copy cost)."""
    expect_advice(r, "send", "reuse_known.c:33", "buffers used once: nothing to gain", text)
    expect_advice(r, "send", "reuse_known.c:39", "persistent request, reused (up to 25 uses), "
                  "but below the threshold at this size (100 at 2.0 KiB)", text)
    expect_advice(r, "put", "reuse_known.c:76", "reused (up to 10 uses), but below the "
                  "threshold at this size (100 at 512 B)", text)
    expect_advice(r, "get", "reuse_known.c:80", "reused (up to 20 uses), but below the "
                  "threshold at this size (100 at 4.0 KiB)", text)
    expect_advice(r, "allgather", "reuse_known.c:95", "reused (up to 30 uses), but below the "
                  f"threshold at this size (100 at {128 * n} B)", text)
    expect_advice(r, "send", "reuse_known.c:53", "moves no data (zero bytes or MPI_PROC_NULL): "
                  "nothing to gain", text)
    pers = site(r, "send", "reuse_known.c:39")
    expect_true("the persistent site is marked persistent", pers and pers.get("persistent"))
    hot = site(r, "send", "reuse_known.c:26")
    expect_true("the hot site's advice starts with 'hot'", hot and hot.get("advice", "").startswith("hot"))


def check_used_once(r, n, text):
    """tests/mpi/used_once.c: 300 sends and 20 Allgathers, each on a buffer
    it never uses again."""
    expect("send buffers", r["classes"]["send"]["buffers"], 300 * n)
    expect("send reuse calls", r["classes"]["send"]["reuse_calls"], 0)
    expect("allgather buffers", r["classes"]["allgather"]["buffers"], 20 * n)
    for op in ("send", "allgather"):
        expect_advice(r, op, "used_once.c", "buffers used once: nothing to gain", text)


def check_shared_buffer(r, n, text):
    """tests/mpi/shared_buffer.c with HOTBUF_THRESHOLD=100 and the fixed
    cost model of sizes_known (C = 100 ns/KiB, R = 10 us + 0.25 us/page):
    a 1 KiB buffer sent 10 times at site A (first_sends), then 290 times
    at site B (more_sends).  Its 201 hot calls (uses 100..300) are all
    B's: B gets them, their saving and the reuse count; A lists the buffer
    and pays its registration."""
    a = site(r, "send", "first_sends")
    b = site(r, "send", "more_sends")
    if not a or not b:
        return
    expect("A calls", a["calls"], 10 * n)
    expect("B calls", b["calls"], 290 * n)
    expect("A hot calls", a["hot_calls"], 0)
    expect("B hot calls", b["hot_calls"], 201 * n)
    expect("A buffers (first used there)", a["buffers"], n)
    expect("B buffers", b["buffers"], 0)
    expect("A max reuse (its buffer's)", a["max_reuse"], 300)
    expect("B max reuse (at its own calls)", b["max_reuse"], 300)
    expect("B saving (201 copies of 1 KiB)", round(b["estimated_saving_us"], 3), round(20.1 * n, 3))
    expect("A saving (the registration)", round(a["estimated_saving_us"], 3), round(-10.25 * n, 3))
    expect("class saving", round(r["classes"]["send"]["estimated_saving_us"], 3),
           round((20.1 - 10.25) * n, 3))
    expect_advice(r, "send", "first_sends", "first uses of buffers that become hot at other "
                  "sites (up to 300 uses in all): see those sites", text)


def check_names(r, n, text, names):
    """Call sites named as the programmer wrote them."""
    got = [s["name"] for s in r["sites"]]
    for want in names:
        expect_true(f"a site named {want!r} in {got}", any(g.startswith(want + " (") for g in got))


def check_names_cxx(r, n, text):
    """tests/mpi/names_cxx.cpp: C++ sites demangled."""
    check_names(r, n, text, ["halo::Exchanger::forward(int)",
                             "unsigned long halo::send_many<int>(int, int, int)"])
    expect_true("no mangled name", not any("_Z" in s["name"] for s in r["sites"]))


def check_names_fortran(r, n, text):
    """tests/mpi/names_fortran.f90: Fortran sites as the source names them."""
    check_names(r, n, text, ["halo_mod::exchange", "plain_send", "names_fortran"])


# ---- sizes_known: the program's calls replayed with hotbuf's documented rules --

SK_MODEL = {"threshold": 100, "min": 128, "eager": 8192,
            "copy_ns_per_kb": 100.0, "reg_base_us": 10.0, "reg_page_us": 0.25}


def sk_netpipe_sizes():
    """tests/mpi/sizes_known.c netpipe_sizes()."""
    out, last, p = [], 0, 1
    while len(out) < 82 and p <= 96 * 1024:
        for c in (p - 3, p, p + 3, p + p // 4, p + p // 2, p + 3 * p // 4):
            if c > last and len(out) < 82:
                out.append(c)
                last = c
        p *= 2
    return out


def sk_calls(n):
    """One rank's calls in order: (class, buffer, size)."""
    calls = [("send", "A", 1024)] * 600 + [("send", "A", 32768)] * 1000
    for i, size in enumerate(sk_netpipe_sizes()):
        calls += [("send", "B", size)] * (i + 1)
    calls += [("put", "P", 1024)] * 150 + [("put", "P", 16384)] * 100
    calls += [("put", "P", 2048)] * 50
    for j in range(16, 1, -1):
        calls += [("allgather", "G", (1 << j) * n)] * (j + 1)
    return calls


def sk_replay(n):
    """Per class: calls per size, hot calls, hot buffers, saving (ns).  A
    call is hot when its size is in [min, eager] and its buffer's uses,
    this call included, reach the threshold; a hot call larger than the
    buffer's registration (re)registers it, charged R at that size."""
    m, out, uses, reg = SK_MODEL, {}, {}, {}
    for op, buf, size in sk_calls(n):
        c = out.setdefault(op, {"sizes": {}, "hot": 0, "hot_buffers": set(), "saving": 0.0})
        c["sizes"][size] = c["sizes"].get(size, 0) + 1
        uses[buf] = uses.get(buf, 0) + 1
        if not (m["min"] <= size <= m["eager"] and uses[buf] >= m["threshold"]):
            continue
        c["hot"] += 1
        c["hot_buffers"].add(buf)
        c["saving"] += size / 1024 * m["copy_ns_per_kb"]
        if size > reg.get(buf, 0):
            reg[buf] = size
            c["saving"] -= (m["reg_base_us"] + m["reg_page_us"] * -(-size // 4096)) * 1000
    return out


def check_sizes_known(r, n, text):
    """tests/mpi/sizes_known.c with HOTBUF_THRESHOLD=100 and a fixed cost
    model (SK_MODEL): every call counted at its own size, hot per call."""
    expect("ranks", r["ranks"], n)
    for op, want in sk_replay(n).items():
        c = r["classes"][op]
        ranked = sorted(want["sizes"].items(), key=lambda kv: (-kv[1], kv[0]))
        top = [{"size": s, "calls": k * n} for s, k in ranked[:4]]
        expect(f"{op} calls", c["calls"], n * sum(want["sizes"].values()))
        expect(f"{op} top sizes", c["top_sizes"], top)
        expect(f"{op} most frequent size", c["most_frequent_size"],
               {"min": ranked[0][0], "max": ranked[0][0], "avg": float(ranked[0][0])})
        expect(f"{op} distinct sizes", c.get("distinct_sizes"), len(ranked))
        expect(f"{op} calls at sizes not itemized", c.get("other_size_calls"), 0)
        expect(f"{op} hot calls", c["hot_calls"], n * want["hot"])
        expect(f"{op} hot buffers", c["hot_buffers"], n * len(want["hot_buffers"]))
        expect(f"{op} estimated saving (us)", round(c["estimated_saving_us"], 3),
               round(n * want["saving"] / 1000, 3))
        expect(f"{op} rerouted (no RDMA on the host)", c["rerouted_calls"], 0)
    a = site(r, "send", "sizes_known.c:55")
    if a:
        expect("site A calls", a["calls"], 1600 * n)
        expect("site A hot calls", a["hot_calls"], 501 * n)
        expect_true("site A's buffer: largest size 32 KiB, 1600 uses, 501 hot",
                    all(b["size"] == 32768 and b["uses"] == 1600 and b["hot_uses"] == 501
                        for b in a["top_buffers"]))
    b = site(r, "send", "sizes_known.c:68")
    if b:
        expect("site B calls", b["calls"], n * 82 * 83 // 2)
    if text:
        # NetPIPE's sweep also passes 1 KiB and 32 KiB: 1075 and 645 calls a rank
        want = f"send sizes (82 distinct): 32 KiB x{1075 * n}, 1 KiB x{645 * n}, 65539 B x{82 * n}"
        expect_true(f"text lists {want!r}", want in text)


def check_fortran(r, n, text):
    """tests/mpi/fortran_send.f90: 100 sends of one 2 KiB buffer, 1 allgather."""
    s = r["classes"]["send"]
    expect("fortran send calls", s["calls"], 100 * n)
    expect("fortran send buffers", s["buffers"], n)
    expect("fortran send top size", s["top_sizes"], [{"size": 2048, "calls": 100 * n}])
    f = site(r, "send", "fortran_send.f90")
    if f:
        expect("fortran site calls", f["calls"], 100 * n)
    expect("fortran allgather calls", r["classes"]["allgather"]["calls"], n)


def check_f08(r, n, text):
    """tests/mpi/fortran_f08.f90: 50 sends of one 1 KiB buffer through mpi_f08."""
    s = r["classes"]["send"]
    expect("f08 send calls", s["calls"], 50 * n)
    expect("f08 send buffers", s["buffers"], n)
    expect("f08 send top size", s["top_sizes"], [{"size": 1024, "calls": 50 * n}])


def check_threads(r, n, text):
    """tests/mpi/thread_multiple.c: 2 threads x 500 sends, 3 allgathers per rank."""
    expect("thread level", r["thread_level"].split()[0], "multiple")
    expect("threaded send calls", r["classes"]["send"]["calls"], 1000 * n)
    a = r.get("allgather", {})
    expect("allgather calls", r["classes"]["allgather"]["calls"], 3 * n)
    expect("allgather calls left on MPI for threads",
           a.get("calls_pmpi", {}).get("threads"), 3 * n)
    expect("allgather calls on RDMA", a.get("calls_rdma"), 0)
    if text:
        expect_true("text counts threads", f"left on MPI: threads {3 * n}" in text)


def check_adapted(r, n, text):
    """tests/mpi/many_buffers.c with a 2^10-bucket table and adaptation on."""
    t = r["table"]
    expect("ranks whose table adapted", t["ranks_stopped_adapted"], n)
    s = r["classes"]["send"]
    expect("many calls", s["calls"], 200000 * n)
    expect_true("untracked calls after the stop", s["untracked_calls"] > 0)
    expect_true("table far smaller than the buffers", t["max_buffers_per_rank"] < 20000)
    if text:
        expect_true("text says the table stopped growing", "stopped growing" in text)


def check_full(r, n, text):
    """tests/mpi/many_buffers.c with HOTBUF_TABLE_MAX_ENTRIES=1000, adaptation off."""
    t = r["table"]
    expect("ranks whose table filled", t["ranks_stopped_full"], n)
    expect("buffers per rank", t["max_buffers_per_rank"], 1000)
    expect("buffers", r["classes"]["send"]["buffers"], 1000 * n)
    expect("untracked", r["classes"]["send"]["untracked_calls"], n * (100000 - 999))
    if text:
        expect_true("text names the limit", "HOTBUF_TABLE_MAX_ENTRIES" in text)


def check_any(r, n, text):
    """Any program: the report is well formed and counted something."""
    expect("ranks", r["ranks"], n)
    expect_true("some calls", sum(c["calls"] for c in r["classes"].values()) > 0)


def check_pulled(r, n, text):
    """Any program under HOTBUF_P2P_PULL=all or after:N: hotbuf's matcher
    really ran (every rank pulled a communicator, messages were claimed),
    so an identical output is not pull silently staying off."""
    check_any(r, n, text)
    p = r.get("p2p", {})
    expect_true(f"every rank pulled a communicator ({p.get('pulled')} of {n})",
                p.get("pulled", 0) >= n)
    expect_true("messages claimed from MPI", p.get("claimed", 0) > 0)
    if text:
        expect_true("text has the point-to-point section", "point-to-point:" in text)


def check_migrated(r, n, text):
    """tests/mpi/p2p_pull.c under after:N: pending MPI receives moved into pull."""
    check_pulled(r, n, text)
    p = r.get("p2p", {})
    expect_true(f"receives migrated ({p.get('migrated')})", p.get("migrated", 0) > 0)


def check_nohook(r, n, text):
    """HOTBUF_P2P_PULL=all with the progress hook left out: nothing is
    pulled, and the report says why."""
    check_any(r, n, text)
    p = r.get("p2p", {})
    expect("communicators pulled", p.get("pulled"), 0)
    expect_true(f"off for no_progress_hook ({p.get('off')})",
                p.get("off", {}).get("no_progress_hook", 0) > 0)


def check_alloc_mem(r, n, text):
    """tests/mpi/alloc_mem_f08.f90: 20 MPI_Alloc_mem and 20 MPI_Free_mem a
    rank through mpi_f08, every one reaching hotbuf (shim/mem/); without a
    device (the host) all go to the MPI as no_cache."""
    m = r["alloc_mem"]
    expect("Alloc_mem calls seen", m["served"] + sum(m["passed"].values()), 20 * n)
    expect("Free_mem calls seen", m["freed"] + m["freed_by_mpi"], 20 * n)
    expect_true("blocks given back are the blocks served", m["freed"] == m["served"])


CHECKS = {"reuse_known": check_reuse_known, "sizes_known": check_sizes_known, "fortran": check_fortran, "f08": check_f08, "threads": check_threads,
          "adapted": check_adapted, "full": check_full, "any": check_any,
          "used_once": check_used_once, "shared_buffer": check_shared_buffer,
          "names_cxx": check_names_cxx, "names_fortran": check_names_fortran,
          "pulled": check_pulled, "migrated": check_migrated, "nohook": check_nohook,
          "alloc_mem": check_alloc_mem}


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in CHECKS:
        sys.exit(__doc__)
    with open(sys.argv[2]) as f:
        report = json.load(f)
    text = open(sys.argv[4]).read() if len(sys.argv) > 4 else None
    CHECKS[sys.argv[1]](report, int(sys.argv[3]), text)
    for line in failures:
        print(f"  {sys.argv[1]}: {line}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
