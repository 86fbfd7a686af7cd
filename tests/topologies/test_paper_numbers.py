"""The numbers of papers 000 and 001 that docs/papers.md reports, computed from the generated
fabrics (counts, radix, HCA-to-HCA diameter and average distance with scipy.sparse.csgraph) and,
where the fabric would be too large to build (k = n = 8), from the counts whose closed forms the
(k, n) sweep of test_trees.py checks against the generated graphs."""

from collections import deque
from math import comb, factorial

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ibtool.topologies.fattree import fattree
from ibtool.topologies.kantc import intermediates, kantc, mikant, mikantc
from ibtool.topologies.kns import kns
from ibtool.topologies.sft import sft


def metrics(f):
    N = f.num_nodes
    A = sp.coo_matrix((np.ones(f.num_links), (f.link_a, f.link_b)), shape=(N, N)).tocsr()
    h = [i for i in range(N) if not f.is_switch(i)]
    D = shortest_path(A, directed=False, unweighted=True, indices=h)[:, h]
    off = D[~np.eye(len(h), dtype=bool)]
    return {"nodes": len(h), "switches": N - len(h), "links": f.num_links,
            "radix": max(len(f.neighbors(i)) for i in range(N) if f.is_switch(i)),
            "diameter": int(off.max()), "avg": round(float(off.mean()), 3)}


def test_paper_000_sft_next_to_kns():
    """Paper 000 section 4: the SFT was chosen for a node count and diameter like KNS 6-ary 2-direct's."""
    assert metrics(sft(preset="cellia")) == {"nodes": 45, "switches": 21, "links": 90, "radix": 8, "diameter": 6,
                                            "avg": 5.182}
    assert metrics(sft(preset="cellia36")) == {"nodes": 36, "switches": 21, "links": 81, "radix": 7, "diameter": 6,
                                              "avg": 5.2}
    assert metrics(kns(6, 2, radix=8)) == {"nodes": 36, "switches": 48, "links": 108, "radix": 6, "diameter": 6,
                                           "avg": 5.429}


TABLE_I = {  # (k, n) -> family -> (nodes, switches, links, radix, diameter, average distance) of the graph
    (3, 3): {"fattree": (27, 27, 81, 6, 6, 5.231), "mikant": (54, 36, 135, 6, 6, 5.113),
             "kantc": (45, 42, 135, 6, 8, 6.582), "mikantc": (90, 66, 243, 6, 8, 6.793)},
    (4, 4): {"fattree": (256, 256, 1024, 8, 8, 7.365), "mikant": (512, 384, 1792, 8, 8, 7.182),
             "kantc": (768, 448, 2048, 8, 12, 9.885), "mikantc": (1536, 768, 3840, 8, 12, 9.776)},
}
BUILD = {"fattree": fattree, "mikant": mikant, "kantc": kantc, "mikantc": mikantc}


def covering_radius(k):
    """Largest cube distance from a switch to its nearest intermediate switch."""
    return max(min(bin(x ^ i).count("1") for i in intermediates(k)) for x in range(2 ** k))


@pytest.mark.parametrize("k,n", list(TABLE_I))
def test_paper_001_table_1(k, n):
    for fam, want in TABLE_I[k, n].items():
        m = metrics(BUILD[fam](k, n))
        assert tuple(m.values()) == want, fam
    # Table I's diameters: k-ary n-tree and MiKANT 2n (as the graph); KANTC/MiKANTC: Theorem 5 says
    # 2n + k, its proof 2n + 2k; the graph has 2n + 2r with r = floor(k/2) the intermediates' covering
    # radius: 2n + k for even k, 2n + k - 1 for odd (test_kantc_diameter_beside_theorem_5)
    assert TABLE_I[k, n]["fattree"][4] == TABLE_I[k, n]["mikant"][4] == 2 * n
    assert TABLE_I[k, n]["kantc"][4] == TABLE_I[k, n]["mikantc"][4] == 2 * n + 2 * covering_radius(k)
    # Table I's link counts for KANTC and MiKANTC halve the tree part ((n-1)k^n/2, (2n-3)k^n/2);
    # Theorems 4 and 9 (and the graph) have it whole
    assert TABLE_I[k, n]["kantc"][2] == (n - 1) * k ** n + (2 ** (k - 1) + 2 ** k - k) * k ** (n - 1)
    assert TABLE_I[k, n]["kantc"][2] != (n - 1) * k ** n // 2 + (2 ** (k - 1) + 2 ** k - k) * k ** (n - 1)


