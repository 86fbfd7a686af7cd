"""What a runner gets (a Job) and gives back (an Outcome), and the local transport.

A *transport* runs a shell command on one machine and moves files there and back (``Local``
here, ``SSH`` in ssh.py). A *runner* (registered with ``@RUNNERS.register``) turns a Job into
an Outcome with transports: stage the input files, launch, wait, collect.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ibtool import children
from ibtool.errors import EnvironmentProblem


@dataclass
class Job:
    run_id: str
    hosts: list  # inventory Hosts taking part, launch host first
    files: dict[str, str]  # input files to stage in the run directory
    argv: list[str]  # the launch command (launcher + benchmark)
    env: dict[str, str]  # environment of the launch command
    collect: tuple[str, ...]  # globs of output files to bring back
    timeout: float
    nprocs: int
    remote_dir: str = ""
    marker: str = ""  # IBTOOL_RUN=<campaign id>/<run id>: in the environment of every process of the run
    array: list[int] = field(default_factory=list)  # Slurm: the tasks of a job array (SLURM_ARRAY_TASK_ID)


MARK = "IBTOOL_RUN"

# Processes whose environment holds MARK=<prefix>...: listed, sent TERM, then KILL, then listed again.
# grep -z reads /proc/PID/environ as NUL-separated lines: one process for the whole scan.
_ENDS = r"""m={pattern}
pids() {{ grep -lzs -- "$m" /proc/[0-9]*/environ 2>/dev/null | sed 's,^/proc/,,;s,/environ$,,' | tr '\n' ' '; }}
what() {{ for p in $1; do printf '%s(%s) ' "$p" "$(cat /proc/$p/comm 2>/dev/null)"; done; }}
p=$(pids); [ -z "$p" ] && exit 0
echo "found: $(what "$p")"
[ {kill} = 1 ] || exit 1
kill -TERM $p 2>/dev/null
for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.3; p=$(pids); [ -z "$p" ] && exit 0; done
kill -KILL $p 2>/dev/null; sleep 0.5; p=$(pids); [ -z "$p" ] && exit 0
echo "still alive: $(what "$p")"; exit 1
"""


def end_processes(t: "Transport", prefix: str, kill: bool = True) -> tuple[str | None, str | None]:
    """End every process on `t`'s machine whose environment carries MARK=`prefix`...; verified.
    Returns (what was found, what is still alive): None for none. kill=False only looks."""
    script = _ENDS.format(pattern=shlex.quote(f"^{MARK}={prefix}"), kill=1 if kill else 0)
    rc, out, err = t.run(script, 60)
    lines = [ln for ln in (out + err).strip().splitlines() if ln]
    found = next((ln[len("found: "):].strip() for ln in lines if ln.startswith("found: ")), None)
    if rc == 0:
        return found, None
    left = next((ln[len("still alive: "):].strip() for ln in lines if ln.startswith("still alive: ")), None)
    return found, left or found or (lines[-1] if lines else f"exit {rc}")


@dataclass
class Outcome:
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    error: str | None = None  # the runner could not do its part (host unreachable, job lost ...)
    command: str = ""  # the exact command line, as run (inside the watcher: `watched`)
    info: dict = field(default_factory=dict)


def shell_command(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None,
                  timeout: float | None = None) -> str:
    """One POSIX shell line; every argument quoted with shlex.quote."""
    parts = []
    if cwd:
        parts.append(f"cd {shlex.quote(cwd)} &&")
    if timeout:
        parts.append(f"exec timeout --kill-after=10 {int(timeout)}")
    if env:
        parts.append("env " + " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items())))
    parts.append(" ".join(shlex.quote(a) for a in argv))
    return " ".join(parts)


# A job's command, made to end with the ibtool that started it. ibtool holds the job's stdin open
# and never writes to it (an SSH channel's stdin, the local transport's pipe), so the watcher's read
# sees EOF only when ibtool is gone (kill -9 included) or its SSH connection is lost; it then sends
# TERM to the job's process group: the launcher (mpirun, which ends its remote daemons and ranks on
# TERM), `timeout` and the local ranks. Without it a kill -9 left the ranks running until the job's
# timeout; the next start of the campaign ended them (guarded). `setsid` gives the job a group of
# its own (an asynchronous command of `sh -c` is no group leader, so setsid does not fork and $! is
# the job; no `-w`, which util-linux before 2.24 lacks); its stdin is /dev/null (mpirun forwards
# stdin to rank 0); the watcher holds none of the job's output open, so it cannot delay the end.
_WATCHED = ("exec 3<&0; setsid /bin/sh -c {job} </dev/null & j=$!; "
            "{{ while read -r _ <&3; do :; done; kill -TERM -$j; }} </dev/null >/dev/null 2>&1 & w=$!; "
            "wait $j; rc=$?; kill $w 2>/dev/null; exit $rc")


def watched(command: str) -> str:
    """`command` (a POSIX shell line) as a job that ends when ibtool does (see _WATCHED)."""
    return "exec /bin/sh -c " + shlex.quote(_WATCHED.format(job=shlex.quote(command)))


class Transport:
    """Run commands on one machine and move files there and back. The command's stdin stays open,
    never written, until it ends (so a `watched` job sees ibtool's end)."""

    label = "?"

    def run(self, command: str, timeout: float) -> tuple[int | None, str, str]:
        raise NotImplementedError

    def put(self, path: str, data: str | bytes) -> None:
        raise NotImplementedError

    def get(self, path: str) -> bytes:
        raise NotImplementedError

    def listdir(self, path: str) -> list[str]:
        raise NotImplementedError

    def mkdirs(self, path: str) -> None:
        rc, _, err = self.run(f"mkdir -p {shlex.quote(path)}", 30)
        if rc != 0:
            raise EnvironmentProblem(f"{self.label}: cannot create {path}: {err.strip()}")

    def collect(self, directory: str, globs: tuple[str, ...]) -> dict[str, bytes]:
        names = self.listdir(directory)
        return {n: self.get(f"{directory}/{n}") for n in sorted(names) if any(fnmatch.fnmatch(n, g) for g in globs)}

    def close(self) -> None:
        pass


class Local(Transport):
    label = "local"

    def run(self, command: str, timeout: float) -> tuple[int | None, str, str]:
        # stdin: a pipe whose write end only ibtool holds (close-on-exec): EOF when ibtool ends, as
        # an SSH channel's (communicate() would close a stdin=PIPE at once); closed first when the
        # command is stopped, so that a `watched` job in its own session ends too
        held, keep = os.pipe()
        try:
            p = children.popen(["/bin/sh", "-c", command], stdin=held, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        except BaseException:
            os.close(keep)
            raise
        finally:
            os.close(held)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.close(keep)
            children.stop(p)
            out, err = p.communicate()
            return None, out.decode(errors="replace"), err.decode(errors="replace")
        except BaseException:  # Ctrl-C / SIGTERM: the child is in its own session and did not get it
            os.close(keep)
            children.stop(p)
            raise
        os.close(keep)
        return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    def put(self, path: str, data: str | bytes) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data.encode() if isinstance(data, str) else data)

    def get(self, path: str) -> bytes:
        return Path(path).read_bytes()

    def listdir(self, path: str) -> list[str]:
        return [p.name for p in Path(path).iterdir() if p.is_file()]


PROBE = "uname -srvm; hostname; {exe} --version 2>&1 | head -n 2"


def probe(t: Transport, launcher: str) -> dict:
    """What the launch host runs: kernel, host name, the MPI launcher's version (no environment dump:
    it could hold secrets)."""
    try:
        rc, out, _ = t.run(PROBE.format(exe=shlex.quote(launcher)), 30)
    except (EnvironmentProblem, OSError) as e:
        return {"error": str(e)}
    lines = out.strip().splitlines()
    return {"uname": lines[0] if lines else "", "hostname": lines[1] if len(lines) > 1 else "",
            "launcher_version": " ".join(lines[2:])}


class Runner:
    """Base of the registered runners. `inventory` is the loaded Inventory."""

    name = "?"

    def __init__(self, inventory):
        self.inv = inventory
        self._probed: dict = {}

    def remote_environment(self, t: Transport, key: str, launcher: str) -> dict:
        """probe() once per launch host and launcher for the whole campaign."""
        if (key, launcher) not in self._probed:
            self._probed[(key, launcher)] = probe(t, launcher)
        return self._probed[(key, launcher)]

    def transport(self, host) -> Transport:
        """A transport to `host` (an inventory Host), or the local machine for None."""
        return Local()

    def execute(self, job: Job) -> Outcome:
        raise NotImplementedError

    def guarded(self, job: Job, launch) -> Outcome:
        """Run `launch()` (-> Outcome) with no process of an earlier run of this campaign alive on
        the job's hosts before, and none of this run after: on success, timeout, error, Ctrl-C or
        SIGTERM the run's processes are ended on every host (TERM, KILL, checked again)."""
        if not job.marker:
            return launch()
        campaign = job.marker.split("/", 1)[0] + "/"
        stale, left = self._ends(job, campaign)
        if left:
            return Outcome(None, error="processes of an earlier run are still alive, not starting: " + left)
        try:
            outcome = launch()
        except BaseException:
            self._ends(job, job.marker)
            raise
        if stale:
            outcome.info["ended_before_start"] = stale  # left behind by an earlier run (ibtool killed hard)
        ended, left = self._ends(job, job.marker)
        if ended:
            outcome.info["ended_after"] = ended
        if left:
            outcome.error = "; ".join(filter(None, [outcome.error, "processes of the run could not be ended: "
                                                    + left]))
        return outcome

    def _ends(self, job: Job, prefix: str) -> tuple[str | None, str | None]:
        """End the marked processes on every host of the job: (found, still alive), by host."""
        found, left = [], []
        for h in job.hosts:
            try:
                f, lv = end_processes(self.transport(h), prefix)
            except (EnvironmentProblem, OSError) as e:
                f, lv = None, f"cannot check: {e}"
            if f:
                found.append(f"{h.name}: {f}")
            if lv:
                left.append(f"{h.name}: {lv}")
        return "; ".join(found) or None, "; ".join(left) or None

    def describe(self) -> dict:
        return {"runner": self.name}

    def close(self) -> None:
        pass
