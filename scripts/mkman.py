#!/usr/bin/env python3
"""Writes hotbuf's man pages at build time, without network or extra tools.

  mkman.py readme README.md SECTION... > hotbuf.7
      the README's sections of those names (## headings), in that order,
      after the text above its first section, as hotbuf(7)
  mkman.py help NAME SUMMARY < help.txt > NAME.1
      a --help text as NAME(1): a first line "Usage: ..." is the
      synopsis, option lines "  --x  text" become tagged paragraphs

The README's markdown is a small subset (headings, paragraphs, "* "
lists, fenced code, pipe tables, one quote, `code`, **bold**, *italic*);
this converts that subset, nothing more.
"""
import re
import sys

TITLE = "hotbuf"


def esc(text):
    """Roff-escapes plain text (backslashes, leading dots and quotes)."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text)


def inline(text):
    """Markdown inline marks to roff fonts, the rest escaped."""
    out, pos = [], 0
    for m in re.finditer(r"`([^`]+)`|\*\*(.+?)\*\*|(?<![\w*])\*(\S[^*]*?)\*(?!\w)", text):
        out.append(esc(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append("\\fB" + esc(m.group(1)) + "\\fR")
        elif m.group(2) is not None:
            out.append("\\fB" + esc(m.group(2)) + "\\fR")
        else:
            out.append("\\fI" + esc(m.group(3)) + "\\fR")
        pos = m.end()
    out.append(esc(text[pos:]))
    line = "".join(out)
    return "\\&" + line if line.startswith((".", "'")) else line


def header(name, section, summary):
    return [f'.TH {name.upper()} {section} "" "{TITLE}" "{TITLE} manual"',
            ".SH NAME", f"{esc(name)} \\- {esc(summary)}"]


def table(rows):
    """A pipe table as tagged paragraphs: first cell bold, the others as
    "header: value" (a man page is too narrow for the README's tables)."""
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    head, body = cells[0], [r for r in cells[2:]]
    out = []
    for r in body:
        out += [".TP", inline(r[0])]
        out.append("; ".join(f"{esc(h)}: {inline(v)}" for h, v in zip(head[1:-1], r[1:-1])
                             if v) + (" \\(em " if len(r) > 2 else "") + inline(r[-1]))
    return out


def markdown(lines):
    """The README subset to roff lines."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out += [".PP", ".RS 2", ".nf", "\\f(CW"]
            out += [esc(l) if l else "" for l in lines[i + 1:j]]
            out += ["\\fR", ".fi", ".RE"]
            i = j + 1
        elif line.startswith("### "):
            out += [".SS " + inline(line[4:])]
            i += 1
        elif line.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out += table(lines[i:j])
            i = j
        elif re.match(r"\s*[*-] ", line):
            indent = len(line) - len(line.lstrip())
            text = [line.strip()[2:]]
            i += 1
            while i < len(lines) and lines[i].strip() and \
                    len(lines[i]) - len(lines[i].lstrip()) > indent and \
                    not re.match(r"\s*[*-] ", lines[i]):
                text.append(lines[i].strip())
                i += 1
            out += [".IP \\(bu 2" if indent == 0 else ".IP \\(bu 4", inline(" ".join(text))]
        else:
            quote = line.startswith(">")
            text = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(("```", "|", "#")) \
                    and not re.match(r"\s*[*-] ", lines[i]):
                text.append(lines[i].lstrip("> ").strip())
                i += 1
            out += [".PP"] + ([".RS 4"] if quote else []) + [inline(" ".join(text))] + \
                   ([".RE"] if quote else [])
    return out


def readme(path, names):
    text = open(path, encoding="utf-8").read().split("\n")
    sections, current = {"": []}, ""
    for line in text:
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
        elif current or not line.startswith("# "):
            sections[current].append(line)
    missing = [n for n in names if n not in sections]
    if missing:
        sys.exit(f"mkman: README has no section {missing}")
    out = header("hotbuf", 7, "buffer-reuse profile and RDMA rerouting for MPI jobs (LD_PRELOAD)")
    out += [".SH DESCRIPTION"] + markdown(sections[""])
    for n in names:
        out += [".SH " + esc(n.upper())] + markdown(sections[n])
    out += [".SH SEE ALSO", "\\fBhotbuf-run\\fR(1)"]
    return out


def helptext(name, summary, text):
    """A --help text: "Usage: ..." (or argparse's "usage: ..." and its
    continuation lines) is the synopsis; indented lines right under a
    one-line usage are examples; "  -x, --opt  text" lines are options."""
    lines = text.rstrip("\n").split("\n")
    out = header(name, 1, summary)
    i, examples = 0, []
    m = re.match(r"[Uu]sage: (.*)", lines[0]) if lines else None
    if m:
        synopsis = [m.group(1)]
        i = 1
        while i < len(lines) and lines[i].startswith(" " * 7):  # argparse wraps the usage
            synopsis.append(lines[i].strip())
            i += 1
        while i < len(lines) and lines[i].startswith("  "):  # examples under the usage line
            examples.append(re.sub(r"^e\.g\. ", "", lines[i].strip()))
            i += 1
        out += [".SH SYNOPSIS", esc(" ".join(synopsis))]
    out += [".SH DESCRIPTION"]
    para, prev = [], ""
    for line in lines[i:] + [""]:
        m = re.match(r"  (\S+(?: \S+)*?)\s{2,}(\S.*)", line) or re.match(r"  (-\S.*)()$", line)
        tag = m is not None and not line.startswith("   ")
        cont = line.startswith("   ")
        heading = not para and not prev.strip() and re.match(r"\S.{0,78}:$", line)
        prev = line
        if line.strip() and not tag and not cont and not heading:
            para.append(line.strip())
            continue
        if para:
            out += [".PP", esc(" ".join(para))]
            para = []
        if heading:
            out += [".SS " + esc(line[:-1])]
        elif tag:
            out += [".TP", "\\fB" + esc(m.group(1)) + "\\fR"] + ([esc(m.group(2))] if m.group(2) else [])
        elif cont:
            out.append(esc(line.strip()))
    if examples:
        out += [".SH EXAMPLES", ".nf"] + [esc(e) for e in examples] + [".fi"]
    out += [".SH SEE ALSO", "\\fBhotbuf\\fR(7)"]
    return out


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "readme":
        out = readme(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "help":
        out = helptext(sys.argv[2], sys.argv[3], sys.stdin.read())
    else:
        sys.exit(__doc__)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