@pytest.mark.parametrize("k,n", [(2, 2), (3, 2), (4, 2), (5, 2), (6, 2), (7, 2), (2, 3), (3, 3), (4, 3), (5, 3),
                                 (2, 4), (3, 4), (2, 5)])
def test_kantc_diameter_beside_theorem_5(k, n):
    """What docs/papers.md says beside Theorem 5 (and `analyze --figures` prints as the graph's
    diameter), against the generated graphs: from n = 3 on 2n + 2 floor(k/2), i.e. Theorem 5's
    2n + k for even k and 2n + k - 1 for odd k; n = 2 (one cube, or two) k + 2 and 2 floor(k/2) + 3."""
    from ibtool.topologies.kantc import graph_diameter, paper001
    for fam in ("kantc", "mikantc"):
        got = metrics(BUILD[fam](k, n))["diameter"]
        assert got == graph_diameter(fam, k, n), (fam, k, n, got)
        if n >= 3:
            assert got == 2 * n + k - (k % 2)
        assert {r["name"]: r["value"] for r in paper001(fam, k, n)}["diameter of the graph"] == got


def test_covering_radius_is_half_k():
    """r = floor(k/2) for every k paper001() computes (2..16), by all labels at once."""
    from ibtool.topologies.kantc import intermediates
    ones = np.array([bin(x).count("1") for x in range(1 << 16)])
    for k in range(2, 17):
        labels = np.arange(1 << k)
        r = ones[labels[:, None] ^ np.array(intermediates(k))[None, :]].min(axis=1).max()
        assert r == k // 2, k


def per_node(family, k, n):
    """(switches, links) per compute node from the counts the sweep checks against the graphs."""
    nodes, switches, links = {
        "fattree": (k ** n, n * k ** (n - 1), n * k ** n),
        "mikant": (2 * k ** n, (2 * n - 2) * k ** (n - 1), (2 * n - 1) * k ** n),
        "kantc": ((2 ** k - k) * k ** (n - 1), (n - 1) * k ** (n - 1) + 2 ** k * k ** (n - 2),
                  (n - 1) * k ** n + (2 ** (k - 1) + 2 ** k - k) * k ** (n - 1)),
        "mikantc": (2 * (2 ** k - k) * k ** (n - 1), (2 * n - 4) * k ** (n - 1) + 2 ** (k + 1) * k ** (n - 2),
                    (2 * n - 3) * k ** n + (3 * 2 ** k - 2 * k) * k ** (n - 1)),
    }[family]
    return switches / nodes, links / nodes


@pytest.mark.parametrize("k,n", [(3, 3), (4, 3), (3, 4)])
def test_per_node_costs_match_generated_fabrics(k, n):
    for fam, build in BUILD.items():
        s = build(k, n).summary()
        assert per_node(fam, k, n) == pytest.approx((s["switches"] / s["hcas"], s["links"] / s["hcas"]))


def test_paper_001_section_v_savings_at_k_n_8():
    """Section V.A: KANTC saves 84.27 % switches and 78.23 % links against the k-ary n-tree,
    82.03 % / 76.77 % against MiKANT; MiKANTC 84.68 % / 78.43 % and 82.49 % / 76.99 %."""
    def saved(a, b):
        (sa, la), (sb, lb) = per_node(a, 8, 8), per_node(b, 8, 8)
        return round(100 * (1 - sa / sb), 2), round(100 * (1 - la / lb), 2)
    assert saved("kantc", "fattree") == (84.27, 78.23)
    assert saved("kantc", "mikant") == (82.03, 76.77)
    assert saved("mikantc", "fattree") == (84.68, 78.43)
    assert saved("mikantc", "mikant") == (82.49, 76.99)


def count_shortest_paths(adj, src):
    dist, ways = {src: 0}, {src: 1}
    q = deque([src])
    while q:
        u = q.popleft()
        for v in adj[u]:
            if v not in dist:
                dist[v], ways[v] = dist[u] + 1, 0
                q.append(v)
            if dist[v] == dist[u] + 1:
                ways[v] += ways[u]
    return ways


def switch_adj(f, keep):
    return {i: [b for _, b, _ in f.neighbors(i) if b in keep] for i in keep}


