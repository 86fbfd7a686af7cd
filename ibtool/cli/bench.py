"""`ibtool bench`: benchmark campaigns (HPCC, HPCG, Graph500, Netgauge) over SSH or Slurm."""

from __future__ import annotations

import json

import click

from ibtool.cli import InPath, OutPath
from ibtool.errors import CheckFailed, InputError


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
@click.option("--inventory", "-i", required=True, type=InPath(dir_okay=False, path_type=None),
              help="Inventory YAML (hosts, ssh, mpi, benchmarks, slurm, sm).")
@click.option("--benchmarks", "-b", required=True,
              help="Comma-separated benchmark names: registered ones (hpcc, hpcg, graph500, netgauge) "
                   "or entries of the inventory's 'benchmarks' section.")
@click.option("--mappings", "-m", default="linear", show_default=True,
              help="Comma-separated task mappings: linear (block per host), random (seeded shuffle).")
@click.option("--engines", "-e", default=None,
              help="Comma-separated OpenSM routing engines. Before each engine's runs OpenSM is restarted "
                   "on the SM node (or the emulated fabric of sm.fabric) with it and the log must confirm it "
                   "routed (no silent fallback). Omit to benchmark the routing in place.")
@click.option("--repeat", "-r", default=1, show_default=True, type=int, help="Runs per combination.")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the random mappings.")
@click.option("--out", "-o", required=True, type=OutPath(directory=True, path_type=None),
              help="Campaign directory. Rerunning with the same options resumes it.")
@click.option("--retry-failed", is_flag=True, help="When resuming, redo runs that failed or were invalid.")
@click.option("--new-parameters", is_flag=True,
              help="Resume although the inventory changed what runs measure (parameters, hosts, MPI, engine "
                   "config): the remaining runs form a new generation, recorded and reported separately.")
@click.option("--dry-run", is_flag=True,
              help="Validate, then print every run (stored or to run), its rankfile and launch command; run nothing.")
@click.option("--no-progress", is_flag=True, help="No progress bar: one line per run start and end on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome (or the --dry-run plan) as JSON on stdout.")
def run_cmd(inventory, benchmarks, mappings, engines, repeat, seed, out, retry_failed, new_parameters, dry_run,
            no_progress, as_json):
    """Run a benchmark campaign: every engine x benchmark x mapping x repeat.

    \b
    Each finished run is stored at once in OUT/runs/<engine>--<benchmark>--<mapping>--r<n>/:
    inputs/ (hpccinf.txt, rankfile.txt, job.sh ...), outputs/ (stdout, stderr, result files),
    metrics.json (parsed, units normalised, failure reasons) and run.json (launch command,
    environment, mapping and its seed, engine, exit code). Nothing secret is stored.
    Ctrl-C (or SIGTERM) ends the run's processes on every host; start the same command to resume.

    \b
    Examples:
      ibtool bench run -i inv.yaml -b hpcc -m linear,random -r 3 -o camp     # current routing
      ibtool bench run -i inv.yaml -b hpcc,graph500 -e updn,hdor -o camp2    # switch engines
      ibtool bench run -i inv.yaml -b hpcc -o camp --dry-run                 # rankfiles and commands
      ibtool bench run -i inv2.yaml -b hpcc -o camp --new-parameters         # resume with new N

    Exit code 1 when any run of this start failed or gave an invalid result (the others are kept).
    """
    from ibtool.bench import inventory as inv_mod
    from ibtool.bench.campaign import Campaign

    inv = inv_mod.load(inventory)
    if engines is not None:  # --engines "" is no list of engines, not the routing in place
        from ibtool.sim.opensm import parse_engines
        parse_engines(engines, "--engines")
    camp = Campaign(inv, out, _csv(benchmarks), _csv(mappings), _csv(engines) or None, repeat, seed, retry_failed,
                    new_parameters)
    if dry_run:
        plans = camp.dry_run()
        if as_json:
            click.echo(json.dumps({"runner": inv.runner, "runs": plans}, indent=2))
            return
        for item in plans:
            state = (f"stored ({item['stored']}), " if item["stored"] else "") + \
                ("to run" if item["will_run"] else "kept")
            click.echo(f"{item['run_id']}" + (f"  seed={item['seed']}" if item["seed"] is not None else "")
                       + f"  {state}")
            if item["skip_reason"]:
                click.echo(f"  skipped: {item['skip_reason']}")
            if item.get("command"):
                click.echo(f"  command: {item['command']}")
                for name, text in item["mapping_files"].items():
                    click.echo(f"  {name}:")
                    for line in text.splitlines():
                        click.echo(f"    {line}")
        todo = sum(1 for x in plans if x["will_run"])
        click.echo(f"{len(plans)} runs with runner {inv.runner}: {todo} to run, {len(plans) - todo} stored and kept")
        return
    summary = camp.run(progress=not no_progress)
    c, t = summary["counts"], summary["totals"]
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        click.echo(f"{summary['ran']} runs done ({summary['done_before']} stored before): ok {c.get('ok', 0)}, "
                   f"failed {c.get('failed', 0)}, invalid {c.get('invalid', 0)}, skipped {c.get('skipped', 0)}; "
                   f"campaign: {summary['stored']} of {summary['total']} runs stored: ok {t.get('ok', 0)}, "
                   f"failed {t.get('failed', 0)}, invalid {t.get('invalid', 0)}, skipped {t.get('skipped', 0)}; "
                   f"results in {out}")
    bad = c.get("failed", 0) + c.get("invalid", 0)
    if bad:
        raise CheckFailed(f"{bad} run(s) failed or invalid; reasons in {out}/runs/*/run.json "
                          f"(ibtool bench list {out} --status failed)")


