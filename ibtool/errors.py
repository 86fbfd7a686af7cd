"""Errors a user can act on. The CLI prints them as one line and exits with their code.

Exit codes (scripts may rely on them):
  0  success
  1  the check ran and failed (fabric differs from plan, subnet not up with the requested
     engine, a benchmark run failed)
  2  bad input or usage (malformed file, impossible parameters, unknown engine)
  3  the environment lacks something (a tool not installed, a host unreachable)
  5  NOT CHECKED: nothing failed, but a check that could have failed did not run (its reason is
     said: a missing input, deadlock freedom without the path SLs ...); never a pass
  6  out of memory: the fabric or an input (named) is too large for this machine's memory
"""

from __future__ import annotations


class IbtoolError(Exception):
    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class InputError(IbtoolError):
    """Malformed or inconsistent input: a file, a parameter, a topology."""

    exit_code = 2


class EnvironmentProblem(IbtoolError):
    """A required tool, library or host is missing or unreachable."""

    exit_code = 3


class OutOfMemory(IbtoolError):
    """A MemoryError: the fabric or the input named does not fit this machine's memory."""

    exit_code = 6


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C would be so the same cleanup runs; exit 128 + signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def raise_interrupted(signum, frame):
    """The handler ibtool installs for SIGTERM (and SIGHUP) where a run must clean up as on Ctrl-C."""
    raise Interrupted(signum)


class CheckFailed(IbtoolError):
    """The requested operation ran but its outcome is a failure."""

    exit_code = 1


class NotFamily(CheckFailed):
    """The fabric is not of the family a routing works on (hdor: a KNS, kantc: a KANTC or MiKANTC,
    equality: its link sets). `family` names the family as the message does, `reason` says why
    (naming the device at fault when there is one); the message is `ROUTING: not a FAMILY fabric:
    REASON`, or `ROUTING: CLAIM: REASON` where the routing words it otherwise."""

    def __init__(self, routing: str, family: str, reason: str, claim: str = ""):
        self.routing, self.family, self.reason = routing, family, reason
        super().__init__(f"{routing}: {claim or f'not a {family} fabric'}: {reason}")
class NotChecked(IbtoolError):
    """Nothing failed, but a check that could have failed did not run: the verdict NOT CHECKED,
    never a pass (a FAIL elsewhere wins: exit 1)."""

    exit_code = 5
