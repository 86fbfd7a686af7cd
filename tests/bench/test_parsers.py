"""Parsers against the real outputs in fixtures/bench: the figures fixtures/bench/README.md lists,
and every failure fixture flagged with its reason."""

import json
import math
from pathlib import Path

import pytest

from ibtool.bench.benchmarks.base import FAILED, INVALID, OK, RunFiles
from ibtool.bench.registry import BENCHMARKS

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "bench"


def parse(bench, rel, **kw):
    return BENCHMARKS.get(bench).parse(RunFiles.from_path(FIX / bench / rel), **kw)


def values(r, **expected):
    return {k: r.value(k) for k in expected}, {k: pytest.approx(v, rel=1e-6) for k, v in expected.items()}


def test_every_fixture_directory_is_covered():
    dirs = {f"{p.parent.name}/{p.name}" for p in FIX.glob("*/*") if p.is_dir()}
    covered = {f"{b}/{c}" for b, c in COVERED}
    assert dirs == covered


# ---------------------------------------------------------------- HPCC

def test_hpcc_linear_rankfile_summary_and_body():
    r = parse("hpcc", "np4_linear_rankfile/hpccoutf.txt")
    assert r.status == OK and r.reasons == []
    got, want = values(r, pingpong_latency_min=0.376111, pingpong_latency_avg=1307.94, pingpong_latency_max=3888.59,
                       pingpong_bandwidth_min=0.501053, pingpong_bandwidth_avg=4.37199,
                       pingpong_bandwidth_max=8.62418, natural_ring_latency=2398.96, random_ring_latency=2325.87,
                       natural_ring_bandwidth=0.501111, random_ring_bandwidth=0.492627, ptrans=0.241947,
                       mpi_random_access=0.00050902, mpi_random_access_lcg=0.000368151,
                       star_random_access=0.293482, single_random_access=0.454685, star_dgemm=2.54944,
                       single_dgemm=3.07184, star_stream_triad=31.7848, single_stream_triad=71.6535,
                       mpi_fft=0.223365, star_fft=6.1971, hpl=0.751509)
    assert got == want
    assert r.metrics["pingpong_latency_max"]["unit"] == "us"
    assert r.metrics["pingpong_bandwidth_min"]["unit"] == "GB/s"
    assert r.metrics["hpl"]["unit"] == "Gflop/s"  # HPL_Tflops=0.000751509 -> 0.751509 Gflop/s
    assert r.params == {"N": 1000, "NB": 80, "PMAP": 0, "P": 2, "Q": 2, "nprocs": 4, "PTRANS_n": 500}
    assert r.details["summary"]["Success"] == 1
    # text body, converted: msecs -> us, MByte/s -> GB/s
    lb = r.details["latency_bandwidth"]
    assert lb["pingpong_latency_us"] == pytest.approx([0.376, 1307.945, 3888.592])
    assert lb["pingpong_bandwidth_GBs"] == pytest.approx([0.501053, 4.371987, 8.624184])
    assert lb["natural_ring"] == pytest.approx({"latency_us": 2398.964, "bandwidth_GBs": 0.5011109})
    assert lb["random_ring"] == pytest.approx({"latency_us": 2325.867, "bandwidth_GBs": 0.492626945})
    hpl = r.details["hpl"]
    assert hpl == [{"tv": "WR11C2R4", "N": 1000, "NB": 80, "P": 2, "Q": 2, "time_s": 0.89, "gflops": 0.7515,
                    "passed": True}]
    assert r.details["ptrans_wall_GBs"] == [0.245, 0.245, 0.242, 0.242, 0.242]
    assert r.details["random_access_body_GUPs"]["MPIRandomAccess"] == pytest.approx(0.000509020)
    assert r.details["major_results"] == pytest.approx({
        "max_ping_pong_latency_us": 3888.592, "randomly_ordered_ring_latency_us": 2325.867,
        "min_ping_pong_bandwidth_GBs": 0.501053088, "naturally_ordered_ring_bandwidth_GBs": 0.501110900,
        "randomly_ordered_ring_bandwidth_GBs": 0.492626945})
    assert r.details["hpl_input"] == {"N": 1000, "NB": 80, "PMAP": "Row-major process mapping", "P": 2, "Q": 2}
    assert r.params["PMAP"] == 0


