"""Slim Fly (Besta & Hoefler, SC14): the McKay-Miller-Siran (MMS) graph of a prime power q, one of
the comparison networks of paper 002 (its Fig. 4 point: N = 1058 routers, p = 18).

Field and generator sets. GF(q), q = p^m, its elements written as integers 0..q-1 (the base-p
digits are the coefficients of a polynomial over GF(p), reduced modulo the first monic irreducible
polynomial of degree m in lexicographic order; for a prime q, arithmetic mod q). xi is the
smallest primitive element. With q = 4w + delta, delta in {-1, 0, 1}:
  delta =  1: X = {1, xi^2, ..., xi^(q-3)},  X' = {xi, xi^3, ..., xi^(q-2)}
  delta = -1: X = {1, xi^2, ..., xi^(2w-2), xi^(2w-1), xi^(2w+1), ..., xi^(4w-3)},
              X' = {xi, xi^3, ..., xi^(2w-1), xi^(2w), xi^(2w+2), ..., xi^(4w-2)}
  delta =  0: X = {1, xi^2, ..., xi^(q-2)},  X' = {xi, xi^3, ..., xi^(q-1)}
(Besta & Hoefler section 3.1; for q = 5: X = {1, 4}, X' = {2, 3}, as CODES' Slim Fly model lists.)

Routers (s, x, y), s in {0, 1}, x and y in GF(q), named R[s,x,y]:
  (0, x, y) -- (0, x, y')  iff  y - y' in X
  (1, m, c) -- (1, m, c')  iff  c - c' in X'
  (0, x, y) -- (1, m, c)   iff  y = m x + c
2q^2 routers of network degree k' = (3q - delta)/2 ((q - delta)/2 inside the group, q across),
q^2 k' links, diameter 2. Endpoints per router p (default ceil(k'/2), Besta & Hoefler's choice
for full global bandwidth), HCAs H[s,x,y] (-j when p > 1) on ports 1..p.

Ports: 1..p the HCAs; p+1 .. p+(q-delta)/2 the group links, in the order of the sorted generator
set (port p+1+i reaches y + X[i], resp. c + X'[i]); then the q links across, p+(q-delta)/2+1+j
reaching m = j (from (0, x, y): (1, j, y - j x)), resp. x = j (from (1, m, c): (0, j, m j + c)).

Placement: cabinet 2x + s holds the group (s, x) (its q routers), so Besta & Hoefler's racks,
which pair the groups (0, x) and (1, x), stand side by side; slot y. (A rack of 2q 1U routers
does not fit 42U from q = 21 on, hence a cabinet per group.)
"""

from __future__ import annotations

import math

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.topologies import Param, qos_on, radix_param, topology
from ibtool.topologies import figure as row
from ibtool.topologies.direct import MAX_SWITCHES, floor_grid, need_degree, new_fabric

