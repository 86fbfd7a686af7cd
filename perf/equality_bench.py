"""`make bench` items for Equality networks (issue 14, paper 002):

(a) the paper's largest system, n64000k64p16 (64,000 routers, 1,024,000 HCAs), with given link
    sets: `ibtool topo equality --spec ...` generated and written in a fresh process (target
    < 60 s, < 4 GiB); stock reference: ibsim 0.10 loading the plan of E361 (n2048k28p8), which
    ibtool also generates in the same run;
(b) diameter and average distance of that network by the symmetric method (one BFS from r_0,
    Remark 2; target < 10 s) against a plain BFS (scipy.sparse.csgraph) from a sample of routers
    on the full router graph: the sample's distances must equal Remark 2's, and the plain BFS
    time per source, times N, is the all-pairs time it replaces;
(c) one generation of the genetic search on n1840k17 (population 32; target < 1 s) against the
    same generation evaluated by plain all-pairs BFS (scipy), one individual timed and scaled;
(d) the systems paper 002 names (E361, E481, E806, E807, the n1840k17 example): counts, K, and d,
    a, B_r, b_r of the link sets a fixed-seed search finds (docs/papers.md).

    python perf/equality_bench.py OUT_DIR

`main(out_dir)` returns the results as a dict (perf/run.py records them in BENCHMARKS.md).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from measure import measure  # perf/measure.py: this script's directory is on sys.path
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from ibtool.topologies import equality_net as eq
from ibtool.topologies.equality_search import search

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]


def given_sets(n: int, n_odd: int, n_even: int, seed: int) -> tuple[tuple, tuple]:
    """Fixed link sets (the paper does not list its own): drawn once from C with a fixed seed."""
    rng = np.random.default_rng(seed)
    sb = tuple(sorted(int(x) for x in rng.choice(np.arange(2, n // 2, 2), n_even, replace=False)))
    sa = (-1, 1) + tuple(sorted(int(x) for x in rng.choice(np.arange(3, n - 2, 2), n_odd, replace=False)))
    return sa, sb


def spec_of(n: int, sa, sb) -> str:
    return eq.Spec(n, None, None, sa, sb).full()


def router_graph(n: int, sa, sb) -> csr_matrix:
    u, v, _, _ = eq.links(n, sa, sb)
    return csr_matrix((np.ones(2 * len(u), dtype=np.int8), (np.r_[u, v], np.r_[v, u])), shape=(n, n))


def generate(out: Path) -> list[dict]:
    from run import (
        ibsim_load,  # perf/run.py's stock reference (imported here: run.py imports this module)
    )

    rows = []
    big = given_sets(64000, 30, 16, seed=7)  # 32 odd (with the ring) + 2 x 16 even = K 64
    e361 = given_sets(2048, 12, 7, seed=3)  # 14 + 2 x 7 = K 28
    for label, n, sets, p, radix, ref in [("n64000k64p16 (paper's E806 class)", 64000, big, 16, 80, False),
                                          ("n2048k28p8 (paper's E361 class)", 2048, e361, 8, 36, True)]:
        d = out / f"gen-n{n}"
        r = measure([*IBTOOL, "topo", "equality", "--spec", spec_of(n, *sets), "--hcas-per-router", p,
                     "--radix", radix, "--out", d, "--force", "--json"], cwd=ROOT)
        s = json.loads(r["stdout"]) if r["exit"] == 0 else {}
        net = d / "topology.net"
        row = {"fabric": label, "spec": spec_of(n, *sets), "routers": s.get("switches"), "hcas": s.get("hcas"),
               "links": s.get("links"), "net_mib": round(net.stat().st_size / 2**20, 1) if net.exists() else None,
               "ibtool_s": r["seconds"], "ibtool_cpu_s": r["cpu_seconds"], "ibtool_rss_mib": r["peak_rss_mib"],
               "load": os.getloadavg()[0], "rc": r["exit"],
               "ibsim_load_s": ibsim_load(net) if ref and r["exit"] == 0 else None}
        rows.append(row)
        print(row, flush=True)
    return rows


def evaluate(sample: int = 32) -> dict:
    n = 64000
    sa, sb = given_sets(64000, 30, 16, seed=7)
    runs = []
    for _ in range(3):
        t0 = time.monotonic()
        d, a = eq.metrics(n, sa, sb)
        runs.append(time.monotonic() - t0)
    d0 = eq.distances(n, sa, sb)
    g = router_graph(n, sa, sb)
    src = np.random.default_rng(1).choice(n, sample, replace=False)
    t0 = time.monotonic()
    plain = shortest_path(g, unweighted=True, indices=src)
    t_plain = time.monotonic() - t0
    j = np.arange(n)[None, :]
    i = src[:, None]
    agree = bool((plain == np.where(i % 2 == 0, d0[(j - i) % n], d0[(i - j) % n])).all())
    per = t_plain / sample
    row = {"network": f"n{n}k64 ({spec_of(n, sa, sb)[:40]}...)", "diameter": d, "average_distance": round(a, 6),
           "symmetric_s": round(min(runs), 3), "plain_bfs_sources": sample, "plain_bfs_s": round(t_plain, 3),
           "plain_bfs_per_source_s": round(per, 4), "plain_all_pairs_estimate_s": round(per * n, 1),
           "sample_agrees_with_remark2": agree, "speedup_vs_all_pairs": round(per * n / min(runs), 1)}
    print(row, flush=True)
    return row


def ga_generation(generations: int = 10, population: int = 32) -> dict:
    n, k = 1840, 17
    t0 = time.monotonic()
    search(n, k, seed=1, generations=0, population=population)
    t_init = time.monotonic() - t0
    t0 = time.monotonic()
    r = search(n, k, seed=1, generations=generations, population=population)
    t_all = time.monotonic() - t0
    per_gen = (t_all - t_init) / generations
    g = router_graph(n, r.sa, r.sb)
    t0 = time.monotonic()
    full = shortest_path(g, unweighted=True)
    t_one = time.monotonic() - t0
    assert full.max() == r.d and abs(full.sum() / (n * (n - 1)) - r.a) < 1e-9
    row = {"class": "n1840k17", "population": population, "generations": generations,
           "per_generation_s": round(per_gen, 3), "first_generation_s": round(t_init, 3),
           "evaluations": r.evaluations, "best_ad": round(r.ad, 4), "d": r.d, "a": round(r.a, 4),
           "sets": spec_of(n, r.sa, r.sb), "plain_all_pairs_one_s": round(t_one, 3),
           "plain_generation_estimate_s": round(t_one * population, 2),
           "speedup": round(t_one * population / max(t_init, 1e-9), 1)}
    print(row, flush=True)
    return row


# The systems paper 002 names in its text (Table 2's link sets are in its Appendix 1, not in the
# text): (id, N, K, p, router radix, generations, population) for a fixed-seed search each.
PAPER_SYSTEMS = [("E361", 2048, 28, 8, 36, 20, 32), ("E481", 4800, 38, 10, 48, 20, 32),
                 ("E807", 20000, 64, 16, 80, 10, 16), ("E806", 64000, 64, 16, 80, 10, 16),
                 ("sect. 3.3 example", 1840, 17, 8, 25, 50, 32)]


def moore(k: int, d: int) -> int:
    return 1 + k * sum((k - 1) ** i for i in range(d))


def paper_systems() -> list[dict]:
    """Counts, K, and d, a, a*d, B_r, b_r and the Moore-bound ratio of the best link sets a
    fixed-seed search finds for each system (docs/papers.md, paper 002)."""
    rows = []
    for name, n, k, p, radix, gens, pop in PAPER_SYSTEMS:
        t0 = time.monotonic()
        r = search(n, k, seed=1, generations=gens, population=pop)
        b, br_topo = eq.semicircle_bisection(n, r.sa, r.sb)
        rows.append({"id": name, "class": f"n{n}k{k}p{p}", "routers": n, "endpoints": n * p, "ports": k + p,
                     "radix": radix, "links": n * k // 2 + n * p, "generations": gens, "population": pop,
                     "d": r.d, "a": round(r.a, 4), "ad": round(r.ad, 4), "first_generation_ad": round(r.history[0][0], 4),
                     "B": b, "B_r": round(br_topo, 4), "b_r": round(br_topo * k / (k + 2 * p), 4),
                     "moore_pct": round(100 * n / moore(k, r.d), 3), "spec": spec_of(n, r.sa, r.sb),
                     "seconds": round(time.monotonic() - t0, 1)})
        print(rows[-1], flush=True)
    return rows


def markdown(res: dict) -> str:
    md = ["| fabric | routers | HCAs | links | net file | ibtool topo equality: wall (CPU) | peak RSS | load (1 min) | ibsim loading the same file |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in res["generate"]:
        ref = f"{r['ibsim_load_s']} s (ibtool {r['ibsim_load_s'] / r['ibtool_s']:.1f}x faster)" if r["ibsim_load_s"] else "not run"
        md.append(f"| {r['fabric']} | {r['routers']:,} | {r['hcas']:,} | {r['links']:,} | {r['net_mib']} MiB | "
                  f"{r['ibtool_s']} s ({r['ibtool_cpu_s']} s) | {r['ibtool_rss_mib']:.0f} MiB | {r['load']:.1f} | {ref} |")
    e = res["evaluate"]
    md += ["", "| network | d | a | symmetric (one BFS) | plain BFS (scipy), per source | all pairs by plain BFS (est.) | speed-up | sample agrees |",
           "|---|---|---|---|---|---|---|---|",
           (f"| n64000k64 | {e['diameter']} | {e['average_distance']} | {e['symmetric_s']} s | {e['plain_bfs_per_source_s']} s "
            f"({e['plain_bfs_sources']} sources: {e['plain_bfs_s']} s) | {e['plain_all_pairs_estimate_s']} s | "
            f"{e['speedup_vs_all_pairs']}x | {e['sample_agrees_with_remark2']} |")]
    g = res["ga"]
    md += ["", (f"| search | population | one generation | plain all-pairs per generation (est.) | best a*d after "
                f"{g['generations']} generations |"), "|---|---|---|---|---|",
           (f"| n1840k17 | {g['population']} | {g['per_generation_s']} s (first, all new: {g['first_generation_s']} s) | "
            f"{g['plain_generation_estimate_s']} s ({g['plain_all_pairs_one_s']} s per individual) | "
            f"{g['best_ad']} (d = {g['d']}, a = {g['a']}) |")]
    md += ["", "| system | class | endpoints | K + p / radix | links | search (seed 1) | d | a | a*d (gen. 0) | B_r | b_r | % of Moore bound |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res.get("paper", []):
        md.append(f"| {r['id']} | {r['class']} | {r['endpoints']:,} | {r['ports']} / {r['radix']} | {r['links']:,} | "
                  f"{r['generations']} x {r['population']} | {r['d']} | {r['a']} | {r['ad']} ({r['first_generation_ad']}) | "
                  f"{r['B_r']} | {r['b_r']} | {r['moore_pct']} |")
    return "\n".join(md) + "\n"


def main(out: Path) -> dict:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    res = {"generate": generate(out), "evaluate": evaluate(), "ga": ga_generation(), "paper": paper_systems()}
    (out / "equality.json").write_text(json.dumps(res, indent=2) + "\n")
    (out / "equality.md").write_text(markdown(res))
    return res


if __name__ == "__main__":
    r = main(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "perf" / "out" / "equality"))
    print(markdown(r))
