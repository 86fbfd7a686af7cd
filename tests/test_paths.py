"""What a path a user names may be (issue 36 item 9; README "Files ibtool reads and writes").

Every output option of every command, found in the click tree (so a new one is covered without
an edit here), is given a character device, a block device (made with mknod under a temporary
directory, as root), a FIFO, a socket, a directory where a file goes (a regular file where a
directory goes), a symlink to a device and a symlink to nothing: each is refused with one line
naming it, exit 2, and the node is left as it was (same inode, type and device numbers, nothing
beside it). A symlink to a regular file (a directory) is followed: the commands that compute in
this process write through it (the link stays, the file it names is replaced); the ones that
start ibsim, reach hosts or install (sim run/up, collect, bench run, plugin install) are held to
accepting it when they parse their options. Every input option refuses a FIFO nobody writes to
(it blocked for ever) and a device, without waiting.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import click
import pytest
from support import FIXTURES, SMALL, failed_campaign, ibtool

from ibtool.cli import InPath, OutPath
from ibtool.cli.main import cli
from ibtool.formats import atomic_write, move_into, open_input, output_dir

R = FIXTURES / "real"
HDOR, RUN = R / "ibsim-kns-k3-n2-hdor", R / "ibsim-kns-k3-n2-minhop-run"
PLAN_NET = R / "plan-kns-k3-n2.net"
ROOT = os.geteuid() == 0


def commands(group=cli, path=()):
    for name in group.list_commands(None):
        cmd = group.get_command(None, name)
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def path_params(kind):
    return [(path, cmd, p) for path, cmd in commands() for p in cmd.params if isinstance(p.type, kind)]


def opt(p) -> str:
    return max(p.opts, key=len)


OUTPUTS = path_params(OutPath)
INPUTS = [x for x in path_params(InPath) if x[2].opts[0].startswith("-")]


def test_every_path_parameter_is_an_input_or_an_output():
    # a new option declared as a plain click.Path would escape the checks below
    plain = [(" ".join(path), p.name) for path, cmd in commands() for p in cmd.params
             if isinstance(p.type, click.Path) and not isinstance(p.type, (InPath, OutPath))]
    assert plain == []
    assert len(OUTPUTS) >= 45  # topo's 17 families, route's 10, verify's 8, ...


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A plan, its cabling package and layout, a campaign: the inputs the commands need."""
    d = tmp_path_factory.mktemp("inputs")
    ibtool("topo", "kns", "--k", 3, "--n", 2, "--radix", 8, "--out", d / "plan", check=0)
    ibtool("cabling", d / "plan", "--out", d / "cabling", check=0)
    ibtool("analyze", d / "plan", "--layout", "default", "--bisection", "none", "--save-layout", d / "layout.json",
           check=0)
    camp = d / "campaign"
    failed_campaign(camp)
    (d / "inv.yaml").write_text("hosts: [{name: a, slots: 2}]\nrunner: local\n")
    ibtool("whatif", "run", d / "plan", "--only", "S[0,0]", "--out", d / "whatif", check=0)  # for `whatif report`
    # a watcher's store of one real captured round (fixtures/watch), for `watch report`
    from ibtool import mad
    from ibtool.watch.collector import Collector
    from ibtool.watch.events import Judge
    from ibtool.watch.plan import PlanView
    from ibtool.watch.store import Store
    raw, line = mad.round_parser()
    for ln in (FIXTURES / "watch" / "round-kns3x2.txt").read_bytes().splitlines():
        line(ln)
    with Store(d / "watch.db", write=True) as st:
        rnd, judge = Collector(None, PlanView()).build(raw, 1_800_000_000.0), Judge(PlanView(), {})
        st.write_round(rnd, judge.judge(rnd), {"view": judge.state()})
    return d


