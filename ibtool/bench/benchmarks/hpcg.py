"""HPCG 3.1: hpcg.dat from a template, `xhpcg`, HPCG-Benchmark_3.1_*.txt parsed.

HPCG reads ./hpcg.dat. Without it, it silently runs a 16^3 QuickPath problem, exit 0, "VALID".
The result file is written only on completion; a killed run leaves only the rank-0 log.
"""

from __future__ import annotations

from ibtool.bench.benchmarks.base import Benchmark, Figure, ParseResult, RunFiles
from ibtool.errors import InputError
from ibtool.bench.registry import BENCHMARKS
from ibtool.templating import render

RESULT_GLOB = "HPCG-Benchmark_*.txt"
LOG_GLOB = "hpcg*T*.txt"
RATING = "Final Summary::HPCG result is VALID with a GFLOP/s rating of"
QUICKPATH = "Final Summary::You have selected the QuickPath option"

# result key -> (metric, unit, factor)
KEYS = {
    RATING: ("gflops", "Gflop/s", 1.0),
    "GB/s Summary::Total with convergence and optimization phase overhead": ("bandwidth", "GB/s", 1.0),
    "GFLOP/s Summary::Raw DDOT": ("ddot_gflops", "Gflop/s", 1.0),
    "DDOT Timing Variations::Min DDOT MPI_Allreduce time": ("allreduce_time_min", "s", 1.0),
    "DDOT Timing Variations::Max DDOT MPI_Allreduce time": ("allreduce_time_max", "s", 1.0),
    "DDOT Timing Variations::Avg DDOT MPI_Allreduce time": ("allreduce_time_avg", "s", 1.0),
    "Final Summary::Results are valid but execution time (sec) is": ("execution_time", "s", 1.0),
    "Final Summary::HPCG 2.4 rating for historical reasons is": ("hpcg24_gflops", "Gflop/s", 1.0),
}
PARAMS = {
    "Machine Summary::Distributed Processes": "nprocs",
    "Machine Summary::Threads per processes": "threads",
    "Processor Dimensions::npx": "npx", "Processor Dimensions::npy": "npy", "Processor Dimensions::npz": "npz",
    "Local Domain Dimensions::nx": "nx", "Local Domain Dimensions::ny": "ny", "Local Domain Dimensions::nz": "nz",
    "Global Problem Dimensions::Global nx": "global_nx", "Global Problem Dimensions::Global ny": "global_ny",
    "Global Problem Dimensions::Global nz": "global_nz",
    "Iteration Count Information::Total number of optimized iterations": "optimized_iterations",
}


def read_hpcg_dat(text: str) -> dict:
    lines = text.splitlines()
    try:
        nx, ny, nz = (int(x) for x in lines[2].split()[:3])
        return {"nx": nx, "ny": ny, "nz": nz, "rt": int(float(lines[3].split()[0]))}
    except (IndexError, ValueError):
        return {}


