"""infiniband-diags clients as ibtool runs them: on a host of a live fabric (`ibtool collect`) or
against an emulated one (a fault scenario's steps), each started by ibtool.children.

    c = Clients(work, ca=None, port=None, timeout=60, environ=None)   # environ: ibsim's (lf.env())
    p = c.run("perfquery", lid, "1,2,3")        # a CompletedProcess (exit 124 on timeout), text
    why(p)                                      # "exit 1: <its last line of error>"
    text = port_counters(c, fabric, parallel, item)   # perfquery of every cabled port; item says
                                                      # queries, ports answered, failed, ok
"""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ibtool import children
from ibtool.fabric import SWITCH, Fabric


@dataclass
class Clients:
    """How diags clients are run: the local port to use, a scratch cwd, the environment."""
    work: Path
    ca: str | None = None
    port: int | None = None
    timeout: float = 60.0
    environ: dict[str, str] | None = None  # the clients' environment (ibsim's: LD_PRELOAD, IBSIM_SOCKNAME)

    def env(self) -> dict[str, str]:
        return dict(self.environ if self.environ is not None else os.environ)

    def local(self) -> list[str]:
        return [*(["-C", self.ca] if self.ca else []), *(["-P", str(self.port)] if self.port else [])]

    def argv(self, tool: str, *args) -> list[str]:
        return [tool, *self.local(), *map(str, args)]

    def run(self, tool: str, *args) -> subprocess.CompletedProcess:
        try:
            return children.run(self.argv(tool, *args), cwd=self.work, env=self.env(), capture_output=True,
                                text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(self.argv(tool, *args), 124, "", f"timed out after {self.timeout:g} s")


def why(p: subprocess.CompletedProcess) -> str:
    lines = [ln.strip() for ln in (p.stderr or p.stdout or "").splitlines()
             if ln.strip() and "sim_connect: attached" not in ln]
    return f"exit {p.returncode}: {lines[-1] if lines else 'no output'}"


def port_counters(c: Clients, f: Fabric, parallel: int, item: dict) -> str:
    """perfquery of every cabled port: one query per device (its cabled ports as a list)."""
    jobs = []
    for node in range(f.num_nodes):
        ports = [p for p, _, _ in f.neighbors(node)]
        if f.types[node] == SWITCH:
            lid = f.port_lids.get((node, 0), (0, 0))[0]
            if lid and ports:
                jobs.append((node, lid, ports))
        else:
            for p in ports:  # a CA port has a LID of its own
                lid = f.port_lids.get((node, p), (0, 0))[0]
                if lid:
                    jobs.append((node, lid, [p]))

    def one(job):
        node, lid, ports = job
        p = c.run("perfquery", lid, ",".join(map(str, ports)))
        if p.returncode != 0 or "# Port counters" not in p.stdout:
            p = c.run("perfquery", lid, ",".join(map(str, ports)))  # a PMA may miss the first query
        return job, p

    out, failed, answered = [], [], 0
    with ThreadPoolExecutor(parallel) as pool:
        for (node, lid, ports), p in pool.map(one, jobs):
            got = p.stdout.count("# Port counters") if p.returncode == 0 else 0
            if got < len(ports):
                failed.append({"device": f.names[node], "lid": lid, "ports": ports, "error": why(p)})
            if got:
                answered += got
                out.append(p.stdout if p.stdout.endswith("\n") else p.stdout + "\n")
    item.update({"queries": len(jobs), "ports": answered, "failed": failed, "ok": not failed})
    return "".join(out)
