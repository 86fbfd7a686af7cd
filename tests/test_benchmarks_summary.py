"""BENCHMARKS.md answers first (issue 37): its summary table is the one its sections' headline
blocks make, and every row says what its section says (perf/summary.py; the convention is at
the top of BENCHMARKS.md). Each way it can drift is tried on a copy of the real file."""

from __future__ import annotations

import subprocess
import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "perf"))
import summary  # noqa: E402  (perf/summary.py)

TEXT = (ROOT / "BENCHMARKS.md").read_text()
ROW = ("| KNS 16-ary 3-direct plan written, a fresh process (`topo kns`) | 0.77 s, 59 MiB | ibsim loading the same "
       "file: 5.5 s | 7.1x faster | 2026-11-22 | three test suites beside |")


def test_the_table_and_the_sections_agree():
    assert summary.check(TEXT) == []
    p = subprocess.run([sys.executable, str(ROOT / "perf" / "summary.py")], capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (0, "")


def test_the_table_holds_every_row_first():
    """The answer first: the table comes before any section, with a row for each block's row."""
    sections, rows, _, _ = summary.parse(TEXT)
    assert TEXT.index(summary.END) < TEXT.index("\n## Generating and writing large KNS plans")
    assert len(rows) >= 30 and TEXT.count(ROW) == 2  # in its section's block, and in the table


def test_a_section_re_measured_without_its_row_fails():
    text = TEXT.replace("| 4,864 | 4,096 | 16,384 | 3.1 MiB | 0.77 s | 59 MiB |",
                        "| 4,864 | 4,096 | 16,384 | 3.1 MiB | 0.69 s | 58 MiB |")
    assert text != TEXT
    got = summary.check(text)
    assert any("ibtool 0.77 is not in the section 'Generating and writing large KNS plans'" in p for p in got), got
    assert any("ibtool 59 is not in the section" in p for p in got), got


def test_a_table_edited_by_hand_fails():
    head, table = TEXT.split(summary.BEGIN)
    text = head + summary.BEGIN + table.replace("7.1x faster", "9.9x faster", 1)
    assert summary.check(text) == ["BENCHMARKS.md: the summary table is not the one its sections' headline rows "
                                   "make (python perf/summary.py --write)"]


def test_a_new_section_declares_its_rows():
    new = "\n## The watcher (issue 99)\n\n`perf/watch_bench.py`, 2026-12-01, load 1.5: a sweep in 2.4 s, " \
          "perfquery per port 19.2 s.\n"
    got = summary.check(TEXT + new)
    assert len(got) == 1 and "section 'The watcher (issue 99)' declares no headline" in got[0]
    row = "| counter sweep | 2.4 s | perfquery per port: 19.2 s | 8.0x faster | 2026-12-01 | 1.5 |"
    text = summary.write(TEXT + new + f"\n<!-- headline\n{row}\n-->\n")
    assert summary.check(text) == [] and text.index(row) < text.index("## Generating")  # in the table
    bad = text.replace("8.0x faster", "12x faster")
    assert any("ratio 12 is neither in the section" in p for p in summary.check(summary.write(bad)))
    assert summary.check(TEXT + new + "\n<!-- headline: none (nothing measured against a peer yet) -->\n"
                         ) == []
