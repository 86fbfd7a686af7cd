import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # for `from limits import ...`, `from mutate import ...`
from limits import bounded_memory  # noqa: E402,F401  (a fixture)
