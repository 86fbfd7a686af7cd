"""A campaign: the cross product engines x benchmarks x mappings x repeats, run and stored one
run at a time, resumable.

Runs are grouped by routing engine: before a group, OpenSM is restarted on the SM node with that
engine and the log must prove the engine (not a fallback) configured the tables. A finished run
(ok, failed or skipped) is never redone when the campaign is started again with the same options;
``retry_failed`` redoes the failed and invalid ones.
"""

from __future__ import annotations

import hashlib
import platform
import re
import signal
import socket
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import click

from ibtool import __version__
from ibtool.bench import engines as engine_switch
from ibtool.bench import mapping as mapping_mod
from ibtool.bench.benchmarks.base import FAILED, OK, SKIPPED, ParseResult, RunFiles
from ibtool.bench.inventory import SECRET_WORDS, Inventory
from ibtool.bench.launchers import LAUNCHERS, ssh_config
from ibtool.bench.registry import BENCHMARKS, RUNNERS
from ibtool.bench.runners.base import MARK, Job, Outcome, shell_command
from ibtool.bench.store import Store, write_json
from ibtool.errors import InputError, raise_interrupted
from ibtool.sim.opensm import parse_engines

CURRENT = "current"  # no engine switching: whatever routes the fabric now
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass
class PlannedRun:
    engine: str
    benchmark: str
    mapping: str
    repeat: int
    seed: int

    @property
    def run_id(self) -> str:
        return f"{self.engine}--{self.benchmark}--{self.mapping}--r{self.repeat}"


def run_seed(seed: int, benchmark: str, repeat: int) -> int:
    """The random-mapping seed of a run: the same for every engine, so engines see the same placement."""
    h = hashlib.sha256(f"{seed}:{benchmark}:{repeat}".encode()).hexdigest()
    return int(h[:8], 16)


def plan(benchmarks: list[str], mappings: list[str], engines: list[str], repeat: int, seed: int) -> list[PlannedRun]:
    for kind, names in (("benchmark", benchmarks), ("mapping", mappings), ("engine", engines)):
        if not names:
            raise InputError(f"no {kind} given")
        for n in names:
            if not _NAME.fullmatch(n) or "--" in n:
                raise InputError(f"invalid {kind} name {n!r}")
        if len(set(names)) != len(names):
            raise InputError(f"the same {kind} is listed twice: {','.join(names)}")
    if repeat < 1:
        raise InputError("--repeat must be at least 1")
    return [PlannedRun(e, b, m, r, run_seed(seed, b, r))
            for e in engines for b in benchmarks for m in mappings for r in range(1, repeat + 1)]


@dataclass
class Prepared:
    """Everything a run needs that does not depend on the remote side."""

    planned: PlannedRun
    bench_type: str
    job: Job | None
    mapping: mapping_mod.Mapping
    request: dict
    skip_reason: str | None = None


def prepare(inv: Inventory, p: PlannedRun, campaign_id: str) -> Prepared:
    cfg = inv.bench(p.benchmark)
    bench = BENCHMARKS.get(cfg.type)(cfg.params, cfg.binary)
    hosts = inv.run_hosts(cfg)
    nprocs = inv.nprocs(cfg)
    bench.check(nprocs)
    mp = mapping_mod.make(p.mapping, hosts, nprocs, p.seed)
    request = bench.request(nprocs)
    if bench.block_mapping_only and not mp.is_block():
        return Prepared(p, cfg.type, None, mp, request,
                        f"{cfg.type} needs block placement (ranks contiguous per host); the {p.mapping} mapping "
                        "is not, so this run is skipped (the reference code would abort or crash)")
    remote = f"{inv.workdir.rstrip('/')}/{campaign_id}/{p.run_id}.{uuid.uuid4().hex[:6]}"
    launcher = LAUNCHERS.get(inv.mpi["launcher"])(inv.mpi)
    marker = f"{campaign_id}/{p.run_id}"
    rank_env = {**inv.mpi["env"], **bench.env(), MARK: marker}  # every rank carries the run's mark
    files = {**bench.inputs(nprocs), **launcher.files(mp)}
    if inv.runner == "ssh" and launcher.rsh_keys and not launcher.sets_own_rsh():
        # mpirun reaches the other hosts with its own ssh: give it the inventory's port, user, key
        files["ssh_config"] = ssh_config(hosts)
        launcher.args = [*launcher.rsh_args(f"{remote}/ssh_config"), *launcher.args]
    argv = launcher.argv(mp, bench.command(), rank_env)
    env = {**rank_env, **launcher.env(mp)}
    launch = inv.launch_host if inv.launch_host in [h.name for h in hosts] else hosts[0].name
    order = sorted(hosts, key=lambda h: h.name != launch)
    job = Job(p.run_id, order, files, argv, env, bench.collect, cfg.timeout, nprocs, remote, marker)
    return Prepared(p, cfg.type, job, mp, request)


