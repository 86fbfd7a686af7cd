"""Plan vs. discovered, by node name and port: missing, extra and differently-wired links."""

from __future__ import annotations

from dataclasses import dataclass, field

from ibtool.fabric import Fabric


@dataclass
class TopologyDiff:
    missing: list[tuple] = field(default_factory=list)  # in plan, not discovered: ((a, pa), (b, pb))
    extra: list[tuple] = field(default_factory=list)  # discovered, not in plan
    miswired: list[dict] = field(default_factory=list)  # same port, other far end
    missing_nodes: list[str] = field(default_factory=list)
    extra_nodes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.miswired or self.missing_nodes or self.extra_nodes)

    def as_dict(self) -> dict:
        fmt = lambda e: f"{e[0][0]}[{e[0][1]}] <-> {e[1][0]}[{e[1][1]}]"  # noqa: E731
        return {"ok": self.ok, "missing": [fmt(e) for e in self.missing], "extra": [fmt(e) for e in self.extra],
                "miswired": self.miswired, "missing_nodes": self.missing_nodes, "extra_nodes": self.extra_nodes}


def diff_by_name(plan: Fabric, found: Fabric) -> TopologyDiff:
    d = TopologyDiff()
    pn, fn = set(plan.names), set(found.names)
    d.missing_nodes = sorted(pn - fn)
    d.extra_nodes = sorted(fn - pn)
    ps, fs = plan.link_set(), found.link_set()
    only_plan = [tuple(sorted(e)) for e in ps - fs]
    only_found = [tuple(sorted(e)) for e in fs - ps]
    # A port that appears on both sides with different far ends is one miswired cable end.
    found_at = {}
    for e in only_found:
        for i in (0, 1):
            found_at[e[i]] = (e, e[1 - i])
    used_found = set()
    for e in sorted(only_plan):
        hit = None
        for i in (0, 1):
            if e[i] in found_at:
                hit = (e[i], e[1 - i], found_at[e[i]])
                break
        if hit:
            end, want, (fe, got) = hit
            d.miswired.append({"port": f"{end[0]}[{end[1]}]", "expected": f"{want[0]}[{want[1]}]",
                               "found": f"{got[0]}[{got[1]}]"})
            used_found.add(fe)
        else:
            d.missing.append(e)
    d.extra = sorted(e for e in only_found if e not in used_found)
    d.missing.sort()
    return d