def test_hpcc_random_rankfile():
    r = parse("hpcc", "np4_random_rankfile/hpccoutf.txt")
    assert r.status == OK
    got, want = values(r, hpl=7.82727e-05 * 1000, ptrans=0.160027, mpi_random_access=0.000457512,
                       mpi_random_access_lcg=0.000488619, star_random_access=0.502579, star_stream_triad=0.498048,
                       mpi_fft=0.223787, star_dgemm=2.14174, pingpong_latency_min=0.375833,
                       pingpong_latency_avg=1432.48, pingpong_latency_max=3999.26, pingpong_bandwidth_min=0.499792,
                       pingpong_bandwidth_avg=4.8453, pingpong_bandwidth_max=8.86853,
                       natural_ring_latency=2396.82, random_ring_latency=2297.32, natural_ring_bandwidth=0.500329,
                       random_ring_bandwidth=0.500605)
    assert got == want
    lb = r.details["latency_bandwidth"]
    assert lb["pingpong_latency_us"] == pytest.approx([0.376, 1432.478, 3999.263])
    assert lb["pingpong_bandwidth_GBs"] == pytest.approx([0.499792, 4.845301, 8.868531])
    assert lb["natural_ring"] == pytest.approx({"latency_us": 2396.825, "bandwidth_GBs": 0.500328685})
    assert lb["random_ring"] == pytest.approx({"latency_us": 2297.322, "bandwidth_GBs": 0.500604993})
    assert [h["gflops"] for h in r.details["hpl"]] == [7.827e-02]
    assert r.details["ptrans_wall_GBs"] == [0.248, 0.244, 0.244, 0.243, 0.160]
    assert r.details["random_access_body_GUPs"]["MPIRandomAccess"] == pytest.approx(0.000457512)
    assert r.details["major_results"] == pytest.approx({
        "max_ping_pong_latency_us": 3999.263, "randomly_ordered_ring_latency_us": 2297.322,
        "min_ping_pong_bandwidth_GBs": 0.499792149, "naturally_ordered_ring_bandwidth_GBs": 0.500328685,
        "randomly_ordered_ring_bandwidth_GBs": 0.500604993})


def test_hpcc_default_unbound_microseconds():
    r = parse("hpcc", "np4_default_unbound/hpccoutf.txt")
    assert r.status == OK
    got, want = values(r, hpl=3.85221, ptrans=1.19742, mpi_random_access=0.000635375,
                       mpi_random_access_lcg=0.000611576, star_random_access=0.945567, star_stream_triad=54.296,
                       mpi_fft=1.31043, star_dgemm=1.41475, pingpong_latency_min=3.00638,
                       pingpong_latency_avg=3.02445, pingpong_latency_max=3.05206, pingpong_bandwidth_min=4.79885,
                       pingpong_bandwidth_avg=8.886, pingpong_bandwidth_max=10.3572, natural_ring_latency=2.4667,
                       random_ring_latency=2.83313, natural_ring_bandwidth=1.69703, random_ring_bandwidth=1.72383)
    assert got == want
    lb = r.details["latency_bandwidth"]
    assert lb["pingpong_latency_us"] == pytest.approx([3.006, 3.024, 3.052])
    assert lb["pingpong_bandwidth_GBs"] == pytest.approx([4.79885, 8.886, 10.357167])
    assert lb["natural_ring"] == pytest.approx({"latency_us": 2.467, "bandwidth_GBs": 1.69703259})
    assert lb["random_ring"] == pytest.approx({"latency_us": 2.833, "bandwidth_GBs": 1.723826778})
    assert r.details["hpl"][0]["gflops"] == 3.852 and r.details["hpl"][0]["time_s"] == 0.17


def test_hpcc_two_appended_runs_takes_the_last_only():
    r = parse("hpcc", "np4_two_runs_appended/hpccoutf.txt")
    assert r.status == OK
    assert any("2 appended runs" in w for w in r.warnings)
    got, want = values(r, hpl=3.53432, ptrans=1.06191, mpi_random_access=0.000559655, pingpong_latency_max=3.38319,
                       natural_ring_latency=2.4907, random_ring_latency=2.7285, natural_ring_bandwidth=1.95274,
                       random_ring_bandwidth=1.90793)
    assert got == want