@BENCHMARKS.register("hpcg")
class HPCG(Benchmark):
    """HPCG: conjugate-gradient GFLOP/s rating and the DDOT MPI_Allreduce time (min/avg/max).
    Parameters: nx, ny, nz (local box per rank, multiples of 8, >= 16), rt (seconds; 0 = QuickPath)."""

    defaults = {"nx": 16, "ny": 16, "nz": 16, "rt": 0}
    default_binary = "xhpcg"
    collect = (RESULT_GLOB, LOG_GLOB)
    figures = (
        Figure("hpcg_gflops", "HPCG GFLOP/s rating", "gflops", "Gflop/s"),
        Figure("hpcg_allreduce", "HPCG DDOT MPI_Allreduce time (total)", "allreduce_time_avg", "s",
               ("allreduce_time_min", "allreduce_time_max")),
    )
    expect = {"gflops": {"min": 1e-9}}

    def check(self, nprocs: int) -> None:
        dims = [self.params[k] for k in ("nx", "ny", "nz")]
        if any(d < 16 or d % 8 for d in dims):
            raise InputError(f"hpcg: nx, ny, nz must be >= 16 and multiples of 8 (got {dims})")
        if min(dims) / max(dims) < 0.125:
            raise InputError(f"hpcg: local box {dims} too flat: min/max must be >= 0.125")

    def inputs(self, nprocs: int) -> dict[str, str]:
        return {"hpcg.dat": render("bench/hpcg.dat.j2", **self.params)}

    @classmethod
    def parse(cls, files: RunFiles, request: dict | None = None) -> ParseResult:
        r = ParseResult("hpcg")
        results = files.glob(RESULT_GLOB)
        logs = files.glob(LOG_GLOB)
        if len(results) > 1:
            r.warnings.append(f"{len(results)} result files; the newest ({results[-1].name}) is parsed")
        if not results:
            log = logs[-1].read_text(errors="replace") if logs else ""
            bad = [ln for ln in log.splitlines() if "are invalid" in ln or "ERROR" in ln.upper()]
            if bad:
                r.fail(f"HPCG rejected its input: {bad[0].strip()}")
            elif logs:
                last = log.strip().splitlines()[-1] if log.strip() else "(empty)"
                r.fail(f"no {RESULT_GLOB} result file; the log {logs[-1].name} ends at '{last}' "
                       "(run killed or crashed before completion)")
            else:
                r.fail(f"no {RESULT_GLOB} result file and no HPCG log: HPCG did not run")
            r.check_exit(files.exit_code, files.stderr)
            return r
        kv, at = {}, {}
        for i, line in enumerate(results[-1].read_text(errors="replace").splitlines(), 1):
            k, sep, v = line.partition("=")
            if sep:
                kv[k], at[k] = v, i
        for key, (name, unit, factor) in KEYS.items():
            if key in kv and (v := r.number(f"{results[-1].name}:{at[key]} {key}", kv[key])) is not None:
                r.metric(name, v * factor, unit)
        for key, name in PARAMS.items():
            if key in kv and (v := r.number(f"{results[-1].name}:{at[key]} {key}", kv[key])) is not None:
                r.params[name] = int(v)
        r.params["quickpath"] = QUICKPATH in kv
        checks = {k.rsplit("::", 1)[0]: v for k, v in kv.items() if k.endswith("::Result")}
        r.details["checks"] = checks
        if "Final Summary::HPCG result is" in kv and kv["Final Summary::HPCG result is"].startswith("INVALID"):
            r.invalid("HPCG reports its result INVALID")
        elif RATING not in kv:
            r.fail("no GFLOP/s rating in the result file")
        for name, result in checks.items():
            if result != "PASSED":
                r.invalid(f"{name}: {result}")
        r.check_exit(files.exit_code, files.stderr)
        cls._compare(r, files, request)
        return r

    @staticmethod
    def _compare(r: ParseResult, files: RunFiles, request: dict | None) -> None:
        got = {k: r.params.get(k) for k in ("nx", "ny", "nz")}
        if request:
            want = {k: request[k] for k in ("nx", "ny", "nz") if k in request}
            if want and want != got:
                r.invalid(f"HPCG ran local dimensions {got}, not the requested {want}")
            if request.get("rt", 0) > 0 and r.params["quickpath"]:
                r.invalid(f"HPCG ran QuickPath although rt={request['rt']} was requested (input not read)")
            if "nprocs" in request and r.params.get("nprocs") not in (None, request["nprocs"]):
                r.invalid(f"HPCG ran on {r.params['nprocs']} processes, not {request['nprocs']}")
            return
        dat = files.text("hpcg.dat")
        if dat is None:
            if r.params["quickpath"] and set(got.values()) == {16}:
                r.invalid("no hpcg.dat in the run directory and HPCG reports its built-in default "
                          "(16x16x16, QuickPath): the input file was not read")
            else:
                r.warnings.append("no hpcg.dat beside the result: requested dimensions unknown")
            return
        want = read_hpcg_dat(dat)
        want_dims = {k: want[k] for k in ("nx", "ny", "nz")} if want else {}
        if want_dims and want_dims != got:
            r.invalid(f"HPCG ran local dimensions {got}, not those of hpcg.dat {want_dims}")
        if want and want["rt"] > 0 and r.params["quickpath"]:
            r.warnings.append(f"hpcg.dat asks for rt={want['rt']} s but HPCG ran QuickPath "
                              "(command-line --rt=0 overrides hpcg.dat)")
