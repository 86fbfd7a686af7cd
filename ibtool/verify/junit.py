"""Verification as JUnit XML, so a CI server shows a fabric check as it shows a unit test.

One <testsuite> per report (per step of a fault scenario), one <testcase> per check; a failed
check is a <failure> whose message is the check's summary and whose text lists its findings, each
with its fix; a check that was meant to run and did not (NOT CHECKED: health without counters,
deadlock freedom without the path SLs, an input that is missing) is <skipped> with the reason as its
message, and the run's exit code (5) keeps a CI job from passing over it. Informational checks
pass, their summary in <system-out>. The dialect is the one
Jenkins, GitLab and GitHub's test reporters read (testsuites / testsuite / testcase / failure).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import atomic_write


def _findings(name: str, rep: dict) -> list[str]:
    """The lines behind a failed check: the findings of its section, with their fixes."""
    sec = name.split(":")[0]
    out: list[str] = []
    if sec == "topology":
        t = rep.get("topology") or {}
        if t.get("not_planned_topology"):
            out.append(t.get("reason", ""))
        for key in ("misplaced_devices", "fixes", "loopbacks", "missing_cables", "extra_cables", "missing_devices",
                    "extra_devices", "partial_discovery", "degraded_links", "rate_mismatches"):
            out += [x["text"] for x in t.get(key) or []]
    elif sec == "routes":
        r = rep.get("routes") or {}
        if "deadlock" in name and (r.get("deadlock") or {}).get("cycle"):
            out.append("credit loop (channel dependency cycle; each channel's routes wait for the next):")
            out += [f"  {c}" for c in r["deadlock"]["cycle"]]
        elif "delivery" in name:
            for k, v in (r.get("undelivered_examples") or {}).items():
                out += [f"{k}: {x}" for x in v]
            out += [f"switch without a table: {x}" for x in r.get("switches_without_table") or []]
            out += r.get("unaddressed") or []
        elif "hdor tables" in name:
            out += (r.get("expect") or {}).get("table_difference_examples") or []
        elif "dimension order" in name:
            ex = ((r.get("expect") or {}).get("dimension_order") or {}).get("example")
            out += [f"e.g. {ex}"] if ex else []
        elif "unaffected" in name:
            out += (r.get("unaffected") or {}).get("examples") or []
    elif sec == "coords":
        c = rep.get("coords") or {}
        for key in ("dump_vs_reference", "reference_vs_plan"):
            out += (c.get(key) or {}).get("problems") or []
    elif sec == "health":
        out += [x["action"] for x in (rep.get("health") or {}).get("findings") or []]
    return out


def suite(rep: dict, name: str) -> ET.Element:
    s = ET.Element("testsuite", name=name)
    fails = skipped = 0
    for c in rep["checks"]:
        case = ET.SubElement(s, "testcase", classname=name, name=c["name"], time="0")
        if c["ok"] or c.get("info"):
            ET.SubElement(case, "system-out").text = c["summary"]
            continue
        if c.get("not_checked"):  # meant to run, did not: skipped with the reason, never a pass
            skipped += 1
            ET.SubElement(case, "skipped", message=c["summary"], type="NOT CHECKED").text = c["summary"]
            continue
        fails += 1
        lines = _findings(c["name"], rep)
        fl = ET.SubElement(case, "failure", message=c["summary"], type="FAIL")
        fl.text = "\n".join([c["summary"], *lines])
    s.set("tests", str(len(rep["checks"])))
    s.set("failures", str(fails))
    s.set("errors", "0")
    s.set("skipped", str(skipped))
    return s


def write(path: str | Path, suites: list[tuple[str, dict]]) -> None:
    """suites: (name, report) each; the file is written whole or not at all."""
    root = ET.Element("testsuites", name="ibtool verify")
    tests = fails = skipped = 0
    for name, rep in suites:
        s = suite(rep, name)
        root.append(s)
        tests += int(s.get("tests"))
        fails += int(s.get("failures"))
        skipped += int(s.get("skipped"))
    root.set("tests", str(tests))
    root.set("failures", str(fails))
    root.set("errors", "0")
    root.set("skipped", str(skipped))
    ET.indent(root)
    try:
        with atomic_write(path) as fh:
            fh.write('<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n")
    except OSError as e:
        raise InputError(f"--junit {path}: cannot write: {e.strerror}") from None
