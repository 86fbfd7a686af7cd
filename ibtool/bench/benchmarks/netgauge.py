"""Netgauge 2.4.6: effective bisection bandwidth (ebb) and the 1toN / Nto1 congestion patterns.

``netgauge [global opts] -x <pattern> [pattern opts] -m mpi``; rank 0 prints everything on stdout.
The "MiB/s" netgauge prints is bytes per microsecond, i.e. 10^6 B/s: it is converted to GB/s
(10^9 B/s) here. 1toN/Nto1 bandwidths are Mbit/s, also converted to GB/s.
"""

from __future__ import annotations

import re

from ibtool.bench.benchmarks.base import Benchmark, Figure, ParseResult, RunFiles
from ibtool.bench.registry import BENCHMARKS
from ibtool.errors import InputError

_F = r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
_HEADER = re.compile(r"Netgauge (v[\d.]+) MPI enabled \(P=(\d+).*?\((.*)\)\s*$")
_ROUND = re.compile(rf"^size: (\d+), round (\d+): num: (\d+) average: {_F} us \({_F} MiB/s\)")
_BUCKET = re.compile(rf"^size: (\d+) {_F} \({_F} MiB/s\): (\d+)\s*$")
_EBB = re.compile(rf"^size: (\d+) num: (\d+) average: {_F} \({_F} MiB/s\)")
_SIMPLE = re.compile(rf"^(\d+) bytes\s+-> {_F} us\s+== {_F} Mbit/s")
_GROUP4 = rf"{_F} {_F} {_F} {_F}(?: \({_F} (\d+)\))?"
_TABLE = re.compile(rf"^(\d+) - {_GROUP4} - {_GROUP4} - {_F} {_F} {_F} {_F}\s*$")

MBS = 1e-3  # 10^6 B/s -> GB/s
MBITS = 1.0 / 8000.0  # Mbit/s -> GB/s
PATTERNS = ("ebb", "1toN", "Nto1")


