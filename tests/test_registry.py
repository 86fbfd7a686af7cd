"""ibtool.registry: the one registry mechanism (topology families, layout policies, campaign
runners and benchmarks) finds every module of its package and refuses a name twice."""

import pytest

from ibtool.errors import InputError
from ibtool.registry import TOPOLOGIES, Registry


def test_a_name_registered_twice_is_refused():
    reg = Registry("thing", "ibtool.layout.policies")
    reg.add("a", object())
    with pytest.raises(RuntimeError, match="thing 'a' registered twice"):
        reg.add("a", object())


def test_a_family_registered_twice_is_refused():
    from ibtool.topologies import Param, topology
    TOPOLOGIES.load()  # the real kns first
    with pytest.raises(RuntimeError, match="topology family 'kns' registered twice"):
        topology("kns", params=[Param("k", int, None, "")], summary="", reference="")(lambda k: None)


def test_families_are_found_without_a_list():
    # every module of ibtool/topologies is imported: the families of the papers are all there
    assert {"kns", "fattree", "clos", "sft", "kantc", "equality", "torus", "skywalk", "slimfly",
            "dragonfly-canonical"} <= set(TOPOLOGIES)
    with pytest.raises(InputError, match="unknown topology family 'nope' \\(known: clos, "):
        TOPOLOGIES.get("nope")


def test_an_unknown_layout_policy_is_refused_at_registration():
    from ibtool.topologies import Param, topology
    with pytest.raises(InputError, match="unknown layout policy 'rows'"):
        topology("rows-family", params=[Param("k", int, None, "")], summary="", reference="", layout="rows")
    assert "rows-family" not in TOPOLOGIES