def measures(inv: Inventory, benchmarks: list[str], engines: list[str]) -> dict:
    """Everything in the inventory that changes what a run measures, as flat `key: value` pairs
    (benchmark parameters, hosts, slots, rank counts, MPI settings, engine configuration).
    Resuming a campaign with any of them changed would mix parameters."""
    out = {"runner": inv.runner, "oversubscribe": inv.oversubscribe,
           **{f"mpi.{k}": inv.mpi.get(k) for k in ("launcher", "mpirun", "args", "env", "nprocs")}}
    for b in benchmarks:
        cfg = inv.bench(b)
        cls = BENCHMARKS.get(cfg.type)
        out[f"benchmarks.{b}.type"] = cfg.type
        out[f"benchmarks.{b}.binary"] = cfg.binary or cls.default_binary
        for k, v in {**cls.defaults, **cfg.params}.items():
            out[f"benchmarks.{b}.params.{k}"] = v
        out[f"benchmarks.{b}.nprocs"] = inv.nprocs(cfg)
        out[f"benchmarks.{b}.hosts"] = [f"{h.name}={h.address}:{h.slots}" for h in inv.run_hosts(cfg)]
    if inv.sm is not None and any(e != CURRENT for e in engines):
        for k in ("host", "opensm", "args", "fabric"):
            out[f"sm.{k}"] = inv.sm.get(k)
    return out


def sanity_bounds(benchmark_type: str, result: ParseResult, expect: dict) -> dict:
    """The benchmark's default bounds for the figures the run gave, overridden and extended by the
    inventory's `expect` (whose metrics must be present)."""
    bounds = {k: v for k, v in BENCHMARKS.get(benchmark_type).expect.items() if k in result.metrics}
    bounds.update(expect)
    return bounds


def run_figure(benchmark_type: str, result: ParseResult) -> str:
    """The run's headline figure for progress lines: the first figure metric it has."""
    for f in BENCHMARKS.get(benchmark_type).figures:
        m = result.metrics.get(f.metric)
        if m is not None:
            return f"{f.metric}={m['value']:.6g} {m['unit']}"
    return ""


class Progress:
    """A bar naming the run in progress when stderr is a terminal; else (or with --no-progress) one
    line per run start and end: benchmark, mapping, engine, repeat, status, figure."""

    def __init__(self, total: int, bar: bool, say):
        self.total, self.n, self.say = total, 0, say
        self.bar = click.progressbar(length=total, label="bench", file=sys.stderr, show_pos=True,
                                     item_show_func=lambda x: x) if bar and total else None

    def __enter__(self):
        if self.bar is not None:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)

    @staticmethod
    def _what(p: PlannedRun) -> str:
        return f"{p.benchmark} mapping={p.mapping} engine={p.engine} repeat={p.repeat}"

    def start(self, p: PlannedRun) -> None:
        self.n += 1
        if self.bar is not None:
            self.bar.update(0, f"running {p.run_id}")
        else:
            self.say(f"[{self.n}/{self.total}] start {self._what(p)}")

    def end(self, p: PlannedRun, status: str, figure: str, seconds: float) -> None:
        if self.bar is not None:
            self.bar.update(1)
        else:
            self.say(f"[{self.n}/{self.total}] end   {self._what(p)}: {status}"
                     + (f" {figure}" if figure else "") + f" ({seconds:.1f} s)")


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: ("<redacted>" if SECRET_WORDS.search(k) else v) for k, v in env.items()}


def environment(runner) -> dict:
    return {"ibtool": __version__, "python": platform.python_version(), "controller": socket.gethostname(),
            "platform": platform.platform(), **runner.describe()}