@BENCHMARKS.register("netgauge")
class Netgauge(Benchmark):
    """Netgauge: effective bisection bandwidth (pattern ebb: random bisections, -r rounds of -n
    messages) or 1toN/Nto1 congestion. Parameters: pattern, sizes ("MIN-MAX" bytes), rounds, reps,
    buckets (ebb)."""

    defaults = {"pattern": "ebb", "sizes": "1048576-1048576", "rounds": 20, "reps": 10, "buckets": 1}
    default_binary = "netgauge"
    figures = (
        Figure("netgauge_ebb", "Netgauge effective bisection bandwidth", "ebb_bandwidth", "GB/s",
               ("ebb_round_bandwidth_min", "ebb_round_bandwidth_max")),
        Figure("netgauge_1toN", "Netgauge 1toN bandwidth (largest size)", "1toN_bandwidth", "GB/s"),
        Figure("netgauge_Nto1", "Netgauge Nto1 bandwidth (largest size)", "Nto1_bandwidth", "GB/s"),
    )
    expect = {"ebb_bandwidth": {"min": 1e-9, "max": 1000.0}}

    def check(self, nprocs: int) -> None:
        if self.params["pattern"] not in PATTERNS:
            raise InputError(f"netgauge: pattern must be one of {', '.join(PATTERNS)}")
        if not re.fullmatch(r"\d+-\d+", str(self.params["sizes"])):
            raise InputError("netgauge: sizes must be MIN-MAX in bytes, e.g. 1048576-1048576")
        if self.params["pattern"] == "ebb" and nprocs % 2:
            raise InputError(f"netgauge ebb needs an even number of ranks, not {nprocs}")

    def command(self) -> list[str]:
        p = self.params
        argv = [self.binary, "-s", str(p["sizes"]), "-x", p["pattern"]]
        if p["pattern"] == "ebb":
            argv += ["-r", str(p["rounds"]), "-n", str(p["reps"]), "-b", str(p["buckets"])]
        return argv + ["-m", "mpi"]

    @classmethod
    def parse(cls, files: RunFiles, request: dict | None = None) -> ParseResult:
        r = ParseResult("netgauge")
        out, err = files.stdout, files.stderr
        if re.search(r"\d{4000}", out):  # int() refuses such a number: a corrupted output, not a crash
            r.fail("stdout holds a number of over 4000 digits (corrupted output)")
            return r
        pattern = None
        rounds, buckets, ebb, table = [], [], [], []
        for line in out.splitlines():
            m = _HEADER.search(line)
            if m:
                r.params["version"] = m.group(1)
                r.params["nprocs"] = int(m.group(2))
                x = re.search(r"-x (\S+)", m.group(3))
                pattern = x.group(1) if x else None
                continue
            if (m := _ROUND.match(line)):
                rounds.append({"size": int(m.group(1)), "round": int(m.group(2)), "num": int(m.group(3)),
                               "time_us": float(m.group(4)), "bandwidth_GBs": float(m.group(5)) * MBS})
            elif (m := _EBB.match(line)):
                ebb.append({"size": int(m.group(1)), "num": int(m.group(2)), "time_us": float(m.group(3)),
                            "bandwidth_GBs": float(m.group(4)) * MBS})
            elif (m := _BUCKET.match(line)):
                buckets.append({"size": int(m.group(1)), "lower_us": float(m.group(2)),
                                "bandwidth_GBs": float(m.group(3)) * MBS, "count": int(m.group(4))})
            elif (m := _SIMPLE.match(line)):
                table.append({"size": int(m.group(1)), "latency_med_us": float(m.group(2)),
                              "bandwidth_med_GBs": float(m.group(3)) * MBITS})
            elif (m := _TABLE.match(line)):
                g = m.groups()
                row = {"size": int(g[0])}
                for i, stat in enumerate(("min", "avg", "med", "max")):
                    row[f"blocking_{stat}_us"] = float(g[1 + i])
                    row[f"latency_{stat}_us"] = float(g[7 + i])
                    row[f"bandwidth_{stat}_GBs"] = float(g[13 + i]) * MBITS
                table.append(row)
        r.params["pattern"] = pattern
        if ebb:
            r.details["ebb"] = ebb
            r.details["rounds"] = rounds
            r.details["buckets"] = buckets
            last = ebb[-1]
            r.params["size"] = last["size"]
            r.metric("ebb_bandwidth", last["bandwidth_GBs"], "GB/s")
            r.metric("ebb_time", last["time_us"], "us")
            mine = [x["bandwidth_GBs"] for x in rounds if x["size"] == last["size"]]
            if mine:
                r.metric("ebb_round_bandwidth_min", min(mine), "GB/s")
                r.metric("ebb_round_bandwidth_max", max(mine), "GB/s")
        if table:
            r.details["sizes"] = table
            last = table[-1]
            name = pattern or "pattern"
            r.params["size"] = last["size"]
            for key, val in last.items():
                if key != "size":
                    unit = "us" if key.endswith("_us") else "GB/s"
                    r.metric(f"{name}_{key.rsplit('_', 1)[0]}", val, unit)
            r.metric(f"{name}_latency", last["latency_med_us"], "us")
            r.metric(f"{name}_bandwidth", last["bandwidth_med_GBs"], "GB/s")
        if "divisible by 2" in out:
            r.fail("netgauge ebb needs an even number of ranks: 'number of nodes must be divisible by 2!'")
        if "invalid numeric value" in err or "invalid numeric value" in out:
            bad = re.search(r"invalid numeric value: (\S+)", err + out)
            r.fail(f"netgauge rejected its command line (invalid numeric value: {bad.group(1)})")
        if not ebb and not table and not r.reasons:
            r.fail("no netgauge results on stdout: the run was killed or crashed")
        elif pattern == "ebb" and rounds and not ebb and not r.reasons:
            r.fail("ebb rounds but no result line: output truncated")
        r.check_exit(files.exit_code, files.stderr)
        if request:
            if request.get("pattern") and pattern and request["pattern"] != pattern:
                r.invalid(f"netgauge ran pattern {pattern}, not {request['pattern']}")
            if request.get("nprocs") and r.params.get("nprocs") not in (None, request["nprocs"]):
                r.invalid(f"netgauge ran on {r.params['nprocs']} processes, not {request['nprocs']}")
        return r
