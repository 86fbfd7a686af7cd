"""What every benchmark module provides, and the parse result they all return.

A benchmark is a small class registered with ``@BENCHMARKS.register(name)``. It knows:

* its parameters and their defaults (``defaults``), checked against the rank count (``check``);
* the input files it reads, rendered from ``templates/bench`` (``inputs``);
* its own command line, without the MPI launcher (``command``) and environment (``env``);
* which files of the run directory hold its results (``collect``);
* how to read them (``parse``): metrics with units normalised, and whether the run failed
  (did not complete) or is invalid (completed, but not the run that was asked for).

Units after parsing: times in microseconds (``us``), bandwidths in GB/s (10^9 bytes/s),
rates as the benchmark defines them (GUP/s, Gflop/s, TEPS).
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ibtool.errors import InputError

OK, FAILED, INVALID, SKIPPED = "ok", "failed", "invalid", "skipped"

EXIT_CODES = {
    124: "killed by timeout (walltime reached)",
    127: "MPI_Abort(127) or command not found",
    137: "killed (SIGKILL)",
    139: "segmentation fault",
    143: "terminated (SIGTERM)",
}

LAUNCH_ERRORS = (
    (r"(?:unable to find the specified executable file|could not access\s+or execute an executable)"
     r"[\s\S]*?Executable:\s*(\S+)",
     "the launcher did not find the benchmark binary {0} (set benchmarks.<name>.binary in the inventory)"),
    (r"execve\(\): (\S+): No such file or directory", "the benchmark binary {0} does not exist on the node"),
    (r"There are not enough slots available", "not enough MPI slots on the hosts for the requested rank count"),
)

STDOUT_NAMES = ("stdout.txt", "mpirun_stdout.txt", "output.txt")
STDERR_NAMES = ("stderr.txt", "mpirun_stderr.txt")


@dataclass
class RunFiles:
    """The files of one run: where to look (in order), and the exit code when known."""

    dirs: list[Path]
    main: Path | None = None  # the file the user named, if any
    exit_code: int | None = None

    @classmethod
    def from_path(cls, path: str | Path, exit_code: int | None = None) -> "RunFiles":
        p = Path(path)
        if p.is_dir():
            # a stored run directory: outputs/ and inputs/ hold the files, run.json the exit code
            dirs = [d for d in (p / "outputs", p / "inputs") if d.is_dir()] + [p]
            if exit_code is None and (p / "run.json").is_file():
                try:
                    exit_code = json.loads((p / "run.json").read_text()).get("exit_code")
                except (ValueError, OSError, AttributeError):
                    exit_code = None
            return cls(dirs, None, exit_code)
        if not p.is_file():
            raise InputError("not a regular file" if p.exists() else "no such file or directory", path=str(p))
        return cls([p.parent], p, exit_code)

    def path(self, *names: str) -> Path | None:
        if self.main is not None and self.main.name in names:
            return self.main
        for d in self.dirs:
            for n in names:
                if (d / n).is_file():
                    return d / n
        return None

    def text(self, *names: str) -> str | None:
        p = self.path(*names)
        return p.read_text(errors="replace") if p else None

    def glob(self, pattern: str) -> list[Path]:
        """Files matching `pattern`, newest name last (benchmarks put timestamps in names)."""
        if self.main is not None and fnmatch.fnmatch(self.main.name, pattern):
            return [self.main]
        found = {}
        for d in self.dirs:
            for p in d.glob(pattern):
                found.setdefault(p.name, p)
        return [found[k] for k in sorted(found)]

    @property
    def stdout(self) -> str:
        if self.main is not None and self.main.name not in STDERR_NAMES:
            return self.main.read_text(errors="replace")
        return self.text(*STDOUT_NAMES) or ""

    @property
    def stderr(self) -> str:
        if self.main is not None and self.main.name == "output.txt":
            return self.main.read_text(errors="replace")  # stdout and stderr merged (job log)
        return self.text(*STDERR_NAMES) or ""


@dataclass
class ParseResult:
    benchmark: str
    status: str = OK
    reasons: list[str] = field(default_factory=list)
    metrics: dict[str, dict] = field(default_factory=dict)  # name -> {"value": float, "unit": str}
    params: dict = field(default_factory=dict)  # what the benchmark says it ran
    warnings: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == OK

    def fail(self, reason: str) -> None:
        self.status = FAILED
        self.reasons.append(reason)

    def invalid(self, reason: str) -> None:
        if self.status == OK:
            self.status = INVALID
        self.reasons.append(reason)

    def metric(self, name: str, value: float, unit: str) -> None:
        # 15 significant digits: a unit conversion must not add noise digits (0.8865569999999999)
        self.metrics[name] = {"value": float(f"{value:.15g}"), "unit": unit}

    def number(self, where: str, value) -> float | None:
        """`value` as a finite float; anything else (garbled, nan, inf) fails the run naming `where`
        (FILE:LINE KEY) and gives None, so it is never stored as a figure."""
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = None
        if v is None or not math.isfinite(v):
            self.fail(f"{where}: {str(value).strip()!r} is not a finite number (corrupted output)")
            return None
        return v

    def value(self, name: str) -> float | None:
        m = self.metrics.get(name)
        return None if m is None else m["value"]

    def check_exit(self, exit_code: int | None, stderr: str = "") -> None:
        """A non-zero exit fails the run; a launcher that could not start the binary says so."""
        if exit_code not in (None, 0):
            what = EXIT_CODES.get(exit_code, "non-zero exit")
            self.fail(f"exit code {exit_code}: {what}")
        for pattern, reason in LAUNCH_ERRORS:
            m = re.search(pattern, stderr)
            if m:
                self.fail(reason.format(*m.groups()))
                return
        if exit_code not in (None, 0) and stderr.strip():
            self.fail("stderr of the launch: " + stderr_tail(stderr))

    def check_expect(self, expect: dict) -> None:
        """Plausibility bounds from the inventory, e.g. a ping-pong latency of tens of microseconds
        where InfiniBand gives 1-3: MPI silently fell back to TCP."""
        for name, b in expect.items():
            v = self.value(name)
            if v is None:
                if self.status != FAILED:  # a failed run misses metrics anyway
                    self.invalid(f"expected metric {name} is missing")
                continue
            unit = self.metrics[name]["unit"]
            if "min" in b and v < b["min"]:
                self.invalid(f"{name} = {v:g} {unit} is below the expected minimum {b['min']:g} {unit}")
            if "max" in b and v > b["max"]:
                self.invalid(f"{name} = {v:g} {unit} is above the expected maximum {b['max']:g} {unit}")

    def as_dict(self) -> dict:
        return {"benchmark": self.benchmark, "status": self.status, "ok": self.ok, "reasons": self.reasons,
                "warnings": self.warnings, "metrics": self.metrics, "params": self.params,
                "details": self.details}


def stderr_tail(text: str, lines: int = 4, chars: int = 600) -> str:
    """What a launcher said when it failed, on one line: its own lines, and only the first line of
    each of Open MPI's dashed help blocks (the rest is boilerplate advice)."""
    keep, inside, first = [], False, False
    for ln in (x.strip() for x in text.splitlines()):
        if ln and set(ln) <= set("-*="):
            inside, first = not inside, True
            continue
        if ln and (not inside or first):
            keep.append(ln)
        first = False if ln else first
    return " | ".join(keep[-lines:])[-chars:]