def base(cmd: tuple, d: Path, m: Path) -> tuple[list, dict] | None:
    """A valid invocation of `cmd` (its arguments, its options) with every output inside d/base;
    m: the `made` inputs."""
    o = d / "base"
    fab = HDOR / "ibnetdiscover.out"
    table = {
        ("analyze",): ([m / "plan"], {"--bisection": "none"}),
        ("bench", "report"): ([m / "campaign"], {"--out": o / "report"}),
        ("bench", "run"): ([], {"-i": m / "inv.yaml", "-b": "hpcc", "--out": o / "camp"}),
        ("cabling", "import"): ([m / "cabling" / "cables.csv"], {"--out": o / "plan"}),
        ("cabling", "plan"): ([m / "plan"], {"--out": o / "cabling"}),
        ("collect",): ([], {"--out": o / "run"}),
        ("plugin", "install"): ([], {"--destdir": o / "root", "--dry-run": None}),
        ("route", "equality"): ([], {"--fabric": fab, "--spec": "N14K6[-1,1,3,9](4)", "--out": o / "x.lft"}),
        ("route", "fr"): ([], {"--fabric": fab, "--layout": m / "layout.json", "--out": o / "x.lft"}),
        ("route", "hdor"): ([], {"--fabric": fab, "--out": o / "x.lft"}),
        ("route", "kantc"): ([], {"--fabric": fab, "--out": o / "x.lft"}),
        ("sim", "run"): ([PLAN_NET], {"--out": o / "run"}),
        ("sim", "up"): ([PLAN_NET], {"--out": o / "run"}),
        ("verify", "all"): ([RUN], {"--plan": PLAN_NET}),
        ("verify", "coords"): ([], {"--fabric": fab, "--dump": HDOR / "opensm-hdor.dump", "--plan": PLAN_NET}),
        ("verify", "health"): ([R / "ibsim-kns-k3-n2-counters"], {}),
        ("verify", "routes"): ([], {"--fabric": fab, "--lfts": HDOR / "dump_fts.out", "--no-balance": None}),
        ("verify", "topology"): ([], {"--plan": PLAN_NET, "--discovered": fab}),
        ("watch", "report"): ([], {"--store": m / "watch.db"}),
        ("whatif", "report"): ([m / "whatif"], {}),
        ("whatif", "run"): ([m / "plan"], {"--only": "S[0,0]", "--out": o / "whatif"}),
        ("watch", "run"): ([], {"--store": o / "watch.db", "--rounds": 1, "--listen": "none"}),
    }
    if cmd[0] == "topo":
        return [], {**dict(zip(SMALL[cmd[1]][::2], SMALL[cmd[1]][1::2])), "--out": o / "plan"}
    return table.get(cmd)


# held to accepting a followed symlink when they parse it: the commands that start ibsim, reach hosts,
# watch a live fabric or install, and the routes of families no fixture holds a discovery of (their tests run ibsim;
# they write through route hdor's one flow, routing/run.py)
PARSED_ONLY = {("sim", "run"), ("sim", "up"), ("collect",), ("bench", "run"), ("plugin", "install"),
               ("route", "kantc"), ("route", "equality"), ("watch", "run")}
# what an option needs beside the command's base invocation
DROP = object()
EXTRA = {(("analyze",), "--save-layout"): {"--layout": "default"}, (("analyze",), "--plot"): {"--bisection": DROP}}
SUFFIX = {"--plot": ".svg", "--html": ".html", "--junit": ".xml", "--save-layout": ".json"}


def argv(cmd, d, m, option, value) -> list:
    (d / "base").mkdir(exist_ok=True)
    args, opts = base(cmd, d, m)
    opts = {k: v for k, v in opts.items() if not (k == "-o" and option == "--out")}
    opts.update({option: value, **EXTRA.get((cmd, option), {})})
    out = [*cmd, *args]
    for k, v in opts.items():
        if v is not DROP:
            out += [k] if v is None else [k, v]
    return out


def node_state(p: Path):
    st = os.lstat(p)
    listing = sorted(os.listdir(p)) if stat.S_ISDIR(st.st_mode) else None
    return st.st_ino, st.st_mode, st.st_rdev, listing, os.readlink(p) if stat.S_ISLNK(st.st_mode) else None


