"""Emulate a fabric: ibsim + one OpenSM sweep + ibnetdiscover + dump_fts, always cleaned up.

Each run has its own IBSIM_SOCKNAME, OSM_TMP_DIR and OSM_CACHE_DIR, and runs its clients from a
scratch directory (umad2sim writes ./sys-<pid> there), so runs in parallel never meet.

Nothing outlives a run: every child is started by ibtool.children (PR_SET_PDEATHSIG), so the
kernel kills ibsim, OpenSM and every client even when ibtool itself is killed with SIGKILL; the
scratch directory holds the owner's pid and start time, so the next run into the same --out
removes a dead run's leftovers (and any process still working in them) and refuses to share it
with a live one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ibtool import children, rundir
from ibtool.errors import EnvironmentProblem, InputError, raise_interrupted
from ibtool.fabric import Fabric
from ibtool.formats import atomic_write, ibnetdiscover, output_dir
from ibtool.mad import lft_blocks, path_sls
from ibtool.sim import opensm

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"


def require(tool: str, package: str) -> str:
    path = shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if not path:
        raise EnvironmentProblem(f"{tool} not found; install the Debian package {package} (make setup does)")
    return path


@dataclass
class Fabricsim:
    """A running ibsim: its socket name and the environment its clients need."""

    net: Path
    work: Path
    sockname: str
    proc: subprocess.Popen
    log: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env["IBSIM_SOCKNAME"] = self.sockname
        env["LD_PRELOAD"] = UMAD2SIM
        env.update(extra)
        return env

    def client(self, argv: list[str], out: Path, timeout: float, **env: str) -> float:
        """Run an infiniband-diags client against this fabric, stdout to `out`; returns seconds."""
        t0 = time.monotonic()
        with open(out, "wb") as fh:
            p = children.popen(argv, cwd=self.work, env=self.env(**env), stdout=fh, stderr=subprocess.PIPE)
            try:
                _, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                children.stop(p)
                raise EnvironmentProblem(f"{argv[0]} did not finish within {timeout:.0f} s") from None
        if p.returncode != 0:
            msg = (err or b"").decode(errors="replace").strip().splitlines()
            raise EnvironmentProblem(f"{Path(argv[0]).name} failed (exit {p.returncode}): "
                                     f"{msg[-1] if msg else 'no message'}")
        return time.monotonic() - t0


def limits(f: Fabric) -> list[str]:
    """ibsim's node/switch/port pools sized to the fabric (its defaults stop at 256 switches)."""
    switches = f.count(kind=2)
    nodes = f.num_nodes
    ports = sum(f.nports) + nodes + 1024
    lids = switches + sum(f.nports[i] for i in range(nodes) if f.types[i] == 1)
    args = ["-N", str(nodes + 64), "-S", str(switches + 64), "-P", str(ports)]
    if lids > 30000:
        args += ["-L", "49152"]
    return args