def p_cube(k):
    return sum(comb(k, i) * factorial(i) for i in range(1, k + 1)) / 2 ** k


def p_kant(k, n):
    return (k ** n - 1 / k ** (n - 2)) / (k + 1)


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_path_diversity_of_a_cube_counted_on_the_graph(k):
    """Section V.C: from any switch of a k-cube, C(k,i) switches at distance i with i! shortest
    paths each; P~_cube = (sum_i C(k,i) i!) / 2^k. Counted on a cube of the generated KANTC."""
    f = kantc(k, 2)
    cube = {i for i, lab in enumerate(f.labels) if "c" in lab and f.is_switch(i)}
    adj = switch_adj(f, cube)
    for s in cube:
        ways = count_shortest_paths(adj, s)
        assert (sum(ways.values()) - 1) / 2 ** k == pytest.approx(p_cube(k))


@pytest.mark.parametrize("k,n", [(2, 3), (3, 3), (4, 3), (3, 4)])
def test_path_diversity_of_a_k_ary_n_tree_counted_on_the_graph(k, n):
    """P~_kant = [sum_i k^i (k^i - k^(i-1))] / k^(n-1) = (k^n - 1/k^(n-2)) / (k+1): shortest
    paths from a leaf switch to the other leaf switches, counted on the generated tree."""
    f = fattree(k, n)
    sw = {i for i in range(f.num_nodes) if f.is_switch(i)}
    leaves = [i for i in sw if f.labels[i]["level"] == 0]
    adj = switch_adj(f, sw)
    for s in leaves[:3]:
        ways = count_shortest_paths(adj, s)
        assert sum(ways[t] for t in leaves if t != s) / k ** (n - 1) == pytest.approx(p_kant(k, n))


def path_diversity(k, n):
    """Fig. 10's PD = P~ / N of section V.C, evaluated as the paper writes it (n = 8)."""
    pc, pk = p_cube(k), p_kant(k, n)
    pm = pk / 2 + k ** (n - 2) / 2
    nk, nm = (2 ** k - k) * k ** (n - 1), 2 * (2 ** k - k) * k ** (n - 1)
    return {"cube": pc / 2 ** k, "kant": pk / k ** n, "mikant": pm / (2 * k ** n),
            "kantc": (k * k * pc * pc * pk + (k * pc - pc * pc * pk) / k ** (n - 4)) / nk,
            "mikantc": (k * k * pc * pc * pm + (k * pc - pc * pc * pm) / (2 * k ** (n - 4))) / nm}


def test_path_diversity_fig_10():
    """The paper's closed forms agree with their own sums: PD_kant = (1 - 1/k^(2n-2))/(k+1) and
    PD_mikant = (1 - 1/k^(2n-2))/(4(k+1)) + 1/(4k^2); and KANTC/MiKANTC's PD exceed the tree's
    and MiKANT's for every k of Fig. 10 (n = 8), as the paper concludes."""
    for k in range(2, 9):
        pd = path_diversity(k, 8)
        assert pd["kant"] == pytest.approx((1 - 1 / k ** 14) / (k + 1))
        assert pd["mikant"] == pytest.approx((1 - 1 / k ** 14) / (4 * (k + 1)) + 1 / (4 * k * k))
        assert pd["kantc"] > pd["kant"] and pd["mikantc"] > pd["mikant"]
    # the values docs/papers.md lists
    assert [round(path_diversity(k, 8)["kantc"], 2) for k in (2, 3, 4)] == [1.31, 4.74, 17.06]
    # the paper's closed form of P~_cube, sum_i k!/(i! 2^k), is not its own sum sum_i C(k,i) i! / 2^k
    # (= sum_i k!/((k-i)! 2^k)) that the graph has: 3/4 against 4/4 for k = 2
    assert sum(factorial(2) / factorial(i) for i in (1, 2)) / 4 == 0.75 and p_cube(2) == 1.0


def figures_cli(spec):
    from support import ibtool
    import json
    r = json.loads(ibtool("analyze", "--figures", spec, "--json", check=0).stdout)
    return {row["name"]: row["value"] for row in r["figures"]}


