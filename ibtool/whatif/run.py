"""Running a what-if job: in chunks, each routed by one worker — the process itself, N local worker
processes, or the tasks of a Slurm job array — and merged into one ranking.

    job = prepare(src, out, ...)            # OUT/whatif.json (or the job already there: resumed)
    run_local(out, workers=2, progress=cb)  # or run_slurm(out, inventory, progress=cb)
    res = merge(out)                        # OUT/results.json, results.csv (and the page: whatif.page)

OUT/chunks/NNNNN.jsonl holds chunk N's rows, one line per failure, appended and synced as each is
measured; NNNNN.done marks the chunk finished, NNNNN.base.json what its worker measured of the
fault-free fabric (every chunk's must agree), NNNNN.log which failures this worker computed
(id, process, engine and measuring seconds: what the timings and the resume test read). A worker
killed at any point (kill -9 included) leaves every row it wrote; the next run of the same job
routes only the failures without one, so nothing is computed twice and nothing is lost. A torn
last line is dropped and its failure routed again.

Memory: a worker holds the fault-free fabric, its measures, the engine's loaded fabric and one
failure at a time; rows go to disk as they are made.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from ibtool import children
from ibtool.errors import CheckFailed, EnvironmentProblem, InputError
from ibtool.formats import atomic_write
from ibtool.hops import Pieces
from ibtool.plan import Plan
from ibtool.whatif import failures as fsets
from ibtool.whatif import job as jobs
from ibtool.whatif import rank
from ibtool.whatif.engines import HdorC, HdorReference, OpenSMOnIbsim, Routed

CHUNKS = "chunks"
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]


def chunk_path(out: Path, k: int, ext: str) -> Path:
    return Path(out) / CHUNKS / f"{k:05d}.{ext}"


# ------------------------------------------------------------------------------------ the job

def prepare(src: jobs.Source, out: Path, engine: str | None, fset: fsets.Set, chunks: int, sm: str | None,
            vls: int = 8, permutations: int = 16, seed: int = 1, timeout: float = 300, force: bool = False,
            sm_host: str | None = None, implementation: str = "c") -> jobs.Job:
    """The job for OUT: a new one, or the one there when it is the same (a resumed run)."""
    from ibtool.sim.opensm_options import parse_engines
    engines = parse_engines(engine.removeprefix("opensm:")) if engine else (src.engines or None)
    if engines is None:
        raise InputError("--engine: the source names no routing engine (a run's or a plan's); give one")
    offline = engines[0] == "hdor" and not (engine or "").startswith("opensm:")
    # on ibsim the SM is where ibsim attaches it (the net's first device), whatever the cable list says
    smi = jobs.sm_node(src, sm, sm_host if offline else None)
    new = jobs.Job(str(Path(src.path).resolve()), str(Path(src.plan).resolve()) if src.plan else None, engines,
                   offline, src.fabric.names[smi], [jobs.failure_spec(src.fabric, f) for f in fset.failures],
                   fset.hosts, fset.how, max(1, min(chunks, len(fset.failures) or 1)), vls, permutations, seed,
                   timeout, jobs.digest(src.fabric), implementation if offline else "")
    out = Path(out)
    if (out / jobs.FILE).is_file():
        old = jobs.Job.read(out)
        same = {k: v for k, v in old.to_dict().items() if k != "chunks"} == \
            {k: v for k, v in new.to_dict().items() if k != "chunks"}
        if same and not force:
            return old  # resumed: its chunks as they were cut
        if not force:
            raise InputError(f"--out {out}: holds another what-if (other source, engine or failures); "
                             f"use another --out, or --force to start over")
        for p in (out / CHUNKS).glob("*"):
            if p.is_file():
                p.unlink()
        for name in ("results.json", "results.csv", "whatif.html"):
            (out / name).unlink(missing_ok=True)
    elif out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a directory")
    elif out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(f"--out {out}: directory is not empty and holds no what-if (use --force)")
    if offline:  # said here, once, rather than by every worker
        from ibtool.routing.hdor_complete import complete
        try:
            complete(src.fabric)
        except CheckFailed as e:  # hdor's refusal: not a KNS
            raise InputError(f"--engine hdor: not a complete KNS ({e.reason}): what-if fails the elements of the "
                             f"complete fabric (give the fabric before any failure, or its plan; another family: "
                             f"its own engine, run on ibsim)", path=str(src.path)) from None
        if implementation == "c":  # before any worker starts: the library is there and loads
            from ibtool.routing import hdor_c
            try:
                hdor_c.Engine(vls).close()
            except EnvironmentProblem as e:
                raise EnvironmentProblem(f"{e}; or --implementation python (the reference: the same rows, "
                                         f"slower)") from None
    try:
        (out / CHUNKS).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--out {out}: cannot create it: {e.strerror}") from None
    new.write(out)
    return new


def done_rows(out: Path, k: int) -> dict[str, dict]:
    """The rows chunk k has, by failure ID; a torn last line (a worker killed mid-write) is cut off."""
    p = chunk_path(out, k, "jsonl")
    if not p.is_file():
        return {}
    data = p.read_bytes()
    rows, good = {}, 0
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            r = json.loads(line)
        except ValueError:
            break
        rows[r["id"]] = r
        good += len(line) + 1
    if good < len(data):
        with open(p, "r+b") as fh:
            fh.truncate(good)
    return rows


def finished(out: Path, job: jobs.Job) -> list[int]:
    return [k for k in range(job.chunks) if chunk_path(out, k, "done").is_file()]


def count_done(out: Path, job: jobs.Job) -> int:
    n = 0
    for k in range(job.chunks):
        p = chunk_path(out, k, "jsonl")
        if p.is_file():
            n += p.read_bytes().count(b"\n")
    return n


# ------------------------------------------------------------------------------------ a worker

class _Sink:
    """Receives the engine's results: measures each failure and appends its row."""

    def __init__(self, out: Path, k: int, job: jobs.Job, specs: dict, say, cache: dict):
        self.out, self.k, self.job, self.specs, self.say, self.cache = out, k, job, specs, say, cache
        self.base = None
        self.fh = open(chunk_path(out, k, "jsonl"), "ab")
        self.log = open(chunk_path(out, k, "log"), "a")

    def fault_free(self, ff) -> None:
        from ibtool.whatif.base import Base
        self.fabric = ff.fabric
        if self.cache.get("base") is not None and self.cache["base"].fabric is ff.fabric:
            self.base = self.cache["base"]  # the same fault-free fabric, measured by this process before
        else:
            self.base = self.cache["base"] = Base(ff.fabric, ff.tables, ff.sl2vl, ff.path_sls, self.job.permutations,
                                                  self.job.seed, say=self.say)
        self.before = self.base.summary()
        self.before.pop("seconds")
        with atomic_write(chunk_path(self.out, self.k, "base.json")) as fh:
            json.dump(self.before, fh, indent=1)
        self.rows = self.base.b.row  # node -> row of the bound tables

    def routed(self, fl: fsets.Failure, rt: Routed) -> None:
        import numpy as np
        from ibtool.whatif.evaluate import measure
        spec = self.specs[fl.id]
        t0 = time.process_time()
        m = None
        if rt.declined is not None and rt.table is None:
            outcome = "declined"
        elif rt.error is not None:
            outcome = "error"
        else:
            outcome = "routed"
            b = self.base.b
            lft = rt.table
            changed = rt.changed
            if rt.rows is not None:  # the engine's row order: onto the bound's
                rows = b.row[np.asarray(rt.rows)]
                lft = np.full(b.lft.shape, 255, dtype=np.uint8)
                lft[rows] = rt.table[:, :b.lft.shape[1]]
                if changed is not None:
                    changed = (rows[changed[0]], changed[1])
            m = measure(self.base, rt.dead_nodes, rt.dead_links, lft, rt.sl2vl, rt.path_sls, changed)
            m.pop("_loads")
            for h in m["hot_links"]:  # the cable a hot channel runs on, by its ID
                c = (self.cache.get("cables") or {}).get(_end(h[0]))
                h.append(c.id if c is not None else None)
        r = rank.row(spec, outcome, rt, m, self.before, ",".join(self.job.engine))
        self.write(r, rt.seconds, time.process_time() - t0)

    def write(self, r: dict, engine_s: float = 0.0, measure_s: float = 0.0) -> None:
        self.fh.write(json.dumps(r, separators=(",", ":")).encode() + b"\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.log.write(f"{r['id']}\t{os.getpid()}\t{engine_s:.4f}\t{measure_s:.4f}\t{_rss_mib():.1f}\n")
        self.log.flush()

    def close(self) -> None:
        self.fh.close()
        self.log.close()


def _end(channel: str) -> tuple[str, int]:
    """'R[1,0][2] -> S[0,1][3]' -> ('R[1,0]', 2): the channel's sending end."""
    a = channel.split(" -> ")[0]
    dev, _, port = a.rpartition("[")
    return dev, int(port.rstrip("]"))


def work(out: Path, k: int, say=None, cache: dict | None = None) -> int:
    """Route and measure chunk k's failures that have no row yet; returns how many it routed.
    `cache`: what one process keeps from chunk to chunk (the source, the engine's loaded fabric,
    the fault-free measures) when it runs several."""
    say = say or (lambda m: None)
    cache = {} if cache is None else cache
    out = Path(out)
    job = jobs.Job.read(out)
    if not 0 <= k < job.chunks:
        raise InputError(f"chunk {k}: the job has chunks 0..{job.chunks - 1}")
    if chunk_path(out, k, "done").is_file():
        return 0
    have = done_rows(out, k)
    if cache.get("digest") != job.digest:
        cache.clear()
        cache["digest"] = job.digest
        cache["src"] = jobs.source(Path(job.source), Path(job.plan) if job.plan else None)
        cache["cables"] = cable_list(cache["src"].plan)
    src = cache["src"]
    if jobs.digest(src.fabric) != job.digest:
        raise InputError(f"{job.source}: not the fabric this what-if began with (it changed): start again with "
                         f"--force", path=str(out / jobs.FILE))
    specs = [job.failures[i] for i in job.chunk(k)]
    todo = [jobs.failure_of(src.fabric, d) for d in specs if d["id"] not in have]
    sink = _Sink(out, k, job, {d["id"]: d for d in specs}, say, cache)
    try:
        sm = src.fabric.names.index(job.sm)
        route = []
        switches = [x for x in range(src.fabric.num_nodes) if src.fabric.is_switch(x)]
        if "pieces" not in cache:
            cache["pieces"] = Pieces(src.fabric.num_nodes, src.fabric.link_a, src.fabric.link_b)
        for fl in todo:
            dn, _ = cache["pieces"].cut_off(set(fl.nodes), set(fl.links), sm)
            if sm in dn or all(x in dn for x in switches):  # the SM's own device, or its host's switch:
                # nothing is routed until a standby takes over
                sink.write({**rank.row(sink.specs[fl.id], "sm", engine=",".join(job.engine)), "sm": job.sm})
            else:
                route.append(fl)
        if route:
            engine = cache.get("engine") if job.offline else None
            engine = engine or _engine(job, src, out / CHUNKS / f"{k:05d}.ibsim", sm)
            if job.offline:
                cache["engine"] = engine
            engine.run(route, sink)
    finally:
        sink.close()
    with atomic_write(chunk_path(out, k, "done")) as fh:
        fh.write(f"{len(specs)}\n")
    return len(todo)


def _rss_mib() -> float:
    """This process's resident memory now (MiB): the logs show whether a worker grows with the failures."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def cable_list(plan: Path | None):
    """The plan's cable list (cable IDs, labels, places), or None."""
    if plan is None:
        return None
    from ibtool.verify import cables
    p = Plan.at(plan).cable_list()
    return cables.read(p) if p else None


def _engine(job: jobs.Job, src: jobs.Source, work_dir: Path, sm: int):
    """The seam's choice (whatif.engines): hdor offline, every other engine OpenSM on ibsim."""
    if job.offline:
        return _offline(job)(src.fabric, sm, job.vls)
    net, conf, hdor_conf = src.net, None, None
    p = Plan.at(src.plan) if src.plan is not None else None
    if p is not None and p.net.is_file():
        net = p.net  # what `sim run PLAN` emulates, with the plan's engine files
        if p.opensm_conf.is_file():
            conf = str(p.opensm_conf)
        if "hdor" in job.engine and p.hdor_conf.is_file():
            hdor_conf = p.hdor_conf
    return OpenSMOnIbsim(src.fabric, net, job.engine, work_dir, conf, hdor_conf, job.timeout, settle=job.timeout)


def _offline(job: jobs.Job) -> type:
    """hdor offline: its C core, or (`--implementation python`) the Python reference."""
    return HdorReference if job.implementation == "python" else HdorC


def engine_info(job: jobs.Job) -> dict:
    if job.offline:
        return {"name": "hdor", "how": _offline(job).how}
    return {"name": ",".join(job.engine), "how": OpenSMOnIbsim.how}


# ------------------------------------------------------------------------------------ coordinators

def _watch(out: Path, job: jobs.Job, progress, stop: threading.Event) -> None:
    total = len(job.failures)
    while not stop.wait(0.5):
        progress(count_done(out, job), total)


def run_local(out: Path, workers: int = 1, progress=None, say=None) -> None:
    """Every unfinished chunk: in this process (workers 1), else on N worker processes, each given
    every N-th chunk (one load of the fabric a worker; the costlier failures of the list's end
    spread over all of them)."""
    out = Path(out)
    job = jobs.Job.read(out)
    progress = progress or (lambda done, total: None)
    todo = [k for k in range(job.chunks) if k not in finished(out, job)]
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(out, job, progress, stop), daemon=True)
    watcher.start()
    try:
        if workers <= 1:
            cache: dict = {}
            for k in todo:
                work(out, k, say, cache)
            return
        running = []
        for i in range(min(workers, len(todo))):
            log_path = out / CHUNKS / f"worker-{i}.txt"
            log = open(log_path, "ab")
            share = [str(k) for k in todo[i::workers]]
            running.append((children.popen([*IBTOOL, "whatif", "chunk", str(out), *share], stdout=log, stderr=log),
                            log, log_path))
        while running:
            for item in list(running):
                p, log, log_path = item
                if p.poll() is None:
                    continue
                log.close()
                running.remove(item)
                if p.returncode != 0:
                    for q, lg, _ in running:
                        children.stop(q)
                        lg.close()
                    tail = log_path.read_text(errors="replace").strip().splitlines()
                    raise CheckFailed(f"a worker failed (exit {p.returncode}): {tail[-1] if tail else 'no output'}; "
                                      f"the chunks done are kept: run the same command again to go on")
            time.sleep(0.2)
    finally:
        stop.set()
        watcher.join()
        progress(count_done(out, job), len(job.failures))