@dataclass
class Figure:
    """One plot of the report: metrics by engine, linear vs random side by side.

    With ``band=(min_metric, max_metric)`` the bar shows ``metric`` and the error bar spans the
    benchmark's own min..max.
    """

    name: str
    title: str
    metric: str
    unit: str
    band: tuple[str, str] | None = None


class Benchmark:
    name = "?"
    defaults: dict = {}
    collect: tuple[str, ...] = ()  # globs of output files in the run directory
    block_mapping_only = False  # True: refuses non-contiguous rank placement
    figures: tuple[Figure, ...] = ()
    # sanity bounds every run is held to (the inventory's `expect` adds to or overrides them):
    # outside them a result is absurd (ranks sharing a core, a dead link), not merely slow
    expect: dict = {}
    # text every output of the benchmark holds, even one cut short right after it started: a file
    # the user hands `bench parse` without any of it is not such an output (bad input, not a failed run)
    marks: tuple[str, ...] = ()

    def __init__(self, params: dict | None = None, binary: str | None = None):
        unknown = set(params or {}) - set(self.defaults)
        if unknown:
            raise InputError(f"benchmark {self.name}: unknown parameter(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(self.defaults))})")
        self.params = {**self.defaults, **(params or {})}
        self.binary = binary or self.default_binary

    default_binary = ""

    def check(self, nprocs: int) -> None:
        """Raise InputError if the benchmark cannot run with this many ranks and these parameters."""

    def inputs(self, nprocs: int) -> dict[str, str]:
        return {}

    def command(self) -> list[str]:
        return [self.binary]

    def env(self) -> dict[str, str]:
        return {}

    def request(self, nprocs: int) -> dict:
        """The parameters the run is asked to use, as the parser compares them."""
        return dict(self.params, nprocs=nprocs)

    @classmethod
    def parse(cls, files: RunFiles, request: dict | None = None) -> ParseResult:
        raise NotImplementedError


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0
