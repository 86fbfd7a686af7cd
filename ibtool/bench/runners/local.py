"""The local runner: everything on this machine (a workstation, or the node you are logged in to)."""

from __future__ import annotations

import posixpath

from ibtool.bench.registry import RUNNERS
from ibtool.bench.runners.base import Job, Local, Outcome, Runner, shell_command, watched


@RUNNERS.register("local")
class LocalRunner(Runner):
    """Stage the inputs in a local directory and run the launcher there."""

    def execute(self, job: Job) -> Outcome:
        t = Local()
        command = shell_command(job.argv, job.env, job.remote_dir, job.timeout)
        t.mkdirs(job.remote_dir)
        for name, text in job.files.items():
            t.put(posixpath.join(job.remote_dir, name), text)
        env_info = self.remote_environment(t, "local", job.argv[0])

        def run() -> Outcome:
            rc, out, err = t.run(watched(command), job.timeout + 60)
            error = None if rc is not None else f"no exit status within {job.timeout + 60:.0f} s (timed out)"
            return Outcome(rc, out, err, t.collect(job.remote_dir, job.collect), error, command,
                           {"remote_dir": job.remote_dir, "remote_environment": env_info})

        outcome = self.guarded(job, run)
        outcome.command = outcome.command or command
        return outcome
