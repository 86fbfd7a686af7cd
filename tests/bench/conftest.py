"""Real services for the bench integration tests, started and stopped here; loopback only.

* ``sshd``: OpenSSH on 127.0.0.1 and 127.0.0.2 at a free high port, with a throw-away host key,
  a throw-away user key and a known_hosts file written here.
* ``slurm``: munged + slurmctld + slurmd with a generated slurm.conf (single node, this host).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from benchkit import free_port, keygen, stop, wait_port  # noqa: E402


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    exe = shutil.which("sshd", path="/usr/sbin:/usr/bin")
    assert exe, "openssh-server is not installed (scripts/debian-packages.txt lists it)"
    d = tmp_path_factory.mktemp("sshd")
    keygen(d / "host_key")
    keygen(d / "user_key")
    port = free_port()
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nListenAddress 127.0.0.2\nHostKey {d}/host_key\n"
        f"AuthorizedKeysFile {d}/user_key.pub\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        f"KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile {d}/sshd.pid\n"
        "MaxStartups 100:30:200\nMaxSessions 100\nSubsystem sftp internal-sftp\n")
    hostkey = " ".join((d / "host_key.pub").read_text().split()[:2])
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {hostkey}\n[127.0.0.2]:{port} {hostkey}\n")
    (d / "empty_known_hosts").write_text("")
    log = d / "sshd.log"
    proc = subprocess.Popen([exe, "-D", "-e", "-f", str(d / "sshd_config")], stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT)
    try:
        wait_port("127.0.0.1", port, proc, log)
        wait_port("127.0.0.2", port, proc, log)
        yield {"dir": d, "port": port, "key": d / "user_key", "known_hosts": d / "known_hosts",
               "empty_known_hosts": d / "empty_known_hosts", "closed_port": free_port(), "log": log}
    finally:
        stop(proc)



@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    for tool in ("munged", "slurmctld", "slurmd"):
        assert shutil.which(tool, path="/usr/sbin:/usr/bin"), f"{tool} is not installed"
    d = tmp_path_factory.mktemp("slurm")
    os.chmod(d, 0o755)
    for sub in ("state", "spool", "log"):
        (d / sub).mkdir()
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = d / "munge.sock"
    procs = []
    host = socket.gethostname().split(".")[0]
    ctld_port, d_port = free_port(), free_port()
    conf = d / "slurm.conf"
    conf.write_text(f"""ClusterName=ibtooltest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=600
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""")
    env = dict(os.environ, SLURM_CONF=str(conf))
    try:
        munged = subprocess.Popen(["munged", "-F", "-f", f"--socket={sock}", f"--key-file={key}",
                                   f"--log-file={d}/log/munged.log", f"--pid-file={d}/munged.pid",
                                   f"--seed-file={d}/munged.seed"], stdout=open(d / "log/munged.out", "wb"),
                                  stderr=subprocess.STDOUT)
        procs.append(munged)
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert munged.poll() is None, (d / "log/munged.out").read_text()
            assert time.monotonic() < deadline, "munged did not create its socket"
            time.sleep(0.1)
        ctld = subprocess.Popen(["slurmctld", "-D", "-i", "-f", str(conf)], env=env,
                                stdout=open(d / "log/ctld.out", "wb"), stderr=subprocess.STDOUT)
        procs.append(ctld)
        wait_port("127.0.0.1", ctld_port, ctld, d / "log/ctld.out")
        slurmd = subprocess.Popen(["slurmd", "-D", "-f", str(conf)], env=env,
                                  stdout=open(d / "log/slurmd.out", "wb"), stderr=subprocess.STDOUT)
        procs.append(slurmd)
        wait_port("127.0.0.1", d_port, slurmd, d / "log/slurmd.out")
        deadline = time.monotonic() + 60
        while True:  # the node must be idle before jobs are accepted
            p = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True, text=True)
            if p.stdout.strip() == "idle":
                break
            assert time.monotonic() < deadline, f"slurm node not idle: {p.stdout} {p.stderr}"
            time.sleep(0.5)
        yield {"dir": d, "conf": conf, "host": host, "env": env}
    finally:
        for p in reversed(procs):
            stop(p)
