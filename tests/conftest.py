import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # for `from support import ...`
from support import ibtool  # noqa: E402


@pytest.fixture
def run_ibtool():
    return ibtool
