"""The watcher on a real ibsim fabric under a real OpenSM (KNS 3^2, its plan with cable IDs): hours
of fabric time compressed into seconds (a clock that moves an hour a round), and each change made
through ibsim's console produces exactly its events, naming the cable (ID, both ends' labels, rack
and U). ibsim runs the plan with one cable at 1x (it trained narrower than the plan's 4xQDR)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import IBTOOL, chromium_page, ibtool
from ibtool import mad
from ibtool.formats import ibnetdiscover, perfquery
from ibtool.sim.clients import Clients
from ibtool.sim.live import LiveFabric
from ibtool.verify.health import SUGGESTED, read_threshold_file
from ibtool.watch.plan import PlanView
from ibtool.watch.service import Watcher

pytestmark = pytest.mark.ibsim
NARROW = ("R[2,2]", 2)  # ibsim runs this cable at 1xQDR


class Clock:
    """Fabric time: an hour a round."""

    def __init__(self):
        self.t = 1_800_000_000.0

    def __call__(self):
        return self.t


@pytest.fixture(scope="module")
def fab(tmp_path_factory):
    d = tmp_path_factory.mktemp("watch")
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", d / "plan", check=0)
    ibtool("cabling", d / "plan", "--out", d / "plan" / "cabling", check=0)
    plan = ibnetdiscover.read(d / "plan" / "topology.net")
    me = plan.index(NARROW[0])
    peer = next((nb, q) for p, nb, q in plan.neighbors(me) if p == NARROW[1])
    ids = {plan.names[i]: ibnetdiscover.node_id(plan, i) for i in range(plan.num_nodes)}
    # the same fabric for ibsim, but this one cable at 1x on both ends
    lines = (d / "plan" / "topology.net").read_text().splitlines()
    out, node = [], None
    for ln in lines:
        if ln.startswith(("Switch", "Ca")):
            node = ln.split('"')[1]
        ends = {(ids[NARROW[0]], f"[{NARROW[1]}]"), (ids[plan.names[peer[0]]], f"[{peer[1]}]")}
        if any(node == n and ln.startswith(p) for n, p in ends):
            ln = ln.replace("4xQDR", "1xQDR")
        out.append(ln)
    net = d / "narrow.net"
    net.write_text("\n".join(out) + "\n")
    th = d / "error_thresholds"  # infiniband-diags' file with its suggested values uncommented
    th.write_text("# site thresholds\n" + "".join(f"{k}={v}\n" for k, v in SUGGESTED.items()))
    with LiveFabric(net, d / "sim", ["minhop"], opensm_args=["-s", "0"]) as lf:
        yield {"dir": d, "lf": lf, "ids": ids, "plan": PlanView(d / "plan"), "th": read_threshold_file(th),
               "thfile": th}


def watcher(fab, tmp_path, name="w.db", **kw):
    clock = Clock()
    lf = fab["lf"]
    w = Watcher(tmp_path / name, fab["plan"], Clients(lf.scratch, environ=lf.env(), timeout=60),
                thresholds=kw.pop("thresholds", fab["th"]), clock=clock, **kw)
    return w, clock


def step(w, clock) -> list[dict]:
    _, ev = w.step()
    clock.t += 3600
    return ev


def change(fab, *cmds, cables=True):
    """ibsim console commands, while OpenSM is quiet; a cable change waits for OpenSM's new tables."""
    lf = fab["lf"]
    if cables:
        lf.wait_quiet(2.0)
    n = lf.configured_count(1)
    for c in cmds:
        got = lf.console(c)
        assert "not found" not in got and "bad" not in got, got
    if cables:
        out = lf.wait_routed(1, n, timeout=60)
        assert out["subnet_up"], out


def cable_id(fab, end):
    return fab["plan"].where(fab["plan"].home(end)).cable


def kinds(ev):
    return [(e["kind"], e.get("cable") or e.get("device")) for e in ev]


