"""`ibtool bench`: benchmark campaigns (HPCC, HPCG, Graph500, Netgauge) over SSH or Slurm."""

from __future__ import annotations

import json

import click

from ibtool.errors import CheckFailed


def _csv(value: str | None) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


@click.group(name="bench")
def group():
    """Run benchmark campaigns and turn their outputs into tables and plots.

    \b
    A campaign runs every combination of routing engine x benchmark x task mapping x repeat,
    stores each run as soon as it finishes, and can be resumed after an interruption:
      ibtool bench run --inventory inv.yaml --benchmarks hpcc,netgauge \\
          --mappings linear,random --engines updn,dfsssp,hdor --repeat 3 --out results
      ibtool bench report results            # CSV, Markdown, PNG/SVG plots in results/report
      ibtool bench parse hpcc run/hpccoutf.txt --json

    The inventory (YAML) lists the hosts, how to reach them (SSH user/port/key, known_hosts,
    jump host), the MPI launcher, the benchmarks' paths and parameters, Slurm settings and the
    SM node. A minimal one (docs/bench.md has the full format):

    \b
      hosts: [{name: cn01, slots: 36}, {name: cn02, slots: 36}]
      ssh: {user: bench, key: ~/.ssh/id_ed25519}
      mpi: {launcher: openmpi, args: [--mca, pml, ucx]}
      benchmarks: {hpcc: {params: {N: 20000}}}

    Check it first with `ibtool bench check -i inv.yaml` (reaches every host over SSH).
    """


@group.command("run")
@click.option("--inventory", "-i", required=True, type=click.Path(dir_okay=False),
              help="Inventory YAML (hosts, ssh, mpi, benchmarks, slurm, sm).")
@click.option("--benchmarks", "-b", required=True,
              help="Comma-separated benchmark names: registered ones (hpcc, hpcg, graph500, netgauge) "
                   "or entries of the inventory's 'benchmarks' section.")
@click.option("--mappings", "-m", default="linear", show_default=True,
              help="Comma-separated task mappings: linear (block per host), random (seeded shuffle).")
@click.option("--engines", "-e", default=None,
              help="Comma-separated OpenSM routing engines. Before each engine's runs OpenSM is restarted "
                   "on the SM node with it and the log must confirm it routed (no silent fallback). "
                   "Omit to benchmark the routing in place.")
@click.option("--repeat", "-r", default=1, show_default=True, type=int, help="Runs per combination.")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the random mappings.")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="Campaign directory. Rerunning with the same options resumes it.")
@click.option("--retry-failed", is_flag=True, help="When resuming, redo runs that failed or were invalid.")
@click.option("--dry-run", is_flag=True, help="Validate the inventory and print the runs; run nothing.")
@click.option("--no-progress", is_flag=True, help="No progress bar on stderr.")
def run_cmd(inventory, benchmarks, mappings, engines, repeat, seed, out, retry_failed, dry_run, no_progress):
    """Run a benchmark campaign: every engine x benchmark x mapping x repeat.

    \b
    Each finished run is stored at once in OUT/runs/<engine>--<benchmark>--<mapping>--r<n>/:
    inputs/ (hpccinf.txt, rankfile.txt, job.sh ...), outputs/ (stdout, stderr, result files),
    metrics.json (parsed, units normalised, failure reasons) and run.json (launch command,
    environment, mapping, seed, engine, exit code). Nothing secret is stored.

    \b
    Examples:
      ibtool bench run -i inv.yaml -b hpcc -m linear,random -r 3 -o camp     # current routing
      ibtool bench run -i inv.yaml -b hpcc,graph500 -e updn,hdor -o camp2    # switch engines
      ibtool bench run -i inv.yaml -b hpcc -o camp --dry-run                 # show the plan

    Exit code 1 when any run failed or gave an invalid result (the others are kept).
    """
    from ibtool.bench import inventory as inv_mod
    from ibtool.bench.campaign import Campaign

    inv = inv_mod.load(inventory)
    camp = Campaign(inv, out, _csv(benchmarks), _csv(mappings), _csv(engines) or None, repeat, seed, retry_failed)
    if dry_run:
        for p in camp.runs:
            click.echo(p.run_id + (f"  seed={p.seed}" if p.mapping == "random" else ""))
        click.echo(f"{len(camp.runs)} runs with runner {inv.runner}")
        return
    summary = camp.run(progress=not no_progress)
    c = summary["counts"]
    click.echo(f"{summary['ran']} runs done ({summary['done_before']} stored before): ok {c.get('ok', 0)}, "
               f"failed {c.get('failed', 0)}, invalid {c.get('invalid', 0)}, skipped {c.get('skipped', 0)}; "
               f"results in {out}")
    bad = c.get("failed", 0) + c.get("invalid", 0)
    if bad:
        raise CheckFailed(f"{bad} run(s) failed or invalid; reasons in {out}/runs/*/run.json "
                          f"(ibtool bench report {out})")


