import signal
import sys
from pathlib import Path

import pytest

# A suite started in the background (`nohup make test &`, `&` in a CI script) inherits SIGINT
# ignored, and so would every ibtool it starts (Python keeps an ignored SIGINT ignored): the Ctrl-C
# tests need it delivered. A handler here is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

sys.path.insert(0, str(Path(__file__).parent))  # for `from support import ...`
from support import ibtool  # noqa: E402


@pytest.fixture
def run_ibtool():
    return ibtool


# `make test` runs two pytest-xdist workers (-n 2 --dist loadfile): most of the suite waits on
# ibsim, OpenSM, sshd or MPI, and a second worker fills that time. A file is one unit (its module
# fixtures - an OpenSM build, a fabric, a campaign - are made once, its tests keep their order);
# the files of the session's sshd and Slurm are one unit (one of each per run). Files with real
# daemons or slow work go first, so the last unit to start is a short one and neither worker idles
# long. (Not xdist_group marks: with pytest 9 xdist 3.8's loadgroup no longer sees them.)
SERVICES = {"tests/bench/test_trust.py", "tests/bench/test_ssh.py", "tests/bench/test_slurm.py"}
HEAVY = {"ibsim", "ssh", "slurm", "slow"}


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Units(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return "services" if path in SERVICES else path
    return Units(config, log)


def pytest_collection_modifyitems(config, items):
    def unit(item) -> str:
        path = item.nodeid.split("::")[0]
        return "services" if path in SERVICES else path
    heavy = {unit(i) for i in items if HEAVY & {m.name for m in i.iter_markers()}}
    items.sort(key=lambda i: unit(i) not in heavy)
