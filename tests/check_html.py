#!/usr/bin/env python3
"""Checks a page hotbuf-report wrote, as headless Chromium loaded it.

usage: check_html.py PAGE.html DOM.html NETLOG.json [--table ID:MINROWS]...
                     [--svg MIN] [--text NEEDLE]... [--sorted ID:COLUMN]
  PAGE    the file as written: no reference that would fetch anything
          (src/href/url()/@import naming http:, https: or //host)
  DOM     chromium --dump-dom of it: each table ID with at least MINROWS
          body rows, at least MIN inline <svg> plots, each NEEDLE present;
          table ID's rows in ascending order of COLUMN (1-based, numeric
          data-v), after a click on its heading
  NETLOG  chromium --log-net-log of that load: no request the page made
          (Chromium's own background requests are told apart by their
          network isolation key, which names the page's file:// site)
Exits non-zero with one line per failed check.
"""
import html.parser
import json
import re
import sys

failures = []


def external_refs(text):
    """References that would make a browser fetch from the network
    (SVG's xmlns attributes are names, not fetches)."""
    pats = [r"""\b(?:src|href|xlink:href|action|poster|data)\s*=\s*["']?\s*(?:https?:|//)""",
            r"""url\(\s*["']?\s*(?:https?:|//)""", r"@import", r"<link\b", r"<iframe\b",
            r"""\bfetch\(|XMLHttpRequest|WebSocket"""]
    return [m.group(0) for p in pats for m in re.finditer(p, text, re.I)]


class Dom(html.parser.HTMLParser):
    """Counts the body rows of each table with an id, and the svg elements."""

    def __init__(self):
        super().__init__()
        self.rows, self.svg, self.stack = {}, 0, []
        self.values = {}  # (table id, column) -> the cells' data-v, in order
        self.col = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg += 1
        if tag == "table":
            self.stack.append([a.get("id"), False])
        elif tag == "tbody" and self.stack:
            self.stack[-1][1] = True
        elif tag == "tr" and self.stack and self.stack[-1][0] and self.stack[-1][1]:
            tid = self.stack[-1][0]
            self.rows[tid] = self.rows.get(tid, 0) + 1
            self.col = 0
        elif tag == "td" and self.stack and self.stack[-1][0] and self.stack[-1][1]:
            self.col += 1
            key = (self.stack[-1][0], self.col)
            self.values.setdefault(key, []).append(a.get("data-v"))

    def handle_endtag(self, tag):
        if tag == "table" and self.stack:
            self.stack.pop()
        elif tag == "tbody" and self.stack:
            self.stack[-1][1] = False


def page_requests(netlog_path):
    """URLs the page itself requested (not file: or data:)."""
    text = open(netlog_path).read()
    try:
        log = json.loads(text)
    except ValueError:  # a log cut short when the browser exits
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    urls = []
    for e in log.get("events", []):
        p = e.get("params", {})
        if e.get("type") != start or "url" not in p:
            continue
        if "file://" in p.get("network_isolation_key", "") and \
                not p["url"].startswith(("file:", "data:")):
            urls.append(p["url"])
    return urls


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    page, dom_path, netlog = argv[:3]
    tables, min_svg, needles, sorted_cols = {}, 0, [], []
    it = iter(argv[3:])
    for a in it:
        v = next(it, "")
        if a == "--table":
            tid, n = v.split(":")
            tables[tid] = int(n)
        elif a == "--svg":
            min_svg = int(v)
        elif a == "--text":
            needles.append(v)
        elif a == "--sorted":
            tid, col = v.split(":")
            sorted_cols.append((tid, int(col)))
    refs = external_refs(open(page).read())
    if refs:
        failures.append(f"{page} references the network: {refs[:5]}")
    dom_text = open(dom_path).read()
    d = Dom()
    d.feed(dom_text)
    for tid, n in tables.items():
        if d.rows.get(tid, 0) < n:
            failures.append(f"table #{tid}: {d.rows.get(tid, 0)} rows in the DOM, want >= {n}")
    if d.svg < min_svg:
        failures.append(f"{d.svg} svg plots in the DOM, want >= {min_svg}")
    for key in sorted_cols:
        vals = [float(x) for x in d.values.get(key, [])]
        if len(vals) < 2 or vals != sorted(vals):
            failures.append(f"table #{key[0]} column {key[1]} not in ascending order: {vals}")
    plain = html.unescape(re.sub(r"<[^>]+>", "", dom_text))
    for needle in needles:
        if needle not in plain:
            failures.append(f"the page does not show {needle!r}")
    fetched = page_requests(netlog)
    if fetched:
        failures.append(f"the page fetched {fetched[:5]}")
    for f in failures:
        print(f"  {f}")
    print(f"{page}: tables {d.rows}, {d.svg} svg, {len(fetched)} request(s) of its own")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