@group.command("report")
@click.argument("campaign_dir", type=InPath(exists=True, file_okay=False, path_type=None))
@click.option("--out", "-o", type=OutPath(directory=True, path_type=None), help="Report directory [CAMPAIGN_DIR/report].")
@click.option("--json", "as_json", is_flag=True, help="Print what was written (files, summary rows) as JSON.")
def report_cmd(campaign_dir, out, as_json):
    """Tables (CSV, Markdown) and plots (PNG, SVG) of a campaign.

    \b
    One figure per metric, grouped like the paper's: routing engines on the x axis, linear and
    random mapping side by side. Bars are the mean over repeats; black whiskers the spread over
    repeats (min..max of the runs); where the benchmark reports its own spread (HPCC ping-pong
    min/max over rank pairs, HPCG Allreduce, Graph500 TEPS, Netgauge ebb rounds) it is drawn
    separately as a grey band. Runs of different parameter generations are never pooled.

    \b
    Example:
      ibtool bench report camp && less camp/report/report.md
    """
    from ibtool.bench.report import build

    res = build(campaign_dir, out)
    if as_json:
        click.echo(json.dumps(res, indent=2))
    else:
        click.echo(f"{res['runs']} runs, {res['rows']} summary rows, {len(res['figures'])} figures -> {res['dir']}")
        for machine, ids in sorted(res["one_host"].items()):
            click.echo(f"note: {len(ids)} of {res['runs']} runs had all their ranks on one machine ({machine}): "
                       "they measure no network")


