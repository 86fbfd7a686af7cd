"""Every command that takes a file, as a user runs it, on mutated real files: exit 0, 1 or 2,
never a traceback, and an exit-2 error that is one line naming the file. Each run is under the
memory bound (limits.py) and a time bound. 367 runs in all in `make test-full`, each a real
process; 40 % of them in `make test` (limits.py), where the compute-only commands run in the test
process through support's runner (the same command objects, without Python's start and imports
per run; tests/test_cli.py checks that runner against real processes) and `sim run` in a process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from limits import examples, limit_child, time_bound
from mutate import FIXTURES, ROOT, mutated, mutated_json
from support import PROCESS, in_process, invoke_in_process

settings.load_profile("fuzz")

R = FIXTURES / "real"
HDOR, QOS, RUN = R / "ibsim-kns-k3-n2-hdor", R / "ibsim-kns-k3-n2-minhop-qos", R / "ibsim-kns-k3-n2-minhop-run"
CUT = R / "ibsim-kns-k3-n1-m2-cutoff"  # a fault run whose step 1 cut a router off with its HCA
PLAN = R / "plan-kns-k3-n2.net"
B = FIXTURES / "bench"


def ibtool(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    args = [str(a) for a in args]
    if not PROCESS and in_process(args):
        with time_bound(int(timeout)):  # the memory bound is the module's (bounded_memory)
            return invoke_in_process(args, {"OPENBLAS_NUM_THREADS": "1"})
    return subprocess.run([sys.executable, "-m", "ibtool.cli.main", *map(str, args)], capture_output=True, text=True,
                          check=False, cwd=ROOT, timeout=timeout, preexec_fn=limit_child,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


# target -> (the file's name, its seeds, JSON?, argv given the mutated file and a scratch dir, examples)
TARGETS = {
    "verify routes --fabric ibnetdiscover.out": (
        "ibnetdiscover.out", [HDOR / "ibnetdiscover.out"], False,
        lambda f, d: ["verify", "routes", "--fabric", f, "--lfts", HDOR / "dump_fts.out", "--permutations", 2], 30),
    "verify routes --fabric opensm-subnet.lst": (
        "opensm-subnet.lst", [HDOR / "opensm-subnet.lst"], False,
        lambda f, d: ["verify", "routes", "--fabric", f, "--lfts", HDOR / "opensm-lfts.dump", "--no-balance"], 25),
    "verify routes --lfts dump_fts.out": (
        "dump_fts.out", [HDOR / "dump_fts.out"], False,
        lambda f, d: ["verify", "routes", "--fabric", HDOR / "ibnetdiscover.out", "--lfts", f, "--expect", "hdor",
                      "--no-balance"], 30),
    "verify routes --lfts opensm.fdbs": (
        "opensm.fdbs", [RUN / "osm" / "opensm.fdbs"], False,
        lambda f, d: ["verify", "routes", "--fabric", RUN / "ibnetdiscover.out", "--lfts", f, "--no-balance"], 25),
    "verify routes --sl2vl": (
        "opensm-sl2vl.dump", [QOS / "opensm-sl2vl.dump"], False,
        lambda f, d: ["verify", "routes", "--fabric", QOS / "ibnetdiscover.out", "--lfts", QOS / "dump_fts.out",
                      "--sl2vl", f, "--no-balance"], 25),
    "verify topology --plan": (
        "topology.net", [PLAN], False,
        lambda f, d: ["verify", "topology", "--plan", f, "--discovered", HDOR / "ibnetdiscover.out"], 25),
    "verify topology --node-name-map": (
        "node-name-map", [R / "plan-kns-k3-n2.node-name-map"], False,
        lambda f, d: ["verify", "topology", "--plan", PLAN, "--discovered", HDOR / "ibnetdiscover.out",
                      "--node-name-map", f], 20),
    "verify coords --dump": (
        "opensm-hdor.dump", [HDOR / "opensm-hdor.dump"], False,
        lambda f, d: ["verify", "coords", "--fabric", HDOR / "ibnetdiscover.out", "--dump", f, "--plan", PLAN], 25),
    "verify all (summary.json)": (
        "summary.json", [RUN / "summary.json"], True, lambda f, d: ["verify", "all", d, "--permutations", 2], 30),
    # a fault step's summary mutated, the step a router cut off ("requested": -1 was a TypeError,
    # the cut-off router a ValueError in hdor_faults: issue 36)
    "verify all (fault step summary.json)": (
        "step-1/summary.json", [CUT / "run" / "step-1" / "summary.json"], True,
        lambda f, d: ["verify", "all", d, "--plan", CUT / "p1" / "topology.net", "--permutations", 2], 20),
    "route hdor --baseline (a router cut off)": (
        "ibnetdiscover.out", [CUT / "run" / "step-1" / "ibnetdiscover.out"], False,
        lambda f, d: ["route", "hdor", "--fabric", f, "--baseline", CUT / "run" / "step-0" / "ibnetdiscover.out",
                      "--out", d / "hdor.lft"], 20),
    "route hdor --fabric": (
        "ibnetdiscover.out", [HDOR / "ibnetdiscover.out"], False,
        lambda f, d: ["route", "hdor", "--fabric", f, "--out", d / "hdor.lft", "--dump", d / "hdor.dump"], 25),
    # what kantc and Equality routing do with a fabric that reads well but is not theirs (issue 24)
    "route kantc --fabric": (
        "ibnetdiscover.out", [HDOR / "ibnetdiscover.out"], False,
        lambda f, d: ["route", "kantc", "--fabric", f, "--out", d / "kantc.lft"], 6),
    "route equality --fabric": (
        "ibnetdiscover.out", [HDOR / "ibnetdiscover.out"], False,
        lambda f, d: ["route", "equality", "--fabric", f, "--spec", "N14K6[-1,1,3,9](4)", "--out", d / "eq.lft"],
        6),
    "bench parse hpcc": ("hpccoutf.txt", [B / "hpcc" / "np4_default_unbound" / "hpccoutf.txt"], False,
                         lambda f, d: ["bench", "parse", "hpcc", f], 15),
    "bench parse netgauge": ("stdout.txt", [B / "netgauge" / "ebb_sizes_1B-1MiB_np4" / "stdout.txt"], False,
                             lambda f, d: ["bench", "parse", "netgauge", f], 15),
    "sim run": ("topology.net", [PLAN], False,
                lambda f, d: ["sim", "run", f, "--out", d / "run", "--engine", "minhop", "--timeout", 30], 25),
}


@pytest.mark.parametrize("target", list(TARGETS))
def test_command_on_mutated_file(target, tmp_path_factory, bounded_memory):
    name, seeds, is_json, argv, n = TARGETS[target]
    base = tmp_path_factory.mktemp("cli")
    count = [0]

    @settings(max_examples=examples(n))
    @given(case=(mutated_json if is_json else mutated)(seeds))
    def run(case):
        count[0] += 1
        d = base / str(count[0])
        if target.startswith("verify all"):  # the whole real run directory, its summary.json mutated
            shutil.copytree(CUT / "run" if "fault step" in target else RUN, d)
        else:
            d.mkdir()
        f = d / name
        f.write_bytes(case[2])
        args = argv(f, d)
        p = ibtool(*args)
        assert p.returncode in (0, 1, 2, 5), f"exit {p.returncode}\n{p.stderr[-2000:]}"  # 5: NOT CHECKED
        assert "Traceback" not in p.stderr, p.stderr[-3000:]
        errors = [ln for ln in p.stderr.splitlines() if ln.startswith("ibtool: error:")]
        if p.returncode == 2:
            assert len(errors) == 1, p.stderr[-2000:]
            # the mutated file, or another input of the command (tables that fit no switch of a cut fabric)
            files = [str(f), str(d)] + [str(a) for a in args if isinstance(a, Path)]
            assert any(x in errors[0] for x in files), f"exit 2 without naming the file: {errors[0]}"
        shutil.rmtree(d, ignore_errors=True)

    run()