def test_hpcc_invalid_grid_fallback_is_flagged():
    r = parse("hpcc", "fail_invalid_grid_fallback_defaults/hpccoutf.txt")
    assert r.status == INVALID
    assert r.details["summary"]["Success"] == 1  # HPCC itself claims success
    text = " ".join(r.reasons)
    assert "HPL ERROR" in text and "Need at least 16 processes" in text
    assert "N=5120 (requested 1000)" in text and "P=2 (requested 4)" in text and "Q=2 (requested 4)" in text
    assert "PMAP=1 (requested 0)" in text  # column-major fallback, row-major asked for
    assert r.details["hpl_input"] == {"N": 5120, "NB": 80, "PMAP": "Column-major process mapping", "P": 2, "Q": 2}
    assert r.details["requested"] == {"N": 1000, "NB": 80, "PMAP": 0, "P": 4, "Q": 4}
    assert r.params["N"] == 5120 and r.params["PTRANS_n"] == 2560
    got, want = values(r, hpl=1.71778, ptrans=0.726863, mpi_random_access=0.000451991, pingpong_latency_max=1003.2,
                       natural_ring_bandwidth=1.09513, random_ring_bandwidth=1.08384)
    assert got == want
    assert r.details["hpl"][0]["tv"] == "WC11C2R4" and r.details["hpl"][0]["N"] == 5120
    assert r.details["hpl"][0]["time_s"] == 52.11 and r.details["hpl"][0]["gflops"] == 1.718


def test_hpcc_invalid_grid_flagged_from_request_alone(tmp_path):
    # without the stderr file, the comparison with the requested grid still catches it
    src = FIX / "hpcc" / "fail_invalid_grid_fallback_defaults" / "hpccoutf.txt"
    (tmp_path / "hpccoutf.txt").write_bytes(src.read_bytes())
    r = BENCHMARKS.get("hpcc").parse(RunFiles([tmp_path]), {"N": 1000, "NB": 80, "P": 4, "Q": 4, "nprocs": 4})
    assert r.status == INVALID and "N=5120 (requested 1000)" in r.reasons[0]


def test_hpcc_killed_early():
    r = parse("hpcc", "fail_killed_early/hpccoutf.txt")
    assert r.status == FAILED
    assert "truncated" in r.reasons[0] and "MPIRandomAccess" in r.reasons[0]
    assert r.metrics == {}


def test_hpcc_killed_mid_ptrans_keeps_partial_data_but_fails():
    r = parse("hpcc", "fail_killed_mid_ptrans/hpccoutf.txt")
    assert r.status == FAILED
    assert "truncated" in r.reasons[0] and "PTRANS" in r.reasons[0]
    assert r.details["random_access_body_GUPs"] == {"MPIRandomAccess": pytest.approx(0.000348924),
                                                    "MPIRandomAccess_LCG": pytest.approx(0.000247657)}
    assert "latency_bandwidth" not in r.details and "hpl" not in r.details


def test_hpcc_exit_code_is_a_failure():
    r = BENCHMARKS.get("hpcc").parse(RunFiles.from_path(FIX / "hpcc/fail_killed_early/hpccoutf.txt", 124))
    assert r.status == FAILED and any("exit code 124" in x and "timeout" in x for x in r.reasons)


# ---------------------------------------------------------------- HPCG

def test_hpcg_rt30_valid():
    r = parse("hpcg", "np4_16x16x16_rt30")
    assert r.status == OK and r.reasons == []
    got, want = values(r, gflops=2.1456, hpcg24_gflops=2.19229, execution_time=12.0211, bandwidth=16.311,
                       allreduce_time_min=1.54693, allreduce_time_max=3.28819, allreduce_time_avg=2.54064)
    assert got == want
    assert r.params["nprocs"] == 4 and r.params["threads"] == 1
    assert (r.params["npx"], r.params["npy"], r.params["npz"]) == (2, 2, 1)
    assert (r.params["global_nx"], r.params["global_ny"], r.params["global_nz"]) == (32, 32, 16)
    assert (r.params["nx"], r.params["ny"], r.params["nz"]) == (16, 16, 16)
    assert r.params["optimized_iterations"] == 4700 and r.params["quickpath"] is False
    assert r.details["checks"] == {"Spectral Convergence Tests": "PASSED", "Iteration Count Information": "PASSED",
                                   "Departure from Symmetry |x'Ay-y'Ax|/(2*||x||*||A||*||y||)/epsilon": "PASSED",
                                   "Reproducibility Information": "PASSED"}