def make_nodes(d: Path, directory_output: bool, suffix: str) -> dict[str, Path]:
    """The things an output must not replace, each under its own name in d."""
    d.mkdir(parents=True)
    nodes = {}
    if ROOT:  # device nodes need CAP_MKNOD: /dev/full's numbers, and a loop device's
        nodes["chardev"] = d / f"full{suffix}"
        os.mknod(nodes["chardev"], 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        nodes["blockdev"] = d / f"loop{suffix}"
        os.mknod(nodes["blockdev"], 0o660 | stat.S_IFBLK, os.makedev(7, 250))
    nodes["fifo"] = d / f"fifo{suffix}"
    os.mkfifo(nodes["fifo"])
    nodes["socket"] = d / f"sock{suffix}"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(nodes["socket"]))
    s.close()
    if directory_output:
        nodes["file"] = d / f"file{suffix}"
        nodes["file"].write_text("kept\n")
    else:
        nodes["directory"] = d / f"dir{suffix}"
        nodes["directory"].mkdir()
        (nodes["directory"] / "kept").write_text("kept\n")
    nodes["symlink-to-fifo"] = d / f"lfifo{suffix}"
    nodes["symlink-to-fifo"].symlink_to(nodes["fifo"].name)
    nodes["dangling-symlink"] = d / f"ldangling{suffix}"
    nodes["dangling-symlink"].symlink_to(f"nothing{suffix}")
    return nodes


@pytest.mark.parametrize("cmd,option", [(path, opt(p)) for path, _, p in OUTPUTS],
                         ids=[f"{' '.join(path)} {opt(p)}" for path, _, p in OUTPUTS])
def test_an_output_option_refuses_what_is_not_a_regular_file(cmd, option, made, tmp_path):
    assert base(cmd, tmp_path, made) is not None, f"add a valid invocation of `ibtool {' '.join(cmd)}` to base()"
    directory = next(p.type.directory for c, _, p in OUTPUTS if c == cmd and opt(p) == option)
    nodes = make_nodes(tmp_path / "nodes", directory, SUFFIX.get(option, ""))
    before = {k: node_state(p) for k, p in nodes.items()}
    listing = sorted(os.listdir(tmp_path / "nodes"))
    for kind, node in nodes.items():
        r = ibtool(*argv(cmd, tmp_path, made, option, node), timeout=120)
        errors = [x for x in r.stderr.splitlines() if x.startswith("ibtool: error:")]
        assert r.returncode == 2 and len(errors) == 1, f"{kind}: exit {r.returncode}\n{r.stderr[-2000:]}"
        assert "Traceback" not in r.stderr
        assert f"{option} {node}: " in errors[0], errors[0]
        assert node_state(node) == before[kind], f"{kind} changed"
    assert sorted(os.listdir(tmp_path / "nodes")) == listing  # no temporary file left beside them
    assert not any((tmp_path / "base").iterdir())  # refused before anything was written


@pytest.mark.parametrize("cmd,option", [(path, opt(p)) for path, _, p in OUTPUTS],
                         ids=[f"{' '.join(path)} {opt(p)}" for path, _, p in OUTPUTS])
def test_an_output_symlink_is_followed(cmd, option, made, tmp_path):
    directory = next(p.type.directory for c, _, p in OUTPUTS if c == cmd and opt(p) == option)
    suffix = SUFFIX.get(option, "")
    target, link = tmp_path / f"target{suffix}", tmp_path / f"link{suffix}"
    if directory:
        target.mkdir()
    else:
        target.write_text("old\n")
    link.symlink_to(target.name)
    args = argv(cmd, tmp_path, made, option, link)
    if cmd in PARSED_ONLY:  # the option as the command parses it: accepted, the link as given
        params = dict(commands())[cmd].make_context(cmd[-1], [str(a) for a in args[len(cmd):]]).params
        assert link in params.values() or str(link) in params.values()
    else:
        r = ibtool(*args, timeout=300)
        assert r.returncode in (0, 1), f"exit {r.returncode}\n{r.stderr[-2000:]}"
        if directory:
            assert any(target.iterdir()), "nothing written into the directory the link names"
        else:
            assert target.read_text() != "old\n", "the file the link names was not written"
    assert link.is_symlink() and os.readlink(link) == target.name  # the link itself stays


