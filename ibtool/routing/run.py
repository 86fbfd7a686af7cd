"""A route: `ibtool route ENGINE`'s one flow for every engine — refuse outputs that cannot be
written, read the discovered fabric, route it, write the files, time each phase.

    done = run.route(Path("run/ibnetdiscover.out"), kantc.compute,
                     lambda f, r: [run.File("--out", out, lambda: lft.write_file_engine(...))],
                     outputs={"--out": out}, say=print)
    done.fabric, done.result, done.timings   # {"read_s", "route_s", "write_s"}

The engine supplies what differs: how it routes (`compute`), the files it writes (`files`), and
what else it reads beside the fabric (`inputs`: a baseline, a layout). Every refusal is an
InputError before the first progress line, and before any file is written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import ibnetdiscover, output_target, shown


@dataclass
class File:
    """One file a route writes: the option that named it (for messages), where, and how; `write`
    may return a progress line."""
    option: str
    path: Path
    write: Callable[[], str | None]


@dataclass
class Routed:
    fabric: Fabric
    result: Any
    timings: dict[str, float]


def check_output(path: Path, option: str) -> None:
    """Refuse an output path that cannot be written before any work is done (one-line error):
    what it names must be a regular file or new (ibtool.formats.output_target), in a writable
    directory."""
    parent = output_target(path, option).parent
    if not parent.is_dir():
        raise InputError(f"{option} {shown(path)}: {shown(parent)} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{option} {shown(path)}: directory {shown(parent)} is not writable")


def read_fabric(path: Path, option: str = "--fabric", allow_partial: bool = False, names: dict | None = None,
                warn: Callable[[str], None] | None = None) -> Fabric:
    """The discovered fabric a route routes: with LIDs, and complete unless allow_partial (tables
    computed from a cut-short discovery would be written as if it were the fabric)."""
    f = ibnetdiscover.read(path, names)
    if not f.port_lids:
        raise InputError(f"{option}: no LIDs in this file (a plan? give the ibnetdiscover output of the running "
                         "fabric, e.g. RUN/ibnetdiscover.out of `ibtool sim run`)", path=str(path))
    ibnetdiscover.refuse_partial(f, path, allow_partial, warn)
    return f


def route(fabric_path: Path, compute: Callable[[Fabric], Any], files: Callable[[Fabric, Any], list[File]], *,
          outputs: dict[str, Path | None] | None = None, inputs: Callable[[Fabric], list[str]] | None = None,
          routed: Callable[[Any], str] | None = None, allow_partial: bool = False, names: dict | None = None,
          say: Callable[[str], None] | None = None, warn: Callable[[str], None] | None = None) -> Routed:
    """Route the fabric at `fabric_path` with `compute` and write `files` of the result.

    outputs: {option: path} refused first when they cannot be written; inputs(fabric): reads what
    else the engine needs (refusing it before any progress line) and returns the lines to say of
    it; routed(result): what to say of the result (default: the tables' count and top LID)."""
    say = say or (lambda m: None)
    for option, path in (outputs or {}).items():
        if path:
            check_output(path, option)
    t0 = time.monotonic()
    f = read_fabric(fabric_path, "--fabric", allow_partial, names, warn)
    more = inputs(f) if inputs else []
    say(f"read {f.num_nodes} nodes, {f.num_links} links from {fabric_path}")
    for line in more:
        say(line)
    t1 = time.monotonic()
    result = compute(f)
    t2 = time.monotonic()
    what = routed(result) if routed else f"writing {len(result.tables.lft)} tables x {result.tables.max_lid} LIDs"
    say(f"routed in {t2 - t1:.2f} s; {what}")
    for out in files(f, result):
        try:
            line = out.write()
        except OSError as e:
            raise InputError(f"{out.option} {shown(out.path)}: cannot write: {e.strerror}") from None
        if line:
            say(line)
    t3 = time.monotonic()
    return Routed(f, result, {"read_s": round(t1 - t0, 3), "route_s": round(t2 - t1, 3),
                              "write_s": round(t3 - t2, 3)})
