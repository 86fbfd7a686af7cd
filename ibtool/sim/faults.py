"""Fault scenarios on a live emulated fabric: cables and switches go down (and come back) while one
OpenSM keeps running, and each step's routing is collected for `ibtool verify all`.

A scenario (YAML, `ibtool sim run NET --faults faults.yaml`):

    sweep_interval: 2        # OpenSM's heavy-sweep interval, s (it also re-sweeps on traps)
    settle: 60               # at most this long for new tables after a step, s
    steps:
      - down: ["R[0,0] 2"]              # a cable, by either end: "DEVICE PORT" as in the plan
      - down: ["S[0,1]"]                # a switch: every cable of it
      - up: ["R[0,0] 2", "S[0,1]"]      # back again
      - errors: {"R[1,1] 3": {SymbolErrorCounter: 250}}   # port counters (ibsim's PerformanceSet)

`--fail "R[0,0] 2"` is a one-step scenario; `--random-faults N --seed S` downs N random
switch-to-switch cables or switches, one a step, never the SM's own switch and never one that cuts
the switches in two.

Each step is applied through ibsim's console (Unlink, ReLink, PerformanceSet); then the run waits
for OpenSM to configure tables again and writes RUN/step-N/ (step-0 is before any fault):
ibnetdiscover.out, dump_fts.out (complete: the top LID read with smpdump), expected.net (the plan
without what is down), perfquery.out (the port counters, at a step that sets them with `errors:`)
and summary.json: the faults, the engine that configured the tables, whether OpenSM fell back, and
the seconds from the fault to tables configured. `ibtool verify all RUN` verifies every step
against its expected.net, and the cable health of a step that set counters (a step whose counters
could not be read is "health: NOT CHECKED", never a pass).

Refused before anything starts (`check`): an unknown counter name or a value beyond the counter's
width, counters set on a cable that is down at that step, and a step that cuts the SM (ibsim's
default node, the first device of the net file) off from the other switches.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import yaml

from ibtool import mad, rundir
from ibtool.errors import InputError
from ibtool.fabric import SWITCH, Fabric
from ibtool.formats import atomic_write, ibnetdiscover, open_input, output_dir
from ibtool.formats.perfquery import check_counter
from ibtool.sim import opensm
from ibtool.sim.opensm import SL_ENGINES
from ibtool.sim.clients import Clients, port_counters
from ibtool.sim.live import LiveFabric
from ibtool.sim.runner import complete_top_lid

_CONFIGURED = re.compile(r"(\S+) tables configured on all switches")
QUIET = 0.5  # s without new tables after the last ones of a step before it is collected
_KEYS = {"down", "up", "errors", "name"}


@dataclass
class Step:
    down: list[str] = field(default_factory=list)  # "DEVICE PORT" (a cable) or "DEVICE" (a switch)
    up: list[str] = field(default_factory=list)
    errors: dict = field(default_factory=dict)  # "DEVICE PORT" -> {counter: value}
    name: str = ""

    def describe(self) -> str:
        parts = [f"down {', '.join(self.down)}" if self.down else "", f"up {', '.join(self.up)}" if self.up else "",
                 f"errors on {', '.join(self.errors)}" if self.errors else ""]
        return self.name or "; ".join(p for p in parts if p) or "no change"


@dataclass
class Scenario:
    steps: list[Step]
    sweep_interval: int = 2
    settle: float = 60.0
    source: str = ""  # where it came from, for messages: the YAML file, "--fail", "--random-faults"


def target(fabric: Fabric, spec: str, where: str) -> tuple[int, int | None]:
    """'R[0,0] 2' -> (node, 2); 'S[0,1]' -> (node, None)."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"{where}: a fault names a device, or a device and a port: {spec!r}")
    name, _, port = spec.strip().rpartition(" ")
    if name and port.isdigit():
        try:
            node = fabric.index(name)
        except InputError:
            raise InputError(f"{where}: no device {name!r} in the plan") from None
        if fabric.peer(node, int(port)) is None:
            raise InputError(f"{where}: {name} port {port} is not cabled in the plan")
        return node, int(port)
    try:
        node = fabric.index(spec.strip())
    except InputError:
        raise InputError(f"{where}: no device {spec.strip()!r} in the plan") from None
    if fabric.types[node] != SWITCH:
        raise InputError(f"{where}: {spec.strip()} is an HCA: name one of its cables ('{spec.strip()} 1')")
    return node, None