def run_slurm(out: Path, inventory: Path, progress=None, timeout: float = 24 * 3600) -> dict:
    """Every unfinished chunk as a task of one Slurm job array (bench's slurm runner; OUT must be on
    a filesystem the compute nodes share, with ibtool at the same path)."""
    from ibtool.bench import inventory as inv_mod
    from ibtool.bench.registry import RUNNERS
    from ibtool.bench.runners.base import Job
    out = Path(out).resolve()
    job = jobs.Job.read(out)
    progress = progress or (lambda done, total: None)
    todo = [k for k in range(job.chunks) if k not in finished(out, job)]
    if not todo:
        return {}
    inv = inv_mod.load(inventory)
    runner = RUNNERS.get("slurm")(inv)
    import hashlib
    mark = f"whatif-{job.digest}-{hashlib.sha256(str(out).encode()).hexdigest()[:8]}"  # the same on every resume
    sj = Job(f"whatif-{len(todo)}", [], {}, [*IBTOOL, "whatif", "chunk", str(out)], {}, (), timeout, 1,
             str(out / "slurm"), f"{mark}/array", array=todo)
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(out, job, progress, stop), daemon=True)
    watcher.start()
    try:
        oc = runner.execute(sj)
    finally:
        stop.set()
        watcher.join()
        runner.close()
        progress(count_done(out, job), len(job.failures))
    if oc.error or oc.exit_code != 0:
        raise CheckFailed(f"Slurm job array: {oc.error or f'a task exited {oc.exit_code}'}"
                          + (f": {oc.stderr.strip().splitlines()[-1]}" if oc.stderr.strip() else "")
                          + "; the chunks done are kept: run the same command again to go on")
    return oc.info


