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


# `make test` runs two pytest-xdist workers (-n 2 --dist loadgroup): most of the suite waits on
# ibsim, OpenSM, sshd or MPI, and a second worker fills that time. A file is one unit (its module
# fixtures - an OpenSM build, a fabric, a campaign - are made once, its tests keep their order);
# the tests of one sshd or Slurm share a unit (one of each per run). Units with real daemons or
# slow work go first, so the last unit to start is a short one and neither worker idles long.
SERVICES = {"sshd", "slurm"}
HEAVY = {"ibsim", "ssh", "slurm", "slow"}


def pytest_collection_modifyitems(config, items):
    group = {}
    for item in items:
        group[item] = "services" if SERVICES & set(item.fixturenames) else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group[item]))
    heavy = {group[i] for i in items if HEAVY & {m.name for m in i.iter_markers()}}
    items.sort(key=lambda i: group[i] not in heavy)