def test_first_round_against_the_plan_then_quiet(fab, tmp_path):
    """The first round compares the fabric with the plan: only the cable ibsim runs at 1x is said
    (below the plan's 4xQDR), with its ID, both labels, racks and Us; the next round says nothing."""
    w, clock = watcher(fab, tmp_path)
    with w:
        ev = step(w, clock)
        cid = cable_id(fab, NARROW)
        assert kinds(ev) == [("below_plan", cid)], ev
        e = ev[0]
        assert e["rate"] == "1xQDR" and e["expected"] == "4xQDR" and e["plan_rate"] == "4xQDR"
        assert all(lab and lab.startswith(cid) for lab in e["labels"]), e
        assert all(e["racks"]) and all(isinstance(u, int) for u in e["us"])
        assert e["text"].startswith(f"{cid} (") and "reseat or replace" in e["text"]
        assert step(w, clock) == []
        r = w.store.last_round()
        assert (r["devices"], r["cables"], r["ports"]) == (24, 27, 54)


def test_counters_raised_step_by_step(fab, tmp_path):
    """SymbolErrorCounter raised through ibsim round by round (an hour each): 5/h stays under the
    suggested 10/h, 40/h is one rate_over naming the cable; a reset and a saturated counter are
    said once each, never as a rate."""
    r11 = fab["ids"]["R[1,1]"]
    end = ("R[1,1]", 3)
    cid = cable_id(fab, end)
    w, clock = watcher(fab, tmp_path)

    def setc(v):
        change(fab, f'PerformanceSet "{r11}"[3] PortCounters.SymbolErrorCounter={v}', cables=False)
    with w:
        step(w, clock)
        got = []
        for v in (5, 10):  # +5 an hour: under the threshold
            setc(v)
            got.append(kinds(step(w, clock)))
        assert got == [[], []]
        setc(50)  # +40 in an hour
        ev = step(w, clock)
        assert kinds(ev) == [("rate_over", cid)], ev
        assert ev[0]["counter"] == "SymbolErrorCounter" and ev[0]["rate"] == 40 and ev[0]["threshold"] == 10
        assert ev[0]["port"] == list(end) and "reseat or replace the cable" in ev[0]["text"]
        setc(90)
        assert step(w, clock) == []  # still over: said once
        setc(0)
        ev = step(w, clock)
        assert kinds(ev) == [("counter_reset", cid)] and "SymbolErrorCounter 90 -> 0" in ev[0]["text"]
        setc(65535)
        ev = step(w, clock)
        assert kinds(ev) == [("saturated", cid)] and ev[0]["value"] == 65535 and "16 bits" in ev[0]["text"]
        assert step(w, clock) == []
        setc(0)
        assert kinds(step(w, clock)) == [("counter_reset", cid)]
    # the store kept each change of the error counter (and the events)
    with sqlite3.connect(tmp_path / "w.db") as db:
        vals = [v for (v,) in db.execute(
            "SELECT s.value FROM samples s JOIN ports p ON p.id = s.port JOIN counters c ON c.id = s.counter "
            "WHERE p.device = 'R[1,1]' AND p.port = 3 AND c.name = 'SymbolErrorCounter' ORDER BY s.round")]
    assert vals == [0, 5, 10, 50, 90, 0, 65535, 0]
    r = ibtool("watch", "events", "--store", tmp_path / "w.db", "--since", "3h", "--json")
    assert r.returncode == 0, r.stderr
    assert [e["kind"] for e in json.loads(r.stdout)] == ["saturated", "counter_reset"]


def test_a_cable_unlinked_and_relinked(fab, tmp_path):
    end = ("R[1,1]", 2)
    cid = cable_id(fab, end)
    w, clock = watcher(fab, tmp_path)
    with w:
        step(w, clock)
        change(fab, f'Unlink "{fab["ids"]["R[1,1]"]}"[2]')
        ev = step(w, clock)
        assert kinds(ev) == [("link_down", cid)], ev
        assert list(end) in ev[0]["ends"] and all(ev[0]["labels"]), ev
        change(fab, f'ReLink "{fab["ids"]["R[1,1]"]}"[2]')
        ev = step(w, clock)
        assert kinds(ev) == [("link_up", cid)] and "4xQDR" in ev[0]["text"], ev
        assert step(w, clock) == []


def test_a_switch_removed_and_returned(fab, tmp_path):
    w, clock = watcher(fab, tmp_path)
    s00 = fab["ids"]["S[0,0]"]
    mine = sorted(fab["plan"].where(k).cable for k in fab["plan"].planned if any(e[0] == "S[0,0]" for e in k))
    with w:
        step(w, clock)
        change(fab, f'Unlink "{s00}"')
        ev = step(w, clock)
        assert kinds(ev) == [("device_gone", "S[0,0]")], ev
        assert ev[0]["cables"] == mine and ev[0]["rack"] and ev[0]["u"]
        change(fab, f'ReLink "{s00}"')
        ev = step(w, clock)
        assert kinds(ev) == [("device_back", "S[0,0]")], ev
        assert ev[0]["cables"] == mine
        assert step(w, clock) == []


