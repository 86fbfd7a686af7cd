"""`ibtool watch` on emulated KNS 8^3 and 12^3 (BENCHMARKS.md, "The watcher"): ibsim + a
long-running OpenSM (minhop), then, against the same live fabric in one run:

* the watcher's rounds, in process (what `ibtool watch run` does every interval): the first round
  (every port asked, every NodeDescription and ClassPortInfo) and three steady ones; per round its
  wall time, MADs, and the CPU seconds of OpenSM, ibsim, the round's MAD process and the watcher
  itself (reading, judging, storing);
* `ibqueryerrors` with the field exporter's options (infiniband-exporter runs it every scrape),
  timed the same way;
* `farm-bench`: a whole `ibtool watch run --rounds 1` process (start-up, plan, first round) against
  that ibqueryerrors, paired runs, the ratio pair by pair;
* the store's size per day at 60 s rounds: a day of rounds (1,440) written from the fabric's own
  round — its traffic counters grow every round on every port (as the rounds' own MADs make them
  under ibsim), the error counters of 1 % of the ports grow every round (cables going bad).

    .venv/bin/python perf/watch_bench.py [OUT] [--quick]      # --quick: KNS 3^3, 60 rounds a "day"
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ibtool.sim.clients import Clients
from ibtool.sim.live import LiveFabric
from ibtool.watch.plan import PlanView
from ibtool.watch.service import Watcher
from ibtool.watch.store import Store

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]
IBQE = ["ibqueryerrors", "--verbose", "--details", "--suppress-common", "--data", "--report-port", "--switch", "--ca"]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> float:
    """User + system seconds of a running process."""
    with open(f"/proc/{pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


def timed(lf, what):
    """Run what(); wall seconds and the CPU seconds of OpenSM, ibsim, our children, ourselves."""
    sm, sim = lf.sms[0].pid, lf.ibsim_pid
    a = (cpu_of(sm), cpu_of(sim), resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF))
    t0 = time.monotonic()
    out = what()
    wall = time.monotonic() - t0
    b = (cpu_of(sm), cpu_of(sim), resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF))

    def ru(x, y):
        return round(y.ru_utime + y.ru_stime - x.ru_utime - x.ru_stime, 2)
    return out, {"wall_s": round(wall, 2), "opensm_cpu_s": round(b[0] - a[0], 2), "ibsim_cpu_s": round(b[1] - a[1], 2),
                 "children_cpu_s": ru(a[2], b[2]), "self_cpu_s": ru(a[3], b[3]), "load": load()}


def plan_for(out: Path, k: int) -> Path:
    plan = out / f"kns-{k}-3"
    if not (plan / "cabling" / "cables.csv").exists():
        subprocess.run([*IBTOOL, "topo", "kns", "--k", str(k), "--n", "3", "--out", str(plan), "--force"], check=True,
                       capture_output=True)
        subprocess.run([*IBTOOL, "cabling", str(plan), "--out", str(plan / "cabling")], check=True, capture_output=True)
    return plan


def store_per_day(rnd, out: Path, rounds: int, interval: float = 60.0) -> dict:
    """Write `rounds` rounds of `interval` s from one real round, its counters moved as a day's
    would; the store's size after them (and what each table holds)."""
    db = out / "day.db"
    for p in out.glob("day.db*"):
        p.unlink()
    ports = [p for p in rnd.ports.values() if p.counters]
    bad = ports[:: 100]  # 1 %: a cable going bad on each
    t0 = 1_800_000_000.0
    w0 = time.monotonic()
    with Store(db, write=True) as st:
        for k in range(rounds):
            rnd.t = t0 + k * interval
            for p in ports:
                for n in ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts",
                          "PortUnicastRcvPkts", "PortXmitWait"):
                    if n in p.counters:
                        p.counters[n] += 1000 + k
            for p in bad:
                p.counters["SymbolErrorCounter"] = min(65535, p.counters["SymbolErrorCounter"] + 3)
            st.write_round(rnd, [], None)
            st.retain(rnd.t)
        st.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = {t: st.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("rounds", "samples", "hourly", "links", "ports")}
        size = st.size()
    return {"rounds": rounds, "interval_s": interval, "bytes": size, "mb": round(size / 1e6, 1), "rows": rows,
            "ports": len(ports), "bad_ports": len(bad), "write_s": round(time.monotonic() - w0, 1)}


