"""A live emulated fabric: ibsim with its console on a FIFO, and one or more OpenSM daemons on it.

``ibtool sim run`` sweeps once (``opensm -o``) and exits. Work that needs a fabric that stays
up (engine switching in a benchmark campaign, fault injection, counter collection, SM restarts
and failover, ``ibtool sim up``) uses this:

    from ibtool.sim.live import LiveFabric

    with LiveFabric("topology.net", Path("work"), ["dfsssp"]) as lf:
        lf.outcome                    # what OpenSM's log says: subnet_up, engine, fallback ... (a dict)
        lf.client(["ibnetdiscover"], Path("fabric.out"))   # a diags client against the fabric
        children.run(["perfquery"], env=lf.env(), cwd=lf.scratch)   # or run one yourself (ibtool.children)
        lf.console('Unlink "S-0002c90200000001"[3]')       # an ibsim console command; returns its output
        lf.restart_opensm(["updn"])   # stop OpenSM, start it again with other engines, wait for them
                                      # (OpenSM's cache directory survives, as on a host)
    # leaving the block stops OpenSM, then ibsim, whatever happened (Ctrl-C and SIGTERM included)

    # two SMs on two HCAs (master and standby by sm_priority); the master dies, the standby takes over
    with LiveFabric(net, work, ["hdor"], sms=2) as lf:
        lf.sm_kill(1)                 # SIGKILL, as if its host died
        lf.wait_master(2)             # the standby's poll of the master times out: it routes

Interface:

* ``LiveFabric(net, work, engines, timeout=120, conf_options=(), opensm_args=(), plugin_dir=...,
  conf_base=None, hdor_conf=None, sms=1, sm_nodes=None, sm_priorities=None, detached=False)``:
  ``net`` an ibnetdiscover-format file, ``work`` a scratch directory (created), ``engines`` the
  routing_engine list of OpenSM (plugin engines such as hdor need ``plugin_dir/lib<engine>.so``),
  ``conf_base`` an opensm.conf to start from (a plan's), ``hdor_conf`` a KNS description copied
  beside every SM's opensm.conf (hdor reads it from there). ``sms`` OpenSM instances, SM n on
  ``sm_nodes[n-1]`` (a device name of the plan or an ibsim node id; default: one SM on ibsim's
  default node, the first in the file; with several, HCAs spread over the file, first and last
  for two) with ``sm_priority`` ``sm_priorities[n-1]`` (default 15, 14, ... when there are
  several). ``detached``: the processes outlive this Python process (``ibtool sim up``); the
  state is kept in ``work/sim.json`` either way and ``LiveFabric.attach(work)`` picks it up.
* ``.outcome``: ibtool.sim.opensm.routing_outcome of SM 1's log, as a dict, plus
  ``vls_needed`` (from "Virtual Lanes needed: N" when the engine logs it), ``log`` and ``output``
  (OpenSM's own stdout/stderr file), ``state`` (MASTER, STANDBY ...) and, when OpenSM exited or
  did not come up, ``error`` with its last error line. ``restart_opensm`` returns the same dict;
  ``.sms[n-1].outcome`` is SM n's.
* ``.sm_start(n, engines=None)``, ``.sm_stop(n)`` (SIGTERM), ``.sm_kill(n)`` (SIGKILL),
  ``.sm_restart(n)``, ``.wait_master(n)``, ``.wait_routed(n, after)``: one SM at a time.
  While they wait, an SM whose sweep stopped for good is seen within STALL_S seconds of an idle
  fabric and restarted (RETRIES times): two OpenSMs on one ibsim can each end up waiting for a MAD
  ibsim never answers (docs/sim.md, "When an SM stalls"). The outcome's ``stalls`` lists each,
  with a message saying which SM, which MAD OpenSM still waited for at its exit, and what was done.
* ``.env(**extra)``: the environment of a diags client (LD_PRELOAD=umad2sim, IBSIM_SOCKNAME);
  run clients with ``cwd=.scratch`` (umad2sim writes ./sys-<pid> there).
* ``.console(cmd, timeout=10)``: write one command on ibsim's console FIFO (``.fifo``, which
  other processes may write too) and return what ibsim printed until its next prompt.
* ``.opensm_log`` / ``.opensm_out``: SM 1's current log and stdout/stderr file (one pair per
  start: ``opensm-<n>-<engines>.log``), ``.ibsim_log``: ibsim's console output.
* ``.stop()``: what leaving the block does; safe to call twice.

Files: SM 1 lives in ``work`` (``opensm-<k>-<engines>.conf|log|out``, OSM_TMP_DIR ``work/osm``,
OSM_CACHE_DIR ``work/osm/cache``), SM n >= 2 in ``work/sm-<n>`` laid out the same. A cache
directory is emptied when the fabric starts and kept across its SM's restarts, as a host's
/var/cache/opensm (OpenSM's guid2lid and the KNS hdor remembers). Each SM's OpenSM is started
with ``-F`` its own opensm.conf, so the ``hdor.conf`` beside it is the KNS description hdor reads
(``hdor_conf=`` copies one beside every SM's; docs/plugin.md). Each LiveFabric has its own IBSIM_SOCKNAME, so several can run at once.

Processes are known by pid and kernel start time, so a stop never signals a process that merely
reuses a pid; a detached fabric's work directory is claimed as `sim run` claims its own (a live
one is refused, a dead one's leftovers are removed).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ibtool import children, rundir
from ibtool.errors import EnvironmentProblem, InputError
from ibtool.formats import atomic_write, ibnetdiscover
from ibtool.sim import opensm
from ibtool.sim.runner import UMAD2SIM, Fabricsim, _claim, _stat, limits, require

_VLS = re.compile(r"Virtual Lanes needed: (\d+)")
_STATE = re.compile(r"Entering (\S+) state")
_LOST = re.compile(r"ERR 5401: evicting entry \S+ \(tid was 0x([0-9a-f]+) mgmt class 0x([0-9a-f]+)\)")
PROMPT = b"sim> "
STATE_FILE = "sim.json"

# An SM that stalls (docs/sim.md, "When an SM stalls"): under ibsim an OpenSM can wait for ever for
# a MAD nobody answers (umad2sim has no MAD timeouts). A sweep on umad2sim is work for OpenSM or
# ibsim at every step (there is no timeout to wait out), so a sweep not finished while all of them
# used no CPU for STALL_S is a stall, not a slow machine: a starved process still gets its share.
STALL_S = 10.0
IDLE_CPU_S = 0.1  # CPU seconds an idle fabric may use in STALL_S (stalled, polling each second: 0-0.02)
RETRIES = 2  # restarts of the stalled SMs before a command gives up, as an operator would try


def vls_needed(log_text: str) -> int | None:
    """The VL count a deadlock-free engine (dfsssp, sssp, nue) logs; None when it logs none."""
    found = _VLS.findall(log_text)
    return int(found[-1]) if found else None


def last_error(*texts: str) -> str | None:
    """The last line that reads like an error in OpenSM's output and log."""
    for text in texts:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        bad = [ln for ln in lines if re.search(r"ERR [0-9A-F]{4}|error|fail|No local ports|cannot|can't",
                                                ln, re.IGNORECASE)]
        if bad:
            return bad[-1][-300:]
    return None