class Campaign:
    def __init__(self, inv: Inventory, out: str, benchmarks: list[str], mappings: list[str],
                 engines: list[str] | None, repeat: int = 1, seed: int = 1, retry_failed: bool = False,
                 new_parameters: bool = False):
        self.inv = inv
        self.store = Store(out)
        self.engines = engines or [CURRENT]
        self.runs = plan(benchmarks, mappings, self.engines, repeat, seed)
        self.retry_failed = retry_failed
        self.new_parameters = new_parameters
        self.options = {"benchmarks": benchmarks, "mappings": mappings, "engines": self.engines,
                        "repeat": repeat, "seed": seed}
        self.measures = measures(inv, benchmarks, self.engines)
        for e in engines or []:
            if parse_engines(e, "--engines") != [e]:  # unknown names are refused before anything runs
                raise InputError(f"invalid routing engine name {e!r}")
        if any(e != CURRENT for e in self.engines) and inv.sm is None:
            raise InputError("--engines needs an 'sm' section in the inventory (where and how to run OpenSM)",
                             path=inv.path)
        for p in self.runs:  # fail on impossible combinations before anything runs
            prepare(inv, p, "check")

    def pending(self) -> list[PlannedRun]:
        todo = []
        for p in self.runs:
            st = self.store.status(p.run_id)
            if st is None or (self.retry_failed and st not in (OK, SKIPPED)):
                todo.append(p)
        return todo

    def manifest(self) -> dict:
        return {**self.options, "inventory": self.inv.public(), "inventory_path": self.inv.path,
                "measures": self.measures, "runs": [p.run_id for p in self.runs], "created": _now()}

    def dry_run(self) -> list[dict]:
        """What `run` would do, honouring the stored runs: per run its state, rankfile and command."""
        stored = self.store.peek(self.manifest(), self.new_parameters)
        cid = stored["campaign_id"] if stored else "new-campaign-id"
        todo = {p.run_id for p in self.pending()}
        plans = []
        for p in self.runs:
            prep = prepare(self.inv, p, cid)
            item = {"run_id": p.run_id, "stored": self.store.status(p.run_id), "will_run": p.run_id in todo,
                    "seed": prep.mapping.seed, "skip_reason": prep.skip_reason}
            if prep.job is not None:
                job = prep.job
                item["command"] = shell_command(job.argv, job.env, job.remote_dir, job.timeout)
                item["mapping_files"] = {n: t for n, t in job.files.items()
                                         if n in ("rankfile.txt", "hostfile.txt", "slurm_hostfile.txt")}
            plans.append(item)
        return plans

    def run(self, say=None, progress: bool = True) -> dict:
        say = say or (lambda msg: click.echo(msg, err=True))
        manifest = self.store.open(self.manifest(), self.new_parameters)
        if len(manifest["generations"]) > 1 and manifest["generations"][-1].get("started_now"):
            g = manifest["generations"][-1]
            say(f"new parameter generation {g['generation']}: {'; '.join(g['changed'])}")
        self.generation = manifest["generation"]
        todo = self.pending()
        done_before = len(self.runs) - len(todo)
        if done_before:
            say(f"resuming: {done_before} of {len(self.runs)} runs already stored, {len(todo)} to do")
        runner = RUNNERS.get(self.inv.runner)(self.inv)
        counts = {OK: 0, FAILED: 0, "invalid": 0, SKIPPED: 0}
        done: list[dict] = []
        live = None
        old_term = signal.signal(signal.SIGTERM, raise_interrupted)  # clean up (OpenSM, connections) on kill -TERM
        try:
            with Progress(len(todo), progress and sys.stderr.isatty(), say) as bar:
                for engine in self.engines:
                    group = [p for p in todo if p.engine == engine]
                    if not group:
                        continue
                    engine_error = None
                    if engine != CURRENT:
                        if self.inv.sm.get("fabric") and live is None:
                            live = self._live(engine)
                        engine_error = self._switch(runner, engine, say, live)
                    for p in group:
                        bar.start(p)
                        t0 = time.monotonic()
                        status, figure, reasons = self._one(runner, p, manifest["campaign_id"], engine_error)
                        counts[status] = counts.get(status, 0) + 1
                        done.append({"run_id": p.run_id, "status": status, "figure": figure, "reasons": reasons})
                        bar.end(p, status, figure, time.monotonic() - t0)
        finally:
            if live is not None:
                live.stop()
            elif any(e != CURRENT for e in self.engines):
                try:
                    engine_switch.stop(engine_switch.sm_transport(self.inv, runner), self.inv.sm)
                except Exception as e:  # noqa: BLE001 - best effort, never hide the campaign's own error
                    say(f"warning: could not stop OpenSM: {e}")
            runner.close()
            self.store.close()
            signal.signal(signal.SIGTERM, old_term)
        totals = {OK: 0, FAILED: 0, "invalid": 0, SKIPPED: 0}
        for p in self.runs:
            st = self.store.status(p.run_id)
            if st is not None:
                totals[st] = totals.get(st, 0) + 1
        return {"total": len(self.runs), "done_before": done_before, "ran": len(todo), "counts": counts,
                "totals": totals, "stored": sum(totals.values()), "generation": self.generation, "runs": done,
                "out": str(self.store.out)}

    def _live(self, engine: str):
        """The emulated fabric of `sm.fabric`: ibsim and OpenSM started (and stopped) by ibtool."""
        from ibtool.sim.live import LiveFabric

        work = Path(self.inv.sm["workdir"]) / f"live-{uuid.uuid4().hex[:8]}"
        lf = LiveFabric(self.inv.sm["fabric"], work, [engine], timeout=self.inv.sm["timeout"],
                        opensm_args=self.inv.sm["args"])
        lf.__enter__()
        return lf

    def _switch(self, runner, engine: str, say, live=None) -> str | None:
        """Restart OpenSM with `engine` (and verify its routes); None, or why its runs fail."""
        dest = self.store.engines_dir / engine
        try:
            if live is not None:
                say(f"restarting OpenSM on the emulated fabric with routing engine {engine}")
                same = live.engines == [engine] and live.outcome.get("requested_engine") == engine
                outcome = dict(live.outcome if same else live.restart_opensm([engine]))  # just started with it
                outcome = engine_switch.keep_output(outcome, dest, live)
                t = None
            else:
                t = engine_switch.sm_transport(self.inv, runner)
                outcome = engine_switch.switch(t, self.inv.sm, engine, say, dest)
            if not outcome.get("error") and self.inv.sm["verify_routes"]:
                say(f"verifying the routes of {engine}")
                # `verify routes --engine`: a credit loop of an engine that gives paths their own SLs
                # (no path SLs here) is NOT CHECKED, not a failure; the rest is checked as for any engine
                outcome["verify_routes"] = engine_switch.verify_routes(t, self.inv.sm, engine, dest, live)
                outcome["error"] = outcome["verify_routes"].get("error")
                if outcome["verify_routes"].get("checked") is False:
                    say(f"routes of {engine}: NOT CHECKED: {outcome['verify_routes']['reason']}")
        except Exception as e:  # an unreachable SM node fails this engine's runs, not the campaign
            outcome = {"requested_engine": engine, "error": f"engine switch failed: {e}"}
        self.store.save_engine(engine, outcome)
        if not outcome.get("error"):
            return None
        say(f"engine {engine}: {outcome['error']}")
        if (outcome.get("verify_routes") or {}).get("error"):
            return outcome["error"]  # the engine routed; its tables are wrong, and the error says how
        return f"routing engine {engine} not in effect: {outcome['error']}"

    def _one(self, runner, p: PlannedRun, campaign_id: str, engine_error: str | None) -> tuple[str, str, list]:
        prep = prepare(self.inv, p, campaign_id)
        tmp = self.store.begin(p.run_id)
        started = time.time()
        rec = {"run_id": p.run_id, "benchmark": p.benchmark, "type": prep.bench_type, "engine": p.engine,
               "mapping": prep.mapping.as_dict(), "repeat": p.repeat, "generation": self.generation,
               "nprocs": prep.mapping.nprocs, "request": prep.request, "started": _now(),
               "environment": environment(runner)}
        if self.inv.sm is not None and p.engine != CURRENT:
            rec["engine_check"] = f"engines/{p.engine}.json"
        result = ParseResult(prep.bench_type)
        if engine_error:
            result.fail(engine_error)
        elif prep.skip_reason:
            result.status = SKIPPED
            result.reasons.append(prep.skip_reason)
        else:
            job = prep.job
            for name, text in job.files.items():
                (tmp / "inputs" / name).write_text(text)
            rec.update({"hosts": [h.name for h in job.hosts], "launch_argv": job.argv,
                        "launch_env": redact_env(job.env), "remote_dir": job.remote_dir, "marker": job.marker})
            try:
                outcome = runner.execute(job)
            except Exception as e:  # noqa: BLE001 - a runner bug must fail one run, not lose the campaign
                outcome = Outcome(None, error=f"runner error: {type(e).__name__}: {e}")
            out = tmp / "outputs"
            (out / "stdout.txt").write_text(outcome.stdout)
            (out / "stderr.txt").write_text(outcome.stderr)
            for name, data in outcome.files.items():
                (out / name).write_bytes(data)
            if outcome.command and outcome.command.startswith("#!"):
                (tmp / "inputs" / "job.sh").write_text(outcome.command)
            rec.update({"command": outcome.command, "exit_code": outcome.exit_code, "runner_info": outcome.info})
            if outcome.error:
                result.fail(outcome.error)
            else:
                result = BENCHMARKS.get(prep.bench_type).parse(
                    RunFiles([out, tmp / "inputs"], None, outcome.exit_code), prep.request)
                bounds = sanity_bounds(prep.bench_type, result, self.inv.bench(p.benchmark).expect)
                rec["expect"] = bounds
                result.check_expect(bounds)
        rec.update({"status": result.status, "reasons": result.reasons, "warnings": result.warnings,
                    "finished": _now(), "duration_s": round(time.time() - started, 3)})
        write_json(tmp / "metrics.json", result.as_dict())
        write_json(tmp / "run.json", rec)
        self.store.commit(tmp, p.run_id)
        return result.status, run_figure(prep.bench_type, result), result.reasons


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
