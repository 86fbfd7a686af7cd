"""BENCHMARKS.md's summary table: made from the headline blocks of its sections, and checked
against them, so the table at the top cannot drift from the measurements below it.

    python perf/summary.py            # check; exit 1 with one line per disagreement
    python perf/summary.py --write    # rewrite the table from the blocks (then check)

A section declares its headline rows in a block that renders as nothing, under the text they
summarise (BENCHMARKS.md's top says how):

    <!-- headline
    | measure | ibtool | peer in the same run | ratio | date | load |
    -->

`<!-- headline: none (why) -->` for a section with no headline. The check (tests/test_benchmarks
_summary.py, in `make test`): every `##` section holds a block (in its text or a `###` of it);
every number of a row's ibtool, peer and load cells and the row's date appear in the text of the
heading the block sits under (so a section re-measured without its row fails); a ratio appears
there too or is the peer's first number over ibtool's (or the inverse) within 5 %; and the table
at the top is the one the blocks make.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

FILE = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
BEGIN, END = "<!-- summary:begin -->", "<!-- summary:end -->"
HEAD = ("measure", "ibtool", "peer in the same run", "ratio", "date", "load")
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(?::\d{2})?")


@dataclass
class Section:
    title: str
    level: int
    line: int
    anchor: str
    text: list[str]  # its own lines, up to the next heading, blocks left out


@dataclass
class Row:
    cells: list[str]
    line: int  # 1-based line of BENCHMARKS.md
    section: Section  # the heading the block sits under


def slug(title: str, seen: dict[str, int]) -> str:
    """The anchor GitHub gives a heading (lower case, punctuation dropped, spaces to hyphens;
    a repeated one numbered)."""
    s = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
    n = seen.get(s, 0)
    seen[s] = n + 1
    return s if n == 0 else f"{s}-{n}"


def parse(text: str) -> tuple[list[Section], list[Row], list[Section], list[str]]:
    """(sections, headline rows, the sections of 'none' blocks, problems of form)."""
    sections: list[Section] = []
    rows: list[Row] = []
    nones: list[Section] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    fence = False
    block: list | None = None  # (line, lines) of an open block
    for n, raw in enumerate(text.splitlines(), 1):
        if raw.startswith("```"):
            fence = not fence
        m = re.match(r"^(#{1,3}) (.*)$", raw) if not fence and block is None else None
        if m:
            sections.append(Section(m.group(2).strip(), len(m.group(1)), n, slug(m.group(2), seen), []))
            continue
        cur = sections[-1] if sections else None
        if block is not None:
            if raw.strip() == "-->":
                for ln, cells in block:
                    rows.append(Row(cells, ln, cur))
                block = None
            elif raw.startswith("|"):
                cells = [c.strip() for c in raw.strip().strip("|").split("|")]
                if tuple(c.lower() for c in cells) == HEAD:
                    continue
                if len(cells) != len(HEAD):
                    problems.append(f"BENCHMARKS.md:{n}: a headline row has {len(cells)} cells, not "
                                    f"{len(HEAD)} ({' | '.join(HEAD)})")
                else:
                    block.append((n, cells))
            elif raw.strip():
                problems.append(f"BENCHMARKS.md:{n}: in a headline block, a line that is not a row: {raw[:60]!r}")
            continue
        if raw.startswith("<!-- headline"):
            if cur is None:
                problems.append(f"BENCHMARKS.md:{n}: a headline block before any section")
            elif re.match(r"^<!-- headline: none \(.+\) -->$", raw.strip()):
                nones.append(cur)
            elif raw.strip() == "<!-- headline":
                block = []
            else:
                problems.append(f"BENCHMARKS.md:{n}: a headline block opens with `<!-- headline` alone on its "
                                f"line, or is `<!-- headline: none (why) -->`")
            continue
        if cur is not None:
            cur.text.append(raw)
    if block is not None:
        problems.append("BENCHMARKS.md: a headline block is not closed (a line `-->`)")
    return sections, rows, nones, problems


def _numbers(s: str) -> list[str]:
    return _NUMBER.findall(s)


def _value(s: str) -> float | None:
    m = _NUMBER.search(s)
    return float(m.group(0).replace(",", "")) if m else None


def table(rows: list[Row]) -> str:
    out = ["| " + " | ".join(HEAD) + " | section |", "|" + "---|" * (len(HEAD) + 1)]
    for r in rows:
        out.append("| " + " | ".join(r.cells) + f" | [{r.section.title}](#{r.section.anchor}) |")
    return "\n".join(out)


def check(text: str) -> list[str]:
    """Every way the table and the sections disagree, one line each (none: they agree)."""
    sections, rows, nones, problems = parse(text)
    # every ## section declares its headline, in its own text or a ### of it
    declared = {id(r.section) for r in rows} | {id(s) for s in nones}
    groups: list[tuple[Section, list[Section]]] = []
    for s in sections:
        if s.level == 2:
            groups.append((s, [s]))
        elif s.level == 3 and groups:
            groups[-1][1].append(s)
    for s, subs in groups:
        if BEGIN in "\n".join(s.text):
            continue
        if not declared & {id(x) for x in subs}:
            problems.append(f"BENCHMARKS.md:{s.line}: section {s.title!r} declares no headline (a block "
                            f"`<!-- headline` with its rows, or `<!-- headline: none (why) -->`)")
    for r in rows:
        measure, ibtool, peer, ratio, date, load = r.cells
        heading = r.section.title
        body = "\n".join(r.section.text)
        said = set(_numbers(_CLOCK.sub(" ", body)))  # a date's or a time's digits say no figure
        where = f"BENCHMARKS.md:{r.line}: {measure[:50]!r}"
        if not _DATE.match(date) or date not in body:
            problems.append(f"{where}: its date {date!r} is not a date the section {heading!r} gives")
        for name, cell in (("ibtool", ibtool), ("peer", peer), ("load", load)):
            for x in _numbers(cell):
                if x not in said:
                    problems.append(f"{where}: {name} {x} is not in the section {heading!r}")
        if ratio not in ("—", "-"):
            x = _numbers(ratio)[:1]
            if not x:
                problems.append(f"{where}: ratio {ratio!r} has no number (— when there is no peer)")
            elif x[0] not in said:
                a, b, v = _value(ibtool), _value(peer), float(x[0].replace(",", ""))
                if not (a and b and any(abs(q - v) <= 0.05 * v for q in (b / a, a / b))):
                    problems.append(f"{where}: ratio {x[0]} is neither in the section {heading!r} nor its peer "
                                    f"over ibtool ({b} / {a})")
    if BEGIN not in text or END not in text:
        problems.append(f"BENCHMARKS.md: no summary table ({BEGIN} ... {END})")
    else:
        now = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
        if now != table(rows):
            problems.append("BENCHMARKS.md: the summary table is not the one its sections' headline rows make "
                            "(python perf/summary.py --write)")
    return problems


def write(text: str) -> str:
    _, rows, _, _ = parse(text)
    head, rest = text.split(BEGIN, 1)
    return head + BEGIN + "\n" + table(rows) + "\n" + END + rest.split(END, 1)[1]


def main(argv: list[str]) -> int:
    text = FILE.read_text()
    if "--write" in argv:
        text = write(text)
        FILE.write_text(text)
    problems = check(text)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
