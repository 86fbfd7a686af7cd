"""A plan directory's file names, the one place they are spelled (tests/test_plandir.py holds
every module of ibtool to it).

The plan itself, `ibtool.plan.Plan` (where each file is, reading and writing them, the engines
the plan names), sits on the plan's floor above routing/: a KNS plan carries hdor's description.
The rooms below it write or name the same files and take the names from here: a run directory
holds the opensm.conf and hdor.conf it ran with (rundir.py), a family names its engine's files
(topologies/), cabling keeps the cable IDs and writes the cable list (cabling/). docs/topologies.md
lists the files for users.
"""

NET = "topology.net"  # the plan: every device and cable, in ibnetdiscover's format (ibsim reads it)
FABRIC_JSON = "fabric.json"  # what `ibtool topo` built: the family, its arguments, counts
NODE_NAME_MAP = "node-name-map"  # GUID -> name, for infiniband-diags' --node-name-map
OPENSM_CONF = "opensm.conf"  # the family's routing_engine and options (files named relative to it)
HDOR_CONF = "hdor.conf"  # a KNS's description; hdor reads it beside the opensm.conf it runs with
LAYOUT_JSON = "layout.json"  # devices in cabinets and cable runs (families placed on a floor)
CABLE_IDS = "cable-ids.json"  # the permanent cable IDs, kept from one `ibtool cabling` to the next
CABLING = "cabling"  # the default place of the cabling package, PLAN/cabling/
CABLES_CSV = "cables.csv"  # the package's cable list, which `verify` and `cabling import` read back
# the files a family's engine reads (EngineFile), named in opensm.conf relative to the plan
ROOT_GUIDS = "root-guids"  # root_guid_file: updn's and ftree's roots
CN_GUIDS = "cn-guids"  # cn_guid_file: ftree's compute nodes
TORUS_CONF = "torus-2QoS.conf"  # torus_config: torus-2QoS's description of the torus

FILES = (NET, FABRIC_JSON, NODE_NAME_MAP, OPENSM_CONF, HDOR_CONF, LAYOUT_JSON, CABLE_IDS, CABLING, CABLES_CSV,
         ROOT_GUIDS, CN_GUIDS, TORUS_CONF)
