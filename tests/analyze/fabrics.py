"""Small fabrics whose metrics are known in closed form (switch-level designs and a fat tree)."""

from __future__ import annotations

from itertools import combinations

from ibtool.fabric import Fabric


def complete(n: int) -> Fabric:
    f = Fabric(f"K{n}")
    s = [f.add_switch(f"s{i}", n) for i in range(n)]
    for a, b in combinations(s, 2):
        f.add_link(a, b)
    return f


def ring(n: int) -> Fabric:
    f = Fabric(f"C{n}")
    s = [f.add_switch(f"s{i}", 4) for i in range(n)]
    for i in range(n):
        f.add_link(s[i], s[(i + 1) % n])
    return f


def hypercube(d: int) -> Fabric:
    f = Fabric(f"Q{d}")
    s = [f.add_switch(f"s{i}", max(2, d)) for i in range(2 ** d)]
    for i in range(2 ** d):
        for bit in range(d):
            j = i ^ (1 << bit)
            if i < j:
                f.add_link(s[i], s[j], bit + 1, bit + 1)
    return f


def fat_tree(k: int) -> Fabric:
    """2-level fat tree (k-ary 2-tree): k leaves with k HCAs each, k spines, one link from every
    leaf to every spine: k^2 HCAs, full bisection."""
    f = Fabric(f"ft2-k{k}")
    spines = [f.add_switch(f"spine{j}", 2 * k) for j in range(k)]
    for i in range(k):
        leaf = f.add_switch(f"leaf{i}", 2 * k)
        for h in range(k):
            f.add_link(leaf, f.add_hca(f"h{i}-{h}"), h + 1, 1)
        for j, sp in enumerate(spines):
            f.add_link(leaf, sp, k + j + 1, i + 1)
    return f


def single_switch(ports: int) -> Fabric:
    f = Fabric(f"switch{ports}")
    s = f.add_switch("sw", ports)
    for h in range(ports):
        f.add_link(s, f.add_hca(f"h{h}"), h + 1, 1)
    return f


def k_ary_n_tree(k: int, n: int) -> Fabric:
    """Petrini and Vanneschi's k-ary n-tree: n levels of k^(n-1) switches <w, l>, switch <w, l>
    linked to <w', l+1> where w' differs from w at most in digit l; k HCAs per leaf: k^n HCAs."""
    f = Fabric(f"tree-{k}-{n}")
    words = k ** (n - 1)
    sw = [[f.add_switch(f"s{l}-{w}", 2 * k) for w in range(words)] for l in range(n)]
    for w in range(words):
        for h in range(k):
            f.add_link(sw[0][w], f.add_hca(f"h{w}-{h}"))
    for l in range(n - 1):
        for w in range(words):
            digit = (w // k ** l) % k
            for v in range(k):
                f.add_link(sw[l][w], sw[l + 1][w + (v - digit) * k ** l])
    return f