def test_hpcg_quickpath_rt0_valid():
    r = parse("hpcg", "np4_16x16x16_quickpath_rt0")
    assert r.status == OK
    got, want = values(r, gflops=3.0852, hpcg24_gflops=3.16924, execution_time=0.0884622,
                       allreduce_time_min=0.00377552, allreduce_time_max=0.0281476, allreduce_time_avg=0.0160788)
    assert got == want
    assert r.params["quickpath"] is True and r.params["optimized_iterations"] == 50


def test_hpcg_missing_hpcg_dat_is_invalid():
    r = parse("hpcg", "fail_missing_hpcg_dat_silent_quickpath_np2")
    assert r.status == INVALID
    assert "no hpcg.dat" in r.reasons[0] and "16x16x16" in r.reasons[0]
    got, want = values(r, gflops=3.29471, hpcg24_gflops=3.34406, execution_time=0.0409538)
    assert got == want
    assert r.params["nprocs"] == 2 and (r.params["npx"], r.params["npy"], r.params["npz"]) == (2, 1, 1)
    assert r.params["quickpath"] is True and r.params["optimized_iterations"] == 50


def test_hpcg_quickpath_against_a_request_for_rt_is_invalid():
    r = BENCHMARKS.get("hpcg").parse(RunFiles([FIX / "hpcg/np4_16x16x16_quickpath_rt0"]),
                                     {"nx": 16, "ny": 16, "nz": 16, "rt": 30, "nprocs": 4})
    assert r.status == INVALID and "QuickPath" in r.reasons[0]


def test_hpcg_invalid_aspect_ratio():
    r = parse("hpcg", "fail_invalid_aspect_ratio")
    assert r.status == FAILED
    assert "The local problem sizes (16,16,160) are invalid" in r.reasons[0]


def test_hpcg_killed():
    r = parse("hpcg", "fail_killed")
    assert r.status == FAILED
    assert "no HPCG-Benchmark_*.txt" in r.reasons[0] and "Call [50] Scaled Residual [6.20363e-25]" in r.reasons[0]


# ---------------------------------------------------------------- Graph500

def test_graph500_scale14():
    r = parse("graph500", "bfs_scale14_ef16_np4/stdout.txt")
    assert r.status == OK
    assert r.params == {"scale": 14, "edgefactor": 16, "nbfs": 64, "nprocs": 4, "validated": True}
    got, want = values(r, graph_generation=0.456989, construction_time=0.106849, bfs_mean_time=0.0191353e6,
                       bfs_min_TEPS=3.43504e+06, bfs_median_TEPS=1.81406e+07, bfs_max_TEPS=6.12265e+07,
                       bfs_harmonic_mean_TEPS=1.36824e+07, bfs_harmonic_stddev_TEPS=1.31544e+06)
    assert got == want
    assert r.details["bfs_mean_validate_s"] == pytest.approx(0.0456234)
    assert r.details["official"] == {"bfs": pytest.approx(1.36824e+07)}


def test_graph500_bfs_sssp_combined_picks_bfs_headline():
    r = parse("graph500", "bfs_sssp_scale12_np4_combined/output.txt")
    assert r.status == OK
    assert r.params["scale"] == 12 and r.params["edgefactor"] == 16 and r.params["nbfs"] == 64
    assert r.params["nprocs"] == 4
    got, want = values(r, bfs_harmonic_mean_TEPS=1.15425e+07, bfs_harmonic_stddev_TEPS=567372,
                       bfs_median_TEPS=1.03152e+07, sssp_harmonic_mean_TEPS=3.77506e+06,
                       sssp_harmonic_stddev_TEPS=107621, sssp_median_TEPS=3.92481e+06)
    assert got == want
    assert r.details["official"] == {"bfs": pytest.approx(1.15425e+07), "sssp": pytest.approx(3.77506e+06)}