@group.command("report")
@click.argument("campaign_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "-o", type=click.Path(file_okay=False), help="Report directory [CAMPAIGN_DIR/report].")
def report_cmd(campaign_dir, out):
    """Tables (CSV, Markdown) and plots (PNG, SVG) of a campaign.

    \b
    One figure per metric, grouped like the paper's: routing engines on the x axis, linear and
    random mapping side by side, whiskers from the benchmark's own min..max where it gives them
    (HPCC ping-pong, HPCG Allreduce, Graph500 TEPS, Netgauge ebb rounds), else over repeats.

    \b
    Example:
      ibtool bench report camp && less camp/report/report.md
    """
    from ibtool.bench.report import build

    res = build(campaign_dir, out)
    click.echo(f"{res['runs']} runs, {res['rows']} summary rows, {len(res['figures'])} figures -> {res['dir']}")


@group.command("parse")
@click.argument("benchmark")
@click.argument("file", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the full parse result as JSON.")
@click.option("--exit-code", type=int, default=None, help="The run's exit code, if known.")
def parse_cmd(benchmark, file, as_json, exit_code):
    """Parse one benchmark output FILE (or a run directory) and judge the run.

    \b
    FILE is hpccoutf.txt (hpcc), HPCG-Benchmark_*.txt or the hpcg*T*.txt log (hpcg), the stdout
    of graph500 or netgauge, or a directory holding them. Files beside it are read too:
    hpccinf.txt / hpcg.dat (what was requested), stderr.txt / mpirun_stderr.txt.

    \b
    Examples:
      ibtool bench parse hpcc run1/hpccoutf.txt
      ibtool bench parse netgauge ebb/stdout.txt --json | jq .metrics

    Exit code 1 when the run failed (truncated, aborted) or is not a valid result (HPCC ran
    its defaults after an invalid grid, HPCG ran without its input file ...).
    """
    from ibtool.bench.benchmarks.base import RunFiles
    from ibtool.bench.registry import BENCHMARKS

    cls = BENCHMARKS.get(benchmark)
    r = cls.parse(RunFiles.from_path(file, exit_code))
    if as_json:
        click.echo(json.dumps(r.as_dict(), indent=2, sort_keys=True))
    else:
        click.echo(f"{benchmark}: {r.status}")
        for reason in r.reasons:
            click.echo(f"  reason: {reason}")
        for w in r.warnings:
            click.echo(f"  warning: {w}")
        for k, v in sorted(r.params.items()):
            click.echo(f"  param {k} = {v}")
        for k, m in r.metrics.items():
            click.echo(f"  {k:32s} {m['value']:.6g} {m['unit']}")
    if not r.ok:
        raise CheckFailed(f"{benchmark} run {r.status}: {'; '.join(r.reasons)}")


@group.command("check")
@click.option("--inventory", "-i", required=True, type=click.Path(dir_okay=False), help="Inventory YAML.")
def check_cmd(inventory):
    """Validate the inventory and reach every host over SSH, all at once.

    \b
    Prints one line per host: its kernel and the MPI launcher's version, or why it cannot be
    reached (connection refused, host key unknown ...). Exit code 3 if any host is unreachable.

    \b
    Example:
      ibtool bench check -i inv.yaml
    """
    from ibtool.bench import inventory as inv_mod
    from ibtool.bench.runners.base import probe
    from ibtool.bench.runners.ssh import SSHPool
    from ibtool.errors import EnvironmentProblem

    inv = inv_mod.load(inventory)
    pool = SSHPool(inv)
    launcher = inv.mpi.get("mpirun") or "mpirun"
    found: dict[str, dict] = {}

    def reach(t):
        t.client()  # raises with the reason when the host cannot be reached
        found[t.host.name] = probe(t, launcher)

    try:
        errors = pool.fan_out(inv.hosts, reach, inv.parallel)
    finally:
        pool.close()
    for h in inv.hosts:
        if errors[h.name]:
            click.echo(f"{h.name:12s} UNREACHABLE  {errors[h.name]}")
        else:
            info = found[h.name]
            click.echo(f"{h.name:12s} ok           {info['uname']} | {info['launcher_version'] or launcher + ' not found'}")
    bad = [n for n, e in errors.items() if e]
    if bad:
        raise EnvironmentProblem(f"{len(bad)} of {len(inv.hosts)} hosts unreachable: {', '.join(bad)}")


@group.command("list")
def list_cmd():
    """List the registered benchmarks (with their parameters), runners and MPI launchers."""
    from ibtool.bench.launchers import LAUNCHERS
    from ibtool.bench.registry import BENCHMARKS, RUNNERS

    click.echo("benchmarks:")
    for n in BENCHMARKS.names():
        cls = BENCHMARKS.get(n)
        params = ", ".join(f"{k}={v}" for k, v in cls.defaults.items())
        click.echo(f"  {n:10s} {params}")
    click.echo("runners:   " + ", ".join(RUNNERS.names()))
    click.echo("launchers: " + ", ".join(LAUNCHERS.names()))