def test_a_host_moved_to_another_port(fab, tmp_path):
    """H[0,0]'s cable moved to R[0,0] port 5 between two rounds: the cable moved, in the plan's
    words (move it from port 5 to port 1). Unplugged in one round and plugged into port 5 in the
    next: the host is gone (its one cable out), then back, on the wrong port. Moved back: up."""
    w, clock = watcher(fab, tmp_path, scan_every=1)  # every spare port every round
    h, r = fab["ids"]["H[0,0]"], fab["ids"]["R[0,0]"]
    cid = cable_id(fab, ("H[0,0]", 1))
    with w:
        step(w, clock)
        change(fab, f'Unlink "{h}"[1]', f'Link "{r}"[5] "{h}"[1]')
        ev = step(w, clock)
        assert kinds(ev) == [("cable_moved", cid)], ev
        assert ev[0]["now"] == ["R[0,0]", 5] and ev[0]["expected"] == ["R[0,0]", 1]
        assert "move it from R[0,0] port 5 to R[0,0] port 1" in ev[0]["text"] and all(ev[0]["labels"])
        change(fab, f'Unlink "{r}"[5]', f'Link "{r}"[1] "{h}"[1]')
        assert ("link_up", cid) in kinds(step(w, clock))
        assert step(w, clock) == []
        # in two rounds
        change(fab, f'Unlink "{h}"[1]')
        ev = step(w, clock)
        assert kinds(ev) == [("device_gone", "H[0,0]")] and ev[0]["cables"] == [cid], ev
        change(fab, f'Link "{r}"[5] "{h}"[1]')
        ev = step(w, clock)
        assert kinds(ev) == [("device_back", "H[0,0]"), ("cable_moved", cid)], ev
        change(fab, f'Unlink "{r}"[5]', f'Link "{r}"[1] "{h}"[1]')
        step(w, clock)
        assert step(w, clock) == []


def test_spare_ports_once_in_n_rounds(fab, tmp_path):
    """By default a switch's spare ports are asked once in 4 rounds (fewer MADs): the host re-plugged
    into a spare port is gone at once, back on the wrong port within 4 rounds."""
    h, r = fab["ids"]["H[0,0]"], fab["ids"]["R[0,0]"]
    cid = cable_id(fab, ("H[0,0]", 1))
    mads = {}
    for every in (1, 4):
        w, clock = watcher(fab, tmp_path, name=f"w{every}.db", scan_every=every)
        with w:
            mads[every] = [w.step()[0].mads for _ in range(4)]
    # the first round asks every port (nothing is known yet); then the spare ones a quarter of the time
    assert mads[4][0] == mads[1][0] and max(mads[4][1:]) < min(mads[1][1:]), mads
    w, clock = watcher(fab, tmp_path, scan_every=4)
    with w:
        step(w, clock)
        change(fab, f'Unlink "{h}"[1]', f'Link "{r}"[6] "{h}"[1]')
        seen = [kinds(step(w, clock)) for _ in range(4)]
        assert [("device_back", "H[0,0]"), ("cable_moved", cid)] in seen, seen
        first = seen.index([("device_back", "H[0,0]"), ("cable_moved", cid)])
        assert seen[:first] == ([[("device_gone", "H[0,0]")]] + [[]] * (first - 1) if first else []), seen
        change(fab, f'Unlink "{r}"[6]', f'Link "{r}"[1] "{h}"[1]')
        step(w, clock)