def test_graph500_skip_validation_is_reported():
    r = parse("graph500", "bfs_scale12_np4_skip_validation/stdout.txt")
    assert r.params["validated"] is False and any("validation skipped" in w for w in r.warnings)
    got, want = values(r, bfs_harmonic_mean_TEPS=1.19857e+07, bfs_harmonic_stddev_TEPS=873559,
                       bfs_median_TEPS=1.42752e+07)
    assert got == want
    asked = BENCHMARKS.get("graph500").parse(RunFiles.from_path(FIX / "graph500/bfs_scale12_np4_skip_validation/"
                                                                "stdout.txt"),
                                             {"scale": 12, "edgefactor": 16, "skip_validation": False})
    assert asked.status == INVALID


def test_graph500_fake2nodes_linear_ok():
    r = parse("graph500", "bfs_scale12_np4_fake2nodes_linear/stdout.txt")
    assert r.status == OK
    got, want = values(r, bfs_harmonic_mean_TEPS=6.93159e+06, bfs_harmonic_stddev_TEPS=586968,
                       bfs_median_TEPS=8.63197e+06)
    assert got == want
    assert r.details["bfs_mean_validate_s"] == pytest.approx(0.0167164)


def test_graph500_random_placement_refused():
    r = parse("graph500", "fail_random_placement_fake2nodes/stdout.txt")
    assert r.status == FAILED and "Strange group rank assignment scheme" in r.reasons[0]
    assert "block" in r.reasons[0]


def test_graph500_not_power_of_two():
    r = parse("graph500", "fail_np3_not_power_of_two/stdout.txt")
    assert r.status == FAILED and "power-of-two" in r.reasons[0]


def test_graph500_killed():
    r = parse("graph500", "fail_killed_scale18/stdout.txt")
    assert r.status == FAILED and "no result block" in r.reasons[0] and "root 4" in r.reasons[0]


# ---------------------------------------------------------------- Netgauge

def test_netgauge_ebb_1mib():
    r = parse("netgauge", "ebb_1MiB_np4/stdout.txt")
    assert r.status == OK
    assert r.params["pattern"] == "ebb" and r.params["nprocs"] == 4 and r.params["version"] == "v2.4.6"
    assert r.value("ebb_bandwidth") == pytest.approx(1.944994735)  # 1944.994735 "MiB/s" = 10^6 B/s
    assert r.metrics["ebb_bandwidth"]["unit"] == "GB/s"
    assert r.value("ebb_time") == pytest.approx(5391.150839)
    assert r.details["ebb"] == [{"size": 1048576, "num": 80, "time_us": 5391.150839,
                                 "bandwidth_GBs": pytest.approx(1.944994735)}]
    rounds = r.details["rounds"]
    assert len(rounds) == 20
    assert rounds[0]["time_us"] == 7394.569932 and rounds[0]["bandwidth_GBs"] == pytest.approx(1.418035139)
    assert rounds[19]["time_us"] == 4749.911259 and rounds[19]["bandwidth_GBs"] == pytest.approx(2.207569664)
    assert [(b["lower_us"], b["count"]) for b in r.details["buckets"]] == [
        (3556.663421, 38), (5094.568683, 29), (6632.473944, 8), (8170.379205, 5)]
    assert r.details["buckets"][0]["bandwidth_GBs"] == pytest.approx(2.948201378)


def test_netgauge_ebb_sweep():
    r = parse("netgauge", "ebb_sizes_1B-1MiB_np4/stdout.txt")
    assert r.status == OK
    ebb = {e["size"]: e for e in r.details["ebb"]}
    assert len(ebb) == 40 and len(r.details["rounds"]) == 200
    assert ebb[1]["time_us"] == 80.947037 and ebb[1]["bandwidth_GBs"] == pytest.approx(0.000123538)
    assert ebb[65536]["bandwidth_GBs"] == pytest.approx(1.667732470)
    assert ebb[393216]["bandwidth_GBs"] == pytest.approx(2.721665394)
    assert max(ebb.values(), key=lambda e: e["bandwidth_GBs"])["size"] == 393216
    assert r.value("ebb_bandwidth") == pytest.approx(2.089630461) and r.value("ebb_time") == 5017.997294