# ------------------------------------------------------------------------------------ the results

def merge(out: Path) -> dict:
    """The rows of every chunk, ranked (OUT/results.json, results.csv); CheckFailed while a chunk is
    unfinished or two workers measured the fault-free fabric differently."""
    out = Path(out)
    job = jobs.Job.read(out)
    left = [k for k in range(job.chunks) if k not in finished(out, job)]
    if left:
        raise CheckFailed(f"{len(left)} of {job.chunks} chunks unfinished (first: {left[0]}): run the job again")
    before, rows = None, []
    for k in range(job.chunks):
        p = chunk_path(out, k, "base.json")
        if p.is_file():
            b = json.loads(p.read_text())
            if before is not None and b != before:
                raise CheckFailed(f"chunk {k}'s worker measured the fault-free fabric differently from an earlier "
                                  f"chunk's: {b} vs {before}")
            before = b
        have = done_rows(out, k)
        for i in job.chunk(k):
            rid = job.failures[i]["id"]
            if rid not in have:
                raise CheckFailed(f"chunk {k} is marked done without a row for {rid}")
            rows.append(have[rid])
    res = rank.results(job.to_dict(), engine_info(job), before or {}, rank.ranked(rows))
    rank.write(out, res)
    timings(out, job)
    return res


def timings(out: Path, job: jobs.Job) -> dict:
    """Where the time went (OUT/timings.json, not part of the results): per chunk, the engine's and
    the measuring CPU seconds of the failures its workers computed."""
    per = {}
    for k in range(job.chunks):
        p = chunk_path(out, k, "log")
        if not p.is_file():
            continue
        lines = [ln.split("\t") for ln in p.read_text().splitlines() if ln.count("\t") == 4]
        rss = [float(x[4]) for x in lines]
        per[k] = {"failures": len(lines), "engine_s": round(sum(float(x[2]) for x in lines), 3),
                  "measure_s": round(sum(float(x[3]) for x in lines), 3), "workers": sorted({x[1] for x in lines}),
                  "rss_mib_first": rss[0] if rss else None, "rss_mib_max": max(rss, default=None)}
    d = {"chunks": per, "engine_s": round(sum(c["engine_s"] for c in per.values()), 3),
         "measure_s": round(sum(c["measure_s"] for c in per.values()), 3),
         "rss_mib_max": max((c["rss_mib_max"] for c in per.values() if c["rss_mib_max"]), default=None)}
    with atomic_write(out / "timings.json") as fh:
        json.dump(d, fh, indent=1)
    return d


def computed(out: Path, job: jobs.Job) -> list[str]:
    """Every failure ID any worker of this job computed, as often as it computed it (the logs)."""
    ids = []
    for k in range(job.chunks):
        p = chunk_path(out, k, "log")
        if p.is_file():
            ids += [ln.split("\t")[0] for ln in p.read_text().splitlines() if ln]
    return ids


def require_slurm() -> None:
    import shutil
    if not shutil.which("sbatch"):
        raise EnvironmentProblem("sbatch not found: --slurm needs Slurm's client commands on this host")