def farm(env: dict, cwd: Path, a: list[str], b: list[str], runs: int, timeout: int) -> str:
    """farm-bench's report of A against B (paired runs), or why it could not run."""
    if not shutil.which("farm-bench"):
        return "farm-bench not installed"
    p = subprocess.run(["farm-bench", "-n", str(runs), "--warmup", "1", "--timeout", str(timeout), "--vs",
                        shlex.join(b), "--", *a], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout + 60)
    return (p.stdout + p.stderr).strip()


def main(out: Path, quick: bool = False) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in ([3] if quick else [8, 12]):
        plan = plan_for(out, k)
        work = out / f"live-{k}"
        with LiveFabric(plan / "topology.net", work, ["minhop"], timeout=1800, opensm_args=["-s", "0"]) as lf:
            env = lf.env()
            pv = PlanView(plan)
            store = out / f"w{k}.db"
            for p in out.glob(f"w{k}.db*"):
                p.unlink()
            w = Watcher(store, pv, Clients(lf.scratch, environ=env, timeout=600))
            rounds = []
            with w:
                for n in range(4):
                    (rnd, ev), t = timed(lf, w.step)
                    rounds.append({"round": n + 1, "mads": rnd.mads, "devices": len(rnd.devices),
                                   "cables": len(rnd.cables), "ports": rnd.counted, "events": len(ev),
                                   "mad_process_s": round(rnd.seconds, 2), **t})
                    print(f"KNS {k}^3 round {n + 1}: {rounds[-1]}", flush=True)
            iqe, t = timed(lf, lambda: subprocess.run(IBQE, env=env, cwd=lf.scratch, capture_output=True, text=True,
                                                      timeout=3600))
            summary = next((ln.strip("# ") for ln in iqe.stdout.splitlines() if "ports checked" in ln), "")
            ref = {"command": " ".join(IBQE), "exit": iqe.returncode, "summary": summary, **t}
            print(f"KNS {k}^3 ibqueryerrors: {ref}", flush=True)
            fb = farm(env, lf.scratch, [*IBTOOL, "watch", "run", "--store", str(out / f"fb{k}.db"), "--plan", str(plan),
                                        "--rounds", "1", "--listen", "none"], IBQE, 3, 3000 if k >= 12 else 600)
            print(fb, flush=True)
            steady = rounds[1:]
            row = {"fabric": f"KNS {k}-ary 3-direct", "rounds": rounds, "ibqueryerrors": ref, "farm_bench": fb,
                   "steady_wall_s_median": sorted(r["wall_s"] for r in steady)[len(steady) // 2],
                   "vs_ibqueryerrors": round(ref["wall_s"] / sorted(r["wall_s"] for r in steady)[len(steady) // 2], 2)}
            if k == (3 if quick else 12):
                with Watcher(out / "one.db", pv, Clients(lf.scratch, environ=env, timeout=600)) as w2:
                    rnd, _ = w2.step()
                row["store_per_day"] = store_per_day(rnd, out, 60 if quick else 1440)
                print(f"store per day: {row['store_per_day']}", flush=True)
            rows.append(row)
    (out / "watch.json").write_text(json.dumps(rows, indent=2) + "\n")
    return rows


if __name__ == "__main__":
    args = sys.argv[1:]
    pos = [a for a in args if not a.startswith("--")]
    main(Path(pos[0]) if pos else ROOT / "perf" / "out" / "watch", "--quick" in args)