def sm_state(log_text: str) -> str | None:
    """The SM state OpenSM last logged entering (MASTER, STANDBY, DISCOVERING, NOT-ACTIVE)."""
    found = _STATE.findall(log_text)
    return found[-1] if found else None


def cpu_state(pid: int) -> tuple[float, str] | None:
    """(user + system CPU seconds of all its threads, state letter) of a process; None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            rest = fh.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK"), rest[0]
    except (OSError, IndexError, ValueError):
        return None


class Activity:
    """How long ibsim and the fabric's running OpenSMs have been idle: the longest time up to now
    in which they used at most IDLE_CPU_S of CPU together (a sliding window, so a standby's polls
    do not add up to activity) and none was seen waiting for a disk (state D)."""

    def __init__(self, lf: LiveFabric):
        self.lf = lf
        self.pids: tuple = ()
        self.samples: deque[tuple[float, float]] = deque()  # (monotonic time, CPU seconds)

    def idle_for(self) -> float:
        pids = tuple(p for p in [self.lf.ibsim_pid, *(sm.pid for sm in self.lf.sms if sm.running)] if p)
        seen = [x for x in map(cpu_state, pids) if x]
        now, cpu = time.monotonic(), sum(c for c, _ in seen)
        if pids != self.pids or any(st == "D" for _, st in seen):
            self.pids, self.samples = pids, deque()
        self.samples.append((now, cpu))
        while cpu - self.samples[0][1] > IDLE_CPU_S:
            self.samples.popleft()
        return now - self.samples[0][0]


def _text(path: str | None) -> str:
    return Path(path).read_text(errors="replace") if path and Path(path).exists() else ""


def up_as_master(log_text: str) -> bool:
    """Is the SM MASTER, with a SUBNET UP since it became master (its sweep as master ended)?"""
    return sm_state(log_text) == "MASTER" and "SUBNET UP" in log_text[log_text.rfind("Entering MASTER state"):]


def start_time(pid: int) -> str | None:
    st = _stat(pid)
    return st[1] if st else None


def alive(pid: int | None, started: str | None) -> bool:
    """Is `pid` still the process that started at `started` (and not a zombie)?"""
    st = _stat(pid) if pid else None
    return st is not None and st[1] == started and st[0] not in ("Z", "X")


def signal_process(pid: int, started: str, sig: int, grace: float = 3.0) -> None:
    """Signal the process group of `pid` (a session leader we started) if `pid` is still that
    process; with SIGTERM, SIGKILL after `grace` s. Returns when it is gone."""
    for s, wait in ((sig, grace), (signal.SIGKILL, 10.0)):
        if not alive(pid, started):
            return
        try:
            os.killpg(pid, s)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and alive(pid, started):
            try:
                os.waitpid(pid, os.WNOHANG)  # our own child: reap it (a detached one is init's)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        if s == signal.SIGKILL:
            return


@dataclass
class SM:
    """One OpenSM of the fabric: where it attaches (an ibsim node), its files, its process."""

    n: int
    home: str  # -F home/opensm-<k>-<engines>.conf; OSM_TMP_DIR home/osm; OSM_CACHE_DIR home/osm/cache
    node: str | None = None  # ibsim node id (SIM_HOST); None: ibsim's default node
    name: str | None = None  # the plan's name of that node
    priority: int | None = None
    engines: list[str] = field(default_factory=list)
    starts: int = 0
    pid: int | None = None
    started: str | None = None
    conf: str | None = None
    log: str | None = None
    out: str | None = None
    logs: list[str] = field(default_factory=list)  # the logs of all its starts (configured_count)
    outcome: dict = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return alive(self.pid, self.started)

    def state(self) -> str | None:
        """What its log says it is now (None when it is not running)."""
        if not self.running or not self.log or not Path(self.log).exists():
            return None
        return sm_state(Path(self.log).read_text(errors="replace"))


class LiveFabric:
    def __init__(self, net: str | Path, work: str | Path, engines: list[str] | tuple[str, ...] = ("minhop",),
                 timeout: float = 120, conf_options=(), opensm_args=(), plugin_dir: Path = opensm.PLUGIN_DIR,
                 conf_base: str | Path | None = None, hdor_conf: str | Path | None = None, sms: int = 1,
                 sm_nodes: list[str] | None = None, sm_priorities: list[int] | None = None, detached: bool = False,
                 accept_fallback: bool = False):
        self.net = Path(net)
        self.accept_fallback = accept_fallback  # a later engine of the list is a pass (--accept-fallback)
        if not self.net.is_file():
            raise InputError("no such net file", path=str(net))
        self.work = Path(work).resolve()
        self.engines = list(engines)
        self.timeout = timeout
        self.conf_options = [tuple(kv) for kv in conf_options]
        self.conf_base = str(conf_base) if conf_base else None  # an opensm.conf to start from (a plan's)
        self.opensm_args = list(opensm_args)
        self.plugin_dir = Path(plugin_dir)
        self.hdor_conf = str(hdor_conf) if hdor_conf else None
        if self.hdor_conf and not Path(self.hdor_conf).is_file():
            raise InputError("no such file", path=self.hdor_conf)
        self.detached = detached
        self.sockname = f"ibtool-live-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.ibsim_pid: int | None = None
        self.ibsim_started: str | None = None
        self._popen: dict[int, subprocess.Popen] = {}  # our own children (not after attach)
        self._counted: dict[str, int] = {}  # configured_count of logs that grow no more
        count = len(sm_nodes) if sm_nodes else sms
        if count < 1:
            raise InputError("--sms: at least one SM")
        if sm_priorities and len(sm_priorities) != count:
            raise InputError(f"{len(sm_priorities)} SM priorities for {count} SMs")
        if any(not 0 <= p <= 15 for p in sm_priorities or ()):
            raise InputError("an SM priority is 0..15")
        plan = ibnetdiscover.read(self.net) if count > 1 or sm_nodes else None  # only to place SMs
        if sm_nodes:
            picked = [self._node(plan, x) for x in sm_nodes]
        elif count == 1:
            picked = [(None, None)]
        else:  # HCAs spread over the file: the first and the last for two
            hcas = [i for i in range(plan.num_nodes) if not plan.is_switch(i)]
            if len(hcas) < count:
                raise InputError(f"{count} SMs need {count} HCAs; the fabric has {len(hcas)}", path=str(net))
            picked = [(ibnetdiscover.node_id(plan, hcas[k * (len(hcas) - 1) // (count - 1)]),
                       plan.names[hcas[k * (len(hcas) - 1) // (count - 1)]]) for k in range(count)]
        if len({p[0] for p in picked}) < count:
            raise InputError("two SMs on one node (ibsim carries one SM a node)")
        prio = sm_priorities or ([None] if count == 1 else [max(0, 15 - k) for k in range(count)])
        self.sms = [SM(n, str(self.work if n == 1 else self.work / f"sm-{n}"), node, name, prio[n - 1],
                       list(self.engines)) for n, (node, name) in enumerate(picked, 1)]

    @staticmethod
    def _node(plan, spec: str) -> tuple[str, str]:
        """(ibsim node id, plan name) of a device named as in the plan, or by its ibsim node id."""
        ids = [ibnetdiscover.node_id(plan, i) for i in range(plan.num_nodes)]
        if spec in ids:
            i = ids.index(spec)
        else:
            try:
                i = plan.index(spec)
            except InputError:
                raise InputError(f"--sm-on: no device {spec!r} in the plan") from None
        return ids[i], plan.names[i]

    # ------------------------------------------------------------------ paths and state
    @property
    def scratch(self) -> Path:
        return self.work / "scratch"

    @property
    def fifo(self) -> Path:
        return self.work / "ibsim.console"

    @property
    def ibsim_log(self) -> Path:
        return self.work / rundir.IBSIM_LOG

    @property
    def outcome(self) -> dict:
        return self.sms[0].outcome

    @property
    def opensm_log(self) -> Path | None:
        return Path(self.sms[0].log) if self.sms[0].log else None

    @property
    def opensm_out(self) -> Path | None:
        return Path(self.sms[0].out) if self.sms[0].out else None

    @property
    def _opensm(self) -> subprocess.Popen | None:
        """SM 1's process, when this object started it (tests signal it themselves)."""
        return self._popen.get(self.sms[0].pid) if self.sms[0].pid else None

    @property
    def up(self) -> bool:
        return alive(self.ibsim_pid, self.ibsim_started)

    def sm(self, n: int) -> SM:
        if not 1 <= n <= len(self.sms):
            raise InputError(f"--sm {n}: this fabric has SM 1" + (f"..{len(self.sms)}" if len(self.sms) > 1 else ""))
        return self.sms[n - 1]

    def _save(self) -> None:
        state = {"net": str(self.net.resolve()), "work": str(self.work), "sockname": self.sockname,
                 "detached": self.detached, "ibsim": {"pid": self.ibsim_pid, "started": self.ibsim_started},
                 "engines": self.engines, "timeout": self.timeout, "conf_options": self.conf_options,
                 "conf_base": self.conf_base, "opensm_args": self.opensm_args, "plugin_dir": str(self.plugin_dir),
                 "hdor_conf": self.hdor_conf, "accept_fallback": self.accept_fallback,
                 "sms": [asdict(sm) for sm in self.sms]}
        with atomic_write(self.work / STATE_FILE) as fh:
            json.dump(state, fh, indent=2)
            fh.write("\n")

    @classmethod
    def attach(cls, work: str | Path) -> LiveFabric:
        """The fabric a (detached) LiveFabric left running in `work`, from its sim.json."""
        path = Path(work) / STATE_FILE
        try:
            d = json.loads(path.read_text())
            lf = cls.__new__(cls)
            lf.net, lf.work, lf.sockname = Path(d["net"]), Path(d["work"]), d["sockname"]
            lf.detached, lf.engines, lf.timeout = d["detached"], d["engines"], d["timeout"]
            lf.conf_options = [tuple(kv) for kv in d["conf_options"]]
            lf.conf_base, lf.opensm_args, lf.hdor_conf = d["conf_base"], d["opensm_args"], d["hdor_conf"]
            lf.plugin_dir = Path(d["plugin_dir"])
            lf.accept_fallback = d.get("accept_fallback") is True
            lf.ibsim_pid, lf.ibsim_started = d["ibsim"]["pid"], d["ibsim"]["started"]
            lf.sms = [SM(**x) for x in d["sms"]]
        except FileNotFoundError:
            raise InputError("no emulated fabric here (no sim.json; `ibtool sim up NET --out RUN` starts one)",
                             path=str(work)) from None
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(f"not a sim.json ibtool wrote ({e})", path=str(path)) from None
        lf._popen, lf._counted = {}, {}
        return lf

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> LiveFabric:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, argv: list[str], **kw) -> tuple[int, str]:
        """Start a child in a session of its own; it dies with this process unless detached."""
        p = children.popen(argv, outlive=self.detached, **kw)
        self._popen[p.pid] = p
        return p.pid, start_time(p.pid)

    def start(self) -> None:
        exe = require("ibsim", "ibsim-utils")
        require("opensm", "opensm")
        if not Path(UMAD2SIM).exists():
            raise EnvironmentProblem(f"{UMAD2SIM} not found; install the Debian package ibsim-utils")
        fabric = ibnetdiscover.read(self.net)
        if self.detached:
            _claim(self.work)  # a live fabric there is refused, a dead one's leftovers removed
        for sm in self.sms:
            cache = Path(sm.home) / rundir.OSM / rundir.OSM_CACHE
            cache.mkdir(parents=True, exist_ok=True)
            for stale in cache.iterdir():
                stale.unlink()  # a guid2lid (or a KNS hdor remembers) of another fabric in this work dir
            (Path(sm.home) / rundir.HDOR_CONF).unlink(missing_ok=True)
            if self.hdor_conf:  # hdor reads hdor.conf beside the opensm.conf OpenSM runs with
                (Path(sm.home) / rundir.HDOR_CONF).write_bytes(Path(self.hdor_conf).read_bytes())
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.fifo.unlink(missing_ok=True)
        os.mkfifo(self.fifo)
        # ibsim's own stdin is read-write: it is a writer of its console itself, so it never sees
        # end-of-file (on which it would spin), whoever else opens and closes the FIFO
        fd = os.open(self.fifo, os.O_RDWR)
        try:
            with open(self.ibsim_log, "wb") as log:
                self.ibsim_pid, self.ibsim_started = self._spawn(
                    [exe, "-s", *limits(fabric), str(self.net.resolve())], cwd=self.scratch,
                    env=dict(os.environ, IBSIM_SOCKNAME=self.sockname), stdin=fd, stdout=log,
                    stderr=subprocess.STDOUT)
        finally:
            os.close(fd)
        if self.detached:  # the claim now belongs to ibsim: a later `sim up` here is refused while it runs
            (self.work / "owner").write_text(f"{self.ibsim_pid} {self.ibsim_started}\n")
        self._save()
        deadline = time.monotonic() + self.timeout
        while b"Network simulator ready" not in self.ibsim_log.read_bytes():
            if not self.up:
                tail = self.ibsim_log.read_text(errors="replace").strip().splitlines()
                raise EnvironmentProblem(f"ibsim exited before it was ready: {tail[-1] if tail else 'no output'}")
            if time.monotonic() > deadline:
                raise EnvironmentProblem(f"ibsim was not ready within {self.timeout:.0f} s")
            time.sleep(0.05)
        for sm in self.sms:
            self.sm_start(sm.n)

    def stop(self) -> None:
        """Stop every SM, then ibsim (only the processes this fabric started)."""
        for sm in reversed(getattr(self, "sms", [])):
            self._end(sm, signal.SIGTERM)
        if self.ibsim_pid:
            self._stop_pid(self.ibsim_pid, self.ibsim_started, signal.SIGTERM)
            self.ibsim_pid = self.ibsim_started = None
        if self.work.is_dir():
            self.fifo.unlink(missing_ok=True)
            (self.work / "owner").unlink(missing_ok=True)
            if (self.work / STATE_FILE).exists():
                self._save()

    def _stop_pid(self, pid: int, started: str | None, sig: int) -> None:
        p = self._popen.pop(pid, None)
        if p is not None and sig == signal.SIGTERM:
            children.stop(p)
        else:
            signal_process(pid, started, sig)
            if p is not None:
                p.wait()

    def _end(self, sm: SM, sig: int) -> None:
        if sm.pid:
            self._stop_pid(sm.pid, sm.started, sig)
            sm.pid = sm.started = None

    # ------------------------------------------------------------------ OpenSM
    def sm_stop(self, n: int = 1) -> None:
        """Stop SM n (SIGTERM, as `systemctl stop opensm`)."""
        self._end(self.sm(n), signal.SIGTERM)
        self._save()

    def sm_kill(self, n: int = 1) -> None:
        """Kill SM n with SIGKILL, as if its host died: it says goodbye to nobody."""
        self._end(self.sm(n), signal.SIGKILL)
        self._save()

    def sm_restart(self, n: int = 1, engines: list[str] | None = None) -> dict:
        self._end(self.sm(n), signal.SIGTERM)
        return self.sm_start(n, engines)

    def restart_opensm(self, engines: list[str]) -> dict:
        """Stop SM 1 (if running), start it with `engines`, wait until it routed (or exited or
        timed out); returns (and sets) .outcome."""
        return self.sm_restart(1, engines)

    def sm_start(self, n: int = 1, engines: list[str] | None = None) -> dict:
        """Start SM n (with `engines`, else its last ones) and wait until it is MASTER with tables
        configured, or STANDBY under a master of higher priority that finished the sweep its
        arrival caused, or exited, or timed out; an SM that stalls meanwhile is restarted (_settle).
        Returns its outcome (also in .sms[n-1].outcome)."""
        sm = self.sm(n)
        if not self.up:
            raise EnvironmentProblem("ibsim is not running")
        if sm.running:
            raise InputError(f"SM {n} is running (pid {sm.pid}); stop or restart it")
        master = self.master()
        mark = self._mark(master) if master else None
        argv = self._launch(sm, engines)
        others = [x.priority or 0 for x in self.sms if x is not sm and x.running]
        takes_over = sm.priority is not None and all((sm.priority or 0) > p for p in others)
        # the master sweeps when a new SM appears (ibsim's Trap 144 for its IsSM bit) and may then
        # wait for ever for its SMInfo query, which an OpenSM that does not yet know its own port
        # ignores: a standby is settled once that sweep ended too (SUBNET UP again)
        watch = master is not None and not takes_over and self._info_logged()

        def done() -> bool:
            text = _text(sm.log)
            got = opensm.routing_outcome(text, sm.engines)
            if got.subnet_up and got.engine:
                return True
            if sm_state(text) != "STANDBY" or takes_over:
                return False
            return not watch or not master.running or "SUBNET UP" in self._since(master, mark)

        stalls = self._settle(sm, done)
        return self._outcome(sm, argv, exited=not sm.running, stalls=stalls)

    def _launch(self, sm: SM, engines: list[str] | None = None, conf_from: str | None = None) -> list[str]:
        """Start SM `sm`'s OpenSM (with `engines`, else its last ones), without waiting; its argv.
        `conf_from`: the opensm.conf to run with as it is (a restart keeps what was edited in it)."""
        engines = list(engines or sm.engines)
        sm.engines = engines
        if sm.n == 1:
            self.engines = engines
        home = Path(sm.home)
        env_extra = {"OSM_TMP_DIR": str(home / rundir.OSM), "OSM_CACHE_DIR": str(home / rundir.OSM / rundir.OSM_CACHE)}
        if sm.node:
            env_extra["SIM_HOST"] = sm.node  # umad2sim attaches the SM to this node
        if any(e in opensm.PLUGIN_ENGINES for e in engines):
            for e in engines:
                if e in opensm.PLUGIN_ENGINES and not (self.plugin_dir / f"lib{e}.so").exists():
                    raise EnvironmentProblem(f"engine {e}: {self.plugin_dir}/lib{e}.so not built; "
                                             "run `ibtool plugin build`")
            env_extra["LD_LIBRARY_PATH"] = ":".join(filter(None, [str(self.plugin_dir.resolve()),
                                                                   os.environ.get("LD_LIBRARY_PATH")]))
        sm.starts += 1
        tag = f"{sm.starts}-{'_'.join(engines)}"
        conf, log, out = (home / f"opensm-{tag}.{x}" for x in ("conf", "log", "out"))
        prio = [("sm_priority", str(sm.priority))] if sm.priority is not None else []
        conf.write_text(Path(conf_from).read_text() if conf_from else
                        opensm.config(engines, [("force_log_flush", "TRUE"), *prio, *self.conf_options],
                                      self.conf_base, fabric=str(self.net)))
        log.unlink(missing_ok=True)  # OpenSM appends: a reused work dir must not show an old run
        argv = [require("opensm", "opensm"), "-F", str(conf), "-f", str(log), *self.opensm_args]
        sm.conf, sm.log, sm.out = str(conf), str(log), str(out)
        sm.logs.append(str(log))
        with open(out, "wb") as fh:
            sm.pid, sm.started = self._spawn(argv, cwd=self.scratch, env=self.env(**env_extra),
                                             stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT)
        self._save()
        return argv

    def _outcome(self, sm: SM, argv: list[str] | None = None, exited: bool = False, stalls=()) -> dict:
        text = _text(sm.log)
        outcome = opensm.routing_outcome(text, sm.engines, self.accept_fallback).as_dict()
        state = sm_state(text)
        outcome.update({"requested_engine": ",".join(sm.engines), "vls_needed": vls_needed(text),
                        "log": sm.log, "output": sm.out, "command": argv or sm.outcome.get("command"),
                        "sm": sm.n, "state": state if not exited else None})
        if stalls:
            outcome["stalls"] = list(stalls)
        if stalls and not stalls[-1]["retried"]:
            outcome["error"] = stalls[-1]["message"]
        elif state == "STANDBY" and not exited:
            pass  # not routing: another SM is master
        elif not outcome["subnet_up"] or not outcome["engine"]:
            why = "OpenSM exited" if exited else f"no SUBNET UP within {self.timeout:g} s"
            said = last_error(_text(sm.out), text)
            outcome["error"] = f"{why} with routing engine {','.join(sm.engines)}" + (f": {said}" if said else "")
        elif outcome["no_routes"]:
            outcome["error"] = f"{outcome['engine']} configured empty tables: {outcome['no_routes']}"
        elif not outcome["ok"]:  # a fallback: the tables are not the first engine's
            outcome["error"] = (f"OpenSM fell back: {outcome['engine']} configured the tables, not "
                                f"{outcome['requested'][0]}"
                                + (f", the first of {','.join(sm.engines)}" if len(outcome["requested"]) > 1 else "")
                                + (f" ({outcome['default_for']} deferred to OpenSM's default)"
                                   if outcome["default_for"] else "")
                                + ("" if outcome["engine"] not in outcome["requested"] else
                                   " (--accept-fallback accepts a later engine of the list)"))
        sm.outcome = outcome
        self._save()
        return outcome

    def wait_master(self, n: int, timeout: float | None = None) -> dict:
        """Wait until SM n (a standby whose master died or stepped down) is MASTER and has
        configured tables and brought the subnet up after becoming master; its outcome."""
        sm = self.sm(n)

        def done() -> bool:
            text = _text(sm.log)
            at = text.rfind("Entering MASTER state")
            if at < 0 or sm_state(text) != "MASTER":
                return False
            got = opensm.routing_outcome(text[at:], sm.engines)
            return got.subnet_up and got.engine is not None

        # a standby idles on purpose: until its polls of a dead master time out, or the master hands over
        stalls = self._settle(sm, done, timeout, blame=lambda: sm.state() != "STANDBY")
        out = self._outcome(sm, exited=not sm.running, stalls=stalls)
        if out.get("state") != "MASTER" and "error" not in out:
            out["error"] = f"SM {n} is {out.get('state') or 'not running'}, not MASTER, after {timeout or self.timeout:g} s"
        return out

    def wait_routed(self, n: int, after: int, timeout: float | None = None) -> dict:
        """Wait until SM n has configured tables more than `after` times (configured_count, taken
        before the change) and brought the subnet up after the last (a re-route after a fault);
        its outcome. A master that stalls in that sweep is restarted (_settle)."""
        sm = self.sm(n)

        def done() -> bool:
            if self.configured_count(n) <= after:
                return False
            text = _text(sm.log)
            last = text.rfind("tables configured on all switches")
            return last >= 0 and "SUBNET UP" in text[last:]

        stalls = self._settle(sm, done, timeout, blame=lambda: False)
        return self._outcome(sm, exited=not sm.running, stalls=stalls)

    # ------------------------------------------------------------------ stalls
    def _settle(self, sm: SM, done, timeout: float | None = None, blame=lambda: True) -> list[dict]:
        """Wait until done(), SM `sm` is not running, or `timeout` (default .timeout). When the
        fabric has been idle STALL_S while an SM's sweep is unfinished (_stuck; `sm` itself when
        the logs show none and blame() says it should not idle), that sweep waits for a MAD that
        will never come: those SMs are restarted (_stall), at most RETRIES times. Returns the
        stalls met."""
        stalls: list[dict] = []
        t0 = time.monotonic()
        deadline = t0 + (timeout or self.timeout)
        activity = Activity(self)
        while not done() and sm.running and time.monotonic() < deadline:
            idle = activity.idle_for()
            if idle >= STALL_S:
                stuck = self._stuck() or ([sm] if blame() else [])
                if stuck:
                    retry = len(stalls) + 1 if len(stalls) < RETRIES else 0
                    stalls.append(self._stall(stuck, idle, time.monotonic() - t0, retry))
                    if not stalls[-1]["retried"]:
                        break
                activity = Activity(self)  # look again after another STALL_S
            time.sleep(0.2)
        return stalls

    @staticmethod
    def _mark(sm: SM) -> tuple[str | None, int]:
        """Where SM `sm`'s log ends now (for _since)."""
        return sm.log, Path(sm.log).stat().st_size if sm.log and Path(sm.log).exists() else 0

    @staticmethod
    def _since(sm: SM, mark: tuple[str | None, int]) -> str:
        """What SM `sm` logged since `mark` (all of its log when it was started since)."""
        try:
            with open(sm.log, "rb") as fh:
                fh.seek(mark[1] if mark[0] == sm.log else 0)
                return fh.read().decode(errors="replace")
        except (OSError, TypeError):  # not written yet
            return ""

    def _info_logged(self) -> bool:
        """Does OpenSM log INFO (-D flag 0x02, its default): SUBNET UP after every sweep?"""
        flags = 0x03
        for i, arg in enumerate(self.opensm_args):
            if arg == "-V":
                flags = 0xFF
            elif arg == "-D" and i + 1 < len(self.opensm_args):
                try:
                    flags = int(self.opensm_args[i + 1], 0)
                except ValueError:
                    pass
        return bool(flags & 0x02)

    def _stuck(self) -> list[SM]:
        """The running SMs whose log shows a sweep that has not ended: DISCOVERING; MASTER with no
        SUBNET UP since it became master; a master that received a trap (each makes it sweep) after
        its last SUBNET UP — read only when OpenSM logs INFO, where every sweep ends with one."""
        info = self._info_logged()
        stuck = []
        for sm in self.sms:
            if not sm.running or not sm.log:
                continue
            text = _text(sm.log)
            state = sm_state(text)
            if state == "DISCOVERING" or state == "MASTER" and (
                    not up_as_master(text) or info and text.rfind("Received Generic Notice") > text.rfind("SUBNET UP")):
                stuck.append(sm)
        return stuck

    def _lost(self, sm: SM) -> str | None:
        """What stopped SM `sm` still waited for, from its exit (OpenSM's ERR 5401 names one
        outstanding request), and whose log shows that request arriving."""
        found = _LOST.findall(_text(sm.log))
        if not found:
            return None
        tid, mclass = int(found[-1][0], 16), int(found[-1][1], 16)
        what = f"at exit SM {sm.n} still waited for its MAD tid 0x{tid:x} (class 0x{mclass:02x}"
        what += ", a LID-routed SMP)" if mclass == 0x01 else ", a directed-route SMP)" if mclass == 0x81 else ")"
        for other in (x for x in self.sms if x is not sm):
            for m in re.finditer(r"num:144 .*? TID:0x([0-9a-f]+)", _text(other.log)):
                if int(m.group(1), 16) & 0xFFFFFFFF == tid:
                    return what + f": its Trap 144 to SM {other.n}, whose TrapRepress ibsim drops"
        return what

    def _stall(self, stuck: list[SM], idle: float, after: float, retry: int) -> dict:
        """A stall of the SMs `stuck`, said in one message; on `retry` (its number) they are stopped
        (OpenSM names the MAD it waited for as it exits) and started again, highest priority first,
        each let settle before the next: what an operator does with an SM that hangs. Without (0),
        they are left as they are, to be looked at."""
        states = {sm.n: sm.state() or "not running" for sm in stuck}
        names = " and ".join(f"SM {sm.n} ({states[sm.n]})" for sm in stuck)
        one = len(stuck) == 1
        message = (f"{names} stalled: {'its sweep has' if one else 'their sweeps have'} not ended and OpenSM and "
                   f"ibsim did nothing for {idle:.0f} s — {'it waits' if one else 'they wait'} for an answer that "
                   "will not come (under ibsim a MAD can go unanswered, and umad2sim never times one out; "
                   "docs/sim.md)")
        lost: list[str] = []
        if retry:
            for sm in stuck:
                self._end(sm, signal.SIGTERM)
            lost = [x for x in map(self._lost, stuck) if x]
            for sm in sorted(stuck, key=lambda x: -(x.priority or 0)):
                self._launch(sm, conf_from=sm.conf)  # as `systemctl restart opensm`: its opensm.conf as it is
                self._let_settle(sm)
                self._outcome(sm)
            message += "".join(f"; {x}" for x in lost) + \
                f"; restarted {' and '.join(f'SM {sm.n}' for sm in stuck)} (retry {retry} of {RETRIES})"
        else:
            message += (f"; gave up after {RETRIES} restarts (`ibtool sim sm RUN --restart --sm N` "
                        "restarts one by hand)")
        self._save()
        return {"sms": [sm.n for sm in stuck], "states": states, "idle_s": round(idle, 1),
                "after_s": round(after, 1), "lost": lost, "retried": bool(retry), "message": message}

    def _let_settle(self, sm: SM) -> None:
        """Wait until SM `sm`, just started, is STANDBY or MASTER with SUBNET UP, or exited, or the
        fabric is idle (a stall the caller will see), or .timeout."""
        activity, deadline = Activity(self), time.monotonic() + self.timeout
        while sm.running and time.monotonic() < deadline and activity.idle_for() < STALL_S:
            text = _text(sm.log)
            if sm_state(text) == "STANDBY" or up_as_master(text):
                return
            time.sleep(0.2)

    def wait_quiet(self, secs: float = 3.0, timeout: float = 20.0) -> bool:
        """Wait until no running SM's log grew for `secs` (a sweep in progress is over; at most
        `timeout` s); False if they kept growing."""
        deadline = time.monotonic() + timeout
        sizes, since = None, time.monotonic()
        while time.monotonic() < deadline:
            now = [Path(sm.log).stat().st_size if sm.log and Path(sm.log).exists() else 0
                   for sm in self.sms if sm.running]
            if now != sizes:
                sizes, since = now, time.monotonic()
            elif time.monotonic() - since >= secs:
                return True
            time.sleep(0.2)
        return False

    def configured_count(self, n: int) -> int:
        """How many times SM n has configured tables so far, over all its starts (for wait_routed)."""
        sm = self.sm(n)
        total = 0
        for log in sm.logs or [sm.log]:
            if log != sm.log and log in self._counted:  # the log of an earlier start: it grows no more
                total += self._counted[log]
                continue
            count = _text(log).count("tables configured on all switches")
            if log != sm.log:
                self._counted[log] = count
            total += count
        return total

    def master(self) -> SM | None:
        """The running SM that says it is MASTER, if any."""
        return next((sm for sm in self.sms if sm.state() == "MASTER"), None)

    # ------------------------------------------------------------------ clients and console
    def env(self, **extra: str) -> dict[str, str]:
        return dict(os.environ, IBSIM_SOCKNAME=self.sockname, LD_PRELOAD=UMAD2SIM, **extra)

    def client(self, argv: list[str], out: Path, timeout: float = 120) -> float:
        """Run a diags client (ibnetdiscover, dump_fts, perfquery ...) with stdout to `out`; seconds."""
        sim = Fabricsim(self.net, self.scratch, self.sockname, None, self.ibsim_log)
        return sim.client(argv, out, timeout)

    def console(self, command: str, timeout: float = 10) -> str:
        """Send one command to ibsim's console; what it printed until the next prompt."""
        if not self.up:
            raise EnvironmentProblem("ibsim is not running")
        if "\n" in command or "\r" in command:
            raise InputError("one ibsim console command at a time (no newline)")
        with open(self.work / "console.lock", "w") as lock:  # one command at a time, across processes
            fcntl.flock(lock, fcntl.LOCK_EX)
            start = self.ibsim_log.stat().st_size
            fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            try:
                os.write(fd, command.encode() + b"\n")
            finally:
                os.close(fd)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                data = self.ibsim_log.read_bytes()[start:]
                if PROMPT in data:  # ibsim prompts again when the command is done (warnings may follow)
                    return data[:data.index(PROMPT)].decode(errors="replace").strip()
                time.sleep(0.05)
        raise EnvironmentProblem(f"ibsim did not answer {command!r} within {timeout:g} s")
