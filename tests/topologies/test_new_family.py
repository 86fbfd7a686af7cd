"""Adding a family is one module and nothing else (docs/design.md, docs/topologies.md "Adding a
family"): a throwaway family module (the page's ring), written to a temporary directory on the
path of the package `ibtool.topologies` (the path Python finds the package's modules on; the
source tree untouched), is listed by `ibtool topo list`, generated, cabled and analysed by the
real CLI in a process of its own."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from support import ROOT

from ibtool.registry import TOPOLOGIES

# the ring of docs/topologies.md, "Adding a family", as the page shows it: its registration is all
# the rest of ibtool learns of it
RING = re.search(r'```python\n(from ibtool.fabric import Fabric\n.*?@topology\("ring".*?)```',
                 (ROOT / "docs" / "topologies.md").read_text(), re.S).group(1)

# `ibtool ARGS` with one more directory on the package's path, before the CLI (whose `topo`
# commands come from the registry) is imported
BOOT = ("import sys, ibtool.topologies as t; t.__path__.append(sys.argv.pop(1)); "
        "from ibtool.cli.main import main; main()")


def ibtool_with(extra, *args, code=0) -> subprocess.CompletedProcess:
    boot = [BOOT, str(extra)] if extra else ["from ibtool.cli.main import main; main()"]
    r = subprocess.run([sys.executable, "-c", *boot, *map(str, args)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == code, r.stdout + r.stderr
    return r


@pytest.mark.slow
def test_a_family_module_on_the_package_path_is_all_it_takes(tmp_path):
    assert "ring" not in TOPOLOGIES and not (ROOT / "ibtool" / "topologies" / "ring.py").exists()
    pkg = tmp_path / "more_families"
    pkg.mkdir()
    (pkg / "ring.py").write_text(RING)
    # without the module the family is unknown; with it, `topo list` shows it with its options
    assert "ring" not in json.loads(ibtool_with(None, "topo", "list", "--json").stdout)
    listed = json.loads(ibtool_with(pkg, "topo", "list", "--json").stdout)
    assert set(listed["ring"]["params"]) == {"N", "radix"}
    assert listed["ring"]["summary"] == "a ring of N switches, an HCA on each"
    # generated: the plan, its range check from the registration (one line, exit 2)
    plan = tmp_path / "plan"
    summary = json.loads(ibtool_with(pkg, "topo", "ring", "--N", 6, "--out", plan, "--json").stdout)
    assert (summary["switches"], summary["hcas"], summary["links"]) == (6, 6, 12)
    assert "routing_engine minhop" in (plan / "opensm.conf").read_text()
    bad = ibtool_with(pkg, "topo", "ring", "--N", 2, "--out", tmp_path / "bad", code=2)
    assert bad.stderr.strip().splitlines()[-1].endswith("--N must be >= 3, got 2") and "Traceback" not in bad.stderr
    # cabled, by the policy it registered
    cab = json.loads(ibtool_with(pkg, "cabling", plan, "--out", tmp_path / "cabling", "--json").stdout)
    assert cab["ok"] and cab["cables"] == 12 and cab["policy"] == "sequential"
    assert len((tmp_path / "cabling" / "cables.csv").read_text().splitlines()) == 1 + 12
    # analysed: a ring of 6 has diameter 3 and is cut in half by 2 links
    rep = json.loads(ibtool_with(pkg, "analyze", plan, "--json").stdout)
    assert rep["params"]["topology"] == "ring" and rep["distance"]["switch"]["diameter"] == 3
    assert rep["bisection"]["links"] == 2 and rep["layout"]["policy"] == "sequential"
