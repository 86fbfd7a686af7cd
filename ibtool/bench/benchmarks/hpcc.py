"""HPC Challenge 1.5: hpccinf.txt from a template, `hpcc` (no arguments), hpccoutf.txt parsed.

HPCC reads ./hpccinf.txt and *appends* to ./hpccoutf.txt. Only the last run in the file counts.
An invalid input (P x Q larger than the rank count, a truncated file) does not stop HPCC: it
prints ``HPL ERROR`` on stderr and runs with built-in parameters, exit 0 and ``Success=1``. The
parser therefore compares the HPL parameters HPCC reports with the requested ones.
"""

from __future__ import annotations

import math
import re

from ibtool.bench.benchmarks.base import Benchmark, Figure, ParseResult, RunFiles
from ibtool.bench.registry import BENCHMARKS
from ibtool.errors import InputError
from ibtool.templating import render

BANNER = "This is the DARPA/DOE HPC Challenge Benchmark"

# Summary key -> (metric name, unit, factor to the unit)
SUMMARY = {
    "MinPingPongLatency_usec": ("pingpong_latency_min", "us", 1.0),
    "AvgPingPongLatency_usec": ("pingpong_latency_avg", "us", 1.0),
    "MaxPingPongLatency_usec": ("pingpong_latency_max", "us", 1.0),
    "MinPingPongBandwidth_GBytes": ("pingpong_bandwidth_min", "GB/s", 1.0),
    "AvgPingPongBandwidth_GBytes": ("pingpong_bandwidth_avg", "GB/s", 1.0),
    "MaxPingPongBandwidth_GBytes": ("pingpong_bandwidth_max", "GB/s", 1.0),
    "NaturallyOrderedRingLatency_usec": ("natural_ring_latency", "us", 1.0),
    "RandomlyOrderedRingLatency_usec": ("random_ring_latency", "us", 1.0),
    "NaturallyOrderedRingBandwidth_GBytes": ("natural_ring_bandwidth", "GB/s", 1.0),
    "RandomlyOrderedRingBandwidth_GBytes": ("random_ring_bandwidth", "GB/s", 1.0),
    "PTRANS_GBs": ("ptrans", "GB/s", 1.0),
    "MPIRandomAccess_GUPs": ("mpi_random_access", "GUP/s", 1.0),
    "MPIRandomAccess_LCG_GUPs": ("mpi_random_access_lcg", "GUP/s", 1.0),
    "StarRandomAccess_GUPs": ("star_random_access", "GUP/s", 1.0),
    "SingleRandomAccess_GUPs": ("single_random_access", "GUP/s", 1.0),
    "MPIFFT_Gflops": ("mpi_fft", "Gflop/s", 1.0),
    "StarFFT_Gflops": ("star_fft", "Gflop/s", 1.0),
    "StarDGEMM_Gflops": ("star_dgemm", "Gflop/s", 1.0),
    "SingleDGEMM_Gflops": ("single_dgemm", "Gflop/s", 1.0),
    "StarSTREAM_Triad": ("star_stream_triad", "GB/s", 1.0),
    "SingleSTREAM_Triad": ("single_stream_triad", "GB/s", 1.0),
    "HPL_Tflops": ("hpl", "Gflop/s", 1000.0),
}
PARAMS = {"HPL_N": "N", "HPL_NB": "NB", "HPL_nprow": "P", "HPL_npcol": "Q", "CommWorldProcs": "nprocs",
          "PTRANS_n": "PTRANS_n"}

_FLOAT = r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
_PP = re.compile(r"^(Latency|Bandwidth)\s+min / avg / max:\s+" + r"\s*/\s*".join([_FLOAT] * 3))
_RING = re.compile(r"On (naturally|randomly)\s+ordered ring: latency=\s*" + _FLOAT + r" msec, bandwidth=\s*"
                   + _FLOAT + " MB/s")