def read(path: str | Path, fabric: Fabric) -> Scenario:
    p = str(path)
    with open_input(path) as fh:
        try:
            d = yaml.safe_load(fh)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            raise InputError(f"not valid YAML: {getattr(e, 'problem', e)}", path=p,
                             line=mark.line + 1 if mark else None) from None
        except ValueError:  # PyYAML's int() of a number beyond Python's 4300-digit limit
            raise InputError("not valid YAML: a number of more than 4300 digits", path=p) from None
    if not isinstance(d, dict) or not isinstance(d.get("steps"), list) or not d["steps"]:
        raise InputError("a fault scenario is a mapping with a non-empty list 'steps'", path=p)
    unknown = set(d) - {"steps", "sweep_interval", "settle"}
    if unknown:
        raise InputError(f"unknown key {sorted(unknown)[0]!r} (known: steps, sweep_interval, settle)", path=p)
    steps = []
    for k, s in enumerate(d["steps"], 1):
        where = f"{p}: step {k}"
        if not isinstance(s, dict) or set(s) - _KEYS:
            bad = sorted(set(s) - _KEYS)[0] if isinstance(s, dict) else s
            raise InputError(f"{where}: unknown key {bad!r} (known: {', '.join(sorted(_KEYS))})")
        st = Step(list(s.get("down") or []), list(s.get("up") or []), dict(s.get("errors") or {}), str(s.get("name") or ""))
        for spec in st.down + st.up:
            target(fabric, spec, where)
        for spec, counters in st.errors.items():
            node, port = target(fabric, spec, where)
            if port is None or not isinstance(counters, dict) or not counters:
                raise InputError(f"{where}: errors: '{spec}' needs a port and its counters ({{COUNTER: VALUE}})")
            for key, value in counters.items():
                check_counter(key, value, f"{where}: errors: '{spec}'")
        steps.append(st)
    raw = {"sweep_interval": d.get("sweep_interval", 2), "settle": d.get("settle", 60)}
    for key, lo, hi in (("sweep_interval", 1, 0xFFFFFFFF), ("settle", 1, 3600)):  # OpenSM's U32 for the sweep
        v = raw[key]
        # .inf, nan, text, a list, a fraction of a sweep: named with the file, not an OverflowError
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi or \
                (key == "sweep_interval" and v != int(v)):
            shown = repr(v) if len(repr(v)) <= 40 else f"{repr(v)[:20]}... ({len(repr(v))} characters)"
            raise InputError(f"{key} {shown}: not a {'whole ' if key == 'sweep_interval' else ''}number of "
                             f"seconds in {lo}..{hi}", path=p)
    sweep, settle = int(raw["sweep_interval"]), float(raw["settle"])
    return Scenario(steps, sweep, settle, p)


SM_NODE = 0  # ibsim's default node, the first device of the net file: where the scenario's OpenSM runs


def check(plan: Fabric, scenario: Scenario, net: str | Path, sm_node: int = SM_NODE) -> None:
    """Refuse, before anything starts, a scenario whose steps would do nothing or verify nothing:
    port counters set on a cable that is down at that step (ibsim keeps no counters of an unlinked
    port that perfquery could read), and a step that cuts the SM off from the other switches
    (its switch down, or every cable between it and the rest: OpenSM would route an empty fabric
    and the step's expected.net would be the SM's node alone)."""
    link_of = _link_of(plan)
    down_links: set[int] = set()
    down_nodes: set[int] = set()
    sm = plan.names[sm_node]
    for k, step in enumerate(scenario.steps, 1):
        where = (f"{scenario.source}: " if scenario.source else "") + f"step {k}" \
            + (f" ({step.name})" if step.name else "")
        for verb, specs in (("up", step.up), ("down", step.down)):
            for spec in specs:
                node, port = target(plan, spec, where)
                gone, key = (down_links, link_of[node, port]) if port else (down_nodes, node)
                (gone.add if verb == "down" else gone.discard)(key)
        for spec in step.errors:
            node, port = target(plan, spec, where)
            li = link_of[node, port]
            ends = (plan.link_a[li], plan.link_b[li])
            if li in down_links or any(e in down_nodes for e in ends):
                raise InputError(f"{where}: errors: '{spec}': that cable is down at this step, so its counters "
                                 f"cannot be read; set them before it goes down or after it is up")
        if sm_node in down_nodes:
            raise InputError(f"{where}: down {sm} cuts the SM off: OpenSM runs on {sm}, ibsim's default node (the "
                             f"first device of {net}); fault another device, or put another device first in the net "
                             f"file")
        # the SM's piece (what its discovery finds) has no switch but its own: cut off
        if _expected(plan, down_links, down_nodes, sm_node).count(kind=SWITCH) <= 1 < \
                plan.count(kind=SWITCH) - len(down_nodes):
            raise InputError(f"{where}: down {', '.join(step.down)} cuts the SM off from every other switch: OpenSM "
                             f"runs on {sm}, ibsim's default node (the first device of {net}); fault other cables, "
                             f"or put another device first in the net file")


