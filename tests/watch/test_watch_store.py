"""The store and the judge on a real captured round (fixtures/watch: KNS 3^2 under ibsim), its
counters and cables changed round by round: retention folds old rounds into hours without losing
a count, the size stays bounded, a fabric without a plan is judged against its last view; and the
commands' bad input is one line, exit 2."""

from __future__ import annotations

import json
import sqlite3

import pytest

from support import FIXTURES, ibtool
from ibtool import mad
from ibtool.watch.collector import Collector
from ibtool.watch.events import Judge
from ibtool.watch.plan import PlanView
from ibtool.watch.report import trends
from ibtool.watch.store import Store

ROUND = FIXTURES / "watch" / "round-kns3x2.txt"
T0 = 1_800_000_000.0  # on the hour


def captured(drop_links=(), drop_nodes=()):
    """The captured round's raw data, less some cables (GUID, port) or devices (GUID)."""
    raw, line = mad.round_parser()
    for ln in ROUND.read_bytes().splitlines():
        line(ln)
    for end in drop_links:
        other = raw["links"].pop(end)
        raw["links"].pop(other)
    for g in drop_nodes:
        raw["nodes"].pop(g)
        for a in [a for a, b in raw["links"].items() if g in (a[0], b[0])]:
            raw["links"].pop(a)
    return raw


def a_round(t, plan=None, counters=None, **drop):
    rnd = Collector(None, plan or PlanView()).build(captured(**drop), t)
    for (dev, port, name), v in (counters or {}).items():
        rnd.ports[dev, port].counters[name] = v
    return rnd


