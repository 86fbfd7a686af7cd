"""A plan directory: writing it (`ibtool topo`, `ibtool cabling import`) and reading it back, its
Fabric (with the family's labels where it can be rebuilt) and its Layout.

A plan directory is what `ibtool topo` (or `ibtool cabling import`) wrote: topology.net, fabric.json,
and for families placed on a floor, layout.json. topology.net is the truth. The family's labels
(KNS coordinates and dimensions, tree levels, cabinets), which the wiring stages and drawings use,
are not in that file: they come from rebuilding the family from fabric.json's parameters, kept
only when the rebuilt fabric has exactly the plan's devices and cables (an edited plan keeps its
own wiring, with generic stages).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import ibnetdiscover, move_into, node_name_map, open_input, output_dir, output_target

NET = "topology.net"  # the plan itself; the other files say more about it


def _rebuild(build: dict) -> Fabric | None:
    """The family's fabric, built again with the arguments `ibtool topo` recorded."""
    from ibtool.topologies import load_all
    topo = load_all().get(str(build.get("family")))
    args = build.get("args")
    if topo is None or not isinstance(args, dict):
        return None
    try:
        return topo.build(**args)
    except (InputError, TypeError, ValueError):
        return None


def read_plan(plan: str | Path) -> tuple[Fabric, Path, dict | None]:
    """(fabric, plan directory, build): PLAN is a plan directory or its topology.net; `build` (the
    family and its arguments) is given when the fabric was rebuilt with the family's labels."""
    plan = Path(plan)
    net = plan / NET if plan.is_dir() else plan
    d = net.parent
    found = ibnetdiscover.read(net)
    fj = d / "fabric.json"
    summary = {}
    if fj.exists():
        with open_input(fj) as fh:
            try:
                summary = json.load(fh)
            except (json.JSONDecodeError, RecursionError):
                summary = None
        if not isinstance(summary, dict):
            raise InputError("not a plan summary (fabric.json of `ibtool topo`)", path=str(fj))
    if isinstance(summary.get("build"), dict):
        rebuilt = _rebuild(summary["build"])
        if (rebuilt is not None and rebuilt.names == found.names and rebuilt.guids == found.guids
                and rebuilt.link_set() == found.link_set()):
            # the plan's rates (topology.net says 4xQDR ...): the medium of each cable depends on it
            rate = {frozenset(((found.link_a[li], found.link_pa[li]), (found.link_b[li], found.link_pb[li]))):
                    found.link_rate[li] for li in range(found.num_links)}
            rebuilt.link_rate = [rate[frozenset(((rebuilt.link_a[li], rebuilt.link_pa[li]),
                                                 (rebuilt.link_b[li], rebuilt.link_pb[li])))]
                                 for li in range(rebuilt.num_links)]
            return rebuilt, d, summary["build"]
    if plan.is_dir():  # unnamed by a summary, a plan is named after its directory
        found.name = plan.resolve().name
    if isinstance(summary.get("name"), str):
        found.name = summary["name"]
    if isinstance(summary.get("params"), dict):
        found.params = summary["params"]
    return found, d, None


def read_layout(fabric: Fabric, plan_dir: Path, policy: str | None = None, site=None):
    """The plan's layout.json when present (and no other policy or site is asked for), else the
    fabric placed by `policy` (default: the family's) on `site`."""
    from ibtool.layout import Layout, place
    lj = plan_dir / "layout.json"
    if lj.exists() and policy is None and site is None:
        return Layout.read(lj, fabric)
    return place(fabric, policy, site)


def check_out(out: Path, force: bool) -> None:
    """Refuse an --out that is not a directory (a file, a FIFO: formats.output_target), or a
    non-empty directory without --force."""
    output_target(out, "--out", directory=True)
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(f"--out {out}: directory is not empty (use --force to overwrite)")


def write_plan(fabric, out: Path, engines: list[str], engine_files=(), layout=None, build=None,
               extra: dict[str, str] | None = None) -> dict[str, str]:
    """Write the plan files into `out`; built in a temporary sibling and moved in, so an error
    never leaves a half-written plan. `engine_files` (EngineFile) are written beside the plan and
    named in opensm.conf relative to it, so the plan can be copied, moved and committed (`sim run`
    and `plugin install --plan` make them absolute when they hand the conf to OpenSM); one with an
    empty filename is a plain `key value` option, one with an empty key a file the engine finds by
    its place beside opensm.conf; with hdor among `engines`, a KNS gets its description hdor.conf
    so. `layout` (ibtool.layout) is written as
    layout.json; `extra` maps further file names to their text (the cable IDs of a plan)."""
    from ibtool.sim import opensm
    engine_files = list(engine_files)
    if "hdor" in engines:  # the KNS description hdor reads beside opensm.conf (docs/plugin.md)
        from ibtool.formats import hdor_conf
        from ibtool.routing import hdor_description
        from ibtool.topologies import EngineFile
        conf = hdor_description.plan_description(fabric)
        if conf is not None:
            engine_files.append(EngineFile("", "hdor.conf", hdor_conf.text(conf)))
    out = output_dir(out)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
    except OSError as e:  # the plan is built beside --out, in its parent
        raise InputError(f"--out {out}: cannot write in {out.parent}: {e.strerror}") from None
    try:
        ibnetdiscover.write(fabric, tmp / NET)
        node_name_map.write(fabric, tmp / "node-name-map")
        for ef in engine_files:
            if ef.filename:
                (tmp / ef.filename).write_text(ef.content)
        # relative to the plan (a plan can be moved); an unnamed file (hdor.conf) is found by its place
        options = [(ef.key, ef.filename or ef.content) for ef in engine_files if ef.key]
        (tmp / "opensm.conf").write_text(opensm.config(engines, options, fabric=fabric.name))
        # `build` (family and arguments) lets later steps rebuild the fabric with its labels
        summary = {**fabric.summary(), **({"build": build} if build else {})}
        (tmp / "fabric.json").write_text(json.dumps(summary, indent=2) + "\n")
        if layout is not None:  # the family's place on the floor (ibtool.layout)
            layout.write(tmp / "layout.json")
        for name, text in (extra or {}).items():
            (tmp / name).write_text(text)
        return {p.name: str(p) for p in move_into(tmp, out)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
