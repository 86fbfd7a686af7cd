"""`ibtool bench check`: is the inventory usable before a campaign spends hours on it?

* every host reachable over SSH (in parallel): kernel, MPI launcher version;
* runner ssh/local: a real 2-rank MPI hello (templates/bench/mpi_hello.c compiled with mpicc on
  the launch host) launched exactly as a campaign launches (launcher, mapping, ssh_config,
  process cleanup), over the first two compute hosts;
* runner slurm: the controller answers (scontrol ping) and the partition is up (sinfo).
"""

from __future__ import annotations

import posixpath
import re
import shlex
import uuid

from ibtool.bench import mapping as mapping_mod
from ibtool.bench.benchmarks.base import stderr_tail
from ibtool.bench.inventory import Inventory
from ibtool.bench.launchers import LAUNCHERS, ssh_config
from ibtool.bench.registry import RUNNERS
from ibtool.bench.runners.base import MARK, Job, probe, shell_command
from ibtool.templating import TEMPLATES

HELLO = TEMPLATES / "bench" / "mpi_hello.c"


def hosts(inv: Inventory) -> dict:
    """One line per host: ok with kernel and launcher version, or UNREACHABLE and why."""
    from ibtool.bench.runners.ssh import SSHPool

    launcher = inv.mpi.get("mpirun") or LAUNCHERS.get(inv.mpi["launcher"]).default
    found: dict[str, dict] = {}
    if inv.runner == "local":
        from ibtool.bench.runners.base import Local
        info = probe(Local(), launcher)
        return {"lines": [("local", f"ok           {info.get('uname', '')} | "
                                    f"{info.get('launcher_version') or launcher + ' not found'}")],
                "unreachable": []}
    targets = inv.hosts
    if inv.runner == "slurm":  # compute nodes are reached by Slurm; over SSH only the login (and SM) node
        names = {inv.slurm.get("login"), (inv.sm or {}).get("host")}
        targets = [h for h in inv.hosts if h.name in names]
    pool = SSHPool(inv)

    def reach(t):
        t.client()  # raises with the reason when the host cannot be reached
        found[t.host.name] = probe(t, launcher)

    try:
        errors = pool.fan_out(targets, reach, inv.parallel) if targets else {}
    finally:
        pool.close()
    lines = []
    for h in targets:
        if errors[h.name]:
            lines.append((h.name, f"UNREACHABLE  {errors[h.name]}"))
        else:
            info = found[h.name]
            lines.append((h.name, f"ok           {info['uname']} | "
                                  f"{info['launcher_version'] or launcher + ' not found'}"))
    return {"lines": lines, "unreachable": [n for n, e in errors.items() if e]}


def slurm(inv: Inventory) -> tuple[bool, list[str]]:
    """The controller answers and the partition (--partition= of slurm.options, else the default) is up."""
    runner = RUNNERS.get("slurm")(inv)
    lines = []
    try:
        rc, out, err = runner._slurm([inv.slurm["scontrol"], "ping"], timeout=60)
        said = (out + err).strip().replace("\n", " | ")
        if rc != 0 or "DOWN" in out or "UP" not in out:
            return False, [f"controller not reachable: scontrol ping (exit {rc}): {said or 'no output'}"]
        lines.append(f"controller ok: {said}")
        part = next((o.split("=", 1)[1] for o in inv.slurm["options"] if o.startswith("--partition=")), None)
        argv = [inv.slurm["sinfo"] if "sinfo" in inv.slurm else "sinfo", "-h", "-o", "%P %a %D %t"]
        if part:
            argv += ["-p", part]
        rc, out, err = runner._slurm(argv, timeout=60)
        rows = [ln.split() for ln in out.strip().splitlines() if ln.strip()]
        if rc != 0 or not rows:
            return False, lines + [f"partition {part or '(default)'} not found: sinfo (exit {rc}): "
                                   f"{(err or out).strip() or 'no partition'}"]
        usable = [r for r in rows if len(r) >= 4 and r[1] == "up" and not re.match(r"(down|drain|fail)", r[3])]
        names = ", ".join(f"{r[0]} {r[1]} {r[2]} nodes {r[3]}" for r in rows)
        if not usable:
            return False, lines + [f"partition {part or '(default)'} not usable: {names}"]
        lines.append(f"partition ok: {names}")
        return True, lines
    finally:
        runner.close()


