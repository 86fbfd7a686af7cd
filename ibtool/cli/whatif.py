"""`ibtool whatif`: every failure routed and ranked before it happens (docs/whatif.md)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from ibtool.cli import InPath, OutPath, finite_seconds
from ibtool.errors import CheckFailed, InputError


@click.group(name="whatif")
def group():
    """Which failure would hurt most: every cable, switch and router failure routed with the fabric's
    engine, measured by verify's checks and ranked (docs/whatif.md).

    \b
    Examples:
      ibtool whatif run run --out wi                       # a `sim run` directory: its engine, every failure
      ibtool whatif run plan --out wi --workers 2          # a plan (KNS: hdor, offline), two worker processes
      ibtool whatif run run --out wi --only C0043 S[0,1]   # a chosen few, by cable ID or device
      ibtool whatif run run --out wi --pairs 200 --seed 1  # 200 random double failures
      ibtool whatif run plan --out wi --kind cable         # every cable, no switch or router
      ibtool whatif run run --out wi --slurm inventory.yaml --chunks 64   # a Slurm job array
      ibtool whatif report wi --top 20                      # the ranking again (and --html)
    """


def _progress(as_json: bool):
    """A bar with the count done and an ETA on a terminal, else a line every 10 s (none with --json)."""
    if as_json:
        return lambda done, total: None
    tty = sys.stderr.isatty()
    st = {"t0": time.monotonic(), "first": None, "last": 0.0, "shown": -1}

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if st["first"] is None:
            st["first"] = (now, done)  # a resumed run: the rate counts from what it found done
        t1, d1 = st["first"]
        rate = (done - d1) / (now - t1) if now > t1 and done > d1 else 0.0
        eta = f", ETA {_dur((total - done) / rate)}" if rate > 0 and done < total else ""
        line = f"whatif: {done:,}/{total:,} failures ({100 * done / max(total, 1):.1f} %){eta}"
        if tty:
            click.echo(f"\r{line}\033[K", err=True, nl=done >= total)
        elif done != st["shown"] and (now - st["last"] >= 10 or done >= total):
            click.echo(line, err=True)
            st["last"] = now
        st["shown"] = done
    return show


def _dur(s: float) -> str:
    s = int(s)
    return f"{s // 3600} h {s % 3600 // 60} min" if s >= 3600 else (f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s")


@group.command(name="run")
@click.argument("source", type=InPath())
@click.option("--out", "-o", "out", required=True, type=OutPath(directory=True),
              help="Directory of the what-if: its job, chunks, results.json, results.csv, whatif.html. Running "
                   "the same command again resumes it.")
@click.option("--plan", type=InPath(),
              help="The plan (directory): cable IDs and labels, the family's drawing (default: the one the run names).")
@click.option("--engine", help="Routing engine: hdor (a KNS: offline), or OpenSM's (minhop, updn, ftree, dfsssp, "
                               "nue, lash, torus-2QoS; a list for a fallback: hdor,nue) run on ibsim; opensm:hdor "
                               "runs hdor's C engine on ibsim too. Default: the run's or the plan's.")
@click.option("--implementation", type=click.Choice(["c", "python"]), default="c", show_default=True,
              help="hdor offline: its C core (libhdorcore.so, `make plugin`), or the Python reference (the same "
                   "tables and declines, slower).")
@click.option("--only", multiple=True, metavar="ID",
              help="Route only these: a cable ID (C0043), a device (S[0,1]), a cable by an end ('R[1,1] 3'); "
                   "A+B fail together. Repeatable.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(["cable", "switch", "router"]),
              help="Only the single failures of this kind: cable (switch-switch and router-switch), switch, router. "
                   "Repeatable; with --pairs, the pairs are drawn from them.")
@click.option("--pairs", type=click.IntRange(min=1), help="N random double failures instead of every single one.")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of --pairs.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Local worker processes.")
@click.option("--slurm", "inventory", type=InPath(dir_okay=False),
              help="Run the chunks as a Slurm job array (an inventory of `ibtool bench` with runner slurm; OUT on a "
                   "filesystem the compute nodes share).")
@click.option("--chunks", type=click.IntRange(1, 100000),
              help="Chunks (Slurm array tasks); default 4 per worker, 16 with --slurm.")
@click.option("--sm", help="The subnet manager's device (default: the plan's SM host, else the first device of the "
                           "net file, where ibsim places it).")
@click.option("--vls", default=8, show_default=True, type=click.IntRange(1, 15),
              help="Data VLs the ports offer (hdor declines failures that need more).")
@click.option("--top", default=20, show_default=True, type=click.IntRange(0), help="Rows of the ranking printed.")
@click.option("--timeout", default=300.0, show_default=True, type=float, callback=finite_seconds,
              help="Seconds OpenSM on ibsim may take per failure.")
@click.option("--force", is_flag=True, help="Start OUT over, whatever it holds.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON (results.json's schema).")
def run_cmd(source, out, plan, engine, implementation, only, kinds, pairs, seed, workers, inventory, chunks, sm, vls,
            top, timeout, force, as_json):
    """Route every single failure of SOURCE (a `sim run` or `collect` directory, an ibnetdiscover file,
    or a plan) with the fabric's engine, measure each with verify's checks, rank them.

    Each failure: HCA pairs disconnected, pairs rerouted and their extra hops, the VLs the detours
    need (hdor: or its decline with the HD code), deadlock freedom per VL, the worst link load under
    all-to-all and under the balance check's random permutations, the cables that gain most. The
    ranking (docs/whatif.md): credit loops, the SM's device, hosts cut apart, hosts lost, declines,
    VLs, load increase, extra hops.

    A host cable or an HCA only disconnects its host: counted, not routed. hdor on a KNS is routed
    offline by its C core (each failure's pass incremental); every other engine runs as in
    production, OpenSM on ibsim, one per worker. Exit 0 when every failure was measured, 1 when one could not be.
    """
    from ibtool.whatif import failures as fsets
    from ibtool.whatif import job as jobs
    from ibtool.whatif import page, run
    if inventory and workers > 1:
        raise InputError("give --workers or --slurm, not both")
    if only and pairs:
        raise InputError("give --only or --pairs, not both")
    if only and kinds:
        raise InputError("give --only or --kind, not both")
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))
    src = jobs.source(source, plan)
    cables = run.cable_list(src.plan)
    single = fsets.singles(src.fabric, cables)
    if kinds:
        single = fsets.of_kinds(single, list(kinds))
    fset = fsets.chosen(src.fabric, list(only), cables) if only else (
        fsets.pairs(single, pairs, seed) if pairs else single)
    if not fset.failures:
        raise InputError(f"{source}: no switch, router or switch-switch cable to fail")
    fset.hosts = single.hosts
    n = chunks or (16 if inventory else 4 * workers)
    job = run.prepare(src, out, engine, fset, n, sm, vls, timeout=timeout, force=force,
                      sm_host=getattr(cables, "sm_host", None), implementation=implementation)
    left = len(job.failures) - run.count_done(out, job)
    say(f"{len(job.failures):,} failures ({job.how}), {job.chunks} chunks; {left:,} to route with "
        f"{run.engine_info(job)['name']} ({run.engine_info(job)['how']})")
    t0 = time.monotonic()
    if inventory:
        run.require_slurm()
        run.run_slurm(out, inventory, _progress(as_json))
    else:
        run.run_local(out, workers, _progress(as_json), say)
    res = run.merge(out)
    page.write(out, res, src)
    if as_json:
        click.echo(json.dumps(res, indent=1))
    else:
        _print(res, top, time.monotonic() - t0, out)
    if res["classes"].get("not measured"):
        raise CheckFailed(f"{res['classes']['not measured']} failure(s) could not be measured (class 'not measured')")


def _print(res: dict, top: int, secs: float | None, out: Path) -> None:
    b = res["before"]
    click.echo(f"what-if: {res['failures']['routed']:,} failures of {res['source']} routed with {res['engine']['name']} "
               f"({res['engine']['how']})" + (f" in {_dur(secs)}" if secs is not None else ""))
    h = res["failures"]["hosts_not_routed"] or {}
    click.echo(f"  fault-free: {b.get('hcas', 0):,} HCAs, all-to-all max link load {b.get('a2a_max_load')}, worst "
               f"permutation {b.get('perm_max_load')}" + (f"; not routed: {h.get('host_cables', 0):,} host cables and "
                                                          f"{h.get('hcas', 0):,} HCAs (each disconnects only its host)"
                                                          if h else ""))
    click.echo("  " + ", ".join(f"{n:,} {c}" for c, n in res["classes"].items()))
    if top:
        click.echo(f"{'rank':>5}  {'failure':<28} {'class':<17} {'cut':>7} {'VLs':>3} {'a2a':>9} {'perm':>6}  what to do")
        for r in res["rows"][:top]:
            a2a = f"{r['a2a_max_load']}" + (f"{r['a2a_increase']:+d}" if r.get("a2a_increase") else "") \
                if "a2a_max_load" in r else "-"
            perm = f"{r['perm_max_load']}" if "perm_max_load" in r else "-"
            click.echo(f"{r['rank']:>5}  {r['id']:<28} {r['class']:<17} {r.get('pairs_disconnected', '-'):>7} "
                       f"{r.get('vls_used', '-'):>3} {a2a:>9} {perm:>6}  {r['advice']}")
    click.echo(f"results in {out}/results.json, results.csv and whatif.html")


@group.command(name="chunk")
@click.argument("out", type=InPath(exists=True, file_okay=False))
@click.argument("chunks", nargs=-1, type=click.IntRange(0))
def chunk_cmd(out, chunks):
    """Route chunks of the what-if in OUT, one after the other with one load of the fabric (what each
    local worker process and each Slurm array task runs; CHUNKS default to SLURM_ARRAY_TASK_ID).
    Resumes where an earlier worker of a chunk stopped."""
    from ibtool.whatif import run
    if not chunks:
        task = os.environ.get("SLURM_ARRAY_TASK_ID", "")
        if not task.isdigit():
            raise InputError("give the chunks K ... (or run it as a Slurm array task: SLURM_ARRAY_TASK_ID)")
        chunks = (int(task),)
    cache: dict = {}
    for k in chunks:
        n = run.work(out, k, lambda m: click.echo(f"  {m}", err=True), cache)
        click.echo(f"chunk {k}: {n} failures routed")


@group.command(name="report")
@click.argument("out", type=InPath(exists=True, file_okay=False))
@click.option("--top", default=20, show_default=True, type=click.IntRange(0), help="Rows of the ranking printed.")
@click.option("--html", "html_out", type=OutPath(), help="Write the page here too (default: OUT/whatif.html).")
@click.option("--json", "as_json", is_flag=True, help="Print results.json.")
def report_cmd(out, top, html_out, as_json):
    """The ranking of a finished what-if again: printed, as JSON, or as the page."""
    from ibtool.whatif import job as jobs
    from ibtool.whatif import page
    from ibtool.whatif.rank import SCHEMA
    p = Path(out) / "results.json"
    if not p.is_file():
        raise InputError("no results.json: the what-if has not finished (run it again to go on)", path=str(out))
    d = json.loads(p.read_text())
    if d.get("schema") != SCHEMA:
        raise InputError(f'not what-if results (expected "schema": "{SCHEMA}")', path=str(p))
    if html_out:
        job = jobs.Job.read(out)
        src = jobs.source(Path(job.source), Path(job.plan) if job.plan else None)
        page.write(out, d, src, html_out)
    if as_json:
        click.echo(json.dumps(d, indent=1))
    else:
        _print(d, top, None, out)
