"""A plan: the directory `ibtool topo` (or `ibtool cabling import`) wrote, or a net file standing
for one. `Plan` is where each of its files is, what its opensm.conf names, whether it was
discovered; `read_plan` reads its Fabric (with the family's labels where it can be rebuilt),
`read_layout` its Layout, `write_plan` writes one. Every command finds a plan's files through
here; their names are spelled once, in `ibtool.plandir`.

A plan directory holds topology.net, fabric.json, node-name-map, opensm.conf (and the files its
engine reads), for families placed on a floor layout.json, after `ibtool cabling` cable-ids.json
and cabling/. topology.net is the truth. The family's labels (KNS coordinates and dimensions,
tree levels, cabinets), which the wiring stages and drawings use, are not in that file: they come
from rebuilding the family from fabric.json's parameters, kept only when the rebuilt fabric has
exactly the plan's devices and cables (an edited plan keeps its own wiring, with generic stages).
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ibtool import plandir
from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import ibnetdiscover, move_into, node_name_map, open_input, output_dir, output_target, read_input

@dataclass(frozen=True)
class Plan:
    """A plan as a user names it: a plan directory, or a net file (its own directory holds the
    rest when it is a plan's topology.net; a net file copied out of its plan has none of it)."""

    net: Path  # topology.net of the directory, or the net file named
    named: Path  # as the user named it

    @classmethod
    def at(cls, path: str | Path) -> Plan:
        """The plan at PATH: a directory (its topology.net) or a net file."""
        path = Path(path)
        return cls(path / plandir.NET if path.is_dir() else path, path)

    @property
    def dir(self) -> Path:
        return self.net.parent

    def file(self, name: str) -> Path:
        """A file of the plan by its name (plandir's)."""
        return self.dir / name

    opensm_conf = property(lambda self: self.file(plandir.OPENSM_CONF))
    hdor_conf = property(lambda self: self.file(plandir.HDOR_CONF))
    fabric_json = property(lambda self: self.file(plandir.FABRIC_JSON))
    node_name_map = property(lambda self: self.file(plandir.NODE_NAME_MAP))
    layout_json = property(lambda self: self.file(plandir.LAYOUT_JSON))
    cable_ids = property(lambda self: self.file(plandir.CABLE_IDS))
    cabling = property(lambda self: self.file(plandir.CABLING))  # the cabling package's default place

    def check_net(self) -> Path:
        """topology.net; a directory without one is refused in one line (not a plan directory)."""
        if self.named.is_dir() and not self.net.is_file():
            raise InputError(f"is a directory, not a net file; a plan directory (`ibtool topo --out DIR`) holds "
                             f"{plandir.NET}, and this one has none", path=str(self.named))
        return self.net

    def cable_list(self) -> Path | None:
        """The plan's cable list: PLAN/cables.csv, else the package's in PLAN/cabling/ (`ibtool cabling`)."""
        for cand in (self.file(plandir.CABLES_CSV), self.cabling / plandir.CABLES_CSV):
            if cand.is_file():
                return cand
        return None

    def summary(self) -> dict:
        """fabric.json ({} when there is none); InputError when it is not `ibtool topo`'s."""
        if not self.fabric_json.exists():
            return {}
        with open_input(self.fabric_json) as fh:
            try:
                out = json.load(fh)
            except (json.JSONDecodeError, RecursionError):
                out = None
        if not isinstance(out, dict):
            raise InputError("not a plan summary (fabric.json of `ibtool topo`)", path=str(self.fabric_json))
        return out

    @property
    def discovered(self) -> bool:
        """A fabric as discovered (an ibnetdiscover output, a hand-written net): no fabric.json beside
        the net file says what built it, so its GUIDs are the devices' own."""
        return not self.fabric_json.exists()

    def engines(self) -> list[str] | None:
        """The routing_engine list of the plan's opensm.conf (read as OpenSM reads it), or None when
        there is none beside the net file: `sim run PLAN` routes with the family's engine."""
        from ibtool.sim import opensm_options
        try:
            text = read_input(self.opensm_conf, binary=True).decode()
        except (InputError, UnicodeDecodeError):  # none, or one config() then names
            return None
        spec = opensm_options.read(text).get("routing_engine")
        return opensm_options.parse_engines(spec) if spec is not None else None

    def default_engine_note(self) -> str:
        """Why OpenSM will route this net file with minhop: no --engine and no plan's opensm.conf
        beside it (and, for a net file `ibtool topo` wrote, the family's own engine the copy lost)."""
        why = (f"no --engine and no {plandir.OPENSM_CONF} beside {self.net} (a plan's, as `ibtool topo` "
               f"writes it)")
        family = None
        try:
            with open(self.net, encoding="utf-8", errors="replace") as fh:
                head = fh.readline() + fh.readline()
            m = re.search(r"^# ibtool plan: .*\n# \{'topology': '([\w-]+)'", head)
            if m:
                from ibtool.registry import TOPOLOGIES
                family = TOPOLOGIES.get(m.group(1))
        except (OSError, KeyError, InputError):
            pass
        hint = (f"; this net file is a {family.name} plan, whose engine is {family.engine}: give its plan "
                f"directory (--plan DIR: its {plandir.OPENSM_CONF} and the files it names) or --engine "
                f"{family.engine}" if family is not None else "; give --engine, or the plan (--plan DIR)")
        return f"routing with minhop, OpenSM's default: {why}{hint}"


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


def read_plan(plan: str | Path | Plan) -> tuple[Fabric, Plan, dict | None]:
    """(fabric, plan, build): PLAN is a plan directory or its topology.net; `build` (the family
    and its arguments) is given when the fabric was rebuilt with the family's labels."""
    p = plan if isinstance(plan, Plan) else Plan.at(plan)
    found = ibnetdiscover.read(p.net)
    summary = p.summary()
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
            return rebuilt, p, summary["build"]
    if p.named.is_dir():  # unnamed by a summary, a plan is named after its directory
        found.name = p.named.resolve().name
    if isinstance(summary.get("name"), str):
        found.name = summary["name"]
    if isinstance(summary.get("params"), dict):
        found.params = summary["params"]
    return found, p, None


def read_layout(fabric: Fabric, plan: str | Path | Plan, policy: str | None = None, site=None):
    """The plan's layout.json when present (and no other policy or site is asked for), else the
    fabric placed by `policy` (default: the family's) on `site`."""
    from ibtool.layout import Layout, place
    lj = (plan if isinstance(plan, Plan) else Plan.at(plan)).layout_json
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
            engine_files.append(EngineFile("", plandir.HDOR_CONF, hdor_conf.text(conf)))
    out = output_dir(out)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
    except OSError as e:  # the plan is built beside --out, in its parent
        raise InputError(f"--out {out}: cannot write in {out.parent}: {e.strerror}") from None
    try:
        ibnetdiscover.write(fabric, tmp / plandir.NET)
        node_name_map.write(fabric, tmp / plandir.NODE_NAME_MAP)
        for ef in engine_files:
            if ef.filename:
                (tmp / ef.filename).write_text(ef.content)
        # relative to the plan (a plan can be moved); an unnamed file (hdor.conf) is found by its place
        options = [(ef.key, ef.filename or ef.content) for ef in engine_files if ef.key]
        (tmp / plandir.OPENSM_CONF).write_text(opensm.config(engines, options, fabric=fabric.name))
        # `build` (family and arguments) lets later steps rebuild the fabric with its labels
        summary = {**fabric.summary(), **({"build": build} if build else {})}
        (tmp / plandir.FABRIC_JSON).write_text(json.dumps(summary, indent=2) + "\n")
        if layout is not None:  # the family's place on the floor (ibtool.layout)
            layout.write(tmp / plandir.LAYOUT_JSON)
        for name, text in (extra or {}).items():
            (tmp / name).write_text(text)
        return {p.name: str(p) for p in move_into(tmp, out)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