def _link_of(plan: Fabric) -> dict[tuple[int, int], int]:
    """(node, port) -> the plan's link on it, from either end."""
    out = {}
    for li in range(plan.num_links):
        out[plan.link_a[li], plan.link_pa[li]] = out[plan.link_b[li], plan.link_pb[li]] = li
    return out


def commands(plan: Fabric, step: Step, where: str, ids: list[str] | None = None) -> list[tuple[str, str, int, int | None]]:
    """A step as ibsim console commands, in the order they are sent: (command, verb, node, port).
    Up first: ReLink of a switch brings back every cable of it, also one to a switch the step takes
    down; then down (Unlink), then port counters (PerformanceSet). `ids`: ibsim's node ids."""
    ids = ids or [ibnetdiscover.node_id(plan, i) for i in range(plan.num_nodes)]
    out = []
    for verb, specs in (("ReLink", step.up), ("Unlink", step.down)):
        for spec in specs:
            node, port = target(plan, spec, where)
            out.append((f'{verb} "{ids[node]}"' + (f"[{port}]" if port else ""), verb, node, port))
    for spec, counters in step.errors.items():
        node, port = target(plan, spec, where)
        for key, value in counters.items():
            out.append((f'PerformanceSet "{ids[node]}"[{port}] PortCounters.{key}={value}', "PerformanceSet",
                        node, port))
    return out


def random_scenario(fabric: Fabric, count: int, seed: int, sm_node: int = SM_NODE) -> Scenario:
    """`count` steps, each one more switch-to-switch cable or switch down, keeping the switches
    connected and the SM's own switch up."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    rng = random.Random(seed)
    sw = [i for i in range(fabric.num_nodes) if fabric.types[i] == SWITCH]
    links = [li for li in range(fabric.num_links)
             if fabric.types[fabric.link_a[li]] == SWITCH and fabric.types[fabric.link_b[li]] == SWITCH]
    gone_links: set[int] = set()
    gone_nodes: set[int] = set()

    def connected(extra_links=(), extra_node=None) -> bool:
        dead = gone_nodes | ({extra_node} if extra_node is not None else set())
        keep = [li for li in links if li not in gone_links and li not in extra_links
                and fabric.link_a[li] not in dead and fabric.link_b[li] not in dead]
        alive = [i for i in sw if i not in dead]
        idx = {n: k for k, n in enumerate(alive)}
        a = [idx[fabric.link_a[li]] for li in keep]
        b = [idx[fabric.link_b[li]] for li in keep]
        g = coo_matrix((np.ones(len(a)), (a, b)), shape=(len(alive), len(alive)))
        return connected_components(g, directed=False)[0] == 1

    steps = []
    for _ in range(count):
        for _attempt in range(200):
            if rng.random() < 0.25:  # a switch
                node = rng.choice(sw)
                if node == sm_node or node in gone_nodes or not connected(extra_node=node):
                    continue
                gone_nodes.add(node)
                steps.append(Step(down=[fabric.names[node]]))
                break
            li = rng.choice(links)
            if li in gone_links or fabric.link_a[li] in gone_nodes or fabric.link_b[li] in gone_nodes \
                    or not connected(extra_links={li}):
                continue
            gone_links.add(li)
            steps.append(Step(down=[f"{fabric.names[fabric.link_a[li]]} {fabric.link_pa[li]}"]))
            break
        else:
            raise InputError(f"--random-faults {count}: no more faults that keep the switches connected "
                             f"(after {len(steps)})")
    return Scenario(steps, source="--random-faults")


def _expected(plan: Fabric, down_links: set[int], down_nodes: set[int], sm_node: int = SM_NODE) -> Fabric:
    """What discovery from the SM's switch should find: the plan without what is down, cut to the
    piece the SM's switch is in (the HCAs of a down router are unreachable with it)."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    live = [li for li in range(plan.num_links) if li not in down_links
            and plan.link_a[li] not in down_nodes and plan.link_b[li] not in down_nodes]
    n = plan.num_nodes
    g = coo_matrix((np.ones(len(live)), ([plan.link_a[li] for li in live], [plan.link_b[li] for li in live])),
                   shape=(n, n))
    comp = connected_components(g, directed=False)[1]
    out = Fabric(plan.name)
    out.params = plan.params
    new = {}
    for i in range(plan.num_nodes):
        if i not in down_nodes and comp[i] == comp[sm_node]:
            new[i] = out.add_node(plan.types[i], plan.names[i], plan.nports[i], plan.roles[i], plan.labels[i],
                                  plan.guids[i])
    for li in live:
        a, b = plan.link_a[li], plan.link_b[li]
        if a in new and b in new:
            out.add_link(new[a], new[b], plan.link_pa[li], plan.link_pb[li], plan.link_rate[li])
    return out


