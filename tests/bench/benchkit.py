"""Helpers of the bench integration tests (the services themselves are fixtures in conftest.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import yaml
from support import IBTOOL, ibtool  # noqa: F401  (the one way the tests run `ibtool`)

REPO = Path(__file__).resolve().parents[2]
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_mpi_yield_when_idle": "1", "OMPI_MCA_btl_tcp_if_include": "lo",
            "OMPI_MCA_oob_tcp_if_include": "lo"}  # loopback only, whatever else the machine has
HPCC_PARAMS = {"N": 200, "NB": 20}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(addr: str, port: int, proc: subprocess.Popen, log: Path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection((addr, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {addr}:{port} after {timeout} s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ibtool-test", "-f", str(path)], check=True)



def ssh_inventory(sshd, workdir: Path, known_hosts=None, extra_benchmarks=None, hosts_extra=()) -> dict:
    port = sshd["port"]
    agent = (f"ssh -p {port} -i {sshd['key']} -o UserKnownHostsFile={sshd['known_hosts']} "
             "-o StrictHostKeyChecking=yes -o BatchMode=yes")
    inv = {
        "hosts": [{"name": "n1", "address": "127.0.0.1", "slots": 2},
                  {"name": "n2", "address": "127.0.0.2", "slots": 2}, *hosts_extra],
        "ssh": {"user": os.environ.get("USER") or "root", "port": port, "key": str(sshd["key"]),
                "known_hosts": str(known_hosts or sshd["known_hosts"]), "connect_timeout": 5},
        "runner": "ssh",
        "workdir": str(workdir),
        "mpi": {"launcher": "openmpi", "env": OMPI_ENV,
                "args": ["--oversubscribe", "--bind-to", "none", "--mca", "plm_rsh_agent", agent,
                         "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo",
                         "--mca", "oob_tcp_if_include", "lo", "--mca", "pml", "ob1"]},
        # TCP over loopback between ranks on 2 cores shared with other work: ping-pong latency can pass
        # the 1 ms sanity bound made for real clusters, so these tests state their own
        "benchmarks": {"hpcc": {"params": HPCC_PARAMS, "hosts": ["n1", "n2"], "nprocs": 4, "timeout": 120,
                                "expect": {"pingpong_latency_avg": {"max": 100000}}},
                       **(extra_benchmarks or {})},
    }
    return inv


def write_yaml(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