MAX_Q = math.isqrt(MAX_SWITCHES // 2)  # 2 q^2 routers


def prime_power(q: int) -> tuple[int, int] | None:
    """(p, m) with q = p^m, p prime; None when q is not a prime power."""
    if q < 2:
        return None
    p = next(d for d in range(2, q + 1) if q % d == 0)
    m, r = 0, q
    while r % p == 0:
        r //= p
        m += 1
    return (p, m) if r == 1 else None


class GF:
    """GF(p^m) by tables: element e <-> polynomial sum_i digit_i(e) x^i over GF(p)."""

    def __init__(self, q: int):
        pm = prime_power(q)
        if pm is None:
            raise InputError(f"--q {q}: not a prime power; an MMS graph needs a field GF(q)")
        self.q, (self.p, self.m) = q, pm
        p, m = self.p, self.m
        digits = np.array([[(e // p ** i) % p for i in range(m)] for e in range(q)], dtype=np.int64)
        self.add = _pack((digits[:, None, :] + digits[None, :, :]) % p, p)
        self.neg = _pack((-digits) % p, p)
        if m == 1:
            e = np.arange(q)
            self.mul = np.outer(e, e) % q
        else:
            self.mul = self._poly_mul(digits)
        self.sub = self.add[:, self.neg]  # sub[a, b] = a - b
        self.xi = self._primitive()

    def _poly_mul(self, digits: np.ndarray) -> np.ndarray:
        """Products modulo the first monic irreducible polynomial of degree m (lexicographic in its
        lower coefficients): the first whose multiplication table has no zero divisors."""
        p, m, q = self.p, self.m, self.q
        prod = np.zeros((q, q, 2 * m - 1), dtype=np.int64)  # the unreduced products
        for i in range(m):
            for j in range(m):
                prod[:, :, i + j] += digits[:, None, i] * digits[None, :, j]
        for low in range(p ** m):
            c = [(low // p ** i) % p for i in range(m)]  # x^m = -(c_{m-1} x^{m-1} + ... + c_0)
            r = prod % p
            for d in range(2 * m - 2, m - 1, -1):
                t = r[:, :, d].copy()
                r[:, :, d] = 0
                for i in range(m):
                    r[:, :, d - m + i] = (r[:, :, d - m + i] - t * c[i]) % p
            mul = _pack(r[:, :, :m], p)
            if not (mul[1:, 1:] == 0).any():  # a field: no zero divisors
                return mul
        raise AssertionError(f"no irreducible polynomial of degree {m} over GF({p})")  # cannot happen

    def _primitive(self) -> int:
        for g in range(2, self.q) if self.q > 2 else [1]:
            x, seen = 1, set()
            for _ in range(self.q - 1):
                x = int(self.mul[x, g])
                seen.add(x)
            if len(seen) == self.q - 1:
                return g
        raise AssertionError("GF(q) has a primitive element")  # cannot happen

    def power(self, e: int) -> int:
        x = 1
        for _ in range(e):
            x = int(self.mul[x, self.xi])
        return x


def _pack(d: np.ndarray, p: int) -> np.ndarray:
    return (d * (p ** np.arange(d.shape[-1]))).sum(axis=-1)


def delta_of(q: int) -> int:
    """delta of q = 4w + delta (q = 4w + 2 only for q = 2, which has no MMS graph)."""
    return {1: 1, 3: -1, 0: 0, 2: 0}[q % 4]


def generators(f: GF) -> tuple[list[int], list[int], int]:
    """(X, X', delta) of Besta & Hoefler section 3.1 (the module docstring)."""
    q = f.q
    delta = delta_of(q)
    if q % 4 == 2:
        raise InputError(f"--q {q}: q = 4w + 2 has no MMS graph (q must be 4w + delta, delta in -1, 0, 1)")
    w = (q - delta) // 4
    if delta == 1:
        ex, exp = range(0, q - 2, 2), range(1, q - 1, 2)
    elif delta == -1:
        ex = [*range(0, 2 * w - 1, 2), *range(2 * w - 1, 4 * w - 2, 2)]
        exp = [*range(1, 2 * w, 2), *range(2 * w, 4 * w - 1, 2)]
    else:
        ex, exp = range(0, q - 1, 2), range(1, q, 2)
    return sorted(f.power(e) for e in ex), sorted(f.power(e) for e in exp), delta


def closed_forms(q: int, p: int | None = None) -> dict:
    """Besta & Hoefler's closed forms for MMS(q)."""
    d = delta_of(q)
    k = (3 * q - d) // 2
    p = -(-k // 2) if p is None else p
    return {"routers": 2 * q * q, "network_radix": k, "endpoints_per_router": p, "endpoints": 2 * q * q * p,
            "router_links": q * q * k, "diameter": 2, "delta": d, "radix": k + p,
            "moore_bound_d2": k * k + 1}


def figures(params: dict) -> dict:
    """Besta & Hoefler's closed forms, and paper 002's Fig. 4 point for the SF it names."""
    q = int(params["q"])
    p = int(params.get("hcas_per_router") or 0) or None
    if not 3 <= q <= 10 ** 6 or (p is not None and p < 0):
        raise InputError(f"slimfly(q={q}): the closed forms are computed for 3 <= q <= 1,000,000 and p >= 0")
    cf = closed_forms(q, p)
    src = "Besta & Hoefler SC14"
    k, n, p = cf["network_radix"], cf["routers"], cf["endpoints_per_router"]
    out = [row("q a prime power (an MMS graph exists)", "yes" if prime_power(q) else "no", "q = p^m", src),
           row("routers N", n, "2 q^2", src), row("network radix K", k, "(3q - delta)/2, delta = "
                                                 f"{cf['delta']}", src),
           row("endpoints per router p", p, "ceil(K/2) unless given", src),
           row("endpoints", cf["endpoints"], "N p", src), row("router links", cf["router_links"], "N K / 2", src),
           row("diameter", 2, "2 (MMS graphs)", src),
           row("Moore bound ratio (diameter 2)", n / cf["moore_bound_d2"], "N / (K^2 + 1)", src),
           row("total network bandwidth Phi / phi (cables)", n * (k / 2 + p), "N (K/2 + p)", "paper 002 section 4.3")]
    if q == 23 and p == 18:
        out += [row("paper 002 Fig. 4: b_r = B / Phi", 60736 / 370300,
                    "B = 60,736 Gb/s (from Besta & Hoefler's Fig. 5c), Phi = N phi (K/2 + p) = 370,300 Gb/s with "
                    "phi = 10 Gb/s and K = 34 as the paper writes", "paper 002 Fig. 4 caption"),
                row("the same B over this plan's Phi", 60736 / (10 * n * (k / 2 + p)),
                    f"Phi = {10 * n * (k / 2 + p):,.0f} Gb/s: MMS(23) has K = 35, not 34", "paper 002 with K = 35")]
    return {"figures": out}


@topology(
    "slimfly",
    summary="Slim Fly: the MMS graph of a prime power q (2q^2 routers, degree (3q-delta)/2, diameter 2)",
    reference="Besta & Hoefler, SC14 (Slim Fly); paper 002 sections 1, 5.4 (Fig. 4's SF point: q = 23)",
    example="ibtool topo slimfly --q 5 --out sf5   # 50 routers of degree 7 (the Hoffman-Singleton graph), "
            "4 HCAs each\n  ibtool topo slimfly --q 23 --out sf23   # paper 002's SF: 1,058 routers, 18 HCAs each",
    engine="dfsssp", layout="cabinet-aware", engine_files=qos_on,
    figures=figures,
    params=[
        Param("q", int, None, "a prime power (q = 4w + delta, delta in -1, 0, 1): 2q^2 routers"),
        Param("hcas_per_router", int, 0, "endpoints per router p (0: ceil(k'/2), Besta & Hoefler's choice)", low=0),
        radix_param(64, "ports per router switch; k' + p must fit"),
    ],
)
def slimfly(q: int, hcas_per_router: int = 0, radix: int = 64) -> Fabric:
    if q < 3 or q > MAX_Q:
        raise InputError(f"--q {q}: ibtool builds Slim Fly for 3 <= q <= {MAX_Q} (2q^2 <= {MAX_SWITCHES} routers)")
    f_ = GF(q)
    X, Xp, delta = generators(f_)
    cf = closed_forms(q, hcas_per_router or None)
    k, p = cf["network_radix"], cf["endpoints_per_router"]
    need_degree("slimfly router R[0,0,0]", k, p, radix)
    names, cab, slot = [], [], []
    for s in (0, 1):
        for x in range(q):
            for y in range(q):
                names.append(f"R[{s},{x},{y}]")
                cab.append(2 * x + s)
                slot.append(y)
    idx = lambda s, x, y: (s * q + x) * q + y  # noqa: E731
    params = {"q": q, "delta": delta, "X": X, "X_prime": Xp, "xi": f_.xi,
              "network_radix": k, "hcas_per_router": p, "radix": radix, "cabinets": 2 * q,
              "grid": list(floor_grid(2 * q))}
    f = new_fabric(f"slimfly-q{q}", params, names, cab, slot, radix, p)
    local = len(X)
    for s, gen in ((0, X), (1, Xp)):
        for x in range(q):
            for y in range(q):
                for i, g in enumerate(gen):
                    y2 = int(f_.add[y, g])
                    if y < y2:  # each link once; its far end reaches back by -g
                        j = gen.index(int(f_.neg[g]))
                        f.add_link(idx(s, x, y), idx(s, x, y2), p + 1 + i, p + 1 + j)
    for x in range(q):
        for y in range(q):
            for m in range(q):
                c = int(f_.sub[y, f_.mul[m, x]])  # y = m x + c
                f.add_link(idx(0, x, y), idx(1, m, c), p + local + 1 + m, p + local + 1 + x)
    return f