def one_machine(inv: Inventory) -> str | None:
    """Why a campaign of this inventory measures no network, when every compute host is one
    machine (one address, or loopback addresses); None otherwise."""
    compute = [h for h in inv.hosts if h.compute]
    found = mapping_mod.machines(h.address for h in compute)
    if len(found) == 1:
        return (f"every compute host ({', '.join(h.name for h in compute)}) is one machine, {found.pop()}: "
                "a campaign's ranks talk over its memory and loopback, and measure no network")
    return None


def mpi_hello(inv: Inventory) -> tuple[bool, str]:
    """Compile and launch a 2-rank MPI hello over the first two compute hosts (one if there is one)."""
    compute = [h for h in inv.hosts if h.compute][:2]
    launcher = LAUNCHERS.get(inv.mpi["launcher"])(inv.mpi)
    mp = mapping_mod.make("linear", compute, 2)
    runner = RUNNERS.get(inv.runner)(inv)
    remote = f"{inv.workdir.rstrip('/')}/ibtool-check-{uuid.uuid4().hex[:8]}"
    mpicc = posixpath.join(posixpath.dirname(launcher.exe), "mpicc") if "/" in launcher.exe else "mpicc"
    files = {"mpi_hello.c": HELLO.read_text(), **launcher.files(mp)}
    if inv.runner == "ssh" and launcher.rsh_keys and not launcher.sets_own_rsh():
        files["ssh_config"] = ssh_config(compute)
        launcher.args = [*launcher.rsh_args(f"{remote}/ssh_config"), *launcher.args]
    marker = f"check/{uuid.uuid4().hex[:8]}"
    env = {**inv.mpi["env"], MARK: marker}
    argv = launcher.argv(mp, [f"{remote}/mpi_hello"], env)
    job = Job("check", compute, files, argv, {**env, **launcher.env(mp)}, (), 120, 2, remote, marker)
    t = runner.transport(compute[0] if inv.runner != "local" else None)
    try:
        for h in compute:
            ht = runner.transport(h if inv.runner != "local" else None)
            ht.mkdirs(remote)
            for name, text in files.items():
                ht.put(posixpath.join(remote, name), text)
        rc, out, err = t.run(f"cd {shlex.quote(remote)} && {shlex.quote(mpicc)} -o mpi_hello mpi_hello.c", 120)
        if rc != 0:
            return False, f"cannot compile the MPI hello with {mpicc} on {compute[0].name}: {stderr_tail(err + out)}"
        for h in compute[1:]:  # the binary must exist on every host: copy it unless the directory is shared
            ht = runner.transport(h if inv.runner != "local" else None)
            ht.put(f"{remote}/mpi_hello", t.get(f"{remote}/mpi_hello"))
            ht.run(f"chmod +x {shlex.quote(remote + '/mpi_hello')}", 30)
        outcome = runner.execute(job)
        said = [ln for ln in outcome.stdout.splitlines() if ln.startswith("ibtool-mpi-hello")]
        names = sorted({ln.split(" on ", 1)[1].split()[0] for ln in said})
        where = ", ".join(names)
        if outcome.error or outcome.exit_code != 0 or len(said) != 2:
            why = outcome.error or f"exit {outcome.exit_code}, {len(said)} of 2 ranks answered"
            return False, f"{why}; mpirun said: {stderr_tail(outcome.stderr) or '(nothing)'}; " \
                          f"command: {shell_command(argv, job.env, remote)}"
        alone = f"; both ranks ran on {names[0]}: no network between them" if len(names) == 1 else ""
        return True, f"ok           2 ranks ({', '.join(h.name for h, _ in mp.ranks)}) answered from {where}{alone}"
    finally:
        try:
            for h in compute:
                runner.transport(h if inv.runner != "local" else None).run(f"rm -rf {shlex.quote(remote)}", 30)
        finally:
            runner.close()
