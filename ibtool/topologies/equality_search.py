"""The genetic search of paper 002, section 3.3: link sets of a class n<N>k<K> that minimise a*d
(the Equality network's average distance times its diameter), reproducible from a seed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ibtool.errors import InputError
from ibtool.topologies.equality_net import check_n, check_sets, metrics


@dataclass
class SearchResult:
    sa: tuple[int, ...]
    sb: tuple[int, ...]
    d: int
    a: float
    generations: int
    evaluations: int
    history: list  # per generation: (best a*d, d, a)

    @property
    def ad(self) -> float:
        return self.a * self.d


def _cost(n: int, s: int) -> int:
    return 1 if s % 2 or s == n // 2 else 2


def search(n: int, k: int, *, seed: int = 1, generations: int = 50, population: int = 32,
           fixed_sb: tuple[int, ...] | None = None, mutation: float = 0.3, say=None) -> SearchResult:
    """Section 3.3: a genetic algorithm minimising a*d over link sets of radix K (Eq. 1).

    A genome is the set of chords besides the ring (-1, 1); an odd length or N/2 costs one port,
    another even length two, and every genome costs exactly K - 2. Each generation keeps the two
    best, and breeds the rest from tournament-chosen parents: a child draws its chords from the
    union of its parents', then each chord is replaced by a random one of equal cost with
    probability `mutation`. With `fixed_sb` only S_A evolves. Reproducible from `seed`.
    """
    check_n(n)
    rng = np.random.default_rng(seed)
    odd = np.array([s for s in range(3, n - 2, 2)] + ([n // 2] if (n // 2) % 2 == 0 else []), dtype=np.int64)
    even = np.arange(2, n // 2 + (0 if (n // 2) % 2 == 0 else 1), 2, dtype=np.int64)
    even = even[even != n // 2]
    budget = k - 2
    if fixed_sb is not None:
        check_sets(n, (-1, 1), fixed_sb)
        budget -= sum(_cost(n, s) for s in fixed_sb)
        if budget < 0:
            raise InputError(f"--fixed-sb {','.join(map(str, fixed_sb))} takes "
                             f"{sum(_cost(n, s) for s in fixed_sb)} ports, more than K - 2 = {k - 2}")
        odd = odd[~np.isin(odd, fixed_sb)]
        even = np.zeros(0, dtype=np.int64)
    if budget < 0:
        raise InputError(f"K = {k}: the ring alone takes 2 ports")
    if budget > len(odd) + 2 * len(even):
        raise InputError(f"K = {k} is more ports than N = {n} routers offer "
                         f"(at most {2 + len(odd) + 2 * len(even) + (k - 2 - budget)} with distinct link lengths)")

    def fill(chosen: list[int], pool: list[int]) -> tuple[int, ...]:
        """Complete `chosen` to exactly `budget` ports from `pool` (in order), then from C."""
        have = set(chosen)
        left = budget - sum(_cost(n, s) for s in chosen)
        for src in (pool, None):
            if src is None:
                src = rng.permutation(np.concatenate([odd, even])).tolist()
            for s in src:
                if left == 0:
                    break
                c = _cost(n, s)
                if s not in have and c <= left:
                    have.add(s)
                    chosen.append(s)
                    left -= c
        if left:  # only even lengths left for one port: trade one even for odd ones
            raise InputError(f"K = {k}: no link sets of that radix for N = {n}")
        return tuple(sorted(chosen))

    def split(g: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        sa = (-1, 1) + tuple(s for s in g if s % 2)
        sb = tuple(sorted(set(fixed_sb or ()) | {s for s in g if s % 2 == 0}))
        return sa, sb

    cache: dict[tuple, tuple[float, int, float]] = {}

    def fitness(g):
        if g not in cache:
            d, a = metrics(n, *split(g))
            cache[g] = (a * d, d, a)
        return cache[g]

    pop = [fill([], rng.permutation(np.concatenate([odd, even])).tolist()) for _ in range(population)]
    history = []
    for gen in range(generations + 1):
        scored = sorted(set(pop), key=lambda g: (fitness(g)[0], g))
        best = scored[0]
        history.append(fitness(best))
        if say:
            ad, d, a = fitness(best)
            sa, sb = split(best)
            say(f"generation {gen}/{generations}: best a*d = {ad:.4f} (d = {d}, a = {a:.4f}) "
                f"[{','.join(map(str, sa))}]({','.join(map(str, sb))}); {len(cache)} evaluated")
        if gen == generations:
            break
        elite = scored[:2]
        nxt = list(elite)
        while len(nxt) < population:
            p1, p2 = (int(rng.choice(len(scored), 2).min()) for _ in range(2))  # tournaments of two
            union = list(set(scored[p1]) | set(scored[p2]))
            union = [union[j] for j in rng.permutation(len(union))]
            child = []
            for s in union:
                if rng.random() < mutation:
                    pool = odd if _cost(n, s) == 1 else even
                    s = int(pool[rng.integers(len(pool))])
                child.append(s)
            # keep a random prefix of the (mutated) union that fits, then top up
            kept, used = [], 0
            for s in dict.fromkeys(child):
                if used + _cost(n, s) <= budget:
                    kept.append(s)
                    used += _cost(n, s)
            nxt.append(fill(kept, []))
        pop = nxt
    sa, sb = split(best)
    ad, d, a = fitness(best)
    return SearchResult(sa, sb, d, a, generations, len(cache), history)
