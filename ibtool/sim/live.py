"""A live emulated fabric: ibsim with its console on a FIFO, and OpenSM running as a daemon on it.

``ibtool sim run`` sweeps once (``opensm -o``) and exits. Work that needs a fabric that stays
up (engine switching in a benchmark campaign, fault injection, counter collection) uses this:

    from ibtool.sim.live import LiveFabric

    with LiveFabric("topology.net", Path("work"), ["dfsssp"]) as lf:
        lf.outcome                    # what OpenSM's log says: subnet_up, engine, fallback ... (a dict)
        lf.client(["ibnetdiscover"], Path("fabric.out"))   # a diags client against the fabric
        children.run(["perfquery"], env=lf.env(), cwd=lf.scratch)   # or run one yourself (ibtool.children)
        lf.console('Unlink "S-0002c90200000001"[3]')       # an ibsim console command; returns its output
        lf.restart_opensm(["updn"])   # stop OpenSM, start it again with other engines, wait for them
    # leaving the block stops OpenSM, then ibsim, whatever happened (Ctrl-C and SIGTERM included)

Interface:

* ``LiveFabric(net, work, engines, timeout=120, conf_options=(), opensm_args=(), plugin_dir=...,
  conf_base=None)``: ``net`` an ibnetdiscover-format file, ``work`` a scratch directory (created),
  ``engines`` the routing_engine list of OpenSM (plugin engines such as hdor need
  ``plugin_dir/lib<engine>.so``), ``conf_base`` an opensm.conf to start from (a plan's).
* ``.outcome``: ibtool.sim.opensm.routing_outcome of the current OpenSM's log, as a dict, plus
  ``vls_needed`` (from "Virtual Lanes needed: N" when the engine logs it), ``log`` and ``output``
  (OpenSM's own stdout/stderr file) and, when OpenSM exited or did not come up, ``error`` with
  its last error line. ``restart_opensm`` returns the same dict.
* ``.env(**extra)``: the environment of a diags client (LD_PRELOAD=umad2sim, IBSIM_SOCKNAME);
  run clients with ``cwd=.scratch`` (umad2sim writes ./sys-<pid> there).
* ``.console(cmd, timeout=10)``: write one command on ibsim's console FIFO (``.fifo``, which
  other processes may write too) and return what ibsim printed until its next prompt.
* ``.opensm_log`` / ``.opensm_out``: the current OpenSM log and stdout/stderr file (one pair per
  start: ``opensm-<n>-<engines>.log``), ``.ibsim_log``: ibsim's console output.
* ``.stop()``: what leaving the block does; safe to call twice.

Each LiveFabric has its own IBSIM_SOCKNAME, OSM_TMP_DIR and OSM_CACHE_DIR, so several can run at once.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path

from ibtool import children
from ibtool.errors import EnvironmentProblem, InputError
from ibtool.formats import ibnetdiscover
from ibtool.sim import opensm
from ibtool.sim.runner import UMAD2SIM, Fabricsim, limits, require

_VLS = re.compile(r"Virtual Lanes needed: (\d+)")
PROMPT = b"sim> "


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


class LiveFabric:
    def __init__(self, net: str | Path, work: str | Path, engines: list[str] | tuple[str, ...] = ("minhop",),
                 timeout: float = 120, conf_options=(), opensm_args=(), plugin_dir: Path = opensm.PLUGIN_DIR,
                 conf_base: str | None = None):
        self.net = Path(net)
        if not self.net.is_file():
            raise InputError("no such net file", path=str(net))
        self.work = Path(work)
        self.engines = list(engines)
        self.timeout = timeout
        self.conf_options = list(conf_options)
        self.conf_base = conf_base  # an opensm.conf to start from (a plan's: its engine's files)
        self.opensm_args = list(opensm_args)
        self.plugin_dir = Path(plugin_dir)
        self.sockname = f"ibtool-live-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.scratch = self.work / "scratch"
        self.fifo = self.work / "ibsim.console"
        self.ibsim_log = self.work / "ibsim.log"
        self.opensm_log: Path | None = None
        self.opensm_out: Path | None = None
        self.outcome: dict = {}
        self._ibsim: subprocess.Popen | None = None
        self._opensm: subprocess.Popen | None = None
        self._fifo_fd: int | None = None
        self._starts = 0

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

    def start(self) -> None:
        exe = require("ibsim", "ibsim-utils")
        require("opensm", "opensm")
        if not Path(UMAD2SIM).exists():
            raise EnvironmentProblem(f"{UMAD2SIM} not found; install the Debian package ibsim-utils")
        fabric = ibnetdiscover.read(self.net)
        for d in (self.work, self.scratch, self.work / "osm", self.work / "osm" / "cache"):
            d.mkdir(parents=True, exist_ok=True)
        if self.fifo.exists():
            self.fifo.unlink()
        os.mkfifo(self.fifo)
        # read-write: ibsim never sees end-of-file on its console while we hold it
        self._fifo_fd = os.open(self.fifo, os.O_RDWR)
        with open(self.ibsim_log, "wb") as log:
            self._ibsim = children.popen([exe, "-s", *limits(fabric), str(self.net.resolve())], cwd=self.scratch,
                                         env=dict(os.environ, IBSIM_SOCKNAME=self.sockname), stdin=self._fifo_fd,
                                         stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout
        while b"Network simulator ready" not in self.ibsim_log.read_bytes():
            if self._ibsim.poll() is not None:
                tail = self.ibsim_log.read_text(errors="replace").strip().splitlines()
                raise EnvironmentProblem(f"ibsim exited ({self._ibsim.returncode}) before it was ready: "
                                         f"{tail[-1] if tail else 'no output'}")
            if time.monotonic() > deadline:
                raise EnvironmentProblem(f"ibsim was not ready within {self.timeout:.0f} s")
            time.sleep(0.05)
        self.restart_opensm(self.engines)

    def stop(self) -> None:
        if self._opensm is not None:
            children.stop(self._opensm)
            self._opensm = None
        if self._ibsim is not None:
            children.stop(self._ibsim)
            self._ibsim = None
        if self._fifo_fd is not None:
            os.close(self._fifo_fd)
            self._fifo_fd = None

    # ------------------------------------------------------------------ OpenSM
    def restart_opensm(self, engines: list[str]) -> dict:
        """Stop the running OpenSM (if any), start one with `engines`, wait until it routed (or exited
        or timed out); returns (and sets) .outcome."""
        if self._ibsim is None or self._ibsim.poll() is not None:
            raise EnvironmentProblem("ibsim is not running")
        if self._opensm is not None:
            children.stop(self._opensm)
            self._opensm = None
        self.engines = list(engines)
        env_extra = {"OSM_TMP_DIR": str((self.work / "osm").resolve()),
                     "OSM_CACHE_DIR": str((self.work / "osm" / "cache").resolve())}
        for stale in (self.work / "osm" / "cache").iterdir():
            stale.unlink()  # a guid2lid of the previous start would pin its LIDs
        if any(e in opensm.PLUGIN_ENGINES for e in engines):
            for e in engines:
                if e in opensm.PLUGIN_ENGINES and not (self.plugin_dir / f"lib{e}.so").exists():
                    raise EnvironmentProblem(f"engine {e}: {self.plugin_dir}/lib{e}.so not built; "
                                             "run `ibtool plugin build`")
            env_extra["LD_LIBRARY_PATH"] = ":".join(filter(None, [str(self.plugin_dir.resolve()),
                                                                   os.environ.get("LD_LIBRARY_PATH")]))
        self._starts += 1
        tag = f"{self._starts}-{'_'.join(engines)}"
        conf = self.work / f"opensm-{tag}.conf"
        conf.write_text(opensm.config(engines, [("force_log_flush", "TRUE"), *self.conf_options], self.conf_base,
                                      fabric=str(self.net)))
        self.opensm_log = self.work / f"opensm-{tag}.log"
        self.opensm_out = self.work / f"opensm-{tag}.out"
        self.opensm_log.unlink(missing_ok=True)  # OpenSM appends: a reused work dir must not show an old run
        argv = [require("opensm", "opensm"), "-F", str(conf.resolve()), "-f", str(self.opensm_log.resolve()),
                *self.opensm_args]
        with open(self.opensm_out, "wb") as out:
            self._opensm = children.popen(argv, cwd=self.scratch, env=self.env(**env_extra),
                                          stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout
        text, exited = "", False
        while True:
            text = self.opensm_log.read_text(errors="replace") if self.opensm_log.exists() else ""
            configured = opensm.routing_outcome(text, engines)
            if configured.subnet_up and configured.engine:
                break
            if self._opensm.poll() is not None:
                exited = True
                text = self.opensm_log.read_text(errors="replace") if self.opensm_log.exists() else ""
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        outcome = opensm.routing_outcome(text, engines).as_dict()
        outcome.update({"requested_engine": ",".join(engines), "vls_needed": vls_needed(text),
                        "log": str(self.opensm_log), "output": str(self.opensm_out), "command": argv})
        if not outcome["subnet_up"] or not outcome["engine"]:
            why = (f"OpenSM exited ({self._opensm.returncode})" if exited
                   else f"no SUBNET UP within {self.timeout:g} s")
            said = last_error(self.opensm_out.read_text(errors="replace"), text)
            outcome["error"] = f"{why} with routing engine {','.join(engines)}" + (f": {said}" if said else "")
        elif outcome["fallback"]:
            outcome["error"] = (f"OpenSM fell back: {outcome['engine']} configured the tables, "
                                f"not {','.join(engines)}")
        self.outcome = outcome
        return outcome

    # ------------------------------------------------------------------ clients and console
    def env(self, **extra: str) -> dict[str, str]:
        return dict(os.environ, IBSIM_SOCKNAME=self.sockname, LD_PRELOAD=UMAD2SIM, **extra)

    def client(self, argv: list[str], out: Path, timeout: float = 120) -> float:
        """Run a diags client (ibnetdiscover, dump_fts, perfquery ...) with stdout to `out`; seconds."""
        sim = Fabricsim(self.net, self.scratch, self.sockname, self._ibsim, self.ibsim_log)
        return sim.client(argv, out, timeout)

    def console(self, command: str, timeout: float = 10) -> str:
        """Send one command to ibsim's console; what it printed until the next prompt."""
        if self._fifo_fd is None or self._ibsim is None or self._ibsim.poll() is not None:
            raise EnvironmentProblem("ibsim is not running")
        if "\n" in command:
            raise InputError("one ibsim console command at a time (no newline)")
        start = self.ibsim_log.stat().st_size
        os.write(self._fifo_fd, command.encode() + b"\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            data = self.ibsim_log.read_bytes()[start:]
            if PROMPT in data:  # ibsim prompts again when the command is done (warnings may follow)
                return data[:data.index(PROMPT)].decode(errors="replace").strip()
            time.sleep(0.05)
        raise EnvironmentProblem(f"ibsim did not answer {command!r} within {timeout:g} s")
