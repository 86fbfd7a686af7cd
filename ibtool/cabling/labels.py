"""Cable labels: what is printed on the tag at each end of a cable, and labels.csv for the
label printer.

A label follows TIA-606's identifier style: the cable ID, then this end's location, then the far
end's. Its format is a Python format string over the fields

    cable  stage  site  room  rack  u  side  face  loc  device  port
    far_site far_room far_rack far_u far_side far_face far_loc far_device far_port

(`face` is F or B, `loc` the place in short: `C0-U42F`, `floor` for a device not placed), one
label line per `|`. The default fits a real label, three lines of at most 20 characters:

    C0043                   {cable}
    C0-U05F S[0,1] P1       {loc} {device} P{port}
    >C0-U36F R[1,0] P2      >{far_loc} {far_device} P{far_port}

and leaves the device name out of a line it would make longer than 20 characters (the rack, U,
face and port name the port alone: no two devices share a place). `--label-format one-line` is
the same on one line.

labels.csv has one row per cable end, each label line in a column of its own (label printer
programs replace a field by the first line of a cell only) and the cable ID again as the value
for a barcode or QR code; docs/cabling.md shows how Brother P-touch Editor reads it.
"""

from __future__ import annotations

import csv
import string
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import atomic_write

WIDTH = 20  # characters of one label line (the default keeps to it)
DEFAULT = "{cable}|{loc} {device} P{port}|>{far_loc} {far_device} P{far_port}"
ONE_LINE = "{cable} {loc} {device} P{port} > {far_loc} {far_device} P{far_port}"
NAMED = {"default": DEFAULT, "three-line": DEFAULT, "one-line": ONE_LINE}
END_FIELDS = ("site", "room", "rack", "u", "side", "face", "loc", "device", "port")
FIELDS = ("cable", "stage") + END_FIELDS + tuple(f"far_{x}" for x in END_FIELDS)
COLUMNS = ("cable_id", "end", "stage", "line1", "line2", "line3", "barcode", "rack", "u", "side", "device", "port",
           "far_rack", "far_u", "far_side", "far_device", "far_port")


def check_format(fmt: str | None, option: str = "--label-format") -> str:
    """The format `fmt` names or is; one with an unknown field or a malformed specification is
    refused before any work."""
    fmt = NAMED.get(fmt or "default", fmt)
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError as e:
        raise InputError(f"{option}: malformed format {fmt!r}: {e}") from None
    for _, name, _, _ in parsed:
        if name is not None and name not in FIELDS:
            raise InputError(f"{option}: unknown field {{{name}}} (known: {', '.join(FIELDS)})")
    sample = {k: 1 if k in ("u", "port", "far_u", "far_port", "stage") else "x" for k in FIELDS}
    try:
        fmt.format(**sample)
    except (ValueError, IndexError, KeyError) as e:
        raise InputError(f"{option}: malformed format {fmt!r}: {e}") from None
    if fmt.count("|") > 2:
        raise InputError(f"{option}: {fmt.count('|') + 1} lines; a label has at most 3 (lines are separated by |)")
    return fmt


def end_fields(rack: str, u: int, side: str, device: str, port: int, site: str = "site",
               room: str = "room") -> dict:
    """The fields of one end (see the module docstring)."""
    face = {"front": "F", "back": "B"}.get(side, "")
    loc = f"{rack}-U{u:02d}{face}" if u else rack
    return {"site": site, "room": room, "rack": rack, "u": u, "side": side, "face": face, "loc": loc,
            "device": device, "port": port}


def lines(fmt: str, cable: str, stage: int, near: dict, far: dict) -> list[str]:
    """The label lines of the end `near` of a cable whose other end is `far`."""
    if fmt == DEFAULT:  # the default, written out (a package has a label per cable end)
        here = f"{near['loc']} {near['device']} P{near['port']}"
        there = f">{far['loc']} {far['device']} P{far['port']}"
        if len(here) > WIDTH:  # the place names the port: the device name goes
            here = f"{near['loc']} P{near['port']}"
        if len(there) > WIDTH:
            there = f">{far['loc']} P{far['port']}"
        return [cable, here, there]
    fields = {"cable": cable, "stage": stage, **near, **{f"far_{k}": v for k, v in far.items()}}
    return [part.format(**fields) for part in fmt.split("|")]


def text(label_lines: list[str]) -> str:
    """A label as one cell of cables.csv and the sheets: its lines joined by ' / '."""
    return " / ".join(label_lines)


def write_csv(rows: list[dict], path: Path) -> None:
    """labels.csv: one row per cable end (rows of CablePlan.rows(), each with `a_lines`, `b_lines`),
    in wiring order, the A end first; UTF-8 with a header row of field names."""
    with atomic_write(path) as fh:
        w = csv.writer(fh, lineterminator="\r\n")  # what Windows label programs expect; every reader takes it
        w.writerow(COLUMNS)
        for r in rows:
            for end, far in (("a", "b"), ("b", "a")):
                ln = list(r[f"{end}_lines"]) + [""] * (3 - len(r[f"{end}_lines"]))
                w.writerow([r["cable_id"], end.upper(), r["stage"], *ln[:3], r["cable_id"],
                            r[f"{end}_rack"], r[f"{end}_u"], r[f"{end}_side"], r[f"{end}_device"], r[f"{end}_port"],
                            r[f"{far}_rack"], r[f"{far}_u"], r[f"{far}_side"], r[f"{far}_device"], r[f"{far}_port"]])
