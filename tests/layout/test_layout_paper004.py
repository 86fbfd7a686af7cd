"""Paper 004 (Skywalk), section III / Fig. 5: the four deterministic total cable lengths of its
2,048-switch, 256-cabinet comparison topologies, from the paper 004 cable model and the
cabinet-aware layout (8 switches per cabinet, 16 x 16 grid).

The graphs are built here from the paper's definitions (section III-A) until the topology
families exist (issue "paper 004" moves them onto the family builders).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ibtool.fabric import Fabric
from ibtool.layout import place


def torus(dims):
    """Torus(8, 256, 6) as 16 x 16 x 8, canonical numbering (last coordinate fastest): placed
    sequentially, each cabinet holds one ring of the first dimension (size z = 8)."""
    f = Fabric("torus")
    coords = list(itertools.product(*[range(d) for d in dims]))
    idx = {c: f.add_switch(f"T{list(c)}", 2 * len(dims)) for c in coords}
    for c in coords:
        for a, d in enumerate(dims):
            nb = list(c)
            nb[a] = (c[a] + 1) % d
            f.add_link(idx[c], idx[tuple(nb)])
    return f


def hypercube(dim):
    f = Fabric("hypercube")
    s = [f.add_switch(f"Q{i}", dim) for i in range(2 ** dim)]
    for i in range(2 ** dim):
        for b in range(dim):
            if i < i ^ (1 << b):
                f.add_link(s[i], s[i ^ (1 << b)], b + 1, b + 1)
    return f


def hyperx(rows, cols, z):
    """HyperX(8, 256, 37): switch k of the cabinet at (row, col) is fully connected within its
    cabinet, along its cabinet row and along its cabinet column: degree z-1 + cols-1 + rows-1."""
    f = Fabric("hyperx")
    s = {(r, c, k): f.add_switch(f"X[{r},{c},{k}]", 40, labels={"cabinet": r * cols + c})
         for r in range(rows) for c in range(cols) for k in range(z)}
    for (r, c, k), a in s.items():
        for k2 in range(k + 1, z):
            f.add_link(a, s[r, c, k2])
        for c2 in range(c + 1, cols):
            f.add_link(a, s[r, c2, k])
        for r2 in range(r + 1, rows):
            f.add_link(a, s[r2, c, k])
    return f


def dragonfly(groups, z):
    """Fully connected Dragonfly(8, 256, 39): a group per cabinet, all cabinets pairwise linked,
    endpoint switches picked cyclically in each cabinet (section II-C)."""
    f = Fabric("dragonfly")
    s = [[f.add_switch(f"D[{g},{k}]", 64, labels={"cabinet": g}) for k in range(z)] for g in range(groups)]
    nxt = [0] * groups
    for g in range(groups):
        for a, b in itertools.combinations(range(z), 2):
            f.add_link(s[g][a], s[g][b])
    for g, h in itertools.combinations(range(groups), 2):
        f.add_link(s[g][nxt[g] % z], s[h][nxt[h] % z])
        nxt[g] += 1
        nxt[h] += 1
    return f


@pytest.mark.parametrize("build, degree, paper_km", [
    (lambda: torus((16, 16, 8)), 6, 31),
    (lambda: hypercube(11), 11, 80),
    (lambda: hyperx(16, 16, 8), 37, 372),
    (lambda: dragonfly(256, 8), 39, 615),
], ids=["torus", "hypercube", "hyperx", "dragonfly"])
def test_paper_004_total_cable_lengths(build, degree, paper_km):
    # paper 004, section III-B: "Torus has degree 6 and a 31km total cable length ... Dragonfly
    # has degree 39 and a 615km ... HyperX has degree 37 and a 372km ... Hypercube ... 80km"
    f = build()
    lay = place(f, "cabinet-aware", site={"switches_per_cabinet": 8})
    assert f.num_nodes == 2048 and lay.num_cabinets == 256 and lay.grid == (16, 16)
    assert np.bincount(np.concatenate([f.link_a, f.link_b])).max() == degree
    assert lay.summary()["total_length_m"] / 1000 == pytest.approx(paper_km, abs=0.5)