_HPL = re.compile(r"^(W[RC]\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+" + _FLOAT + r"\s+" + _FLOAT + r"\s*$")
_WALL = re.compile(r"^WALL\s+(?:\S+\s+){6}" + _FLOAT + r"\s+(\w+)\s+" + _FLOAT)
_GUPS = re.compile(_FLOAT + r" Billion\(10\^9\) Updates    per second")
_SECTION = re.compile(r"^(Begin|End) of (\w+) section\.")
_ECHO = re.compile(r"^(N|NB|PMAP|P|Q)\s+:\s+(.+?)\s*$")
_MAJOR = re.compile(r"^(Max Ping Pong Latency|Randomly Ordered Ring Latency|Min Ping Pong Bandwidth|"
                    r"Naturally Ordered Ring Bandwidth|Randomly  Ordered Ring Bandwidth):\s+" + _FLOAT + r" (msecs|MB/s)")


def grid(nprocs: int) -> tuple[int, int]:
    """Near-square P x Q = nprocs with P <= Q."""
    p = int(math.isqrt(nprocs))
    while nprocs % p:
        p -= 1
    return p, nprocs // p


def read_hpccinf(text: str) -> dict:
    """N, NB, PMAP, P, Q of the first problem and grid of an hpccinf.txt (lines 6, 8, 9, 11, 12)."""
    lines = text.splitlines()
    try:
        return {"N": int(lines[5].split()[0]), "NB": int(lines[7].split()[0]), "PMAP": int(lines[8].split()[0]),
                "P": int(lines[10].split()[0]), "Q": int(lines[11].split()[0])}
    except (IndexError, ValueError):
        return {}


