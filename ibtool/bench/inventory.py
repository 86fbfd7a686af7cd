"""The inventory: which hosts, how to reach them, how to launch MPI, where the benchmarks are.

Loaded from YAML and validated on load; every message names the key that is wrong
(``inv.yaml: hosts[1].slots: must be a positive integer``). See docs/bench.md for the format.
Passwords are refused: authentication is by key or SSH agent only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ibtool.bench.hosts import Host, SSHConfig
from ibtool.bench.launchers import LAUNCHERS
from ibtool.bench.registry import BENCHMARKS, RUNNERS
from ibtool.errors import InputError
from ibtool.formats import check_input

SECRET_WORDS = re.compile(r"pass(word|phrase)?|secret|token", re.I)


@dataclass
class BenchConfig:
    name: str  # the name used on the command line
    type: str  # the registered benchmark
    binary: str | None
    params: dict
    nprocs: int | None
    hosts: list[str] | None
    timeout: float
    expect: dict = field(default_factory=dict)  # metric -> {"min": x, "max": y}: plausibility bounds


@dataclass
class Inventory:
    path: str
    hosts: list[Host]
    runner: str = "ssh"
    workdir: str = "/tmp/ibtool-bench"
    launch_host: str | None = None
    parallel: int = 16
    mpi: dict = field(default_factory=dict)
    slurm: dict = field(default_factory=dict)
    sm: dict | None = None
    oversubscribe: bool = False  # True: hosts may share an address (ranks share cores), deliberately
    benchmarks: dict[str, BenchConfig] = field(default_factory=dict)
    raw: dict = field(default_factory=dict)

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise InputError(f"unknown host {name!r} (inventory hosts: {', '.join(h.name for h in self.hosts)})",
                         path=self.path)

    def bench(self, name: str) -> BenchConfig:
        if name in self.benchmarks:
            return self.benchmarks[name]
        BENCHMARKS.get(name)  # raises for unknown names
        return BenchConfig(name, name, None, {}, None, None, 3600.0)

    def run_hosts(self, cfg: BenchConfig) -> list[Host]:
        return [self.host(n) for n in cfg.hosts] if cfg.hosts else [h for h in self.hosts if h.compute]

    def nprocs(self, cfg: BenchConfig) -> int:
        if cfg.nprocs:
            return cfg.nprocs
        if self.mpi.get("nprocs"):
            return int(self.mpi["nprocs"])
        return sum(h.slots for h in self.run_hosts(cfg))

    def public(self) -> dict:
        """The inventory as stored with results: no secrets (there are none to begin with)."""
        return redact(self.raw)


def redact(obj):
    if isinstance(obj, dict):
        return {k: ("<redacted>" if SECRET_WORDS.search(str(k)) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    return obj


class _Checker:
    def __init__(self, path: str):
        self.path = path

    def fail(self, key: str, msg: str):
        raise InputError(f"{key}: {msg}", path=self.path)

    def mapping(self, obj, key: str, allowed: set[str]) -> dict:
        if obj is None:
            return {}
        if not isinstance(obj, dict):
            self.fail(key, f"must be a mapping, got {type(obj).__name__}")
        for k in obj:
            if SECRET_WORDS.search(str(k)):
                self.fail(f"{key}.{k}", "passwords and secrets are not accepted; use an SSH key or agent")
            if k not in allowed:
                self.fail(f"{key}.{k}" if key else str(k), f"unknown key (allowed: {', '.join(sorted(allowed))})")
        return obj

    def integer(self, v, key: str, minimum: int = 1) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            self.fail(key, f"must be an integer >= {minimum}, got {v!r}")
        return v

    def number(self, v, key: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            self.fail(key, f"must be a positive number, got {v!r}")
        return float(v)

    def boolean(self, v, key: str) -> bool:
        if not isinstance(v, bool):
            self.fail(key, f"must be true or false, got {v!r}")
        return v

    def bounds(self, v, key: str) -> dict:
        out = {}
        for metric, b in self.mapping(v, key, set(v or {})).items():
            b = self.mapping(b, f"{key}.{metric}", {"min", "max"})
            for k, x in b.items():
                if isinstance(x, bool) or not isinstance(x, (int, float)):
                    self.fail(f"{key}.{metric}.{k}", f"must be a number, got {x!r}")
            out[str(metric)] = {k: float(x) for k, x in b.items()}
        return out

    def params(self, v, key: str, defaults: dict) -> dict:
        """Benchmark parameters: known names, each of its default's type (integers >= 0)."""
        out = dict(self.mapping(v, key, set(defaults)))
        for k, x in out.items():
            d = defaults[k]
            if isinstance(d, bool):
                self.boolean(x, f"{key}.{k}")
            elif isinstance(d, int):
                self.integer(x, f"{key}.{k}", minimum=0)
            elif isinstance(d, str):
                self.string(x, f"{key}.{k}")
        return out

    def string(self, v, key: str) -> str:
        if not isinstance(v, str) or not v:
            self.fail(key, f"must be a non-empty string, got {v!r}")
        return v

    def strings(self, v, key: str) -> list[str]:
        if not isinstance(v, list) or not all(isinstance(x, (str, int, float)) for x in v):
            self.fail(key, f"must be a list of strings, got {v!r}")
        return [str(x) for x in v]

    def env(self, v, key: str) -> dict[str, str]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.fail(key, "must be a mapping NAME: value")
        for k in v:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k)):
                self.fail(f"{key}.{k}", "not a valid environment variable name")
            if SECRET_WORDS.search(str(k)):
                self.fail(f"{key}.{k}", "secrets are not accepted in the inventory")
            if isinstance(v[k], (dict, list)) or v[k] is None:
                self.fail(f"{key}.{k}", f"must be a string or number, got {v[k]!r}")
        return {str(k): str(x) for k, x in v.items()}

    def ssh(self, obj, key: str, base: SSHConfig) -> SSHConfig:
        o = self.mapping(obj, key, {"user", "port", "key", "known_hosts", "jump", "connect_timeout"})
        c = SSHConfig(**vars(base))
        if "user" in o:
            c.user = self.string(o["user"], f"{key}.user")
        if "port" in o:
            c.port = self.integer(o["port"], f"{key}.port")
        for k in ("key", "known_hosts"):
            if k in o:
                p = os.path.expanduser(self.string(o[k], f"{key}.{k}"))
                if not Path(p).is_file():
                    self.fail(f"{key}.{k}", f"no such file: {p}" if not Path(p).exists() else f"not a file: {p}")
                setattr(c, k, p)
        if "jump" in o:
            c.jump = self.string(o["jump"], f"{key}.jump")
            if not re.fullmatch(r"(?:[^@\s]+@)?[^@:\s]+(?::\d+)?", c.jump):
                self.fail(f"{key}.jump", f"must be a host of the inventory or [user@]address[:port], got {c.jump!r}")
        if "connect_timeout" in o:
            c.connect_timeout = self.number(o["connect_timeout"], f"{key}.connect_timeout")
        return c