def test_analyze_figures_section_v_a_savings_from_the_cli():
    """`ibtool analyze --figures 'KANTC(8,8)'`: section V.A's four pairs at k = n = 8, from the
    same counts as per_node() above (checked against the generated fabrics)."""
    for fam, want in (("KANTC", (84.27, 78.23, 82.03, 76.77)), ("MiKANTC", (84.68, 78.43, 82.49, 76.99))):
        f = figures_cli(f"{fam}(8,8)")
        got = tuple(round(f[f"{w} saved against {o}(8,8) (%)"], 2)
                    for o in ("k-ary n-tree", "MiKANT") for w in ("switches", "links"))
        assert got == want
        sa, la = per_node(fam.lower(), 8, 8)
        assert (f["switches per node"], f["links per node"]) == pytest.approx((sa, la))


def test_analyze_figures_rcp_of_section_v_b():
    """V.B: MiKANTC(6,7) has 5,412,096 nodes and RCP 0.421, which needs the diameter of the RCP
    formula, 2n + k (the text says 2n + 2k: 0.548); the graph's 2n + 2r is 20 too for k = 6."""
    f = figures_cli("mikantc(k=6, n=7)")
    assert f["nodes"] == 5_412_096 == 2 * (2 ** 6 - 6) * 6 ** 6
    assert round(f["RCP (paper's diameter)"], 3) == 0.421
    assert f["diameter, Theorem 5"] == 20 and f["diameter of the graph"] == 14 + 2 * covering_radius(6) == 20
    assert round(f["RCP (section V.B's text: diameter 2n + 2k)"], 3) == 0.548
    # where they differ (k = 3): RCP by the graph's diameter 2n + 2 is lower than by 2n + k
    g = figures_cli("KANTC(3,3)")
    assert g["diameter of the graph"] == 8 < g["diameter, Theorem 5"] == 9
    assert g["RCP (graph's diameter)"] == pytest.approx(g["RCP (paper's diameter)"] * 8 / 9)


def test_analyze_figures_path_diversity_fig_10():
    """PD = P~/N of section V.C for the rows docs/papers.md lists (n = 8), against path_diversity()
    above (the paper's sums, checked on the graphs)."""
    from ibtool.topologies.kantc import paper001
    for k in range(2, 9):
        want = path_diversity(k, 8)
        for fam, key in (("fattree", "kant"), ("mikant", "mikant"), ("kantc", "kantc"), ("mikantc", "mikantc")):
            got = {r["name"]: r["value"] for r in paper001(fam, k, 8)}["path diversity PD"]
            assert got == pytest.approx(want[key], rel=1e-12), (fam, k)
    assert round(figures_cli("KANTC(3,8)")["path diversity PD"], 2) == 4.74  # the CLI prints the same


def test_analyze_reports_paper_001_figures_of_a_plan(tmp_path):
    """`ibtool analyze PLAN` on a KANTC plan: the paper's figures from its parameters, whose counts
    are the plan's and whose graph diameter is the one analyze measures."""
    import json

    from support import ibtool
    plan = tmp_path / "kantc"
    ibtool("topo", "kantc", "--k", 3, "--n", 3, "--out", plan, check=0)
    r = json.loads(ibtool("analyze", plan, "--json", "--bisection", "none", check=0).stdout)
    f = {row["name"]: row for row in r["paper"]}
    c = r["counts"]
    assert (f["nodes"]["value"], f["switches"]["value"], f["links"]["value"]) == (c["hcas"], c["switches"], c["links"])
    assert f["diameter of the graph"]["value"] == r["distance"]["hca"]["diameter"] == 8
    assert all(row["formula"] and row["source"] for row in r["paper"])
    text = ibtool("analyze", plan, "--bisection", "none", check=0).stdout
    assert "the source paper's figures, from the plan's parameters:" in text
    assert any(line.split()[:3] == ["path", "diversity", "PD"] for line in text.splitlines())


@pytest.mark.parametrize("spec,words", [
    ("KANTC 8 8", "expected FAMILY(ARGS)"),
    ("kantc(8)", "kantc needs n"),
    ("kantc(8,x)", "n = 'x' is not a int"),
    ("kantc(q=3)", "kantc has no parameter 'q'"),
    ("nosuch(1)", "no family 'nosuch'"),
    ("torus(8)", "torus has no paper figures"),
    ("kantc(99999999999999999999,8)", "computed for 2 <= k <= 16"),
])
def test_analyze_figures_bad_input_is_one_line(spec, words):
    from support import ibtool
    r = ibtool("analyze", "--figures", spec)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
