"""The ssh runner: stage inputs on every host of a run over SSH (in parallel), launch MPI on
the first host, collect the outputs from there.

Host keys are verified against known_hosts (``ssh.known_hosts`` of the inventory, else the
user's and the system's): an unknown or changed key is refused, never accepted silently.
Authentication is by key file (``ssh.key``) or SSH agent; passwords are not supported.
"""

from __future__ import annotations

import errno
import os
import posixpath
import select
import shlex
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import paramiko

from ibtool.bench.hosts import Host
from ibtool.bench.registry import RUNNERS
from ibtool.bench.runners.base import Job, Outcome, Runner, Transport, shell_command, watched
from ibtool.errors import EnvironmentProblem


class SSH(Transport):
    """One SSH connection (paramiko), opened on first use."""

    def __init__(self, host: Host, jump: "SSH | None" = None):
        self.host = host
        self.jump = jump
        self.label = host.where()
        self._client: paramiko.SSHClient | None = None
        self._sftp = None
        self._lock = threading.Lock()

    def client(self) -> paramiko.SSHClient:
        with self._lock:
            if self._client is not None and self._client.get_transport() and self._client.get_transport().is_active():
                return self._client
            self._client = self._connect()
            self._sftp = None
            return self._client

    def _connect(self) -> paramiko.SSHClient:
        c = self.host.ssh
        cl = paramiko.SSHClient()
        for f in self.known_hosts_files():
            cl.load_host_keys(f) if c.known_hosts else cl.load_system_host_keys(f)
        cl.set_missing_host_key_policy(paramiko.RejectPolicy())
        sock = None
        if self.jump is not None:
            try:
                sock = self.jump.client().get_transport().open_channel(
                    "direct-tcpip", (self.host.address, c.port), ("127.0.0.1", 0), timeout=c.connect_timeout)
            except (paramiko.SSHException, OSError) as e:
                raise EnvironmentProblem(f"{self.label}: cannot open a tunnel through {self.jump.label}: {e}") from None
        try:
            cl.connect(self.host.address, port=c.port, username=c.user, key_filename=c.key,
                       allow_agent=True, look_for_keys=c.key is None, timeout=c.connect_timeout,
                       banner_timeout=c.connect_timeout, auth_timeout=c.connect_timeout, sock=sock)
        except paramiko.BadHostKeyException as e:
            raise EnvironmentProblem(f"{self.label}: host key CHANGED ({e.key.get_name()}); refusing to connect "
                                     "(update known_hosts if the change is expected)") from None
        except paramiko.SSHException as e:
            if "not found in known_hosts" in str(e):
                read = self.known_hosts_files()
                target = c.known_hosts or os.path.expanduser("~/.ssh/known_hosts")
                raise EnvironmentProblem(
                    f"{self.label}: host key unknown (not in {', '.join(read) or 'any known_hosts file: none exists'}); "
                    f"refusing to connect. Check the key, then add it with: "
                    f"ssh-keyscan -p {c.port} {shlex.quote(self.host.address)} >> {shlex.quote(target)}") from None
            raise EnvironmentProblem(f"{self.label}: SSH failed: {e}") from None
        except (socket.timeout, TimeoutError):
            raise EnvironmentProblem(f"{self.label}: connection timed out after {c.connect_timeout:g} s") from None
        except paramiko.ssh_exception.NoValidConnectionsError as e:
            refused = all(isinstance(x, ConnectionRefusedError) or getattr(x, "errno", None) == errno.ECONNREFUSED
                          for x in e.errors.values())
            why = "connection refused (no SSH server on that port)" if refused else f"unreachable: {e}"
            raise EnvironmentProblem(f"{self.label}: {why}") from None
        except ConnectionRefusedError:
            raise EnvironmentProblem(f"{self.label}: connection refused (no SSH server on that port)") from None
        except OSError as e:
            raise EnvironmentProblem(f"{self.label}: unreachable: {e.strerror or e}") from None
        return cl

    def known_hosts_files(self) -> list[str]:
        """The known_hosts files read: the inventory's, else the user's and the system's that exist."""
        if self.host.ssh.known_hosts:
            return [self.host.ssh.known_hosts]
        return [f for f in (os.path.expanduser("~/.ssh/known_hosts"), "/etc/ssh/ssh_known_hosts") if os.path.isfile(f)]

    def run(self, command: str, timeout: float) -> tuple[int | None, str, str]:
        chan = self.client().get_transport().open_session()
        chan.exec_command(command)
        out, err = [], []
        deadline = time.monotonic() + timeout
        while True:
            if chan.recv_ready():
                out.append(chan.recv(65536))
                continue
            if chan.recv_stderr_ready():
                err.append(chan.recv_stderr(65536))
                continue
            if chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
                if chan.eof_received or chan.closed:
                    break
            if time.monotonic() > deadline:
                chan.close()
                return None, b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")
            select.select([chan], [], [], 0.2)
        rc = chan.recv_exit_status()
        chan.close()
        return rc, b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace")

    def sftp(self):
        cl = self.client()
        with self._lock:
            if self._sftp is None:
                self._sftp = cl.open_sftp()
            return self._sftp

    def put(self, path: str, data: str | bytes) -> None:
        with self.sftp().open(path, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)

    def get(self, path: str) -> bytes:
        with self.sftp().open(path, "rb") as fh:
            return fh.read()

    def listdir(self, path: str) -> list[str]:
        import stat
        return [a.filename for a in self.sftp().listdir_attr(path) if stat.S_ISREG(a.st_mode or 0)]

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
            self._client = self._sftp = None