def run(net: Path, out: Path, engines: list[str], scenario: Scenario, timeout: float = 300,
        progress=None, path_sls: bool | None = None, log_flags: int = 0x47, hdor_conf: Path | None = None,
        conf_base: str | None = None, conf_options=(), accept_fallback: bool = False) -> dict:
    """path_sls: collect every HCA pair's PathRecord (its SL) at each step; default: when the engine
    programs SLs (SL_ENGINES). log_flags: OpenSM's -D (0x40 writes the SL2VL dump each step needs).
    hdor_conf: the KNS description hdor reads (beside OpenSM's opensm.conf). conf_base: an
    opensm.conf to start from (the plan's, with its engine's files); conf_options: more (key, value)
    options (`sim run --conf`). accept_fallback: a step whose tables are a later engine's of the
    list passes (by default the first engine not routing fails the step)."""
    say = progress or (lambda m: None)
    if path_sls is None:
        path_sls = any(e in SL_ENGINES for e in engines)
    plan = ibnetdiscover.read(net)
    check(plan, scenario, net)  # before anything starts
    out = output_dir(out)
    ids = [ibnetdiscover.node_id(plan, i) for i in range(plan.num_nodes)]
    link_of = _link_of(plan)
    down_links: set[int] = set()
    down_nodes: set[int] = set()
    summary = {"net": str(net), "engines": engines, "scenario": True, "path_sls": path_sls, "steps": []}
    conf = [("sweep_interval", str(scenario.sweep_interval))]
    if any(e in SL_ENGINES for e in engines):
        # OpenSM calls an engine's update_sl2vl only with QoS on: without it the switches keep
        # their SL2VL tables (every SL on VL 0) and the SLs of the detours separate nothing
        conf.append(("qos", "TRUE"))
    conf += list(conf_options)
    summary["opensm_conf"] = dict(conf)
    with LiveFabric(net, out / ".live", engines, timeout=timeout, opensm_args=["-D", hex(log_flags)],
                    conf_options=conf, conf_base=conf_base, hdor_conf=hdor_conf,
                    accept_fallback=accept_fallback) as lf:
        osm = lf.work / rundir.OSM

        log = {"pos": 0, "engines": [], "up_after": False}

        def configured() -> list[str]:
            """The engines that configured tables so far (the log read on from where it was left)."""
            with open(lf.opensm_log, "rb") as fh:
                fh.seek(log["pos"])
                chunk = fh.read()
            whole = chunk[:chunk.rfind(b"\n") + 1]
            log["pos"] += len(whole)
            for line in whole.decode(errors="replace").splitlines():
                m = _CONFIGURED.search(line)
                if m:
                    log["engines"].append(m.group(1))
                    log["up_after"] = False
                elif "SUBNET UP" in line:  # logged after the sweep's dumps are written
                    log["up_after"] = True
            return log["engines"]

        def collect(k: int, step: Step | None, t_fault: float | None, before: int, wall: float) -> dict:
            d = output_dir(rundir.step(out, k))
            waited = None
            if t_fault is not None:
                deadline = t_fault + scenario.settle
                seen = before
                while time.monotonic() < deadline:
                    n = len(configured())
                    if n > seen:  # new tables; a step of several changes may take more than one sweep
                        seen, waited = n, round(time.monotonic() - t_fault, 3)
                        quiet = time.monotonic() + QUIET
                    if waited is not None and time.monotonic() >= quiet and log["up_after"]:
                        break  # the sweep's end: its dumps (SL2VL) are on disk, the SA answers
                    time.sleep(0.05)
            configured()
            text = lf.opensm_log.read_text(errors="replace")
            state = opensm.routing_outcome(text, engines, accept_fallback)
            engine = state.engine  # the last tables configured (minhop where an engine deferred to it)
            # this sweep's dumps only: an engine that declined wrote no new opensm-hdor.dump
            (d / rundir.OSM).mkdir(exist_ok=True)
            for name in rundir.OSM_DUMPS:  # OpenSM's dumps of a sweep, rewritten every sweep
                src, dst = osm / name, d / rundir.OSM / name
                dst.unlink(missing_ok=True)
                if src.is_file() and src.stat().st_mtime >= wall:
                    shutil.copyfile(src, dst)
            expected = _expected(plan, down_links, down_nodes)
            ibnetdiscover.write(expected, d / rundir.EXPECTED)
            with ThreadPoolExecutor(2) as pool:  # two independent clients: one on each core
                done = [pool.submit(lf.client, [tool], d / name, timeout)
                        for tool, name in (("ibnetdiscover", rundir.FABRIC), ("dump_fts", rundir.LFTS))]
                for job in done:
                    job.result()
            found = ibnetdiscover.read(d / rundir.FABRIC)
            sim = SimpleNamespace(work=lf.scratch, env=lf.env)
            top = complete_top_lid(sim, d / rundir.LFTS, found, timeout)
            paths = None
            if path_sls and state.subnet_up:
                (d / rundir.PATH_SLS).unlink(missing_ok=True)
                paths = mad.path_sls(sim, d / rundir.PATH_SLS, found, timeout)
            counters = None
            (d / rundir.PERFQUERY).unlink(missing_ok=True)  # an earlier run's is not this step's
            if step is not None and step.errors:  # the step changed port counters: collect them for health
                counters = {}
                text = port_counters(Clients(lf.scratch, timeout=timeout, environ=lf.env()), found, 4, counters)
                if text:
                    with atomic_write(d / rundir.PERFQUERY) as fh:
                        fh.write(text)
            s = {"net": rundir.EXPECTED, "step": k, "faults": step.describe() if step else "none (before any fault)",
                 "down": sorted(f"{plan.names[plan.link_a[li]]} {plan.link_pa[li]}" for li in down_links)
                 + sorted(plan.names[n] for n in down_nodes),
                 "engines": engines, "engine": engine, "subnet_up": state.subnet_up,
                 "requested": state.requested, "fallback": state.fallback, "accept_fallback": accept_fallback,
                 "default_for": state.default_for, "no_routes": state.no_routes,
                 "hdor_declined": state.hdor_declined,
                 "seconds_to_tables": waited, "timed_out": t_fault is not None and waited is None,
                 "routing_step_s": state.routing_step_s, "dump_fts_top_lid": top, "path_sls": paths,
                 "changes_counters": bool(step and step.errors), "counters": counters,
                 "dumps": sorted(p.name for p in (d / rundir.OSM).iterdir())}
            s["ok"] = bool(state.ok and not s["timed_out"])  # the first engine's tables (or accepted)
            with atomic_write(d / rundir.SUMMARY) as fh:
                json.dump(s, fh, indent=2)
                fh.write("\n")
            return s

        say(f"step 0: {lf.outcome.get('engine')} configured the tables")
        configured()
        summary["steps"].append(collect(0, None, None, 0, 0.0))
        for k, step in enumerate(scenario.steps, 1):
            before = len(configured())
            wall = time.time() - 0.5  # file times lag the clock a little (coarse kernel timestamps)
            t0 = time.monotonic()
            for command, verb, node, port in commands(plan, step, f"step {k}", ids):
                said = lf.console(command)
                if verb == "PerformanceSet" and said.startswith("#"):  # (check() refused what it knows of)
                    raise InputError(f"step {k}: ibsim refused {command!r}: {said.lstrip('# ')}")
                if verb in ("Unlink", "ReLink"):
                    gone, key = (down_links, link_of[node, port]) if port else (down_nodes, node)
                    if verb == "Unlink":
                        gone.add(key)
                    else:
                        gone.discard(key)
            s = collect(k, step, t0 if (step.down or step.up) else None, before, wall)
            say(f"step {k}: {step.describe()}: {s['engine'] or 'no engine'} configured the tables"
                + (f" in {s['seconds_to_tables']} s" if s["seconds_to_tables"] is not None else "")
                + (" (FALLBACK)" if s["fallback"] else "") + (" (TIMED OUT)" if s["timed_out"] else ""))
            summary["steps"].append(s)
    summary["ok"] = all(s["ok"] for s in summary["steps"])
    with atomic_write(out / rundir.SUMMARY) as fh:
        json.dump(summary, fh, indent=2)
        fh.write("\n")
    return summary
