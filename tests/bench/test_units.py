"""Inventory validation, task mapping, launchers, campaign planning, the `bench` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchkit import ibtool
from support import failed_campaign
from ibtool.bench import inventory, mapping
from ibtool.bench.campaign import Campaign, plan, run_seed
from ibtool.bench.launchers import LAUNCHERS
from ibtool.bench.registry import BENCHMARKS, RUNNERS
from ibtool.bench.runners.base import shell_command
from ibtool.bench.runners.slurm import job_script
from ibtool.errors import InputError

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "bench"
BASE = {"hosts": [{"name": "a", "address": "10.0.0.1", "slots": 2}, {"name": "b", "slots": 2}]}


def inv(**extra):
    return inventory.parse({**BASE, **extra}, "inv.yaml")


def test_registries_find_every_backend_without_a_list():
    assert BENCHMARKS.names() == ["graph500", "hpcc", "hpcg", "netgauge"]
    assert RUNNERS.names() == ["local", "slurm", "ssh"]
    assert LAUNCHERS.names() == ["mpich", "openmpi", "openmpi-seq", "srun"]


@pytest.mark.parametrize("data,message", [
    ({"hosts": []}, "inv.yaml: hosts: must be a non-empty list"),
    ({"hosts": [{"name": "a", "slots": 0}]}, "inv.yaml: hosts[0].slots: must be an integer >= 1, got 0"),
    ({"hosts": [{"name": "a"}, {"name": "a"}]}, "inv.yaml: hosts[1].name: duplicate host name 'a'"),
    ({**BASE, "ssh": {"password": "x"}}, "inv.yaml: ssh.password: passwords and secrets are not accepted"),
    ({**BASE, "ssh": {"port": "22"}}, "inv.yaml: ssh.port: must be an integer >= 1, got '22'"),
    ({**BASE, "ssh": {"key": "/nonexistent/key"}}, "inv.yaml: ssh.key: no such file: /nonexistent/key"),
    ({**BASE, "runner": "pbs"}, "inv.yaml: runner: unknown runner 'pbs' (known: local, slurm, ssh)"),
    ({**BASE, "workdir": "rel"}, "inv.yaml: workdir: must be an absolute path"),
    ({**BASE, "mpi": {"launcher": "poe"}}, "inv.yaml: mpi.launcher: unknown launcher 'poe'"),
    ({**BASE, "mpi": {"env": {"MY_TOKEN": "x"}}}, "inv.yaml: mpi.env.MY_TOKEN: secrets are not accepted"),
    ({**BASE, "benchmarks": {"hpcc": {"params": {"Nx": 1}}}}, "inv.yaml: benchmarks.hpcc.params.Nx: unknown key"),
    ({**BASE, "benchmarks": {"far": {"type": "hpl"}}}, "inv.yaml: benchmarks.far.type: unknown benchmark 'hpl'"),
    ({**BASE, "benchmarks": {"far": {"hosts": ["c"]}}}, "inv.yaml: benchmarks.far: unknown benchmark 'far'"),
    ({**BASE, "benchmarks": {"hpcc": {"hosts": ["c"]}}}, "inv.yaml: benchmarks.hpcc.hosts: 'c' is not one of"),
    ({**BASE, "sm": {"host": "z"}}, "inv.yaml: sm.host: 'z' is neither 'local' nor one of the hosts"),
    ({**BASE, "slurm": {"login": "z"}}, "inv.yaml: slurm.login: 'z' is not one of the hosts"),
    ({**BASE, "hostz": 1}, "inv.yaml: hostz: unknown key"),
    ({**BASE, "benchmarks": {"hpcc": {"params": {"N": "abc"}}}},
     "inv.yaml: benchmarks.hpcc.params.N: must be an integer >= 0, got 'abc'"),
    ({**BASE, "benchmarks": {"graph500": {"params": {"skip_validation": "yes"}}}},
     "inv.yaml: benchmarks.graph500.params.skip_validation: must be true or false"),
    ({**BASE, "benchmarks": {"netgauge": {"params": {"pattern": 3}}}},
     "inv.yaml: benchmarks.netgauge.params.pattern: must be a non-empty string"),
    ({**BASE, "slurm": {"srun_args": ["--mpi=pmix"]}}, "inv.yaml: slurm.srun_args: unknown key"),  # was ignored
    ({**BASE, "slurm": {"login": ["a"]}}, "inv.yaml: slurm.login: must be a non-empty string, got ['a']"),
    ({**BASE, "sm": {"env": {"A": [1]}}}, "inv.yaml: sm.env.A: must be a string or number, got [1]"),
    ({**BASE, "ssh": {"key": "/tmp"}}, "inv.yaml: ssh.key: not a file: /tmp"),
    ({**BASE, "ssh": {"jump": "gw:abc"}}, "inv.yaml: ssh.jump: must be a host of the inventory or [user@]address"),
    ({"hosts": [{"name": "a", "ssh": {"jump": "b"}}, {"name": "b", "ssh": {"jump": "a"}}]},
     "inv.yaml: hosts[0].ssh.jump: jump hosts form a loop through 'a'"),
])
def test_inventory_errors_name_the_key(data, message):
    with pytest.raises(InputError) as e:
        inventory.parse(data, "inv.yaml")
    assert str(e.value).startswith(message)


def test_inventory_defaults_and_overrides():
    i = inventory.parse({**BASE, "ssh": {"user": "bench", "port": 2200},
                         "hosts": [{"name": "a", "ssh": {"port": 22}}, "b"]}, "inv.yaml")
    assert [(h.name, h.address, h.slots, h.ssh.port, h.ssh.user) for h in i.hosts] == [
        ("a", "a", 1, 22, "bench"), ("b", "b", 1, 2200, "bench")]
    assert i.runner == "ssh" and i.mpi["launcher"] == "openmpi" and i.sm is None


def test_a_jump_host_of_the_inventory_is_reached_directly():
    i = inventory.parse({"hosts": ["login", "a"], "ssh": {"jump": "login"}}, "inv.yaml")
    assert [h.ssh.jump for h in i.hosts] == [None, "login"]


def test_inventory_yaml_error_has_a_line(tmp_path):
    (tmp_path / "inv.yaml").write_text("hosts:\n  - name: a\n   bad: [\n")
    with pytest.raises(InputError, match=r"inv.yaml:\d+: not valid YAML"):
        inventory.load(tmp_path / "inv.yaml")


@pytest.mark.parametrize("content,message", [
    (b"\x00\xff\xfe", "not a text file (YAML expected)"),
    (None, "is a directory, not an inventory file"),
])
def test_inventory_file_that_is_not_yaml_text(tmp_path, content, message):
    path = tmp_path / "inv.yaml"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    with pytest.raises(InputError) as e:
        inventory.load(path)
    assert str(e.value) == f"{path}: {message}"


def test_linear_and_random_mapping():
    hosts = inv().hosts
    lin = mapping.make("linear", hosts, 4)
    assert lin.rankfile() == ("rank 0=10.0.0.1 slot=0\nrank 1=10.0.0.1 slot=1\n"
                              "rank 2=b slot=0\nrank 3=b slot=1\n")
    assert lin.hostfile() == "10.0.0.1\n10.0.0.1\nb\nb\n" and lin.slurm_hostfile() == "a\na\nb\nb\n"
    assert lin.is_block() and lin.seed is None
    rnd = [mapping.make("random", hosts, 4, seed) for seed in range(20)]
    assert all(sorted(m.rankfile().splitlines()[i].split("=", 1)[1] for i in range(4))
               == sorted(x.split("=", 1)[1] for x in lin.rankfile().splitlines()) for m in rnd)
    assert mapping.make("random", hosts, 4, 7).as_dict() == mapping.make("random", hosts, 4, 7).as_dict()
    assert len({m.rankfile() for m in rnd}) > 3 and any(not m.is_block() for m in rnd)
    with pytest.raises(InputError, match="unknown mapping 'cyclic'"):
        mapping.make("cyclic", hosts, 4)


def test_launchers_write_the_mapping_as_each_launcher_reads_it():
    hosts = inv().hosts
    m = mapping.make("random", hosts, 4, 3)
    env = {"A": "1", "B": "2"}
    ompi = LAUNCHERS.get("openmpi")({"args": ["--bind-to", "none"]})
    assert ompi.argv(m, ["hpcc"], env) == ["mpirun", "-np", "4", "--rankfile", "rankfile.txt", "--bind-to", "none",
                                           "-x", "A", "-x", "B", "hpcc"]
    assert ompi.files(m) == {"rankfile.txt": m.rankfile()}
    seq = LAUNCHERS.get("openmpi-seq")({})
    assert seq.argv(m, ["x"], {})[3:7] == ["--hostfile", "hostfile.txt", "--map-by", "seq"]
    assert LAUNCHERS.get("mpich")({}).files(m)["hostfile.txt"].splitlines() == [f"{h.address}:1" for h, _ in m.ranks]
    srun = LAUNCHERS.get("srun")({"args": ["--mpi=pmix"]})
    assert srun.argv(m, ["hpcc"], env) == ["srun", "--distribution=arbitrary", "-n", "4", "--mpi=pmix", "hpcc"]
    assert srun.env(m) == {"SLURM_HOSTFILE": "slurm_hostfile.txt"}
    assert srun.files(m)["slurm_hostfile.txt"] == m.slurm_hostfile()


def test_shell_command_quotes_everything():
    cmd = shell_command(["echo", "a b", "$(x)"], {"K": "v w"}, "/tmp/d x", 60)
    assert cmd == "cd '/tmp/d x' && exec timeout --kill-after=10 60 env 'K=v w' echo 'a b' '$(x)'"


def test_benchmark_inputs_and_checks():
    hpcc = BENCHMARKS.get("hpcc")({"N": 400, "NB": 40})
    text = hpcc.inputs(6)["hpccinf.txt"]
    lines = text.splitlines()
    assert len(lines) == 36 and [lines[i].split()[0] for i in (5, 7, 10, 11)] == ["400", "40", "2", "3"]
    from ibtool.bench.benchmarks.hpcc import read_hpccinf
    assert read_hpccinf((FIX / "hpcc/np4_linear_rankfile/hpccinf.txt").read_text()) == {
        "N": 1000, "NB": 80, "PMAP": 0, "P": 2, "Q": 2}
    with pytest.raises(InputError, match="P x Q = 4 x 4 needs 16 ranks"):
        BENCHMARKS.get("hpcc")({"P": 4, "Q": 4}).check(4)
    assert BENCHMARKS.get("hpcg")({"nx": 32, "rt": 60}).inputs(4)["hpcg.dat"].splitlines()[2:] == ["32 16 16", "60"]
    with pytest.raises(InputError, match="multiples of 8"):
        BENCHMARKS.get("hpcg")({"nx": 20}).check(4)
    with pytest.raises(InputError, match="power-of-two"):
        BENCHMARKS.get("graph500")().check(6)
    assert BENCHMARKS.get("graph500")({"scale": 14}).command() == ["graph500_reference_bfs", "14", "16"]
    ng = BENCHMARKS.get("netgauge")({"rounds": 50})
    assert ng.command() == ["netgauge", "-s", "1048576-1048576", "-x", "ebb", "-r", "50", "-n", "10", "-b", "1",
                            "-m", "mpi"]
    with pytest.raises(InputError, match="even number of ranks"):
        ng.check(3)
    with pytest.raises(InputError, match="unknown parameter"):
        BENCHMARKS.get("netgauge")({"size": 1})


def test_plan_is_the_cross_product_grouped_by_engine():
    runs = plan(["hpcc", "netgauge"], ["linear", "random"], ["updn", "hdor"], 2, 5)
    assert len(runs) == 16
    assert [r.engine for r in runs] == ["updn"] * 8 + ["hdor"] * 8
    assert runs[0].run_id == "updn--hpcc--linear--r1"
    # the same placement on every engine, another one per repeat
    assert runs[0].seed == runs[8].seed == run_seed(5, "hpcc", 1) != run_seed(5, "hpcc", 2)
    with pytest.raises(InputError, match="listed twice"):
        plan(["hpcc", "hpcc"], ["linear"], ["x"], 1, 1)


def test_campaign_refuses_impossible_runs_before_running(tmp_path):
    i = inv(benchmarks={"netgauge": {"nprocs": 3}})
    with pytest.raises(InputError, match="even number of ranks"):
        Campaign(i, str(tmp_path / "c"), ["netgauge"], ["linear"], None)
    with pytest.raises(InputError, match="needs an 'sm' section"):
        Campaign(inv(), str(tmp_path / "c"), ["hpcc"], ["linear"], ["updn"])
    with pytest.raises(InputError, match="unknown routing engine 'updown'"):  # OpenSM would fall back to minhop
        Campaign(inv(sm={"host": "local"}), str(tmp_path / "c"), ["hpcc"], ["linear"], ["updn", "updown"])
    assert not (tmp_path / "c").exists()


def test_graph500_random_mapping_is_skipped_not_run(tmp_path):
    from ibtool.bench.campaign import prepare
    i = inv()
    runs = plan(["graph500"], ["linear", "random"], ["current"], 1, 1)
    lin, rnd = (prepare(i, p, "x") for p in runs)
    assert lin.skip_reason is None and lin.job.argv[-3:] == ["graph500_reference_bfs", "12", "16"]
    assert rnd.job is None and "needs block placement" in rnd.skip_reason


def test_slurm_job_script():
    from ibtool.bench.campaign import prepare
    i = inv(mpi={"launcher": "srun"})
    p = prepare(i, plan(["hpcc"], ["random"], ["current"], 1, 1)[0], "cid")
    script = job_script(p.job, ["--partition=x"], {"OMPI_X": "a b"})
    assert "#SBATCH --ntasks=4\n#SBATCH --nodes=2\n#SBATCH --nodelist=a,b\n" in script
    assert "#SBATCH --partition=x\n" in script and "export OMPI_X='a b'\n" in script
    assert "\nsrun --distribution=arbitrary -n 4 hpcc > stdout.txt 2> stderr.txt\n" in script


def test_cli_parse_exit_codes_and_json():
    p = ibtool("bench", "parse", "hpcc", FIX / "hpcc/np4_linear_rankfile/hpccoutf.txt", check=0)
    assert p.stdout.startswith("hpcc: ok\n") and "pingpong_latency_max" in p.stdout
    p = ibtool("bench", "parse", "hpcc", FIX / "hpcc/fail_invalid_grid_fallback_defaults/hpccoutf.txt", "--json",
               check=1)
    data = json.loads(p.stdout)
    assert data["status"] == "invalid" and data["params"]["N"] == 5120
    assert p.stderr.startswith("ibtool: error: hpcc run invalid: HPL ERROR") and "Traceback" not in p.stderr
    p = ibtool("bench", "parse", "hpcg", FIX / "hpcg/fail_missing_hpcg_dat_silent_quickpath_np2", check=1)
    assert "no hpcg.dat" in p.stdout
    p = ibtool("bench", "parse", "graph500", FIX / "graph500/fail_random_placement_fake2nodes/stdout.txt", check=1)
    assert "Strange group rank assignment scheme" in p.stderr
    p = ibtool("bench", "parse", "netgauge", FIX / "netgauge/ebb_1MiB_np4/stdout.txt", check=0)
    assert "ebb_bandwidth" in p.stdout and "1.94499 GB/s" in p.stdout
    p = ibtool("bench", "parse", "hpcc", FIX / "hpcc/fail_killed_early/hpccoutf.txt", "--exit-code", "124", check=1)
    assert "exit code 124" in p.stderr
    p = ibtool("bench", "parse", "hpl", FIX / "hpcc/fail_killed_early/hpccoutf.txt", check=2)
    assert "unknown benchmark 'hpl'" in p.stderr


def test_cli_help_teaches_with_examples():
    for cmd in (["run"], ["report"], ["parse"], []):
        p = ibtool("bench", *cmd, "--help", check=0)
        assert "Example" in p.stdout or "ibtool bench run" in p.stdout
    p = ibtool("bench", "run", "--help", check=0)
    assert "--mappings" in p.stdout and "--engines" in p.stdout and "resume" in p.stdout
    p = ibtool("bench", "list", check=0)
    assert "hpcc" in p.stdout and "runners:   local, slurm, ssh" in p.stdout


def test_cli_dry_run_and_inventory_error(tmp_path):
    (tmp_path / "inv.yaml").write_text("hosts: [{name: a, slots: 2}]\nmpi: {launcher: openmpi}\n")
    p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc,netgauge", "-m", "linear,random", "-r", "2",
               "-o", tmp_path / "c", "--dry-run", check=0)
    lines = p.stdout.splitlines()
    assert lines[0] == "current--hpcc--linear--r1  to run"
    assert lines[1].startswith("  command: cd /tmp/ibtool-bench/new-campaign-id/current--hpcc--linear--r1.") and "mpirun -np 2 --rankfile rankfile.txt" in lines[1]
    assert lines[2:5] == ["  rankfile.txt:", "    rank 0=a slot=0", "    rank 1=a slot=1"]
    assert any(ln.startswith("current--hpcc--random--r1  seed=") and ln.endswith("to run") for ln in lines)
    assert "8 runs with runner ssh: 8 to run, 0 stored and kept" in p.stdout and not (tmp_path / "c").exists()
    (tmp_path / "bad.yaml").write_text("hosts: [{name: a, slots: -1}]\n")
    p = ibtool("bench", "run", "-i", tmp_path / "bad.yaml", "-b", "hpcc", "-o", tmp_path / "c", check=2)
    assert p.stderr.strip() == f"ibtool: error: {tmp_path}/bad.yaml: hosts[0].slots: must be an integer >= 1, got -1"


def test_retry_failed_redoes_only_failed_runs_with_the_local_runner(tmp_path):
    from benchkit import HPCC_PARAMS, OMPI_ENV, write_yaml
    bad = {"type": "hpcc", "binary": "/nonexistent/hpcc", "params": HPCC_PARAMS, "nprocs": 2, "timeout": 60}
    data = {"hosts": [{"name": "here", "address": "127.0.0.1", "slots": 2}], "runner": "local",
            "workdir": str(tmp_path / "work"),
            "mpi": {"launcher": "openmpi", "env": OMPI_ENV,
                    "args": ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml", "ob1"]},
            "benchmarks": {"hpcc": {"params": HPCC_PARAMS, "nprocs": 2, "timeout": 60}, "hpcc_bad": bad}}
    inv = write_yaml(tmp_path / "inv.yaml", data)
    args = ["bench", "run", "-i", inv, "-b", "hpcc,hpcc_bad", "-m", "linear,random", "-o", tmp_path / "c",
            "--no-progress"]
    p = ibtool(*args, check=1)
    assert "4 runs done (0 stored before): ok 2, failed 2" in p.stdout
    runs_dir = tmp_path / "c" / "runs"
    failed = json.loads((runs_dir / "current--hpcc_bad--linear--r1" / "run.json").read_text())
    assert failed["status"] == "failed"
    assert any("did not find the benchmark binary /nonexistent/hpcc" in r for r in failed["reasons"])
    good = {m: (runs_dir / f"current--hpcc--{m}--r1" / "run.json").read_text() for m in ("linear", "random")}
    p = ibtool(*args, check=0)  # resumed: failed runs are finished runs, nothing to do
    assert "resuming: 4 of 4 runs already stored, 0 to do" in p.stderr
    bad["binary"] = "hpcc"
    write_yaml(tmp_path / "inv.yaml", data)
    p = ibtool(*args, "--retry-failed", check=2)  # another binary measures something else: not silently
    assert 'benchmarks.hpcc_bad.binary: "/nonexistent/hpcc" in the stored campaign, "hpcc" now' in p.stderr
    p = ibtool(*args, "--retry-failed", "--new-parameters", check=0)
    assert "new parameter generation 2: benchmarks.hpcc_bad.binary" in p.stderr
    assert "resuming: 2 of 4 runs already stored, 2 to do" in p.stderr
    assert "2 runs done (2 stored before): ok 2, failed 0" in p.stdout
    for m in ("linear", "random"):
        redone = json.loads((runs_dir / f"current--hpcc_bad--{m}--r1" / "run.json").read_text())
        assert redone["status"] == "ok" and redone["generation"] == 2
        assert (runs_dir / f"current--hpcc--{m}--r1" / "run.json").read_text() == good[m]  # not redone
    assert len(list(runs_dir.iterdir())) == 4 and not list((tmp_path / "c" / ".partial").iterdir())


def test_expected_bounds_flag_implausible_results(tmp_path):
    from benchkit import HPCC_PARAMS, OMPI_ENV, write_yaml
    with pytest.raises(InputError, match=r"benchmarks.hpcc.expect.ptrans.max: must be a number, got 'a'"):
        inventory.parse({**BASE, "benchmarks": {"hpcc": {"expect": {"ptrans": {"max": "a"}}}}}, "inv.yaml")
    data = {"hosts": [{"name": "here", "address": "127.0.0.1", "slots": 2}], "runner": "local",
            "workdir": str(tmp_path / "work"),
            "mpi": {"launcher": "openmpi", "env": OMPI_ENV,
                    "args": ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml", "ob1"]},
            "benchmarks": {"hpcc": {"params": HPCC_PARAMS, "nprocs": 2, "timeout": 60,
                                    "expect": {"pingpong_latency_max": {"max": 1e-6}, "ptrans": {"min": 0},
                                               "no_such_metric": {"min": 1}}}}}
    write_yaml(tmp_path / "inv.yaml", data)
    p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-o", tmp_path / "c", "--no-progress",
               check=1)
    assert "ok 0, failed 0, invalid 1" in p.stdout
    run = json.loads((tmp_path / "c/runs/current--hpcc--linear--r1/run.json").read_text())
    assert run["status"] == "invalid" and len(run["reasons"]) == 2
    assert run["reasons"][0].startswith("pingpong_latency_max = ") and "above the expected maximum 1e-06 us" in \
        run["reasons"][0]
    assert run["reasons"][1] == "expected metric no_such_metric is missing"


def test_the_documented_inventory_is_valid():
    import re as _re

    import yaml
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bench.md").read_text()
    data = yaml.safe_load(_re.search(r"```yaml\n(.*?)```", doc, _re.S).group(1))
    for k in ("key", "known_hosts"):  # files on the documented cluster, not here
        data["ssh"].pop(k)
    inv = inventory.parse(data, "docs/bench.md")
    assert [h.name for h in inv.hosts] == ["cn01", "cn02", "cn03", "sm01"] and inv.host("cn03").ssh.port == 2222
    assert [h.name for h in inv.run_hosts(inv.bench("hpcc"))] == ["cn01", "cn02", "cn03"]  # sm01: compute: false
    assert inv.bench("hpcc_ib").expect == {"pingpong_latency_max": {"max": 5.0}, "pingpong_bandwidth_min": {"min": 1.0}}
    assert inv.sm["host"] == "sm01" and inv.nprocs(inv.bench("graph500")) == 64


def test_a_campaign_directory_is_used_by_one_run_at_a_time(tmp_path):
    from ibtool.bench.store import Store
    (tmp_path / "inv.yaml").write_text("hosts: [{name: a, slots: 2}]\nrunner: local\n")
    holder = Store(tmp_path / "c")
    holder.open({"benchmarks": ["hpcc"], "mappings": ["linear"], "engines": ["current"], "repeat": 1, "seed": 1})
    p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-o", tmp_path / "c", check=2)
    assert "another `ibtool bench run` is using this campaign directory" in p.stderr
    holder.close()
    with pytest.raises(InputError, match="holds another campaign"):  # unlocked now; the options still differ
        Store(tmp_path / "c").open({"benchmarks": ["hpcg"], "mappings": ["linear"], "engines": ["current"],
                                    "repeat": 1, "seed": 1})


def test_walltime_kills_the_run_and_says_so(tmp_path):
    # "graph500" whose binary is sleep: the command line becomes `sleep 60 60`, far beyond the 2 s limit
    from benchkit import OMPI_ENV, write_yaml
    data = {"hosts": [{"name": "here", "address": "127.0.0.1", "slots": 1}], "runner": "local",
            "workdir": str(tmp_path / "work"), "mpi": {"launcher": "openmpi", "env": OMPI_ENV},
            "benchmarks": {"graph500": {"binary": "sleep", "params": {"scale": 60, "edgefactor": 60}, "nprocs": 1,
                                        "timeout": 2}}}
    write_yaml(tmp_path / "inv.yaml", data)
    ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "graph500", "-o", tmp_path / "c", "--no-progress",
           check=1)
    run = json.loads((tmp_path / "c/runs/current--graph500--linear--r1/run.json").read_text())
    assert run["exit_code"] == 124 and run["status"] == "failed"
    assert "exit code 124: killed by timeout (walltime reached)" in run["reasons"]
    assert "timeout --kill-after=10 2 " in run["command"] and run["launch_argv"][-3:] == ["sleep", "60", "60"]


@pytest.mark.parametrize("name,content", [
    ("campaign.json", "{bad"), ("campaign.json", "[]"),
    ("runs/current--hpcc--linear--r1/run.json", "{trunc"), ("runs/current--hpcc--linear--r1/run.json", "[]"),
])
def test_damaged_campaign_files_are_named_not_tracebacks(tmp_path, name, content):
    (tmp_path / "inv.yaml").write_text("hosts: [{name: a, slots: 2}]\nrunner: local\n")
    camp = tmp_path / "c"
    (camp / "runs/current--hpcc--linear--r1").mkdir(parents=True)
    (camp / "campaign.json").write_text(json.dumps({"benchmarks": ["hpcc"], "mappings": ["linear"],
                                                    "engines": ["current"], "repeat": 1, "seed": 1,
                                                    "campaign_id": "x", "created": "t", "runs": []}))
    (camp / "runs/current--hpcc--linear--r1/run.json").write_text('{"status": "ok"}')
    (camp / name).write_text(content)
    for args in (("report", camp), ("run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-o", camp, "--no-progress")):
        p = ibtool("bench", *args, check=2)
        assert p.stderr.startswith(f"ibtool: error: {camp / name}: ") and "Traceback" not in p.stderr


def test_unusable_output_paths_are_input_errors(tmp_path):
    (tmp_path / "inv.yaml").write_text("hosts: [{name: a, slots: 2}]\nrunner: local\n")
    (tmp_path / "afile").write_text("x")
    p = ibtool("bench", "run", "-i", tmp_path / "inv.yaml", "-b", "hpcc", "-o", tmp_path / "afile/c",
               "--no-progress", check=2)
    assert p.stderr == f"ibtool: error: --out {tmp_path / 'afile/c'}: cannot create directory: Not a directory\n"
    camp = tmp_path / "c"
    failed_campaign(camp)
    ibtool("bench", "report", camp, "-o", tmp_path / "r")  # the hand-made campaign is a valid one
    (camp / "runs/current--hpcc--linear--r1/run.json").write_text('{"status": "failed"}')
    p = ibtool("bench", "report", camp, "-o", tmp_path / "r", check=2)
    assert p.stderr.startswith(f"ibtool: error: {camp}/runs/current--hpcc--linear--r1/run.json: not written by "
                               "ibtool bench: no run_id, engine, benchmark, type, mapping, repeat")
    (camp / "runs/current--hpcc--linear--r1/run.json").write_text(json.dumps(
        {"run_id": "current--hpcc--linear--r1", "engine": "current", "benchmark": "hpcc", "type": "hpcc",
         "mapping": {"policy": "linear"}, "repeat": 1, "status": "failed", "reasons": ["x"]}))
    p = ibtool("bench", "report", camp, "-o", tmp_path / "afile/r", check=2)
    assert p.stderr == f"ibtool: error: --out {tmp_path / 'afile/r'}: cannot create directory: Not a directory\n"
    p = ibtool("bench", "parse", "hpcc", "/dev/null", check=2)
    assert p.stderr == "ibtool: error: /dev/null: a character device, not a regular file: ibtool reads only " \
                       "regular files (save the data to a file first)\n"


def test_local_transport_timeout_ends_the_whole_process_group():
    import time

    from ibtool.bench.runners.base import Local
    started = time.monotonic()
    rc, out, _ = Local().run("echo started; sleep 30 & sleep 30", 0.5)
    assert rc is None and out == "started\n" and time.monotonic() - started < 10  # the background sleep too
