"""The in-tree variant: OpenSM 3.3.23 from Debian's source package, patched with
opensm_plugin/intree/*.patch and built with the same engine files (`make -C opensm_plugin intree`,
about a minute or three on 2 cores), routes a KNS with `-R hdor` and no plugin at all."""

from __future__ import annotations

import subprocess

import pytest

from hdor_digests import check as check_digests, current_test, of_run
from hdor_walk import ENGINE_FILES, PLUGIN, ROOT, check_routes, run_opensm
from ibtool.formats import ibnetdiscover
from ibtool.topologies.kns import kns

pytestmark = [pytest.mark.slow, pytest.mark.ibsim]

INTREE = ROOT / "build" / "opensm-intree"


@pytest.fixture(scope="module")
def intree_opensm():
    p = subprocess.run(["make", "-C", str(PLUGIN), "intree"], capture_output=True, text=True, timeout=3600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    exe = INTREE / "opensm"
    assert exe.exists()
    return exe


def test_intree_build_has_hdor_builtin(intree_opensm):
    src = next((INTREE / "src").glob("opensm-*"))
    for f in ENGINE_FILES:  # the plugin's engine files, as they are
        assert (src / "opensm" / f.name).read_bytes() == f.read_bytes(), f.name
    assert '"hdor"' in (src / "opensm" / "osm_opensm.c").read_text()
    # the binary is OpenSM 3.3.23 and knows hdor by name (the plugin is not involved)
    out = subprocess.run(["strings", str(intree_opensm.resolve())], capture_output=True, text=True).stdout
    assert "osm_ucast_hdor.c" in out


def test_intree_routes_kns_with_R_hdor(intree_opensm, tmp_path):
    f = kns(k=4, n=2, hcas_per_router=2, multiplicity=2, radix=12)
    net = tmp_path / "kns.net"
    ibnetdiscover.write(f, net)
    run = tmp_path / "run"
    # no event_plugin_name, no LD_LIBRARY_PATH: hdor must be the built-in one
    rc, log, _ = run_opensm(net, run, str(intree_opensm), "# in-tree\n", args=["-R", "hdor"],
                            env={"LD_LIBRARY_PATH": ""})
    assert rc == 0, log[-3000:]
    assert "hdor tables configured on all switches" in log
    assert "hdor: routed k=4 n=2 s=1: 24 switches, 56 LIDs" in log
    assert "hdor: declined" not in log
    assert "Loading plugin" not in log and "registered external routing engine" not in log
    res = check_routes(run)
    assert res["hca_paths"] == 32 * 31
    check_digests(f"c/{current_test()}", of_run(run / "osm"))  # the tables before issue 28


def test_intree_declines_fat_tree(intree_opensm, tmp_path):
    from hdor_walk import fat_tree

    net = tmp_path / "ft.net"
    ibnetdiscover.write(fat_tree(), net)
    rc, log, _ = run_opensm(net, tmp_path / "run", str(intree_opensm), "", args=["-R", "hdor,minhop"],
                            discover=False)
    assert rc == 0
    assert "hdor: declined (HD10): 4 routers, but k^n = 4^2" in log
    assert "minhop tables configured on all switches" in log