def test_a_device_that_does_not_answer_and_an_sm_that_restarts(fab, tmp_path):
    """A switch whose PMA drops every PortCounters query is an event, not a crash; OpenSM killed
    and started again: the rounds go on, the SM's absence and return are said."""
    lf = fab["lf"]
    s11 = fab["ids"]["S[1,1]"]
    w, clock = watcher(fab, tmp_path)
    with w:
        step(w, clock)
        change(fab, f'Error "{s11}"[0] 100 18', cables=False)  # attribute 0x12: PortCounters
        rnd, ev = w.step()
        clock.t += 3600
        assert kinds(ev) == [("unanswered", "S[1,1]")], ev
        assert any("PortCounters of S[1,1]" in f for f in rnd.failed)
        change(fab, f'Error "{s11}"[0] 0', cables=False)
        assert step(w, clock) == []
        master = w.store.state()["view"]["sm"]
        assert master["name"] == "R[0,0]" and master["state"] == 3
        lf.sm_kill(1)
        rnd, ev = w.step()
        clock.t += 3600
        assert kinds(ev) == [("sm_change", None)] and "no master SM answers" in ev[0]["text"], ev
        assert len(rnd.devices) == 24 and rnd.counted == 54  # the fabric is still read
        assert lf.sm_start(1)["subnet_up"]
        ev = step(w, clock)
        assert kinds(ev) == [("sm_change", "R[0,0]")] and "none -> R[0,0]" in ev[0]["text"], ev


def test_reset_counters_only_when_asked(fab, tmp_path):
    r11 = fab["ids"]["R[1,1]"]
    lid = None
    for flag in (False, True):
        change(fab, f'PerformanceSet "{r11}"[1] PortCounters.PortRcvErrors=0', cables=False)
        w, clock = watcher(fab, tmp_path, name=f"w{flag}.db", reset_counters=flag)
        with w:
            step(w, clock)
            change(fab, f'PerformanceSet "{r11}"[1] PortCounters.PortRcvErrors=40000', cables=False)
            rnd, ev = w.step()
            clock.t += 3600
            lid = rnd.ports["R[1,1]", 1].lid
            assert kinds(ev) == [("rate_over", cable_id(fab, ("R[1,1]", 1)))], ev
            rnd, ev = w.step()
            clock.t += 3600
            # cleared by the watcher (half the 16-bit range): no reset event; else left as it was
            assert ev == [] and rnd.ports["R[1,1]", 1].counters["PortRcvErrors"] == (0 if flag else 40000)
    p = subprocess.run(["perfquery", str(lid), "1"], env=fab["lf"].env(), cwd=fab["lf"].scratch, capture_output=True,
                       text=True, timeout=60)
    assert perfquery.parse(p.stdout)[lid, 1]["PortRcvErrors"] == 0


def test_counters_as_perfquery_reads_them(fab):
    """Every error counter of every port, and a 64-bit extended one, as perfquery prints them."""
    lf = fab["lf"]
    r12 = fab["ids"]["R[1,2]"]
    names = [n for n, _, bits in mad.PC_FIELDS if bits < 32 and n != "VL15Dropped"]
    change(fab, *[f'PerformanceSet "{r12}"[3] PortCounters.{n}={k + 1}' for k, n in enumerate(names)],
           f'PerformanceSet "{r12}"[3] PortCountersExtended.PortUnicastXmitPkts=123456789012345', cables=False)
    c = Clients(lf.scratch, environ=lf.env())
    r = mad.fabric_round(c, {}, set(), 60)
    lid = r["ports"][int(r12[2:], 16), 0][0]
    ours = dict(zip((n for n, _, _ in mad.PC_FIELDS), r["pc"][int(r12[2:], 16), 3]))
    assert [ours[n] for n in names] == list(range(1, len(names) + 1))
    p = c.run("perfquery", lid, 3)
    theirs = perfquery.parse(p.stdout)[lid, 3]
    assert {n: ours[n] for n in names} == {n: theirs[n] for n in names}
    ext = dict(zip(mad.PCX_FIELDS, r["pcx"][int(r12[2:], 16), 3]))
    assert ext["PortUnicastXmitPkts"] == 123456789012345
    p = c.run("perfquery", "-x", lid, 3)
    assert perfquery.parse(p.stdout)[lid, 3]["PortUnicastXmitPkts"] == 123456789012345
    # every port's error counters, as perfquery reads them (one query per device, as `ibtool collect`)
    from ibtool.sim.clients import port_counters
    (lf.scratch / "disc.out").write_text(c.run("ibnetdiscover").stdout)
    f = ibnetdiscover.read(lf.scratch / "disc.out")
    theirs = perfquery.parse(port_counters(c, f, 4, {}))
    lids = {}
    for (g, port), (plid, *_rest) in r["ports"].items():
        lids[g, port] = r["ports"][g, 0][0] if (g, 0) in r["ports"] else plid
    errors = [n for n, _, b in mad.PC_FIELDS if b < 32]
    compared = 0
    for (g, port), vals in r["pc"].items():
        got = theirs[lids[g, port], port]
        assert {n: v for (n, _, _), v in zip(mad.PC_FIELDS, vals) if n in errors} == {n: got[n] for n in errors}
        compared += 1
    assert compared == 54
    change(fab, *[f'PerformanceSet "{r12}"[3] PortCounters.{n}=0' for n in names], cables=False)


