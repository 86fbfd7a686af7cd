"""The fabric as the sparse graphs the metrics walk: switches joined by links (with multiplicity),
and each HCA on the switch it hangs from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ibtool.fabric import CA, SWITCH, Fabric, attached_switch, switch_graph


@dataclass
class Graph:
    fabric: Fabric
    switches: np.ndarray  # fabric node index of each switch vertex
    vertex: np.ndarray  # fabric node -> switch vertex (-1 for an HCA)
    adj: sp.csr_matrix  # switch x switch, value = number of parallel links
    hca_switch: np.ndarray  # per HCA (fabric order of CAs): switch vertex it hangs from, -1 if none
    hcas_on: np.ndarray  # per switch vertex: number of HCAs hanging from it
    sw_links: np.ndarray  # fabric link indices of switch-switch links
    kinds: dict  # link counts by kind

    @property
    def n(self) -> int:
        return len(self.switches)

    @property
    def endpoints(self) -> np.ndarray:
        """Switch vertices whose pairs the distance, diversity and latency metrics look at: those
        hosting HCAs, or every switch of a fabric without HCAs (a switch-level design)."""
        e = np.flatnonzero(self.hcas_on)
        return e if len(e) else np.arange(self.n)


def build(fabric: Fabric) -> Graph:
    t = np.asarray(fabric.types, dtype=np.int64)
    sg = switch_graph(fabric)
    switches, vertex = sg.nodes, sg.vertex
    a = np.asarray(fabric.link_a, dtype=np.int64)
    b = np.asarray(fabric.link_b, dtype=np.int64)
    ta, tb = t[a], t[b]
    ss = (ta == SWITCH) & (tb == SWITCH)
    sw_links = np.flatnonzero(ss)
    n = len(switches)
    adj = sp.csr_matrix((np.ones(len(sg.indices), dtype=np.int32), sg.indices, sg.indptr), shape=(n, n))
    adj.sum_duplicates()  # parallel links summed: multiplicity
    # each HCA hangs from the switch of its first switch link (multi-homed HCAs: the first)
    cas = np.flatnonzero(t == CA)
    att = attached_switch(fabric)[cas]
    hca_switch = np.where(att >= 0, vertex[att], -1)
    hosted = hca_switch[hca_switch >= 0]
    hcas_on = np.bincount(hosted, minlength=n).astype(np.int64)
    kinds = {"switch-switch": int(ss.sum()),
             "switch-hca": int((((ta == SWITCH) & (tb == CA)) | ((ta == CA) & (tb == SWITCH))).sum()),
             "hca-hca": int(((ta == CA) & (tb == CA)).sum())}
    return Graph(fabric, switches, vertex, adj, hca_switch, hcas_on, sw_links, kinds)
