"""The slurm runner: a batch script from templates/bench/slurm_job.sh.j2, sbatch, polling, collection.

Slurm commands run on this machine, or on a login node over SSH (``slurm.login``). The run
directory (under ``workdir``) must be on a filesystem the compute nodes share with that machine.
The job script records the launch command's exit code in exit_code.txt; if the job dies before
that, the state and exit code come from ``scontrol show job`` or ``sacct``.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import time

from ibtool.bench.registry import RUNNERS
from ibtool.bench.runners.base import MARK, Job, Outcome, Runner, shell_command
from ibtool.bench.runners.ssh import SSHPool
from ibtool.errors import EnvironmentProblem
from ibtool.templating import render

OUTPUTS = ("stdout.txt", "stderr.txt", "exit_code.txt", "environment.txt", "slurm-*.out", "slurm-*.err")
TASK_OUTPUTS = ("stdout-*.txt", "stderr-*.txt", "exit_code-*.txt", "environment-*.txt")  # a job array's
DONE_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
               "BOOT_FAIL", "DEADLINE"}


def job_script(job: Job, options: list[str], run_env: dict[str, str]) -> str:
    names = [h.name for h in job.hosts]
    for n in names:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", n):
            raise EnvironmentProblem(f"host name {n!r} cannot be a Slurm node name")
    command = shell_command(job.argv)
    return render(
        "bench/slurm_job.sh.j2", job_name=f"ibtool-{job.run_id}"[:64], nprocs=job.nprocs, nnodes=len(names), nodelist=",".join(names),
        minutes=max(1, int(job.timeout // 60) + 1), directory=job.remote_dir,
        directory_q=shlex.quote(job.remote_dir), options=options, run_id=job.run_id,
        array=",".join(str(t) for t in job.array),
        comment=f"{MARK}={job.marker}" if job.marker else "",
        env=[(k, shlex.quote(v)) for k, v in sorted(run_env.items())], command=command)


@RUNNERS.register("slurm")
class SlurmRunner(Runner):
    """sbatch a job script per run, poll squeue until it leaves the queue, collect its files."""

    def __init__(self, inventory):
        super().__init__(inventory)
        self.cfg = inventory.slurm
        self.pool = SSHPool(inventory)
        login = self.cfg.get("login")
        self.login = self.pool.get(inventory.host(login)) if login else super().transport(None)

    def transport(self, host):
        return self.pool.get(host) if host is not None else super().transport(None)

    def _slurm(self, argv: list[str], cwd: str | None = None, timeout: float = 60) -> tuple[int | None, str, str]:
        return self.login.run(shell_command(argv, self.cfg["env"], cwd), timeout)

    def execute(self, job: Job) -> Outcome:
        t = self.login
        d = job.remote_dir
        script = job_script(job, self.cfg["options"], job.env)
        try:
            stale, left = self._end_stale(job)
            if left:
                return Outcome(None, error=f"Slurm jobs of an earlier run are still in the queue, not starting: {left}",
                               command=script)
            t.mkdirs(d)
            for name, text in {**job.files, "job.sh": script}.items():
                t.put(posixpath.join(d, name), text)
            rc, out, err = self._slurm([self.cfg["sbatch"], "--parsable", "job.sh"], cwd=d)
        except EnvironmentProblem as e:
            return Outcome(None, error=str(e), command=script)
        if rc != 0 or not out.strip():
            return Outcome(None, error=f"sbatch failed (exit {rc}): {(err or out).strip()}", command=script)
        job_id = out.strip().split(";")[0]
        info = {"slurm_job_id": job_id, "remote_dir": d}
        if stale:
            info["ended_before_start"] = stale  # left queued or running by an ibtool killed hard
        try:
            state = self._wait(job_id, job.timeout * 2 + 3600)
        except BaseException:  # Ctrl-C / SIGTERM: the job must not outlive the campaign
            self._slurm([self.cfg["scancel"], job_id])
            raise
        info["slurm_state"] = state
        try:
            files = t.collect(d, tuple(job.collect) + OUTPUTS + (TASK_OUTPUTS if job.array else ()))
        except (EnvironmentProblem, OSError) as e:
            return Outcome(None, error=f"cannot collect the outputs of job {job_id}: {e}", command=script, info=info)
        if job.array:
            return self._array_outcome(job, job_id, state, files, script, info)
        stdout = files.pop("stdout.txt", b"").decode(errors="replace")
        stderr = files.pop("stderr.txt", b"").decode(errors="replace")
        code = files.pop("exit_code.txt", b"").decode().strip()
        info["remote_environment"] = files.get("environment.txt", b"").decode(errors="replace").strip().splitlines()
        exit_code = int(code) if code.lstrip("-").isdigit() else None
        error = None
        if exit_code is None:
            exit_code = self._exit_code(job_id)
            error = (f"job {job_id} ended ({state}) before the launch command finished"
                     if state != "TIMEOUT" else f"job {job_id} hit its time limit")
        return Outcome(exit_code, stdout, stderr, files, error, script, info)

    def _array_outcome(self, job: Job, job_id: str, state: str, files: dict, script: str, info: dict) -> Outcome:
        """A job array's outcome: exit 0 when every task's command exited 0, else the first task's
        that did not (a task without an exit code ended before its command did)."""
        out, err, codes = [], [], {}
        for task in job.array:
            code = files.pop(f"exit_code-{task}.txt", b"").decode().strip()
            codes[task] = int(code) if code.lstrip("-").isdigit() else None
            out.append(files.pop(f"stdout-{task}.txt", b"").decode(errors="replace"))
            err.append(files.pop(f"stderr-{task}.txt", b"").decode(errors="replace"))
        info["tasks"] = {str(k): v for k, v in codes.items()}
        bad = [k for k, v in codes.items() if v != 0]
        error = None
        if any(codes[k] is None for k in bad):
            k = next(k for k in bad if codes[k] is None)
            error = f"task {k} of job array {job_id} ended ({state}) before its command finished"
        exit_code = 0 if not bad else (codes[bad[0]] if codes[bad[0]] is not None else self._exit_code(job_id))
        return Outcome(exit_code, "".join(out), "".join(err), files, error, script, info)

    def _end_stale(self, job: Job) -> tuple[str | None, str | None]:
        """Cancel this campaign's jobs still in the queue (their comment carries the campaign's mark:
        an ibtool killed with -9 cannot scancel its job, and Slurm runs it to its time limit), and
        wait until they leave it: (what was cancelled, what is still there)."""
        if not job.marker:
            return None, None
        prefix = f"{MARK}={job.marker.split('/', 1)[0]}/"

        def queued() -> list[str]:
            rc, out, err = self._slurm([self.cfg["squeue"], "-h", "-o", "%i %k"])  # job id, comment
            if rc != 0:
                raise EnvironmentProblem(f"squeue failed (exit {rc}): {(err or out).strip()}")
            jobs = (ln.strip().partition(" ") for ln in out.splitlines())
            return [job_id for job_id, _, comment in jobs if comment.startswith(prefix)]
        ids = queued()
        if not ids:
            return None, None
        self._slurm([self.cfg["scancel"], *ids])
        deadline = time.monotonic() + 60
        while (left := queued()) and time.monotonic() < deadline:
            time.sleep(self.cfg["poll"])
        return "Slurm job " + ", ".join(ids), ("Slurm job " + ", ".join(left)) if left else None

    def _wait(self, job_id: str, limit: float) -> str:
        deadline = time.monotonic() + limit
        state = "PENDING"
        while time.monotonic() < deadline:
            rc, out, err = self._slurm([self.cfg["squeue"], "-h", "-j", job_id, "-o", "%T"])
            now = out.strip()
            if rc == 0 and not now or "Invalid job id" in err:
                return self._final_state(job_id) or state
            if now:
                state = now.splitlines()[0]
                if state in DONE_STATES:
                    return state
            time.sleep(self.cfg["poll"])
        self._slurm([self.cfg["scancel"], job_id])
        return "TIMEOUT (cancelled by ibtool)"

    def _show(self, job_id: str) -> dict:
        rc, out, _ = self._slurm([self.cfg["scontrol"], "show", "job", job_id])
        if rc == 0 and out:
            return dict(re.findall(r"(\w+)=(\S+)", out))
        rc, out, _ = self._slurm([self.cfg["sacct"], "-j", job_id, "-n", "-P", "-X", "-o", "State,ExitCode"])
        if rc == 0 and out.strip():
            st, _, ec = out.strip().splitlines()[0].partition("|")
            return {"JobState": st.split()[0], "ExitCode": ec}
        return {}

    def _final_state(self, job_id: str) -> str | None:
        return self._show(job_id).get("JobState")

    def _exit_code(self, job_id: str) -> int | None:
        ec = self._show(job_id).get("ExitCode", "")
        code, _, sig = ec.partition(":")
        if code.isdigit():
            return int(code) if int(code) or not sig.isdigit() or not int(sig) else 128 + int(sig)
        return None

    def describe(self) -> dict:
        return {"runner": self.name, "login": self.cfg.get("login") or "local", "options": self.cfg["options"]}

    def close(self) -> None:
        self.pool.close()