def parse_jump(spec: str, inventory, base: Host) -> Host:
    """A jump host: an inventory host name, or [user@]address[:port] with the base host's SSH settings."""
    for h in inventory.hosts:
        if h.name == spec:
            return h
    from dataclasses import replace
    user, _, rest = spec.rpartition("@")
    addr, _, port = rest.partition(":")
    ssh = replace(base.ssh, jump=None, user=user or base.ssh.user, port=int(port) if port else 22)
    return Host(spec, addr, 1, ssh)


class SSHPool:
    """One connection per host for the whole campaign; jump hosts are connected first."""

    def __init__(self, inventory):
        self.inv = inventory
        self._conns: dict[str, SSH] = {}
        self._lock = threading.RLock()

    def get(self, host: Host) -> SSH:
        """The connection to `host`; a jump host of the inventory is reached as its own settings say
        (its own jump host included) and shared with its other uses."""
        with self._lock:
            if host.name not in self._conns:
                jump = None
                if host.ssh.jump:
                    jh = parse_jump(host.ssh.jump, self.inv, host)
                    jump = self.get(jh) if jh in self.inv.hosts else self._conns.setdefault(jh.name, SSH(jh))
                self._conns[host.name] = SSH(host, jump)
            return self._conns[host.name]

    def fan_out(self, hosts: list[Host], fn, parallel: int) -> dict[str, str | None]:
        """Call fn(transport) on every host at once; host name -> error message or None."""
        def one(h):
            try:
                fn(self.get(h))
                return h.name, None
            except EnvironmentProblem as e:
                return h.name, str(e)
            except (paramiko.SSHException, OSError) as e:
                return h.name, f"{h.where()}: {e}"
        with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(hosts)))) as ex:
            return dict(ex.map(one, hosts))

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()


@RUNNERS.register("ssh")
class SSHRunner(Runner):
    """Stage inputs on every host of the run (parallel), run the launcher on the first one."""

    def __init__(self, inventory):
        super().__init__(inventory)
        self.pool = SSHPool(inventory)

    def transport(self, host):
        return self.pool.get(host) if host is not None else super().transport(None)

    def execute(self, job: Job) -> Outcome:
        command = shell_command(job.argv, job.env, job.remote_dir, job.timeout)

        def stage(t: SSH):
            t.mkdirs(job.remote_dir)
            for name, text in job.files.items():
                t.put(posixpath.join(job.remote_dir, name), text)

        errors = self.pool.fan_out(job.hosts, stage, self.inv.parallel)
        bad = [msg for msg in errors.values() if msg]
        if bad:
            return Outcome(None, error="; ".join(bad), command=command)
        launch = self.pool.get(job.hosts[0])

        def run() -> Outcome:
            try:
                env_info = self.remote_environment(launch, job.hosts[0].name, job.argv[0])
                rc, out, err = launch.run(watched(command), job.timeout + 60)
                files = launch.collect(job.remote_dir, job.collect)
            except EnvironmentProblem as e:
                return Outcome(None, error=str(e), command=command)
            except (paramiko.SSHException, OSError) as e:
                return Outcome(None, error=f"{launch.label}: connection lost: {e}", command=command)
            error = None if rc is not None else f"no exit status within {job.timeout + 60:.0f} s (timed out)"
            return Outcome(rc, out, err, files, error, command,
                           {"launch_host": job.hosts[0].name, "remote_dir": job.remote_dir,
                            "remote_environment": env_info})

        outcome = self.guarded(job, run)
        outcome.command = outcome.command or command
        return outcome

    def close(self) -> None:
        self.pool.close()
