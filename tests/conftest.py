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
