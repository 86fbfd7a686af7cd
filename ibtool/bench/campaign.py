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

import click

from ibtool import __version__
from ibtool.bench import engines as engine_switch
from ibtool.bench import mapping as mapping_mod
from ibtool.bench.benchmarks.base import FAILED, OK, SKIPPED, ParseResult, RunFiles
from ibtool.bench.inventory import SECRET_WORDS, Inventory
from ibtool.bench.launchers import LAUNCHERS
from ibtool.bench.registry import BENCHMARKS, RUNNERS
from ibtool.bench.runners.base import Job, Outcome
from ibtool.bench.store import Store, write_json
from ibtool.errors import InputError
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
    launcher = LAUNCHERS.get(inv.mpi["launcher"])(inv.mpi)
    rank_env = {**inv.mpi["env"], **bench.env()}
    files = {**bench.inputs(nprocs), **launcher.files(mp)}
    argv = launcher.argv(mp, bench.command(), rank_env)
    env = {**rank_env, **launcher.env(mp)}
    launch = inv.launch_host if inv.launch_host in [h.name for h in hosts] else hosts[0].name
    order = sorted(hosts, key=lambda h: h.name != launch)
    remote = f"{inv.workdir.rstrip('/')}/{campaign_id}/{p.run_id}.{uuid.uuid4().hex[:6]}"
    job = Job(p.run_id, order, files, argv, env, bench.collect, cfg.timeout, nprocs, remote)
    return Prepared(p, cfg.type, job, mp, request)


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: ("<redacted>" if SECRET_WORDS.search(k) else v) for k, v in env.items()}


def environment(runner) -> dict:
    return {"ibtool": __version__, "python": platform.python_version(), "controller": socket.gethostname(),
            "platform": platform.platform(), **runner.describe()}


class Campaign:
    def __init__(self, inv: Inventory, out: str, benchmarks: list[str], mappings: list[str],
                 engines: list[str] | None, repeat: int = 1, seed: int = 1, retry_failed: bool = False):
        self.inv = inv
        self.store = Store(out)
        self.engines = engines or [CURRENT]
        self.runs = plan(benchmarks, mappings, self.engines, repeat, seed)
        self.retry_failed = retry_failed
        self.options = {"benchmarks": benchmarks, "mappings": mappings, "engines": self.engines,
                        "repeat": repeat, "seed": seed}
        for e in engines or []:
            if parse_engines(e) != [e]:  # unknown names are refused before anything runs
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

    def run(self, say=None, progress: bool = True) -> dict:
        say = say or (lambda msg: click.echo(msg, err=True))
        manifest = self.store.open({**self.options, "inventory": self.inv.public(), "inventory_path": self.inv.path,
                                    "runs": [p.run_id for p in self.runs], "created": _now()})
        todo = self.pending()
        done_before = len(self.runs) - len(todo)
        if done_before:
            say(f"resuming: {done_before} of {len(self.runs)} runs already stored, {len(todo)} to do")
        runner = RUNNERS.get(self.inv.runner)(self.inv)
        counts = {OK: 0, FAILED: 0, "invalid": 0, SKIPPED: 0}
        old_term = signal.signal(signal.SIGTERM, _interrupt)  # clean up (OpenSM, connections) on kill -TERM
        try:
            with click.progressbar(length=len(todo), label="bench", file=sys.stderr, show_pos=True,
                                   item_show_func=lambda x: x, hidden=not progress) as bar:
                for engine in self.engines:
                    group = [p for p in todo if p.engine == engine]
                    if not group:
                        continue
                    engine_error = None
                    if engine != CURRENT:
                        engine_error = self._switch(runner, engine, say)
                    for p in group:
                        bar.update(0, p.run_id)
                        status = self._one(runner, p, manifest["campaign_id"], engine_error)
                        counts[status] = counts.get(status, 0) + 1
                        bar.update(1, f"{p.run_id}: {status}")
        finally:
            if any(e != CURRENT for e in self.engines):
                try:
                    engine_switch.stop(engine_switch.sm_transport(self.inv, runner), self.inv.sm)
                except Exception as e:  # noqa: BLE001 - best effort, never hide the campaign's own error
                    say(f"warning: could not stop OpenSM: {e}")
            runner.close()
            self.store.close()
            signal.signal(signal.SIGTERM, old_term)
        return {"total": len(self.runs), "done_before": done_before, "ran": len(todo), "counts": counts}

    def _switch(self, runner, engine: str, say) -> str | None:
        try:
            t = engine_switch.sm_transport(self.inv, runner)
            outcome = engine_switch.switch(t, self.inv.sm, engine, say)
            if not outcome.get("error") and self.inv.sm["verify_routes"]:
                say(f"verifying the routes of {engine}")
                outcome["verify_routes"] = engine_switch.verify_routes(t, self.inv.sm, engine,
                                                                       self.store.engines_dir / engine)
                outcome["error"] = outcome["verify_routes"].get("error")
        except Exception as e:  # an unreachable SM node fails this engine's runs, not the campaign
            outcome = {"requested_engine": engine, "error": f"engine switch failed: {e}"}
        self.store.save_engine(engine, outcome)
        if outcome.get("error"):
            say(f"engine {engine}: {outcome['error']}")
        return outcome.get("error")

    def _one(self, runner, p: PlannedRun, campaign_id: str, engine_error: str | None) -> str:
        prep = prepare(self.inv, p, campaign_id)
        tmp = self.store.begin(p.run_id)
        started = time.time()
        rec = {"run_id": p.run_id, "benchmark": p.benchmark, "type": prep.bench_type, "engine": p.engine,
               "mapping": prep.mapping.as_dict(), "repeat": p.repeat, "seed": p.seed,
               "nprocs": prep.mapping.nprocs, "request": prep.request, "started": _now(),
               "environment": environment(runner)}
        if self.inv.sm is not None and p.engine != CURRENT:
            rec["engine_check"] = f"engines/{p.engine}.json"
        result = ParseResult(prep.bench_type)
        if engine_error:
            result.fail(f"routing engine {p.engine} not in effect: {engine_error}")
        elif prep.skip_reason:
            result.status = SKIPPED
            result.reasons.append(prep.skip_reason)
        else:
            job = prep.job
            for name, text in job.files.items():
                (tmp / "inputs" / name).write_text(text)
            rec.update({"hosts": [h.name for h in job.hosts], "launch_argv": job.argv,
                        "launch_env": redact_env(job.env), "remote_dir": job.remote_dir})
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
                result.check_expect(self.inv.bench(p.benchmark).expect)
        rec.update({"status": result.status, "reasons": result.reasons, "warnings": result.warnings,
                    "finished": _now(), "duration_s": round(time.time() - started, 3)})
        write_json(tmp / "metrics.json", result.as_dict())
        write_json(tmp / "run.json", rec)
        self.store.commit(tmp, p.run_id)
        return result.status


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