@group.command("parse")
@click.argument("benchmark")
@click.argument("file", type=InPath(exists=True, path_type=None))
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
    its defaults after an invalid grid, HPCG ran without its input file ...); exit 2 when FILE
    is not an output of that benchmark at all (HPCC: no banner).
    """
    from ibtool.bench.benchmarks.base import RunFiles
    from ibtool.bench.registry import BENCHMARKS

    cls = BENCHMARKS.get(benchmark)
    files = RunFiles.from_path(file, exit_code)
    if files.main is not None and cls.marks:
        data = files.main.read_bytes()
        if data.strip() and not any(m.encode() in data for m in cls.marks):
            # a truncated real output is a failed run (exit 1); this is not one at all
            binary = "; a binary file" if b"\0" in data[:4096] else ""
            raise InputError(f"not {benchmark} output (none of {', '.join(repr(m) for m in cls.marks)}{binary})",
                             path=str(file))
    r = cls.parse(files)
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
@click.option("--inventory", "-i", required=True, type=InPath(dir_okay=False, path_type=None), help="Inventory YAML.")
def check_cmd(inventory):
    """Validate the inventory, reach every host, and launch MPI as a campaign would.

    \b
    Prints one line per host (kernel and MPI launcher version, or why it cannot be reached:
    connection refused, host key unknown ...), then runs a real 2-rank MPI hello (compiled with
    mpicc on the launch host) across two hosts with the inventory's launcher, mapping and SSH
    settings. With runner: slurm it asks the controller (scontrol ping) and checks the partition
    (sinfo) instead. Exit code 3 if a host or the controller is unreachable, 1 if MPI fails.

    \b
    Example:
      ibtool bench check -i inv.yaml
    """
    from ibtool.bench import check as check_mod
    from ibtool.bench import inventory as inv_mod
    from ibtool.errors import EnvironmentProblem

    inv = inv_mod.load(inventory)
    hosts = check_mod.hosts(inv)
    for name, line in hosts["lines"]:
        click.echo(f"{name:12s} {line}")
    if hosts["unreachable"]:
        raise EnvironmentProblem(f"{len(hosts['unreachable'])} of {len(inv.hosts)} hosts unreachable: "
                                 f"{', '.join(hosts['unreachable'])}")
    if inv.runner == "slurm":
        ok, lines = check_mod.slurm(inv)
        for line in lines:
            click.echo(f"{'slurm':12s} {line}")
        if not ok:
            raise EnvironmentProblem(f"Slurm is not usable: {lines[-1]}")
        return
    alone = check_mod.one_machine(inv)
    if alone:
        click.echo(f"{'network':12s} NONE: {alone}")
    ok, line = check_mod.mpi_hello(inv)
    click.echo(f"{'mpi':12s} {line}")
    if not ok:
        raise CheckFailed(f"MPI hello failed: {line}")


@group.command("list")
@click.argument("campaign_dir", required=False, type=InPath(file_okay=False, path_type=None))
@click.option("--status", help="Only runs with this status (ok, failed, invalid, skipped).")
@click.option("--engine", help="Only runs of this routing engine.")
@click.option("--benchmark", help="Only runs of this benchmark.")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
def list_cmd(campaign_dir, status, engine, benchmark, as_json):
    """List a campaign's runs and their status; without CAMPAIGN_DIR, the registered benchmarks
    (with their parameters), runners and MPI launchers.

    \b
    Examples:
      ibtool bench list camp                        # every planned run: status, figure, reason
      ibtool bench list camp --status failed        # what to look at
      ibtool bench list camp --engine dfsssp --json | jq '.[].run_id'
    """
    from ibtool.bench.launchers import LAUNCHERS
    from ibtool.bench.registry import BENCHMARKS, RUNNERS

    if campaign_dir:
        from ibtool.bench.report import run_list

        rows = [r for r in run_list(campaign_dir)
                if (not status or r["status"] == status) and (not engine or r["engine"] == engine)
                and (not benchmark or r["benchmark"] == benchmark)]
        if as_json:
            click.echo(json.dumps(rows, indent=2))
            return
        for r in rows:
            what = r["figure"] or "; ".join(r["reasons"])
            click.echo(f"{r['run_id']:44s} {r['status']:8s} g{r['generation'] or '-'}  {what}")
        click.echo(f"{len(rows)} runs")
        return
    if as_json:
        click.echo(json.dumps({"benchmarks": {n: BENCHMARKS.get(n).defaults for n in BENCHMARKS.names()},
                               "runners": RUNNERS.names(), "launchers": LAUNCHERS.names()}, indent=2))
        return
    click.echo("benchmarks:")
    for n in BENCHMARKS.names():
        cls = BENCHMARKS.get(n)
        params = ", ".join(f"{k}={v}" for k, v in cls.defaults.items())
        click.echo(f"  {n:10s} {params}")
    click.echo("runners:   " + ", ".join(RUNNERS.names()))
    click.echo("launchers: " + ", ".join(LAUNCHERS.names()))


@group.command("compare")
@click.argument("campaign_a", type=InPath(exists=True, file_okay=False, path_type=None))
@click.argument("campaign_b", type=InPath(exists=True, file_okay=False, path_type=None))
@click.option("--metric", help="Only this metric (e.g. pingpong_latency_avg).")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout.")
def compare_cmd(campaign_a, campaign_b, metric, as_json):
    """Compare two campaigns: the same benchmark, metric, engine and mapping side by side.

    \b
    For each cell: mean of A and of B over their valid runs, the ratio B/A, and Welch's t-test
    over the repeats (p < 0.05: the difference is significant; needs 2+ runs on each side).

    \b
    Example:
      ibtool bench compare before after --metric pingpong_latency_avg
    """
    from ibtool.bench.report import compare

    rows = compare(campaign_a, campaign_b, metric)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(f"{'benchmark':10s} {'metric':28s} {'engine':8s} {'mapping':8s} {'A':>12s} {'B':>12s} "
               f"{'B/A':>7s} {'p':>7s}")
    for r in rows:
        p = "-" if r["p_value"] is None else f"{r['p_value']:.3g}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        click.echo(f"{r['benchmark']:10s} {r['metric']:28s} {r['engine']:8s} {r['mapping']:8s} "
                   f"{r['mean_a']:12.6g} {r['mean_b']:12.6g} {ratio:>7s} {p:>7s}"
                   + ("  significant" if r["significant"] else ""))
    click.echo(f"{len(rows)} cells compared")