@contextmanager
def ibsim(net: str | Path, work: Path, fabric: Fabric | None = None, timeout: float = 120):
    """Start ibsim on `net` and yield a Fabricsim; ibsim is stopped on exit, whatever happens."""
    exe = require("ibsim", "ibsim-utils")
    if not Path(UMAD2SIM).exists():
        raise EnvironmentProblem(f"{UMAD2SIM} not found; install the Debian package ibsim-utils")
    net = Path(net).resolve()
    fabric = fabric or ibnetdiscover.read(net)
    work.mkdir(parents=True, exist_ok=True)
    sock = f"ibtool-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    log = work.parent / rundir.IBSIM_LOG
    env = dict(os.environ, IBSIM_SOCKNAME=sock)
    with open(log, "wb") as fh:
        proc = children.popen([exe, "-s", *limits(fabric), "-n", str(net)], cwd=work, env=env,
                              stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while b"Network simulator ready" not in log.read_bytes():
            if proc.poll() is not None:  # ibsim refuses a net file by dying: say what it said of it
                said = log.read_text(errors="replace").strip().splitlines()
                why = [x.strip()[:120] for x in said if ("ibwarn" in x and "cannot parse remote lid" not in x)
                       or x.startswith("fatal")][-2:] or said[-1:] or ["no output"]
                at = re.search(r"^fatal: error at .*: line (\d+)", "\n".join(said), re.MULTILINE)
                raise InputError(f"ibsim refused this net file (exit {proc.returncode}): {'; '.join(why)}",
                                 path=str(net), line=int(at.group(1)) if at else None)
            if time.monotonic() > deadline:
                raise EnvironmentProblem(f"ibsim was not ready within {timeout:.0f} s")
            time.sleep(0.05)
        yield Fabricsim(net, work, sock, proc, log)
    finally:
        children.stop(proc)


@dataclass
class RunOptions:
    engines: list[str]
    timeout: float = 300.0
    log_flags: int = 0x47  # errors, info, verbose (routing step timing), routing dumps (0x40)
    conf_options: list[tuple[str, str]] = field(default_factory=list)
    conf_base: str | None = None
    opensm_args: list[str] = field(default_factory=list)
    plugin_dir: Path = opensm.PLUGIN_DIR
    discover: bool = True
    path_sls: bool = False  # keep OpenSM up as the SA and collect every HCA's PathRecords (their SLs)
    hdor_conf: Path | None = None  # the KNS description hdor reads beside opensm.conf (docs/plugin.md)
    accept_fallback: bool = False  # tables by a later engine of the list are a pass (said as a fallback)
    note: str | None = None  # which engine OpenSM uses and why, when no --engine nor plan chose it


def run(net: str | Path, out: str | Path, opts: RunOptions, progress=None) -> dict:
    """Emulate `net`, route it with opts.engines, discover it; write everything into `out`."""
    say = progress or (lambda msg: None)
    net = Path(net)
    if not net.is_file():
        raise InputError("no such net file", path=str(net))
    require("ibsim", "ibsim-utils")
    opensm_exe = require("opensm", "opensm")
    require("ibnetdiscover", "infiniband-diags")
    require("dump_fts", "infiniband-diags")
    fabric = ibnetdiscover.read(net, both_ends=True)  # what ibsim would die on, said with file:line
    hdor_conf = None
    if opts.hdor_conf is not None:
        from ibtool.formats import hdor_conf as kns_conf
        kns_conf.read(opts.hdor_conf)  # a description hdor would refuse is refused here, with its line
        hdor_conf = Path(opts.hdor_conf).read_bytes()
    env_extra = {}
    if any(e in opensm.PLUGIN_ENGINES for e in opts.engines):
        for e in opts.engines:
            if e in opensm.PLUGIN_ENGINES and not (opts.plugin_dir / f"lib{e}.so").exists():
                raise EnvironmentProblem(f"engine {e}: {opts.plugin_dir}/lib{e}.so not built; run `ibtool plugin build`")
        env_extra["LD_LIBRARY_PATH"] = ":".join(filter(None, [str(opts.plugin_dir.resolve()),
                                                               os.environ.get("LD_LIBRARY_PATH")]))
    flush = [("force_log_flush", "TRUE")] if opts.path_sls else []  # SUBNET UP must reach the log at once
    conf_text = opensm.config(opts.engines, opts.conf_options + flush, opts.conf_base, fabric=str(net))
    # every refusal above comes before --out is touched
    out = output_dir(out)
    work = out / ".work"
    _claim(work)
    osm_dir = out / rundir.OSM
    cache = osm_dir / rundir.OSM_CACHE
    cache.mkdir(parents=True, exist_ok=True)
    for stale in osm_dir.glob("opensm*"):
        stale.unlink()
    for stale in cache.iterdir():
        stale.unlink()  # guid2lid from an earlier run would pin stale LIDs
    env_extra.update(OSM_TMP_DIR=str(osm_dir.resolve()), OSM_CACHE_DIR=str(cache.resolve()))
    conf = out / rundir.OPENSM_CONF
    conf.write_text(conf_text)
    (out / rundir.HDOR_CONF).unlink(missing_ok=True)  # hdor reads hdor.conf beside the opensm.conf it runs with
    if opts.hdor_conf is not None:
        (out / rundir.HDOR_CONF).write_bytes(hdor_conf)
    log = out / rundir.OPENSM_LOG
    log.unlink(missing_ok=True)
    summary: dict = {"net": str(net), "engines": opts.engines, "fabric": fabric.summary(), "timings": {}}
    if opts.note:
        summary["engine_note"] = opts.note
    timings = summary["timings"]
    t_all = time.monotonic()
    old_term = signal.signal(signal.SIGTERM, raise_interrupted)
    old_hup = signal.signal(signal.SIGHUP, raise_interrupted)
    try:
        say(f"starting ibsim ({fabric.count(kind=2)} switches, {fabric.count(kind=1)} HCAs)")
        t0 = time.monotonic()
        with ibsim(net, work, fabric) as sim, ExitStack() as sm_up:
            timings["ibsim_start_s"] = round(time.monotonic() - t0, 3)
            summary["ibsim_sockname"] = sim.sockname
            say(f"running OpenSM with routing_engine {','.join(opts.engines)}")
            daemon = opts.path_sls  # the SA answers only while OpenSM runs: no `-o` then
            argv = [opensm_exe, *(() if daemon else ("-o",)), "-F", str(conf.resolve()), "-f", str(log.resolve()),
                    "-D", hex(opts.log_flags), *opts.opensm_args]
            summary["opensm_argv"] = argv
            t0 = time.monotonic()
            p = children.popen(argv, cwd=work, env=sim.env(**env_extra), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL,
                               stderr=sm_up.enter_context(open(out / rundir.OPENSM_STDERR, "wb")) if daemon
                               else subprocess.PIPE)
            sm_up.callback(children.stop, p)  # also on Ctrl-C / SIGTERM
            timed_out = False
            err = b""
            if daemon:
                timed_out = not _wait_subnet_up(p, log, opts.timeout) and p.poll() is None
                if p.poll() is not None:
                    err = (out / rundir.OPENSM_STDERR).read_bytes()
            else:
                try:
                    _, err = p.communicate(timeout=opts.timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                finally:
                    children.stop(p)
            timings["opensm_s"] = round(time.monotonic() - t0, 3)
            text = log.read_text(errors="replace") if log.exists() else ""
            outcome = opensm.routing_outcome(text, opts.engines, opts.accept_fallback)
            summary.update(outcome.as_dict())
            summary["opensm_exit"] = None if timed_out or (daemon and p.poll() is None) else p.returncode
            summary["timed_out"] = timed_out
            if err and err.strip():
                summary["opensm_stderr"] = err.decode(errors="replace").strip()[-2000:]
            if summary["opensm_exit"] not in (None, 0) and not outcome.subnet_up:
                _opensm_exited_early(summary, err, log, opts.opensm_args)
            if opts.discover:
                say("discovering: ibnetdiscover, dump_fts")
                timings["ibnetdiscover_s"] = round(sim.client(["ibnetdiscover"], out / rundir.FABRIC,
                                                              opts.timeout), 3)
                timings["dump_fts_s"] = round(sim.client(["dump_fts"], out / rundir.LFTS, opts.timeout), 3)
                t0 = time.monotonic()
                top = complete_top_lid(sim, out / rundir.LFTS, ibnetdiscover.read(out / rundir.FABRIC),
                                       opts.timeout, say)
                if top:
                    summary["dump_fts_top_lid"] = top
                    timings["top_lid_s"] = round(time.monotonic() - t0, 3)
            if daemon and not timed_out and p.poll() is None:
                say("reading every HCA pair's PathRecord from the SA: the SL of each path")
                t0 = time.monotonic()
                summary["path_sls"] = path_sls(sim, out / rundir.PATH_SLS,
                                               ibnetdiscover.read(out / rundir.FABRIC), opts.timeout, progress=say)
                timings["path_sls_s"] = round(time.monotonic() - t0, 3)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: whatever the log said, this run did not finish
        summary["interrupted"] = True
        summary["ok"] = False
        raise
    finally:
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGHUP, old_hup)
        shutil.rmtree(work, ignore_errors=True)
        timings["total_s"] = round(time.monotonic() - t_all, 3)
        with atomic_write(out / rundir.SUMMARY) as fh:
            fh.write(json.dumps(summary, indent=2) + "\n")
    return summary


def _opensm_exited_early(summary: dict, err: bytes, log: Path, extra: list[str]) -> None:
    """OpenSM stopped before the subnet came up: its own last error lines go into the summary
    (`opensm_error`, which `sim run` prints). Exiting before it wrote its log, it refused its
    command line (an unknown option, -h, a value out of range): bad input, InputError."""
    said = []
    for ln in err.decode(errors="replace").splitlines():  # OpenSM parses its arguments twice: once each
        ln = ln.strip()
        if ln and ln not in said:
            said.append(ln)
    rc = summary["opensm_exit"]
    if not log.exists() or log.stat().st_size == 0:
        why = "; ".join(said[-3:]) or "it printed its usage"
        summary["opensm_error"] = f"OpenSM refused its command line (exit {rc}): {why}"
        raise InputError(f"{summary['opensm_error']}; its extra arguments: {' '.join(extra) or 'none'} "
                         f"(--opensm-arg)")
    errs = [e for e in summary.get("errors", [])][-2:]
    summary["opensm_error"] = f"OpenSM exited (exit {rc}) before the subnet came up: " + (
        "; ".join(said[-2:] + errs) or "no error in its output or log")


_DR_HEADER = re.compile(rb"^Unicast lids \[[^\]]*\] of switch DR path slid \d+; dlid \d+; ([0-9,]+) guid (0x[0-9a-fA-F]+)")
_DR_HEADER_M = re.compile(_DR_HEADER.pattern, re.MULTILINE)


def complete_top_lid(sim: Fabricsim, dump: Path, fabric: Fabric, timeout: float, say=None) -> dict | None:
    """dump_fts (infiniband-diags 44) does not print the top LID when it is a multiple of 64: it
    stops before the 64-entry LFT block that LID opens. Read that block from every switch — the
    query of `smpdump -D <path> 0x19 <block>` (the LinearForwardingTable attribute, by the directed
    route dump_fts printed), all switches from one process (ibtool.mad) — and add the entries to
    dump_fts.out in dump_fts's own format; the tool's
    own output stays in dump_fts.raw.out. Returns what was done, or None when nothing was missing."""
    owners = fabric.lid_owners()
    top = max(owners, default=0)
    if not top or top % 64:
        return None
    raw = dump.read_bytes()
    if re.search(rb"^0x%04x " % top, raw, re.MULTILINE):
        return None  # printed after all (a fixed infiniband-diags)
    if say:
        say(f"reading LID {top} from every switch (dump_fts leaves out a top LID that is a multiple of 64)")
    paths = [(int(m.group(2), 16), m.group(1).decode()) for m in _DR_HEADER_M.finditer(raw)]
    blocks = lft_blocks(sim, [p for _, p in paths], top // 64, timeout)  # one process, every switch at once
    ports = {g: blocks[p][0] for g, p in paths}  # the block's first entry: LID top (top % 64 == 0)
    node, port = owners[top]
    kind = "Switch" if fabric.is_switch(node) else "Channel Adapter"
    tail = f" : ({kind} portguid {fabric.port_guid(node, port):#018x}: '{fabric.names[node]}')\n".encode()
    out, guid = [], None
    for line in raw.splitlines(keepends=True):
        m = _DR_HEADER.match(line)
        if m:
            guid = int(m.group(2), 16)
        elif guid is not None and line.rstrip().endswith(b"valid lids dumped") and ports.get(guid, 255) != 255:
            out.append(b"%#06x %03d" % (top, ports[guid]) + tail)
            line = b"%d valid lids dumped \n" % (int(line.split()[0]) + 1)
            guid = None
        out.append(line)
    keep = dump.with_name(rundir.LFTS_RAW)
    keep.unlink(missing_ok=True)
    os.link(dump, keep)  # the tool's own output, untouched
    with atomic_write(dump, "wb") as fh:
        fh.write(b"".join(out))
    return {"lid": top, "read_with": "SubnGet(LinearForwardingTable) block by directed route (smpdump's query)",
            "switches": len(ports), "routed": sum(1 for v in ports.values() if v != 255),
            "raw": rundir.LFTS_RAW}


def _wait_subnet_up(p: subprocess.Popen, log: Path, timeout: float) -> bool:
    """Wait for OpenSM (running as the SA) to log SUBNET UP; False on timeout or if it exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        if log.exists() and b"SUBNET UP" in log.read_bytes():
            return True
        time.sleep(0.2)
    return False


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) of `pid` from /proc/PID/stat, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            rest = fh.read().rsplit(")", 1)[1].split()
        return rest[0], rest[19]
    except (OSError, IndexError):
        return None


def _start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (field 22 of /proc/PID/stat): a pid with it is that process.
    None for a zombie too: a killed detached ibsim stays one until init reaps it, and it is dead."""
    st = _stat(pid)
    return st[1] if st is not None and st[0] not in ("Z", "X") else None


def _claim(work: Path) -> None:
    """Make `work` this run's scratch directory. A live run's is refused; a dead run's (its owner
    gone, or another process under that pid now) is removed, with any process still inside it."""
    owner = work / "owner"
    if work.is_dir():
        try:
            pid_s, started = owner.read_text().split()
            pid = int(pid_s)
        except (OSError, ValueError):
            pid, started = None, None
        if pid is not None and pid != os.getpid() and _start_time(pid) == started:
            raise InputError(f"--out {work.parent}: in use by a running `ibtool sim run` (pid {pid})")
        for proc in Path("/proc").iterdir():  # ibsim/OpenSM of an ibtool that predates ibtool.children
            if proc.name.isdigit():
                try:
                    cwd = os.readlink(proc / "cwd")
                except OSError:
                    continue
                if cwd == str(work) or cwd.startswith(str(work) + "/"):
                    try:
                        os.kill(int(proc.name), signal.SIGKILL)
                    except OSError:
                        pass
        shutil.rmtree(work, ignore_errors=True)
    for half in work.parent.glob(".work.*"):  # a claim cut short by kill -9
        if not half.name[6:].isdigit() or _start_time(int(half.name[6:])) is None:
            shutil.rmtree(half, ignore_errors=True)
    # claimed atomically: the directory appears with its owner file in it, or not at all
    mine = work.with_name(f".work.{os.getpid()}")
    shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir(parents=True)
    (mine / "owner").write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
    try:
        mine.rename(work)
    except OSError:  # another run claimed it between our look and now
        shutil.rmtree(mine, ignore_errors=True)
        raise InputError(f"--out {work.parent}: in use by another `ibtool sim run`") from None
