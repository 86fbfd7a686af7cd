"""OpenSM: routing engine names, its configuration, and what its log says happened.

OpenSM falls back to minhop silently (unknown engine, plugin not found, engine failure), and
`opensm -o` exits 0 either way, so the truth is read from the log. It also names an engine in
"<engine> tables configured on all switches" when that engine's callback asked for OpenSM's
default algorithm instead (a callback returning > 0 in osm_ucast_mgr.c's ucast_mgr_route): of
OpenSM 3.3.23's engines only `file` does so, and says so at VERBOSE level ("LFTs file name is not
given; using default routing algorithm", osm_ucast_file.c) — those tables are minhop's. And
`file` given a multicast dump as its lfts_file logs "ERR 6303: Multicast dump file detected;
skipping parsing. Using default routing algorithm" but loads nothing and succeeds: every switch's
table stays empty (tried under ibsim: "0 valid lids dumped") — no routes, whatever the line says.

One rule for a run: the tables must be the first requested engine's; a later engine of the list
(a fallback) passes only with --accept-fallback, OpenSM's own default only where the list names it.
"""

from __future__ import annotations

import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import read_input
from ibtool.sim import opensm_options
# engine names are values of OpenSM's routing_engine option, checked with the other options
from ibtool.sim.opensm_options import BUILTIN_ENGINES, PLUGIN_ENGINES, SL_ENGINES, parse_engines  # noqa: F401
from ibtool.templating import render

def plugin_dir(src: Path = Path(__file__).resolve().parents[2] / "opensm_plugin") -> Path:
    """Where OpenSM finds libhdor.so for ibtool's runs: built beside the sources in a checkout
    (`make plugin`), else where the opensm-hdor package installs it (the loader's multiarch
    directory), so an ibtool installed from its wheel runs hdor from the package."""
    if src.is_dir():
        return src
    arch = sysconfig.get_config_var("MULTIARCH") or ""
    for d in (Path("/usr/lib") / arch, Path("/usr/local/lib") / arch, Path("/usr/lib64"), Path("/usr/lib")):
        if (d / "libhdor.so").exists():
            return d
    return src  # nothing installed: the refusal names the checkout's place and `ibtool plugin build`


PLUGIN_DIR = plugin_dir()


def config(engines: list[str], options: list[tuple[str, str]] = (), base_path: str | None = None,
           fabric: str | None = None) -> str:
    """An opensm.conf: `base_path`'s lines (a plan's or the user's conf; its relative file names
    made absolute against its directory, as OpenSM opens them from its own cwd), then the engines
    and `options` (file names as given: a plan's are relative to it). Every option is checked
    against OpenSM's own range or list first (opensm_options)."""
    base = ""
    if base_path:
        try:
            base = read_input(base_path, binary=True).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text (not an opensm.conf?)", path=str(base_path)) from None
        opensm_options.check_text(base, str(base_path))
        base = opensm_options.resolve_files(base, Path(base_path).resolve().parent)
    opts = [(key, opensm_options.check(key, value, f"opensm.conf option {key} {value}")) for key, value in options]
    plugins = [e for e in engines if e in PLUGIN_ENGINES]
    relative = any(k in opensm_options.FILE_KEYS and v != "(null)" and not Path(v).is_absolute() for k, v in opts)
    return render("opensm.conf.j2", engines=engines, plugins=plugins, options=opts, base=base,
                  base_path=base_path, fabric=fabric, relative=relative)


_TIME = re.compile(r"^\w{3} [ \d]\d (\d\d):(\d\d):(\d\d) (\d{6})")
_CONFIGURED = re.compile(r"(\S+) tables configured on all switches")
_BUILDING = re.compile(r"building routing with '([^']+)'")
_ERR = re.compile(r"ERR (?:[0-9A-F]{4}|HD[0-9A-F]{2}): .*")  # OpenSM's codes, and hdor's (docs/plugin.md)
_HDOR_DECLINED = re.compile(r"hdor: declined \((HD[0-9A-F]{2})\): (.*); OpenSM falls back to the next routing engine")
# an engine's callback handing the work to OpenSM's default algorithm (minhop's), while the engine's
# name is what "tables configured" prints: (log line, engine that says it) of OpenSM 3.3.23
_ROUTED_BY_DEFAULT = ((re.compile(r"LFTs file name is not given; using default routing algorithm"), "file"),)
DEFAULT_ENGINE = "minhop"  # OpenSM's default_routing_engine: its LFTs when an engine defers to it
# an engine that "configured" tables it left empty: (log line, engine, what happened)
_NO_ROUTES = ((re.compile(r"ERR 6303: Multicast dump file detected"), "file",
               "its lfts_file is a multicast dump (ERR 6303): OpenSM loaded no unicast route and left every "
               "switch's table empty, whatever its log says of a default algorithm"),)


