"""Run one benchmark step in a fresh process: wall time, that process's peak RSS, exit code, output.

Output goes to temporary files, not pipes, so a chatty process cannot block on a full pipe while
we wait for it (os.wait4 gives the child's own resource usage, not the sum of all children).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path


def measure(argv: list, cwd: Path | None = None, timeout: float = 3600, stdout: Path | None = None) -> dict:
    """Run argv; `stdout` keeps the output in that file instead of returning it."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err, (open(stdout, "wb") if stdout else tempfile.TemporaryFile()) as out:
        p = subprocess.Popen([str(a) for a in argv], cwd=cwd, stdout=out, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.05)
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        text = b"" if stdout else out.read()
        return {"seconds": round(wall, 2), "peak_rss_mib": round(ru.ru_maxrss / 1024, 1), "exit": p.returncode,
                "cpu_seconds": round(ru.ru_utime + ru.ru_stime, 2),  # the child's own CPU: wall minus waiting for a core
                "stdout": text.decode(errors="replace"), "stderr": err.read().decode(errors="replace")[-2000:]}