LAUNCHER_KEYS = {"launcher", "mpirun", "args", "env", "nprocs"}
SLURM_TOOLS = ("sbatch", "squeue", "sacct", "scontrol", "scancel")
SLURM_KEYS = {"login", "options", "poll", "env", *SLURM_TOOLS}
SM_KEYS = {"host", "opensm", "args", "env", "stop", "timeout", "workdir", "verify_routes", "fabric"}
BENCH_KEYS = {"type", "binary", "params", "nprocs", "hosts", "timeout", "expect"}
TOP_KEYS = {"hosts", "ssh", "runner", "workdir", "launch_host", "parallel", "mpi", "slurm", "sm", "benchmarks",
            "oversubscribe"}


def load(path: str | Path) -> Inventory:
    path = str(path)
    check_input(path, directory_ok=True)  # a FIFO would block the read; a directory is said below
    try:
        with open(path) as fh:
            data = yaml.safe_load(fh)
    except FileNotFoundError:
        raise InputError("no such inventory file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a directory, not an inventory file", path=path) from None
    except UnicodeDecodeError:
        raise InputError("not a text file (YAML expected)", path=path) from None
    except ValueError:  # PyYAML's int() of a number beyond Python's 4300-digit limit
        raise InputError("not valid YAML: a number of more than 4300 digits", path=path) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(f"not valid YAML: {getattr(e, 'problem', e)}", path=path,
                         line=mark.line + 1 if mark else None) from None
    return parse(data, path)


