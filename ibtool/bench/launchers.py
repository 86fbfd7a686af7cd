"""MPI launchers: how a mapping and a benchmark command become one launch command line.

Each launcher is a small class registered with ``@LAUNCHERS.register(name)``; the inventory
names one in ``mpi.launcher``.
"""

from __future__ import annotations

from ibtool.bench.mapping import Mapping
from ibtool.registry import Registry

LAUNCHERS = Registry("launcher", "ibtool.bench.launchers")


class Launcher:
    default = "mpirun"

    def __init__(self, mpi: dict):
        self.exe = mpi.get("mpirun") or self.default
        self.args = list(mpi.get("args") or [])

    def files(self, mapping: Mapping) -> dict[str, str]:
        return {}

    def argv(self, mapping: Mapping, command: list[str], env: dict[str, str]) -> list[str]:
        raise NotImplementedError

    def env(self, mapping: Mapping) -> dict[str, str]:
        return {}

    # options that make the launcher's own ssh read `ssh_config` (None: it does not use ssh)
    rsh_keys: tuple[str, ...] = ()

    def rsh_args(self, config: str) -> list[str]:
        return []

    def sets_own_rsh(self) -> bool:
        """True when mpi.args already say how the launcher reaches the hosts: left alone."""
        return any(k in a for a in self.args for k in self.rsh_keys)


def ssh_config(hosts) -> str:
    """An ssh_config giving the launcher's own ssh the inventory's settings for every host of a run
    (port, user, key, known_hosts: the paths must be valid on the launch host)."""
    out = ["# written by ibtool bench: how mpirun's ssh reaches the hosts of this run"]
    for h in hosts:
        c = h.ssh
        out += [f"Host {h.address}", f"  Port {c.port}", "  StrictHostKeyChecking yes", "  BatchMode yes",
                f"  ConnectTimeout {int(c.connect_timeout)}"]
        if c.user:
            out.append(f"  User {c.user}")
        if c.key:
            out += [f"  IdentityFile {c.key}", "  IdentitiesOnly yes"]
        if c.known_hosts:
            out.append(f"  UserKnownHostsFile {c.known_hosts}")
    return "\n".join(out) + "\n"


@LAUNCHERS.register("openmpi")
class OpenMPI(Launcher):
    """Open MPI mpirun with a rankfile: any permutation of ranks over hosts and slots."""

    placement = ("--rankfile", "rankfile.txt")
    rsh_keys = ("plm_rsh_agent", "plm_rsh_args", "OMPI_MCA_plm_rsh")

    def rsh_args(self, config):
        return ["--mca", "plm_rsh_args", f"-F {config}"]

    def files(self, mapping):
        return {"rankfile.txt": mapping.rankfile()}

    def argv(self, mapping, command, env):
        xs = [a for name in sorted(env) for a in ("-x", name)]
        return [self.exe, "-np", str(mapping.nprocs), *self.placement, *self.args, *xs, *command]


@LAUNCHERS.register("openmpi-seq")
class OpenMPISeq(OpenMPI):
    """Open MPI mpirun with an ordered hostfile and --map-by seq (rank i on line i)."""

    placement = ("--hostfile", "hostfile.txt", "--map-by", "seq")

    def files(self, mapping):
        return {"hostfile.txt": mapping.hostfile()}


@LAUNCHERS.register("mpich")
class MPICH(Launcher):
    """MPICH / Hydra mpiexec with an ordered hostfile (`host:1` per rank)."""

    default = "mpiexec"
    rsh_keys = ("-launcher", "-bootstrap")

    def rsh_args(self, config):
        return ["-bootstrap-exec-args", f"-F {config}"]

    def files(self, mapping):
        return {"hostfile.txt": "".join(f"{h.address}:1\n" for h, _ in mapping.ranks)}

    def argv(self, mapping, command, env):
        genv = ["-genvlist", ",".join(sorted(env))] if env else []
        return [self.exe, "-n", str(mapping.nprocs), "-f", "hostfile.txt", *genv, *self.args, *command]


@LAUNCHERS.register("srun")
class Srun(Launcher):
    """Slurm srun with SLURM_HOSTFILE and --distribution=arbitrary (inside an allocation)."""

    default = "srun"

    def files(self, mapping):
        return {"slurm_hostfile.txt": mapping.slurm_hostfile()}

    def env(self, mapping):
        return {"SLURM_HOSTFILE": "slurm_hostfile.txt"}

    def argv(self, mapping, command, env):
        return [self.exe, "--distribution=arbitrary", "-n", str(mapping.nprocs), *self.args, *command]
