"""docs/ci.md: the pipelines it gives, in GitHub Actions and GitLab CI YAML, list the same commands,
and those commands, run as written in a repository that keeps a KNS plan, emulate it under the real
ibsim and OpenSM and leave a JUnit file a JUnit reader counts right and the HTML report."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import ROOT, ibtool

pytestmark = pytest.mark.ibsim


def pipelines():
    text = (ROOT / "docs" / "ci.md").read_text()
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
    gh = next(b for b in blocks if "jobs" in b)
    gl = next(b for b in blocks if "fabric" in b and "script" in b["fabric"])
    gh_cmds = [s["run"].strip() for s in gh["jobs"]["verify"]["steps"] if str(s.get("run", "")).startswith("ibtool")]
    return gh, gl, gh_cmds, [c.strip() for c in gl["fabric"]["script"]]


def test_both_dialects_list_the_same_steps_and_keep_the_artifacts():
    gh, gl, gh_cmds, gl_cmds = pipelines()
    assert gh_cmds == gl_cmds and len(gh_cmds) == 2
    assert "--junit verify.xml" in gh_cmds[-1] and "--html verify.html" in gh_cmds[-1]
    upload = next(s for s in gh["jobs"]["verify"]["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["if"] == "always()" and "verify.html" in upload["with"]["path"]
    assert gl["fabric"]["artifacts"]["reports"]["junit"] == "verify.xml"
    assert gl["fabric"]["artifacts"]["when"] == "always"


def test_the_pipeline_commands_run_for_real(tmp_path):
    from junitparser import JUnitXml
    _, _, cmds, _ = pipelines()
    repo = tmp_path / "repo"  # a repository that keeps a fabric's plan
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", repo / "plan", check=0)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    for cmd in cmds:
        p = subprocess.run(["bash", "-e", "-c", cmd], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"{cmd}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    xml = JUnitXml.fromfile(str(repo / "verify.xml"))
    assert xml.failures == 0 and xml.errors == 0 and xml.tests >= 8
    names = [c.name for s in xml for c in s]
    assert {"topology", "routes: deadlock freedom", "routes: hdor tables", "run"} <= set(names)
    page = (repo / "verify.html").read_text()
    assert "ibtool verify: <span class=\"PASS\">PASS</span>" in page and "<svg" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing from the network
