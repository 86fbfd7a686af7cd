"""perf/verify_bench.py runs (small sizes; no timing assertions)."""

import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "perf"))
import verify_bench  # noqa: E402


def test_scale_item_runs_small():
    r = verify_bench.bench_b(k=4, n=2, h=3, permutations=1)
    assert "error" not in r, r
    assert r["switches"] == 16 + 8 and r["lids"] == 24 + 48 and r["pairs"] > 0
    assert r["delivered_all"] and r["deadlock_free"] and r["peak_rss_mib"] > 0


def test_measure_reports_exit_and_memory(tmp_path):
    m = verify_bench.measure([sys.executable, "-c", "import sys; x = bytearray(50 << 20); sys.exit(3)"])
    assert m["exit"] == 3 and m["peak_rss_mib"] >= 50


def test_verify_routes_item_on_a_fixture():
    kns = ROOT / "fixtures" / "real" / "ibsim-kns-k3-n2-hdor"
    r = verify_bench._verify_routes(kns / "ibnetdiscover.out", kns / "dump_fts.out")
    assert r["exit"] == 0 and r["pairs"] == r["delivered"] == 552 and r["credit_loop"] is False
    assert r["seconds"] > 0 and r["peak_rss_mib"] > 0


def test_measure_does_not_stall_on_large_output():
    """A child writing more than a pipe holds must still finish (output goes to files)."""
    m = verify_bench.measure([sys.executable, "-c", "print('x' * (4 << 20))"], timeout=60)
    assert m["exit"] == 0 and len(m["stdout"]) == (4 << 20) + 1


def test_baseline_code_runs_and_gives_the_same_verdicts_on_every_fixture(tmp_path):
    """Issue 8 'faster': the bench compares against the code before the rewrite in the same run."""
    base = verify_bench.baseline(tmp_path)
    assert (base / "ibtool" / "verify" / "routes.py").is_file()
    old = verify_bench.bench_b(k=4, n=2, h=3, permutations=1, code=base)
    new = verify_bench.bench_b(k=4, n=2, h=3, permutations=1)
    assert "error" not in old, old
    assert {k: old[k] for k in ("pairs", "delivered_all", "deadlock_free", "dependencies")} == \
        {k: new[k] for k in ("pairs", "delivered_all", "deadlock_free", "dependencies")}
    assert old["certified_lids"] is None and new["certified_lids"] == new["lids"]
    v = verify_bench.fixture_verdicts(base)
    assert len(v["fixtures"]) >= 5 and v["all_same"], [r for r in v["fixtures"] if not r["same"]]