def test_the_report_ranks_the_rising_cable_first(fab, tmp_path):
    """Two cables with errors: one steady at 200/h, one rising 40, 80, 160, 320/h. The rising one is
    ranked first in fix-sheet words, the drawing colours the cables, the page has no script error
    and prints on A4."""
    r11, r21 = fab["ids"]["R[1,1]"], fab["ids"]["R[2,1]"]
    rising, steady = cable_id(fab, ("R[1,1]", 3)), cable_id(fab, ("R[2,1]", 2))
    w, clock = watcher(fab, tmp_path)
    with w:
        step(w, clock)
        a = b = 0
        for k in range(6):
            a += 10 * 2 ** k if k >= 2 else 0
            b += 200
            change(fab, f'PerformanceSet "{r11}"[3] PortCounters.SymbolErrorCounter={a}',
                   f'PerformanceSet "{r21}"[2] PortCounters.SymbolErrorCounter={b}', cables=False)
            step(w, clock)
    out = tmp_path / "trend.html"
    r = ibtool("watch", "report", "--store", tmp_path / "w.db", "--html", out, "--window", "1d", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [c["cable"] for c in rep["cables"]] == [rising, steady]
    top = rep["cables"][0]
    assert top["rising"] and top["text"].startswith(f"{rising}: SymbolErrorCounter 320/h and rising for 4 hours: "
                                                    "reseat or replace the cable"), top
    assert not rep["cables"][1]["rising"] and "(steady)" in rep["cables"][1]["text"]
    with chromium_page() as (page, errors):
        page.set_viewport_size({"width": 1300, "height": 900})
        page.goto(out.as_uri())
        rows = page.locator("#cables tbody tr")
        assert rows.count() == 2 and rising in rows.nth(0).inner_text() and steady in rows.nth(1).inner_text()
        assert page.locator("#cables svg.spark rect").count() >= 5
        assert page.locator("svg.ibd path[data-h0]").count() >= 27  # every cable has a colour
        assert page.locator(f'svg.ibd [data-label="{rising}"]').count() >= 1
        page.screenshot(path=str(tmp_path / "trend.png"), full_page=True)
        page.pdf(path=str(tmp_path / "trend.pdf"), format="A4")
        assert errors == []
    from pypdf import PdfReader
    pdf = PdfReader(str(tmp_path / "trend.pdf"))
    assert 1 <= len(pdf.pages) <= 4 and abs(float(pdf.pages[0].mediabox.width) - 595) < 2  # A4 portrait
    assert rising in "".join(p.extract_text() for p in pdf.pages)
    change(fab, f'PerformanceSet "{r11}"[3] PortCounters.SymbolErrorCounter=0',
           f'PerformanceSet "{r21}"[2] PortCounters.SymbolErrorCounter=0', cables=False)


# ---------------------------------------------------------------------- the real process: kill -9, SIGTERM

def start(fab, store, *args, hold=None):
    env = dict(fab["lf"].env())
    if hold:
        env["IBTOOL_WATCH_HOLD_WRITE"] = hold
    return subprocess.Popen([*IBTOOL, "watch", "run", "--store", str(store), "--plan", str(fab["dir"] / "plan"),
                             "--threshold-file", str(fab["thfile"]), "--listen", "none", *args],
                            env=env, cwd=fab["lf"].scratch, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(stream, text, timeout=60):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        ln = stream.readline()
        if not ln:
            break
        seen.append(ln)
        if text in ln:
            return seen
    raise AssertionError(f"{text!r} not seen; got {''.join(seen)}")


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(x) for x in (task / "children").read_text().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def rounds_in(store) -> tuple[list[int], list[int]]:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rounds = [r for (r,) in db.execute("SELECT id FROM rounds ORDER BY id")]
        used = sorted({r for t in ("samples", "links", "events")
                       for (r,) in db.execute(f"SELECT DISTINCT round FROM {t}")})
    return rounds, used


def signal_while_writing(fab, store, n: int, sig) -> int:
    """Start the watcher, signal it while round n's transaction is open; its exit status."""
    p = start(fab, store, "--interval", "0.2", hold=f"{n}:60")
    try:
        wait_for(p.stderr, f"holding round {n}")
        p.send_signal(sig)
        return p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()


def test_kill_9_mid_write_loses_only_that_round(fab, tmp_path):
    store = tmp_path / "w.db"
    assert signal_while_writing(fab, store, 3, signal.SIGKILL) == -signal.SIGKILL
    rounds, used = rounds_in(store)
    assert rounds == [1, 2] and set(used) <= {1, 2}, (rounds, used)
    # started again on the same store: it goes on from round 2's view, with nothing to say
    p = start(fab, store, "--interval", "0.2", "--rounds", "2", "--json")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) == 2 and all(x["events"] == [] for x in lines), lines
    assert rounds_in(store)[0] == [1, 2, 3, 4]


def test_sigterm_mid_write_and_mid_round_leaves_no_process_and_no_half_round(fab, tmp_path):
    # while round 2 is being written
    store = tmp_path / "a.db"
    assert signal_while_writing(fab, store, 2, signal.SIGTERM) == 143
    assert rounds_in(store)[0] == [1]
    # while a round's MADs are in flight (a switch's PMA silent: each round waits for it)
    s11 = fab["ids"]["S[1,1]"]
    change(fab, f'Error "{s11}"[0] 100 18', cables=False)
    store = tmp_path / "b.db"
    p = start(fab, store, "--interval", "0.2")
    try:
        kids = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not kids:
            kids = [k for k in descendants(p.pid) if b"ibtool.mad" in Path(f"/proc/{k}/cmdline").read_bytes()]
            time.sleep(0.05)
        assert kids, "no round started"
        time.sleep(0.3)  # in the middle of its 2 s wait for the silent PMA
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 143
        for k in kids:
            assert not Path(f"/proc/{k}").exists() or "Z" in Path(f"/proc/{k}/stat").read_text().split()[2]
    finally:
        if p.poll() is None:
            p.kill()
        change(fab, f'Error "{s11}"[0] 0', cables=False)
    rounds, used = rounds_in(store)
    assert set(used) <= set(rounds)


def test_the_shipped_unit_and_its_defaults(fab, tmp_path):
    """dist/ibtool-watch.service passes `systemd-analyze verify` (its ExecStart pointed at this
    ibtool), and its command line, with dist/ibtool-watch.default's options (the plan and the
    stock /etc/infiniband-diags/error_thresholds), runs rounds and stops on SIGTERM with 143,
    which the unit counts as success."""
    import re
    import shlex
    from support import ROOT
    unit = (ROOT / "dist" / "ibtool-watch.service").read_text()
    exe = Path(sys.executable).with_name("ibtool")
    (tmp_path / "ibtool-watch.service").write_text(unit.replace("/usr/local/bin/ibtool", str(exe)))
    v = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "ibtool-watch.service")], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert v.returncode == 0, v.stdout + v.stderr
    assert "SuccessExitStatus=143" in unit
    args = re.search(r'IBTOOL_WATCH_ARGS="([^"]*)"', (ROOT / "dist" / "ibtool-watch.default").read_text()).group(1)
    args = args.replace("/etc/ibtool/plan", str(fab["dir"] / "plan"))
    line = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
    line = line.replace("${STATE_DIRECTORY}", str(tmp_path)).replace("$IBTOOL_WATCH_ARGS", args)
    argv = shlex.split(line)
    assert argv[0] == "/usr/local/bin/ibtool"
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    p = subprocess.Popen([*IBTOOL, *argv[1:], "--listen", f"127.0.0.1:{port}", "--interval", "0.5"],
                         env=fab["lf"].env(), cwd=fab["lf"].scratch, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        seen = wait_for(p.stdout, "devices,")
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=30) == 143
    finally:
        if p.poll() is None:
            p.kill()
    assert "24 devices, 27 cables up, 54 ports counted" in "".join(seen)
    assert rounds_in(tmp_path / "watch.db")[0][:1] == [1]