@BENCHMARKS.register("hpcc")
class HPCC(Benchmark):
    """HPC Challenge: ping-pong latency/bandwidth, natural and random ring, PTRANS,
    MPI RandomAccess, MPI FFT, HPL. Parameters: N, NB (HPL), P, Q (0 = near-square from the rank
    count), PMAP (0 row-major, 1 column-major)."""

    defaults = {"N": 1000, "NB": 80, "P": 0, "Q": 0, "PMAP": 0}
    default_binary = "hpcc"
    collect = ("hpccoutf.txt",)
    marks = ("DARPA/DOE HPC Challenge",)  # HPCC's banner, its first lines
    figures = (
        Figure("hpcc_pingpong_latency", "HPCC ping-pong latency (8 B)", "pingpong_latency_avg", "us",
               ("pingpong_latency_min", "pingpong_latency_max")),
        Figure("hpcc_pingpong_bandwidth", "HPCC ping-pong bandwidth (2 MB)", "pingpong_bandwidth_avg", "GB/s",
               ("pingpong_bandwidth_min", "pingpong_bandwidth_max")),
        Figure("hpcc_natural_ring_latency", "HPCC naturally ordered ring latency", "natural_ring_latency", "us"),
        Figure("hpcc_random_ring_latency", "HPCC randomly ordered ring latency", "random_ring_latency", "us"),
        Figure("hpcc_natural_ring_bandwidth", "HPCC naturally ordered ring bandwidth", "natural_ring_bandwidth",
               "GB/s"),
        Figure("hpcc_random_ring_bandwidth", "HPCC randomly ordered ring bandwidth", "random_ring_bandwidth",
               "GB/s"),
        Figure("hpcc_ptrans", "HPCC PTRANS", "ptrans", "GB/s"),
        Figure("hpcc_mpi_random_access", "HPCC MPI RandomAccess", "mpi_random_access", "GUP/s"),
        Figure("hpcc_mpi_fft", "HPCC MPI FFT", "mpi_fft", "Gflop/s"),
        Figure("hpcc_hpl", "HPCC HPL", "hpl", "Gflop/s"),
    )
    expect = {"pingpong_latency_min": {"min": 0.01}, "pingpong_latency_avg": {"max": 1000.0},
              "pingpong_bandwidth_avg": {"min": 1e-4, "max": 1000.0}, "hpl": {"min": 1e-9},
              "ptrans": {"min": 1e-9}}

    def _grid(self, nprocs: int) -> tuple[int, int]:
        p, q = self.params["P"], self.params["Q"]
        return (p, q) if p and q else grid(nprocs)

    def check(self, nprocs: int) -> None:
        p, q = self._grid(nprocs)
        if p * q > nprocs:
            raise InputError(f"hpcc: P x Q = {p} x {q} needs {p * q} ranks but the run has {nprocs}; "
                             "HPCC would silently run with built-in defaults")
        if self.params["N"] < self.params["NB"]:
            raise InputError("hpcc: N must be at least NB")

    def inputs(self, nprocs: int) -> dict[str, str]:
        p, q = self._grid(nprocs)
        return {"hpccinf.txt": render("bench/hpccinf.txt.j2", **dict(self.params, P=p, Q=q))}

    def request(self, nprocs: int) -> dict:
        p, q = self._grid(nprocs)
        return dict(self.params, P=p, Q=q, nprocs=nprocs)

    @classmethod
    def parse(cls, files: RunFiles, request: dict | None = None) -> ParseResult:
        r = ParseResult("hpcc")
        path = files.path("hpccoutf.txt") or files.main
        if path is None:
            r.fail("no hpccoutf.txt: HPCC did not start (or ran in another directory)")
            r.check_exit(files.exit_code, files.stderr)
            return r
        text = path.read_text(errors="replace")
        runs = text.split(BANNER)
        if len(runs) > 2:
            r.warnings.append(f"hpccoutf.txt holds {len(runs) - 1} appended runs; only the last one is parsed")
        last = runs[-1] if len(runs) > 1 else text
        first_line = text.count("\n", 0, len(text) - len(last)) + 1  # line of `last` in the file
        _body(last, r)
        summary, at = _summary(last, first_line)
        r.details["summary"] = {k: v for k, v in summary.items() if k not in at or _finite(v)}
        complete = "End of HPC Challenge tests." in last and summary
        if not complete:
            begun = [m.group(2) for m in map(_SECTION.match, last.splitlines()) if m and m.group(1) == "Begin"]
            where = f" (last section begun: {begun[-1]})" if begun else ""
            r.fail(f"output truncated: no Summary section and no 'End of HPC Challenge tests.'{where}; "
                   "the run was killed or crashed")
        for key, (name, unit, factor) in SUMMARY.items():
            if key in summary and (v := r.number(f"{path.name}:{at[key]} {key}", summary[key])) is not None:
                r.metric(name, v * factor, unit)
        for key, name in PARAMS.items():
            if key in summary and (v := r.number(f"{path.name}:{at[key]} {key}", summary[key])) is not None:
                r.params[name] = int(v)
        if "Success" in summary:
            r.number(f"{path.name}:{at['Success']} Success", summary["Success"])
        if summary and summary.get("Success") != 1:
            r.fail("HPCC reports Success=0")
        hpl = r.details.get("hpl", [])
        if hpl and any(not h["passed"] for h in hpl):
            r.invalid("HPL residual check FAILED")
        r.check_exit(files.exit_code, files.stderr)
        err = files.stderr
        if "HPL ERROR" in err:
            msg = [ln.strip(" ><") for ln in err.splitlines() if ln.startswith(">>>")]
            r.invalid("HPL ERROR on stderr: HPCC rejected its input and ran built-in defaults"
                      + (f" ({msg[0]})" if msg else ""))
        want = dict(request or {})
        inf = files.text("hpccinf.txt")
        if inf and not request:
            want = read_hpccinf(inf)
        r.details["requested"] = {k: want[k] for k in ("N", "NB", "PMAP", "P", "Q", "nprocs") if k in want}
        echo = r.details.get("hpl_input", {})
        if "PMAP" in echo:
            r.params["PMAP"] = 1 if echo["PMAP"].startswith("Column") else 0
        if complete:
            diff = [f"{k}={r.params[k]} (requested {want[k]})" for k in ("N", "NB", "PMAP", "P", "Q", "nprocs")
                    if k in want and k in r.params and want[k] is not None and int(want[k]) != r.params[k]
                    and (want[k] or k == "PMAP")]
            if diff:
                r.invalid("HPCC ran other parameters than requested: " + ", ".join(diff))
        return r


