"""Physical layout: cabinets, U slots, the machine-room grid, cable lengths and media.

A Layout is placed ON a Fabric and never changes its graph. How a family (or the CLI) uses it:

    from ibtool.layout import place, Layout

    layout = place(fabric)                                  # the family's default policy
    layout = place(fabric, policy="cabinet-aware",          # paper 004: z switches per cabinet
                   site={"switches_per_cabinet": 8})        # ... or site="site.yaml" / a Site
    layout.write(plan_dir / "layout.json")                  # stored beside the plan
    layout = Layout.read(plan_dir / "layout.json", fabric)  # read back onto the same fabric
    layout.cable_length(link)     # metres by the site's cable model (routed / paper002 / paper004)
    layout.cable(link)            # {"length_m", "purchasable_m", "medium": "copper"|"fiber"}
    layout.position(node)         # {"cabinet", "row", "col", "u", "side"}
    layout.summary()              # total length, per medium, longest, per purchasable length
    cable_order(layout, prices)   # per link: length, reach, purchasable length, medium, price (the one
                                  # answer `ibtool cabling` and `ibtool analyze` both give)

Policies (ibtool.layout.policies.POLICIES, a registry): "sequential" (paper 002 section 4),
"cabinet-aware" (paper 004 section III), "switch-rack" (paper 000, CELLIA), "tree-stages" (trees).
`place(fabric)` uses the policy the fabric's family names in its registration
(@topology(..., layout="tree-stages")), the one place that fact is kept. A new policy:

    from ibtool.layout.policies import policy, Placement
    @policy("rows", site=Site(...defaults...), summary="...")
    def rows(fabric, site) -> Placement: ...

or a family simply gives each switch `labels["cabinet"] = i` so "cabinet-aware" keeps its order.
Site keys and their defaults: ibtool.layout.site. Cable models: ibtool.layout.cables.
"""

from ibtool.layout.cables import (
           cable_order,
           length_paper002,
           length_paper004,
           length_routed,
           medium,
           purchasable,
           speed_of,
)
from ibtool.layout.model import FLOOR, Layout
from ibtool.layout.policies import POLICIES, Placement, default_policy, place, policy
from ibtool.layout.site import COPPER_LIMIT, PURCHASABLE, Site, make_site, read_site

__all__ = [
           "COPPER_LIMIT",
           "FLOOR",
           "POLICIES",
           "PURCHASABLE",
           "Layout",
           "Placement",
           "Site",
           "cable_order",
           "default_policy",
           "length_paper002",
           "length_paper004",
           "length_routed",
           "make_site",
           "medium",
           "place",
           "policy",
           "purchasable",
           "read_site",
           "speed_of",
]