@pytest.mark.parametrize("case,pattern,first,last", [
    ("1toN_np4", "1toN", (1, 5.10, 1.57), (65536, 29.20, 17954.93)),
    ("Nto1_np4", "Nto1", (1, 3.57, 2.24), (65536, 14.41, 36372.76)),
])
def test_netgauge_congestion_default(case, pattern, first, last):
    r = parse("netgauge", f"{case}/stdout.txt")
    assert r.status == OK and r.params["pattern"] == pattern
    rows = r.details["sizes"]
    assert len(rows) == 32
    for row, (size, lat, mbit) in ((rows[0], first), (rows[-1], last)):
        assert row["size"] == size and row["latency_med_us"] == lat
        assert row["bandwidth_med_GBs"] == pytest.approx(mbit / 8000)
    assert r.value(f"{pattern}_latency") == last[1]
    assert r.value(f"{pattern}_bandwidth") == pytest.approx(last[2] / 8000)


@pytest.mark.parametrize("run,pattern,blocking,latency,mbits", [
    ("Nto1_np4_verbose2", "Nto1", [24.93, 26.80, 25.26, 95.45], [12.49, 13.43, 12.66, 47.93],
     (10939.23, 39042.32, 41420.23, 41984.90)),
    ("1toN_np4_verbose3", "1toN", [0.21, 0.40, 0.36, 2.49], [26.71, 29.65, 28.16, 71.45],
     (7337.34, 17682.05, 18615.32, 19627.21)),
])
def test_netgauge_congestion_patterns(run, pattern, blocking, latency, mbits):
    r = parse("netgauge", f"{run}/stdout.txt")
    assert r.status == OK and r.params["pattern"] == pattern
    last = r.details["sizes"][-1]
    assert last["size"] == 65536
    stats = ("min", "avg", "med", "max")
    assert [last[f"blocking_{s}_us"] for s in stats] == blocking
    assert [last[f"latency_{s}_us"] for s in stats] == latency
    assert [last[f"bandwidth_{s}_GBs"] for s in stats] == pytest.approx([x / 8000 for x in mbits])


def test_netgauge_odd_ranks():
    r = parse("netgauge", "fail_ebb_np3_odd_ranks/stdout.txt")
    assert r.status == FAILED and "divisible by 2" in r.reasons[0]
    assert r.params["nprocs"] == 3


def test_netgauge_bad_cmdline():
    r = parse("netgauge", "fail_bad_cmdline/stdout.txt")
    assert r.status == FAILED and "invalid numeric value: -s" in r.reasons[0]


COVERED = [
    ("hpcc", "np4_linear_rankfile"), ("hpcc", "np4_random_rankfile"), ("hpcc", "np4_default_unbound"),
    ("hpcc", "np4_two_runs_appended"), ("hpcc", "fail_invalid_grid_fallback_defaults"),
    ("hpcc", "fail_killed_early"), ("hpcc", "fail_killed_mid_ptrans"),
    ("hpcg", "np4_16x16x16_rt30"), ("hpcg", "np4_16x16x16_quickpath_rt0"),
    ("hpcg", "fail_missing_hpcg_dat_silent_quickpath_np2"), ("hpcg", "fail_invalid_aspect_ratio"),
    ("hpcg", "fail_killed"),
    ("graph500", "bfs_scale14_ef16_np4"), ("graph500", "bfs_sssp_scale12_np4_combined"),
    ("graph500", "bfs_scale12_np4_skip_validation"), ("graph500", "bfs_scale12_np4_fake2nodes_linear"),
    ("graph500", "fail_random_placement_fake2nodes"), ("graph500", "fail_np3_not_power_of_two"),
    ("graph500", "fail_killed_scale18"),
    ("netgauge", "ebb_1MiB_np4"), ("netgauge", "ebb_sizes_1B-1MiB_np4"), ("netgauge", "1toN_np4"),
    ("netgauge", "Nto1_np4"), ("netgauge", "Nto1_np4_verbose2"), ("netgauge", "1toN_np4_verbose3"),
    ("netgauge", "fail_ebb_np3_odd_ranks"), ("netgauge", "fail_bad_cmdline"),
]


# ---------------------------------------------------------------- damaged outputs

