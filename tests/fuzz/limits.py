"""The bad-input suite's limits: memory (RLIMIT_AS) and time per example, and a fixed seed.

CI runs the same examples every time (derandomize, no example database): `make test` 40 % of
each test's examples, `make test-full` (IBTOOL_TESTS=full) all of them. Set IBTOOL_FUZZ_SCALE
(e.g. 10) to run that many times the full count, with a random seed, on a long local hunt.
"""

import os
import resource
import signal
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, settings
from support import FULL

HUNT = os.environ.get("IBTOOL_FUZZ_SCALE")
SCALE = float(HUNT or (1 if FULL else 0.4))
MEMORY = 2 << 30  # bytes of address space an input may make a reader use on top of the test process
SECONDS = 30  # per example; far above any seed's time, it only catches a runaway input

settings.register_profile("fuzz", derandomize=not HUNT or SCALE == 1, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much,
                                                 HealthCheck.function_scoped_fixture])


def examples(n: int) -> int:
    return max(1, int(n * SCALE))


def _vm_size() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class Runaway(Exception):
    """An input kept a reader busy for SECONDS."""


@pytest.fixture(scope="module")
def bounded_memory():
    """Cap this process' address space at what it uses now + MEMORY while the module's tests run:
    an input that makes a reader allocate more fails with MemoryError instead of eating the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_size() + MEMORY, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextmanager
def time_bound(seconds: int = SECONDS):
    def _alarm(signum, frame):
        raise Runaway(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def limit_child():
    """preexec_fn for CLI subprocesses: the same memory bound, absolute."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