def _finite(v) -> bool:
    return not isinstance(v, float) or math.isfinite(v)


def _summary(text: str, first_line: int = 1) -> tuple[dict, dict]:
    """The Summary section's key=value pairs, and the file line of each key."""
    out: dict = {}
    at: dict = {}
    inside = False
    for i, line in enumerate(text.splitlines()):
        if line.startswith("Begin of Summary section."):
            inside = True
            continue
        if line.startswith("End of Summary section."):
            break
        k, sep, v = line.partition("=")
        if not inside or not sep:
            continue
        at[k.strip()] = first_line + i
        try:
            out[k.strip()] = int(v) if re.fullmatch(r"[-+]?\d+", v.strip()) else float(v)
        except ValueError:
            out[k.strip()] = v.strip()
    return out, at


def _body(text: str, r: ParseResult) -> None:
    """Figures of the text body, in normalised units (msecs -> us, MB/s -> GB/s)."""
    lines = text.splitlines()
    section = None
    gups: dict[str, float] = {}
    hpl, wall = [], []
    detailed, major, echo = {}, {}, {}
    in_detailed = False
    for i, line in enumerate(lines):
        m = _SECTION.match(line)
        if m:
            section = m.group(2) if m.group(1) == "Begin" else None
            continue
        if section is None and not hpl and (e := _ECHO.match(line)) and not e.group(2).startswith("The "):
            echo.setdefault(e.group(1), int(e.group(2)) if e.group(2).isdigit() else e.group(2))
        if section in ("MPIRandomAccess", "MPIRandomAccess_LCG"):
            g = _GUPS.match(line)
            if g:
                gups[section] = float(g.group(1))
        elif section == "PTRANS":
            w = _WALL.match(line)
            if w:
                wall.append(float(w.group(3)))
        elif section == "HPL":
            h = _HPL.match(line)
            if h:
                passed = any("PASSED" in x for x in lines[i + 1:i + 4])
                hpl.append({"tv": h.group(1), "N": int(h.group(2)), "NB": int(h.group(3)), "P": int(h.group(4)),
                            "Q": int(h.group(5)), "time_s": float(h.group(6)), "gflops": float(h.group(7)),
                            "passed": passed})
        elif section == "LatencyBandwidth":
            if (j := _MAJOR.match(line)):
                value = float(j.group(2))
                key = re.sub(r"\s+", "_", j.group(1).lower())
                major[key + ("_us" if j.group(3) == "msecs" else "_GBs")] = value * 1000.0 if j.group(3) == "msecs" \
                    else value / 1000.0
            if line.startswith("Detailed benchmark results:"):
                in_detailed = True
            if not in_detailed:
                continue
            p = _PP.match(line)
            if p:
                vals = [float(x) for x in p.groups()[1:]]
                if p.group(1) == "Latency":
                    detailed["pingpong_latency_us"] = [v * 1000.0 for v in vals]
                else:
                    detailed["pingpong_bandwidth_GBs"] = [v / 1000.0 for v in vals]
            g = _RING.search(line)
            if g:
                ring = "natural_ring" if g.group(1) == "naturally" else "random_ring"
                detailed[ring] = {"latency_us": float(g.group(2)) * 1000.0, "bandwidth_GBs": float(g.group(3)) / 1000.0}
    found = {"random_access_body_GUPs": gups, "ptrans_wall_GBs": wall, "hpl": hpl,
             "latency_bandwidth": detailed, "major_results": major, "hpl_input": echo}
    r.details.update({k: v for k, v in found.items() if v})