@pytest.mark.parametrize("bench,fixture,line,damaged", [
    ("hpcc", "np4_linear_rankfile/hpccoutf.txt", "PTRANS_GBs=", "PTRANS_GBs=0.2\x00\x00"),
    ("hpcc", "np4_linear_rankfile/hpccoutf.txt", "HPL_N=", "HPL_N=abc"),
    ("hpcg", "np4_16x16x16_rt30/HPCG-Benchmark_*.txt", "Local Domain Dimensions::nx=",
     "Local Domain Dimensions::nx=1?"),
])
def test_a_corrupted_number_fails_the_run_and_names_the_key(tmp_path, bench, fixture, line, damaged):
    src = next((FIX / bench).glob(fixture))
    text = "".join(damaged + "\n" if ln.startswith(line) else ln + "\n" for ln in src.read_text().splitlines())
    (tmp_path / src.name).write_text(text)
    r = BENCHMARKS.get(bench).parse(RunFiles.from_path(tmp_path / src.name))
    key = line.rstrip("=")
    assert r.status == FAILED and any(key in x and "is not a finite number (corrupted output)" in x for x in r.reasons)


# issue 10 item 5b: nan, inf and a garbled exponent were a traceback (int(nan), float('6.1e+-1'))
@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "6.12265e+-1"])
@pytest.mark.parametrize("bench,fixture,line,metric", [
    ("hpcc", "np4_linear_rankfile/hpccoutf.txt", "HPL_Tflops=", "hpl"),
    ("hpcc", "np4_linear_rankfile/hpccoutf.txt", "HPL_N=", None),
    ("hpcc", "np4_linear_rankfile/hpccoutf.txt", "Success=", None),
    ("hpcg", "np4_16x16x16_rt30/HPCG-Benchmark_*.txt", "Local Domain Dimensions::nx=", None),
    ("hpcg", "np4_16x16x16_rt30/HPCG-Benchmark_*.txt",
     "Final Summary::HPCG result is VALID with a GFLOP/s rating of=", "gflops"),
    ("graph500", "bfs_scale14_ef16_np4/stdout.txt", "bfs  harmonic_mean_TEPS:", "bfs_harmonic_mean_TEPS"),
    ("graph500", "bfs_scale14_ef16_np4/stdout.txt", "SCALE:", None),
])
def test_an_odd_number_fails_the_run_naming_key_and_line(tmp_path, bench, fixture, line, metric, bad):
    src = next((FIX / bench).glob(fixture))
    lines = src.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines, 1) if ln.startswith(line))
    sep = "=" if line.endswith("=") else ": "
    lines[at - 1] = line + (" ! " if "harmonic_mean_TEPS" in line else " " if sep == ": " else "") + bad
    (tmp_path / src.name).write_text("\n".join(lines) + "\n")
    r = BENCHMARKS.get(bench).parse(RunFiles.from_path(tmp_path / src.name))  # no traceback
    key = line.rstrip("=:").split()[-1] if bench == "graph500" else line.rstrip("=")
    assert r.status == FAILED, r.as_dict()
    assert any(f"{src.name}:{at} " in x and key in x and repr(bad) in x for x in r.reasons), r.reasons
    if metric:
        assert metric not in r.metrics
    assert all(math.isfinite(m["value"]) for m in r.metrics.values())
    json.dumps(r.as_dict(), allow_nan=False)  # nothing non-finite is stored


def test_bench_parse_tells_not_an_output_from_a_failed_run(tmp_path):
    """Issue 24: `bench parse hpcc` of a binary file said "hpcc run failed: output truncated" (exit 1).
    A file that is no HPCC output at all is bad input (exit 2); a real output cut short is a failed
    run (exit 1)."""
    from support import ibtool
    blob = tmp_path / "core.bin"
    blob.write_bytes(bytes(range(256)) * 16)
    r = ibtool("bench", "parse", "hpcc", blob)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (f"ibtool: error: {blob}: not hpcc output (none of 'DARPA/DOE HPC Challenge'; "
                                "a binary file)")
    notes = tmp_path / "notes.txt"
    notes.write_text("HPL results: 12 Gflops\n")
    assert ibtool("bench", "parse", "hpcc", notes).returncode == 2
    real = FIX / "hpcc" / "np4_default_unbound" / "hpccoutf.txt"
    cut = tmp_path / "hpccoutf.txt"
    cut.write_bytes(real.read_bytes()[:3000])
    r = ibtool("bench", "parse", "hpcc", cut)
    assert r.returncode == 1 and "output truncated" in r.stderr, r.stderr
