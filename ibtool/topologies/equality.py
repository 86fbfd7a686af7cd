"""The Equality family (paper 002): `ibtool topo equality` from its options or either notation of
section 3.2, the link sets given or searched (section 3.3), with paper 002's own figures of a plan.
The network itself (construction, notation, names and ports, Remark 2's distances) is
ibtool.topologies.equality_net; the search is ibtool.topologies.equality_search."""

from __future__ import annotations

import sys

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import Param, radix_param, topology
from ibtool.topologies.equality_net import (
    Spec,
    build,
    check_n,
    check_sets,
    eq1,
    metrics,
    parse_numbers,
    parse_spec,
    semicircle_bisection,
)
from ibtool.topologies.equality_search import search as search_sets


def resolve(n: int = 0, sa: str = "", sb: str = "", hcas_per_router: int = 0, radix: int = 36,
            spec: str = "", search_spec: str = "", seed: int = 1, generations: int = 50,
            population: int = 32, fixed_sb: str = "", say=None) -> tuple[int, tuple, tuple, int, dict]:
    """Parameters (options or either notation) -> (N, S_A, S_B, p, provenance); the search runs
    here when the short notation is given."""
    if spec and search_spec:
        raise InputError("give --spec or --search, not both")
    text = spec or search_spec
    prov: dict = {}
    if text:
        if n or sa or sb:
            raise InputError("--spec/--search already gives N and the link sets; drop --n/--sa/--sb")
        sp = parse_spec(text)
        if search_spec and sp.sa is not None:
            raise InputError(f"--search {text!r}: give the short notation (e.g. n1840k17p8); "
                             f"the link sets are what the search finds")
        if sp.p is not None and hcas_per_router and hcas_per_router != sp.p:
            raise InputError(f"--hcas-per-router {hcas_per_router} contradicts p = {sp.p} in {text!r}")
        p = sp.p if sp.p is not None else (hcas_per_router or 1)
        n = sp.n
        check_n(n)
        if sp.sa is None:
            fsb = parse_numbers(fixed_sb, "--fixed-sb", fixed_sb) if fixed_sb else None
            if sp.k + p > radix:
                raise InputError(f"K + p = {sp.k} + {p} = {sp.k + p} ports is more than --radix {radix}")
            r = search_sets(n, sp.k, seed=seed, generations=generations, population=population, fixed_sb=fsb, say=say)
            sa_t, sb_t = r.sa, r.sb
            prov = {"search": {"class": sp.short(), "seed": seed, "generations": generations,
                               "population": population, "fixed_sb": list(fsb) if fsb else None,
                               "evaluations": r.evaluations, "best_ad": round(r.ad, 6)}}
        else:
            sa_t, sb_t = sp.sa, sp.sb
            check_sets(n, sa_t, sb_t)
            if eq1(n, sa_t, sb_t) != sp.k:
                raise InputError(f"K{sp.k} in {text!r} disagrees with Eq. 1: {len(sa_t)} odd + "
                                 f"2 x {len(sb_t)} even{' - 1 (N/2)' if n // 2 in sb_t else ''} = {eq1(n, sa_t, sb_t)}")
    else:
        if not n:
            raise InputError("give --spec, --search, or --n with --sa and --sb")
        if fixed_sb:
            raise InputError("--fixed-sb applies to --search")
        sa_t = parse_numbers(sa, "--sa", sa)
        sb_t = parse_numbers(sb, "--sb", sb)
        check_sets(n, sa_t, sb_t)
        p = hcas_per_router or 1
    k = eq1(n, sa_t, sb_t)
    if p < 1:
        raise InputError(f"p = {p}: every router needs at least one HCA")
    if k + p > radix:
        raise InputError(f"K + p = {k} + {p} = {k + p} ports is more than --radix {radix}")
    return n, tuple(sa_t), tuple(sb_t), p, prov


def _stderr(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


def figures(params: dict) -> dict:
    """Paper 002's own bisection of a plan (section 4.3): the semicircle split, B_r = B / (N K / 2)
    and b_r by Eq. 3 = B_r K / (K + 2p); its Fig. 4 plots these. An upper bound of the true
    bisection, which `ibtool analyze` reports beside it (Fig. 1's network: 18 against 14)."""
    n, sa, sb, p = params["n"], tuple(params["sa"]), tuple(params["sb"]), int(params["p"])
    b, br = semicircle_bisection(n, sa, sb)
    k = eq1(n, sa, sb)
    return {"bisection": {"measure": "semicircle split, section 4.3", "source": "paper 002",
                          "description": "the fewest router links cut by splitting the ring into two halves of "
                                         "consecutive routers (an upper bound of the true bisection)",
                          "links": b, "B_r": round(br, 6), "b_r": round(br * k / (k + 2 * p), 6),
                          "b_r_formula": "Eq. 3: b_r = B_r K / (K + 2p)"}}


@topology(
    "equality",
    summary="Equality network: N routers on a ring with odd (S_A) and even (S_B) chords",
    reference="paper 002, sections 3.1-3.4 (construction, notation, Eq. 1, genetic search, Eq. 2)",
    example="ibtool topo equality --spec 'N14K6[-1,1,3,9](4)' --hcas-per-router 4 --radix 12 --out eq14   "
            "# Fig. 1\n  ibtool topo equality --search n1840k17p8 --seed 1 --generations 30 --out e1840",
    engine="nue", figures=figures,
    layout="sequential",  # paper 002 section 4: cabinets filled in router order
    params=[
        Param("spec", str, "", "the paper's notation: N14K6[-1,1,3,9](4) (given link sets) or n14k6p3 (search them)"),
        Param("search", str, "", "class to search link sets for, e.g. n1840k17p8 (section 3.3, minimises a*d)"),
        Param("n", int, 0, "routers, even (with --sa/--sb instead of --spec)"),
        Param("sa", str, "", "odd link lengths, comma-separated, with the ring -1,1 (write --sa=-1,1,3,9)"),
        Param("sb", str, "", "even link lengths, comma-separated (e.g. 4)"),
        Param("hcas_per_router", int, 0, "HCAs per router, p (0: from the spec's p, else 1)"),
        radix_param(36, "ports per router switch; K + p must fit"),
        Param("seed", int, 1, "search: random seed (same seed, same result)"),
        Param("generations", int, 50, "search: generations", low=0),
        Param("population", int, 32, "search: individuals per generation", low=4),
        Param("fixed_sb", str, "", "search: keep these even lengths as S_B and search S_A only"),
    ],
)
def equality(spec: str = "", search: str = "", n: int = 0, sa: str = "", sb: str = "", hcas_per_router: int = 0,
             radix: int = 36, seed: int = 1, generations: int = 50, population: int = 32,
             fixed_sb: str = "") -> Fabric:
    n, sa_t, sb_t, p, prov = resolve(n, sa, sb, hcas_per_router, radix, spec, search, seed, generations,
                                     population, fixed_sb, say=_stderr)
    f = build(n, sa_t, sb_t, p, radix)
    d, a = metrics(n, sa_t, sb_t)
    full = Spec(n, None, p, sa_t, sb_t).full()
    f.params = {"spec": full, "class": f"n{n}k{eq1(n, sa_t, sb_t)}p{p}", "n": n,
                "k": eq1(n, sa_t, sb_t), "p": p, "sa": list(sa_t), "sb": list(sb_t), "radix": radix,
                "diameter": d, "average_distance": round(a, 6), **prov}
    return f