def test_retention_folds_old_rounds_into_hours_and_loses_no_count(tmp_path):
    """72 hourly rounds, a day kept raw: the two older days become hourly rows, the rounds they
    held go, and the cable's increase over the three days is still 355 (5 a round)."""
    with Store(tmp_path / "w.db", write=True, raw_days=1) as st:
        for k in range(72):
            t = T0 + k * 3600
            st.write_round(a_round(t, counters={("R[1,1]", 3, "SymbolErrorCounter"): 5 * k,
                                                ("R[1,1]", 3, "PortXmitData"): 1000 * k}), [], None)
            st.retain(t)
        with sqlite3.connect(tmp_path / "w.db") as db:
            hours = db.execute("SELECT h.hour, h.delta, h.last FROM hourly h JOIN ports p ON p.id = h.port "
                               "JOIN counters c ON c.id = h.counter WHERE p.device = 'R[1,1]' AND p.port = 3 "
                               "AND c.name = 'SymbolErrorCounter' ORDER BY h.hour").fetchall()
            rounds = [t for (t,) in db.execute("SELECT t FROM rounds ORDER BY id")]
            # an older round stays only while a port's last value or last link change is in it
            kept = db.execute("SELECT count(*) FROM rounds WHERE t < ? AND id NOT IN (SELECT round FROM samples "
                              "UNION SELECT round FROM links)", (T0 + 46 * 3600,)).fetchone()[0]
        # folded: every hour older than the day kept, its increase 5 (the first has no base) and last value
        assert [h for h, _, _ in hours] == [int(T0 // 3600) + k for k in range(len(hours))] and len(hours) >= 46
        assert [d for _, d, _ in hours] == [0] + [5] * (len(hours) - 1)
        assert [v for _, _, v in hours] == [5 * k for k in range(len(hours))]
        assert kept == 0 and 24 <= len(rounds) <= 27, rounds
        plan = PlanView()
        rep = trends(st, plan, 3 * 86400)
        mine = [c for c in rep["cables"] if ["R[1,1]", 3] in c["ends"]]
        assert len(rep["cables"]) == 1 and mine[0]["increase"] == {"SymbolErrorCounter": 355}
        # traffic is kept once an hour: here every round is an hour apart, so all of it
        series = st.series(T0 + 60 * 3600, {"PortXmitData"})[("R[1,1]", 3)]["PortXmitData"]
        assert [v for _, v in series][-3:] == [69000, 70000, 71000]


def test_the_store_stays_under_its_bound(tmp_path):
    """Every counter of every port changing every round: past the raw window the hourly
    rows pile up, and past max_bytes the oldest go (and their events); the file stays bounded."""
    bound = 1 << 20
    with Store(tmp_path / "w.db", write=True, raw_days=0.05, max_bytes=bound) as st:
        sizes = []
        for k in range(90):
            t = T0 + k * 3600
            rnd = a_round(t)
            for p in rnd.ports.values():
                for n in p.counters:
                    p.counters[n] = k
            ev = [{"kind": "rate_over", "cable": "C0001", "text": f"round {k}"}]
            st.write_round(rnd, ev, None)
            st.retain(t)
            sizes.append(st.size())
        assert max(sizes) > bound * 0.8 and sizes[-1] <= bound, sizes[-5:]
        with sqlite3.connect(tmp_path / "w.db") as db:
            first_hour = db.execute("SELECT min(hour) FROM hourly").fetchone()[0]
            first_event = db.execute("SELECT min(t) FROM events").fetchone()[0]
        assert first_hour > int(T0 // 3600) + 5 and first_event > T0 + 5 * 3600


def test_events_without_a_plan_against_the_last_view():
    """No plan: the first round is the baseline (no events); then a cable gone, a switch gone, both
    back, named by their ends (no cable ID)."""
    j = Judge(PlanView(), {})
    assert j.judge(a_round(T0)) == []
    r11, s00 = 0x2c90000000090, 0x2c90000000130
    ev = j.judge(a_round(T0 + 60, drop_links=[(r11, 3)]))
    assert [(e["kind"], e["cable"], e["ends"]) for e in ev] == [("link_down", None, [["R[1,1]", 3], ["S[1,1]", 2]])]
    assert ev[0]["text"].startswith("(R[1,1] P3 - S[1,1] P2) went down")
    ev = j.judge(a_round(T0 + 120, drop_nodes=[s00]))
    assert [(e["kind"], e["device"]) for e in ev] == [("device_gone", "S[0,0]"), ("link_up", None)]
    assert ev[0]["cables"] == ["R[0,0] port 2 - S[0,0] port 1", "R[0,1] port 2 - S[0,0] port 2",
                               "R[0,2] port 2 - S[0,0] port 3"]
    ev = j.judge(a_round(T0 + 180))
    assert [(e["kind"], e["device"]) for e in ev] == [("device_back", "S[0,0]")]
    assert j.judge(a_round(T0 + 240)) == []


def test_a_state_read_back_goes_on_where_it_stopped(tmp_path):
    """The judge's view survives a restart through the store: the same fabric says nothing."""
    with Store(tmp_path / "w.db", write=True) as st:
        j = Judge(PlanView(), {})
        rnd = a_round(T0)
        st.write_round(rnd, j.judge(rnd), {"view": j.state()})
    with Store(tmp_path / "w.db", write=True) as st:
        j = Judge(PlanView(), {}, state=st.state()["view"], counters=st.last_counters(), last_t=T0)
        assert j.judge(a_round(T0 + 60)) == []
        assert [e["kind"] for e in j.judge(a_round(T0 + 120, drop_links=[(0x2c90000000090, 3)]))] == ["link_down"]


def test_one_writer_a_store(tmp_path):
    with Store(tmp_path / "w.db", write=True):
        r = ibtool("watch", "run", "--store", tmp_path / "w.db", "--rounds", "1", "--listen", "none")
        assert r.returncode == 2 and "another watcher writes this store" in r.stderr


@pytest.mark.parametrize("args, says", [
    (["run", "--store", "{d}/w.db", "--interval", "0"], "--interval"),
    (["run", "--store", "{d}/w.db", "--interval", "soon"], "--interval"),
    (["run", "--store", "{d}/w.db", "--listen", "here"], "--listen"),
    (["run", "--store", "{d}/w.db", "--listen", ":70000"], "--listen"),
    (["run", "--store", "{d}/w.db", "--max-size", "10"], "--max-size"),
    (["run", "--store", "{d}/w.db", "--threshold", "Bogus=1"], "--threshold"),
    (["run", "--store", "{d}/w.db", "--threshold-file", "{d}/th"], "th:2:"),
    (["run", "--store", "{d}/not-a-store", "--rounds", "1"], "not a watcher store"),
    (["run", "--store", "{d}/w.db", "--plan", "{d}/nowhere"], "nowhere"),
    (["events", "--store", "{d}/missing.db"], "no such store"),
    (["events", "--store", "{d}/not-a-store"], "not a watcher store"),
    (["events", "--store", "{d}/ok.db", "--kind", "bogus"], "--kind bogus"),
    (["events", "--store", "{d}/ok.db", "--since", "-2h"], "--since"),
    (["report", "--store", "{d}/ok.db", "--html", ""], "--html"),
    (["report", "--store", "{d}/ok.db", "--html", "{d}/no/such/dir/x.html"], "x.html"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    (tmp_path / "th").write_text("SymbolErrorCounter=10\nSymbolErrorCounter=ten\n")
    (tmp_path / "not-a-store").write_text("hello\n")
    with Store(tmp_path / "ok.db", write=True) as st:
        st.write_round(a_round(T0), [], None)
    r = ibtool("watch", *[a.format(d=tmp_path) for a in args])
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.stdout, r.stderr)
    errors = [x for x in r.stderr.splitlines() if x.startswith(("ibtool: error:", "Error:"))]
    assert len(errors) == 1 and says in errors[0], r.stderr
    assert not (tmp_path / "no").exists() and r.stdout == ""


def test_status_and_events_of_a_store(tmp_path):
    with Store(tmp_path / "w.db", write=True) as st:
        j = Judge(PlanView(), {})
        for k, drop in enumerate(([], [(0x2c90000000090, 3)], [])):
            rnd = a_round(T0 + 3600 * k, drop_links=drop)
            st.write_round(rnd, j.judge(rnd), {"view": j.state()})
    r = ibtool("watch", "status", "--store", tmp_path / "w.db", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["rounds"] == 3 and s["events"] == {"link_down": 1, "link_up": 1} and s["last_round"]["devices"] == 24
    r = ibtool("watch", "events", "--store", tmp_path / "w.db", "--since", "1h")
    assert r.returncode == 0 and r.stdout.count("\n") == 1 and "link_up: (R[1,1] P3 - S[1,1] P2) is up" in r.stdout
    r = ibtool("watch", "events", "--store", tmp_path / "w.db", "--since", "2h", "--kind", "link_down", "--json")
    assert [e["kind"] for e in json.loads(r.stdout)] == ["link_down"]


def test_report_without_a_plan_draws_the_fabric_as_last_seen(tmp_path):
    """No plan: the page draws the fabric from the watcher's last view, names the cable by its
    ends and ranks it."""
    with Store(tmp_path / "w.db", write=True) as st:
        j = Judge(PlanView(), {})
        for k in range(4):
            rnd = a_round(T0 + 3600 * k, counters={("R[1,1]", 3, "SymbolErrorCounter"): [0, 10, 30, 70][k]})
            st.write_round(rnd, j.judge(rnd), {"view": j.state()} if j.changed else None)
    out = tmp_path / "r.html"
    r = ibtool("watch", "report", "--store", tmp_path / "w.db", "--html", out, "--window", "1d", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [c["cable"] for c in rep["cables"]] == [None]
    assert rep["cables"][0]["text"] == ("R[1,1] P3 - S[1,1] P2: SymbolErrorCounter 40/h and rising for 3 hours: "
                                        "reseat or replace the cable")
    page = out.read_text()
    assert "<svg" in page and "the fabric as the watcher last saw it" in page and 'id="c1"' in page
