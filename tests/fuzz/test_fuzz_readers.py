"""Every reader, in-process, on mutated real files: it returns, or raises one InputError whose
one-line message names the file; never another exception, never more than the memory or time
bound (limits.py). Over 10,000 examples in all, the same ones every CI run.

The mutations start from real outputs in fixtures/ (ibsim 0.10 + OpenSM 3.3.23 dumps, the real
benchmark outputs of fixtures/bench); see mutate.py for the edits.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from limits import examples, time_bound
from mutate import FIXTURES, mutated, mutated_json

from ibtool import rundir
from ibtool.bench.benchmarks.base import RunFiles
from ibtool.bench.registry import BENCHMARKS
from ibtool.verify.run import read_fabric
from ibtool.errors import InputError
from ibtool.formats import (
    hdor_dump,
    ibnetdiscover,
    lft,
    node_name_map,
    opensm_subnet_lst,
    sl2vl,
)
from ibtool.sim import faults, opensm

settings.load_profile("fuzz")

R = FIXTURES / "real"
HDOR, QOS, RUN = R / "ibsim-kns-k3-n2-hdor", R / "ibsim-kns-k3-n2-minhop-qos", R / "ibsim-kns-k3-n2-minhop-run"
B = FIXTURES / "bench"
SEEDS = FIXTURES / "seeds"  # files users write: an OpenSM conf, a fault scenario
PLAN = ibnetdiscover.read(R / "plan-kns-k3-n2.net")

# name the file gets (its messages must name it) -> reader, seeds, examples
READERS = {
    "topology.net": (ibnetdiscover.read, [R / "plan-kns-k3-n2.net"], 900),
    "ibnetdiscover.out": (ibnetdiscover.read, [HDOR / "ibnetdiscover.out", QOS / "ibnetdiscover.out",
                                               FIXTURES / "ibnetdiscover" / "edr-2switch.out"], 900),
    "dump_fts.out": (lft.read, [HDOR / "dump_fts.out", RUN / "dump_fts.out"], 800),
    "opensm-lfts.dump": (lft.read, [HDOR / "opensm-lfts.dump", RUN / "osm" / "opensm-lfts.dump"], 800),
    "opensm.fdbs": (lft.read, [RUN / "osm" / "opensm.fdbs"], 800),
    "opensm-subnet.lst": (opensm_subnet_lst.read, [HDOR / "opensm-subnet.lst", RUN / "osm" / "opensm-subnet.lst"],
                          800),
    "opensm-hdor.dump": (hdor_dump.read, [HDOR / "opensm-hdor.dump"], 800),
    "opensm-sl2vl.dump": (sl2vl.read, [QOS / "opensm-sl2vl.dump"], 800),
    "node-name-map": (node_name_map.read, [R / "plan-kns-k3-n2.node-name-map"], 700),
    # verify's own sniffing reader: ibnetdiscover or opensm-subnet.lst by content
    "fabric": (read_fabric, [HDOR / "ibnetdiscover.out", HDOR / "opensm-subnet.lst"], 600),
    # `sim run --faults` and `--opensm-config` before anything starts (sweep_interval: .inf, a NUL
    # byte in a file name: issue 36)
    "faults.yaml": (lambda p: faults.read(p, PLAN), [SEEDS / "faults.yaml"], 600),
    "opensm.conf": (lambda p: opensm.config(["minhop"], base_path=str(p)),
                    [SEEDS / "opensm-3.3.23-default.conf", SEEDS / "plan-kns-k3-n2.opensm.conf",
                     SEEDS / "opensm-files.conf"], 600),
}


def _check(tmp: Path, name: str, reader, data: bytes, others: tuple = ()):
    """`others`: the command's other input files, which a message may name instead (a table that
    fits no switch of a truncated fabric is told about the tables)."""
    path = tmp / name
    path.write_bytes(data)
    with time_bound():
        try:
            reader(path)
        except InputError as e:
            msg = str(e)
            assert "\n" not in msg, f"message is not one line: {msg!r}"
            assert any(str(p) in msg for p in (path, *others)), f"message does not name the file: {msg!r}"


def _reader_test(name):
    reader, seeds, n = READERS[name]

    @settings(max_examples=examples(n))
    @given(case=mutated(seeds))
    def run(tmp_path_factory, case):
        _check(tmp_path_factory.getbasetemp(), name, reader, case[2])
    return run


@pytest.mark.parametrize("name", list(READERS))
def test_reader_on_mutated_files(name, tmp_path_factory, bounded_memory):
    _reader_test(name)(tmp_path_factory)


@settings(max_examples=examples(1200))
@given(case=mutated_json([RUN / "summary.json"]))
def test_summary_json_on_mutated_files(tmp_path_factory, bounded_memory, case):
    _check(tmp_path_factory.getbasetemp(), "summary.json", lambda p: rundir.summary(p.parent), case[2])


# benchmark outputs: the file a run leaves, mutated, beside the run's other real files
BENCH = {
    "hpcc": ("hpccoutf.txt", [B / "hpcc" / d for d in ("np4_default_unbound", "np4_linear_rankfile",
                                                       "fail_killed_mid_ptrans", "np4_two_runs_appended")]),
    "hpcg": ("HPCG-Benchmark_3.1_2026-11-22_01-58-31.txt", [B / "hpcg" / "np4_16x16x16_rt30"]),
    "graph500": ("stdout.txt", [B / "graph500" / d for d in ("bfs_scale14_ef16_np4", "bfs_sssp_scale12_np4_combined",
                                                            "fail_killed_scale18")]),
    "netgauge": ("stdout.txt", [B / "netgauge" / d for d in ("ebb_sizes_1B-1MiB_np4", "1toN_np4_verbose3",
                                                            "Nto1_np4")]),
}


@pytest.mark.parametrize("bench", list(BENCH))
def test_benchmark_parser_on_mutated_outputs(bench, tmp_path_factory, bounded_memory):
    main, dirs = BENCH[bench]
    cls = BENCHMARKS.get(bench)
    seeds = [d / main for d in dirs if (d / main).is_file()]
    assert seeds, f"no seed {main} for {bench}"
    base = tmp_path_factory.mktemp(bench)

    @settings(max_examples=examples(500))
    @given(case=mutated(seeds))
    def run(case):
        seed, _edits, data = case
        d = base / seed.parent.name
        if not d.is_dir():
            shutil.copytree(seed.parent, d)
        (d / main).write_bytes(data)
        with time_bound():
            r = cls.parse(RunFiles.from_path(d / main))
        assert r.status in ("ok", "failed", "invalid"), r.status
        for v in r.metrics.values():
            assert isinstance(v["value"], float | int)

    run()


# past the readers: what the commands do with a file that reads well (tracing, matching, coordinates)
def _verify_routes(fabric: Path, lfts: Path):
    from ibtool.verify.run import check_routes
    check_routes(fabric, lfts, None, "hdor", 2, lambda m: None, balance=True)


def _verify_topology(plan: Path, discovered: Path):
    from ibtool.verify import topology
    topology.compare(ibnetdiscover.read(plan), ibnetdiscover.read(discovered), names=False)


PIPELINES = {  # name -> (file, seeds, command, its other inputs, examples)
    "verify routes, fabric mutated": ("ibnetdiscover.out", [HDOR / "ibnetdiscover.out"],
                                      lambda f: _verify_routes(f, HDOR / "dump_fts.out"), (HDOR / "dump_fts.out",),
                                      300),
    "verify routes, tables mutated": ("dump_fts.out", [HDOR / "dump_fts.out"],
                                      lambda f: _verify_routes(HDOR / "ibnetdiscover.out", f),
                                      (HDOR / "ibnetdiscover.out",), 300),
    "verify topology, discovered mutated": ("ibnetdiscover.out", [HDOR / "ibnetdiscover.out"],
                                            lambda f: _verify_topology(R / "plan-kns-k3-n2.net", f),
                                            (R / "plan-kns-k3-n2.net",), 300),
}


@pytest.mark.parametrize("name", list(PIPELINES))
def test_verify_on_mutated_files(name, tmp_path_factory, bounded_memory):
    fname, seeds, fn, others, n = PIPELINES[name]
    base = tmp_path_factory.mktemp("pipe")

    @settings(max_examples=examples(n))
    @given(case=mutated(seeds))
    def run(case):
        _check(base, fname, fn, case[2], others)
    run()