def _seconds(line: str) -> float | None:
    m = _TIME.match(line)
    if not m:
        return None
    h, mi, s, us = (int(x) for x in m.groups())
    return h * 3600 + mi * 60 + s + us / 1e6


@dataclass
class Outcome:
    subnet_up: bool
    engine: str | None  # the engine whose tables were configured
    requested: list[str]
    attempted: list[str]  # engines OpenSM started routing with, in order
    routing_step_s: float | None  # 'building routing with' (last) -> 'tables configured'
    errors: list[str]
    hdor_declined: str | None = None  # hdor's last decline line: "HDxx: <reason>"
    default_for: str | None = None  # the engine OpenSM named while its default algorithm routed
    accept_fallback: bool = False  # a later engine of the list passes (--accept-fallback)
    no_routes: str | None = None  # why the engine's "configured" tables are empty

    @property
    def fallback(self) -> bool:
        """True when the tables are not the first requested engine's: a later one of the list, or
        OpenSM's default (minhop) when none of the list routed or one deferred to it."""
        return self.engine is not None and bool(self.requested) and self.engine != self.requested[0]

    @property
    def declined(self) -> list[str]:
        return [e for e in self.attempted if e != self.engine and e != self.default_for]

    @property
    def ok(self) -> bool:
        return self.subnet_up and self.engine is not None and not self.no_routes and (
            not self.fallback or (self.accept_fallback and self.engine in self.requested))

    def as_dict(self) -> dict:
        return {"subnet_up": self.subnet_up, "engine": self.engine, "requested": self.requested,
                "fallback": self.fallback, "accept_fallback": self.accept_fallback, "declined": self.declined,
                "default_for": self.default_for, "no_routes": self.no_routes, "ok": self.ok,
                "routing_step_s": self.routing_step_s,
                "errors": self.errors, "hdor_declined": self.hdor_declined}


def routing_outcome(log_text: str, requested: list[str] | None = None, accept_fallback: bool = False) -> Outcome:
    """What an OpenSM log says: did the subnet come up, and which engine configured the tables
    (minhop where the engine OpenSM names deferred to its default). accept_fallback: a later
    engine of `requested` is a pass (ok), still said as a fallback."""
    engine = None
    attempted: list[str] = []
    pass_start = step = None
    errors: list[str] = []
    up = False
    hdor_declined = None
    default_for = deferred = no_routes = empty = None
    for line in log_text.splitlines():
        if "SUBNET UP" in line:
            up = True
        m = _HDOR_DECLINED.search(line)
        if m:  # (an INFO line: a decline is not an error of OpenSM's)
            hdor_declined = f"{m.group(1)}: {m.group(2)}"
            continue
        m = _BUILDING.search(line)
        if m:
            attempted.append(m.group(1))
            deferred = empty = None  # (said again by each engine that defers, within its attempt)
            if pass_start is None:  # a routing pass starts with its first engine
                pass_start = _seconds(line)
            continue
        said = next((who for rx, who in _ROUTED_BY_DEFAULT if rx.search(line)), None)
        if said:
            deferred = said
            continue
        said = next(((who, why) for rx, who, why in _NO_ROUTES if rx.search(line)), None)
        if said:
            empty = said  # (an ERR line too: kept below)
        m = _CONFIGURED.search(line)
        if m:
            engine = m.group(1)
            default_for = None
            if deferred == engine:  # the engine's name, OpenSM's default algorithm's tables
                engine, default_for = DEFAULT_ENGINE, deferred
            no_routes = empty[1] if empty and empty[0] == engine else None
            deferred = empty = None
            t = _seconds(line)
            step = (t - pass_start) % 86400 if t is not None and pass_start is not None else None
            pass_start = None
            if engine == "hdor":
                hdor_declined = None  # routed again since
            continue
        m = _ERR.search(line)
        if m and len(errors) < 20:
            errors.append(m.group(0).strip())
    req = list(requested or [])
    req = [e for e in req if e != "no_fallback"]
    return Outcome(up, engine, req, attempted, step, errors, hdor_declined, default_for, accept_fallback, no_routes)