@pytest.mark.parametrize("cmd,option", [(path, opt(p)) for path, _, p in INPUTS],
                         ids=[f"{' '.join(path)} {opt(p)}" for path, _, p in INPUTS])
def test_an_input_option_refuses_a_fifo_and_a_device_without_waiting(cmd, option, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    nodes = [fifo]
    if ROOT:
        nodes.append(tmp_path / "zero")
        os.mknod(nodes[-1], 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: read for ever
    for node in nodes:
        # the option alone: it is refused as click parses it, before any other option is needed
        r = ibtool(*cmd, option, node, timeout=60)
        errors = [x for x in r.stderr.splitlines() if x.startswith("ibtool: error:")]
        assert r.returncode == 2 and len(errors) == 1, r.stderr[-2000:]
        assert f"{option} {node}: " in errors[0] and "not a regular file" in errors[0], errors[0]


# ------------------------------------------------------------------ the one place, called directly

@pytest.fixture
def nodes(tmp_path):
    return make_nodes(tmp_path / "n", False, "")


def test_atomic_write_refuses_every_node_and_leaves_it(nodes):
    for kind, node in nodes.items():
        before = node_state(node)
        with pytest.raises(Exception, match="nothing was written") as e:
            with atomic_write(node) as fh:
                fh.write("x")
        assert str(node) in str(e.value) and node_state(node) == before, kind


def test_output_dir_and_move_into_refuse_what_is_not_a_directory(tmp_path, nodes):
    for kind in ("fifo", "socket", "symlink-to-fifo", "dangling-symlink", *(["chardev"] if ROOT else [])):
        with pytest.raises(Exception, match="not a directory|does not exist"):
            output_dir(nodes[kind])
    # a plan moved into a directory where one of its files is a FIFO: nothing moved, the FIFO kept
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    out.mkdir()
    tmp.mkdir()
    (tmp / "a.txt").write_text("a")
    (tmp / "topology.net").write_text("net")
    os.mkfifo(out / "topology.net")
    with pytest.raises(Exception, match="a FIFO, not a regular file"):
        move_into(tmp, out)
    assert stat.S_ISFIFO(os.lstat(out / "topology.net").st_mode) and not (out / "a.txt").exists()


def test_open_input_refuses_a_fifo_nobody_writes_to(nodes):
    for kind in ("fifo", "symlink-to-fifo", *(["chardev"] if ROOT else [])):
        with pytest.raises(Exception, match="not a regular file"):
            open_input(nodes[kind])


def test_a_fifo_inside_a_plan_directory_is_refused_not_waited_for(tmp_path, made):
    import shutil
    plan = tmp_path / "plan"
    shutil.copytree(made / "plan", plan)
    (plan / "layout.json").unlink(missing_ok=True)
    os.mkfifo(plan / "layout.json")  # the plan's layout, read when present: the read blocked for ever
    r = ibtool("analyze", plan, "--bisection", "none", timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"{plan / 'layout.json'}: a FIFO, not a regular file" in r.stderr


def test_a_long_output_path_is_one_line(tmp_path):
    # 5,019 characters in one name: ENAMETOOLONG was a traceback in plan.py
    long = tmp_path / ("x" * 5019)
    for args in (["topo", "kns", "--k", 3, "--n", 2, "--radix", 8, "--out", long],
                 ["route", "hdor", "--fabric", HDOR / "ibnetdiscover.out", "--out", long],
                 ["verify", "routes", "--fabric", long, "--lfts", HDOR / "dump_fts.out"]):
        r = ibtool(*args)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert r.stderr.count("\n") == 1 and "File name too long" in r.stderr and "(5,0" in r.stderr, r.stderr
        assert len(r.stderr) < 400
