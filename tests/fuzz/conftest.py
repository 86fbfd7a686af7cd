import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # for `from limits import ...`, `from mutate import ...`
from limits import bounded_memory  # noqa: F401  (a fixture)