def parse(data, path: str = "<inventory>") -> Inventory:
    c = _Checker(path)
    if not isinstance(data, dict):
        c.fail("(top level)", "the inventory must be a YAML mapping with at least 'hosts'")
    c.mapping(data, "", TOP_KEYS)
    base = c.ssh(data.get("ssh"), "ssh", SSHConfig())
    raw_hosts = data.get("hosts")
    if not isinstance(raw_hosts, list) or not raw_hosts:
        c.fail("hosts", "must be a non-empty list of hosts ({name: ..., address: ..., slots: ...})")
    hosts: list[Host] = []
    for i, h in enumerate(raw_hosts):
        key = f"hosts[{i}]"
        if isinstance(h, str):
            h = {"name": h}
        h = c.mapping(h, key, {"name", "address", "slots", "ssh", "compute"})
        name = c.string(h.get("name"), f"{key}.name")
        if any(x.name == name for x in hosts):
            c.fail(f"{key}.name", f"duplicate host name {name!r}")
        hosts.append(Host(name, c.string(h.get("address", name), f"{key}.address"),
                          c.integer(h.get("slots", 1), f"{key}.slots"), c.ssh(h.get("ssh"), f"{key}.ssh", base),
                          c.boolean(h.get("compute", True), f"{key}.compute")))
    by_name = {h.name: h for h in hosts}
    for i, h in enumerate(hosts):
        if h.ssh.jump == h.name:
            h.ssh.jump = None  # the jump host itself (ssh.jump of every host names it) is reached directly
        seen, hop = {h.name}, h.ssh.jump
        while hop in by_name:
            if hop in seen:
                c.fail(f"hosts[{i}].ssh.jump", f"jump hosts form a loop through {hop!r}")
            seen.add(hop)
            hop = by_name[hop].ssh.jump
    if not any(h.compute for h in hosts):
        c.fail("hosts", "no compute host (every host has compute: false)")
    oversubscribe = c.boolean(data.get("oversubscribe", False), "oversubscribe")
    seen_at: dict[tuple[str, int], int] = {}
    for i, h in enumerate(hosts):
        where = (h.address.lower(), h.ssh.port)
        if where in seen_at and h.compute and hosts[seen_at[where]].compute and not oversubscribe:
            j = seen_at[where]
            c.fail(f"hosts[{i}].address", f"{h.name} and {hosts[j].name} (hosts[{j}]) are the same machine "
                   f"({h.address}:{h.ssh.port}): their ranks would share cores and the mappings become "
                   "identical; remove one, or set oversubscribe: true if this is deliberate")
        seen_at.setdefault(where, i)
    inv = Inventory(path, hosts, raw=data, oversubscribe=oversubscribe)
    names = {h.name for h in hosts}
    inv.runner = c.string(data.get("runner", "ssh"), "runner")
    if inv.runner not in RUNNERS.names():
        c.fail("runner", f"unknown runner {inv.runner!r} (known: {', '.join(RUNNERS.names())})")
    inv.workdir = c.string(data.get("workdir", inv.workdir), "workdir")
    if not inv.workdir.startswith("/"):
        c.fail("workdir", "must be an absolute path (it is used on every host)")
    if "launch_host" in data:
        inv.launch_host = c.string(data["launch_host"], "launch_host")
        if inv.launch_host not in names:
            c.fail("launch_host", f"{inv.launch_host!r} is not one of the hosts")
    inv.parallel = c.integer(data.get("parallel", 16), "parallel")
    mpi = c.mapping(data.get("mpi"), "mpi", LAUNCHER_KEYS)
    inv.mpi = {"launcher": c.string(mpi.get("launcher", "openmpi"), "mpi.launcher"),
               "mpirun": c.string(mpi.get("mpirun", ""), "mpi.mpirun") if "mpirun" in mpi else None,
               "args": c.strings(mpi.get("args", []), "mpi.args"), "env": c.env(mpi.get("env"), "mpi.env"),
               "nprocs": c.integer(mpi["nprocs"], "mpi.nprocs") if "nprocs" in mpi else None}
    if inv.mpi["launcher"] not in LAUNCHERS.names():
        c.fail("mpi.launcher", f"unknown launcher {inv.mpi['launcher']!r} (known: {', '.join(LAUNCHERS.names())})")
    sl = c.mapping(data.get("slurm"), "slurm", SLURM_KEYS)
    inv.slurm = {"login": c.string(sl["login"], "slurm.login") if sl.get("login") is not None else None,
                 "options": c.strings(sl.get("options", []), "slurm.options"),
                 "poll": c.number(sl.get("poll", 2), "slurm.poll"),
                 "env": c.env(sl.get("env"), "slurm.env")}
    for tool in SLURM_TOOLS:
        inv.slurm[tool] = c.string(sl.get(tool, tool), f"slurm.{tool}")
    if inv.slurm["login"] is not None and inv.slurm["login"] not in names:
        c.fail("slurm.login", f"{inv.slurm['login']!r} is not one of the hosts (add the login node to hosts)")
    if data.get("sm") is not None:
        sm = c.mapping(data["sm"], "sm", SM_KEYS)
        host = c.string(sm.get("host", "local"), "sm.host")
        if host != "local" and host not in names:
            c.fail("sm.host", f"{host!r} is neither 'local' nor one of the hosts")
        inv.sm = {"host": host, "opensm": c.string(sm.get("opensm", "opensm"), "sm.opensm"),
                  "args": c.strings(sm.get("args", []), "sm.args"), "env": c.env(sm.get("env"), "sm.env"),
                  "workdir": c.string(sm.get("workdir", "/tmp/ibtool-opensm"), "sm.workdir"),
                  "stop": c.string(sm["stop"], "sm.stop") if sm.get("stop") is not None else None,
                  "timeout": c.number(sm.get("timeout", 120), "sm.timeout"),
                  "verify_routes": c.boolean(sm.get("verify_routes", False), "sm.verify_routes"),
                  "fabric": None}
        if sm.get("fabric") is not None:  # an emulated fabric: ibsim + OpenSM under umad2sim, here
            net = Path(path).parent / os.path.expanduser(c.string(sm["fabric"], "sm.fabric"))
            if not net.is_file():
                c.fail("sm.fabric", f"no such ibsim net file: {net}")
            if host != "local":
                c.fail("sm.host", "must be 'local' with sm.fabric (ibsim and OpenSM run on this machine)")
            inv.sm["fabric"] = str(net.resolve())
    benches = c.mapping(data.get("benchmarks"), "benchmarks", set(data.get("benchmarks") or {}))
    for name, b in benches.items():
        key = f"benchmarks.{name}"
        b = c.mapping(b, key, BENCH_KEYS)
        btype = c.string(b.get("type", name), f"{key}.type")
        if btype not in BENCHMARKS.names():
            c.fail(f"{key}.type" if "type" in b else key,
                   f"unknown benchmark {btype!r} (known: {', '.join(BENCHMARKS.names())})")
        params = c.params(b.get("params"), f"{key}.params", BENCHMARKS.get(btype).defaults)
        run_hosts = c.strings(b["hosts"], f"{key}.hosts") if "hosts" in b else None
        for hn in run_hosts or []:
            if hn not in names:
                c.fail(f"{key}.hosts", f"{hn!r} is not one of the hosts")
            if run_hosts.count(hn) > 1 and not oversubscribe:
                c.fail(f"{key}.hosts", f"{hn!r} is listed twice (set oversubscribe: true if this is deliberate)")
        inv.benchmarks[name] = BenchConfig(
            name, btype, c.string(b["binary"], f"{key}.binary") if "binary" in b else None, params,
            c.integer(b["nprocs"], f"{key}.nprocs") if "nprocs" in b else None, run_hosts,
            c.number(b.get("timeout", 3600), f"{key}.timeout"), c.bounds(b.get("expect"), f"{key}.expect"))
    return inv
