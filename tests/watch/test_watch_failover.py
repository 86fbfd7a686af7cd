"""The master SM dies and a standby takes over (two real OpenSMs on one ibsim, `ibtool sim up
--sms 2`): the watcher's next round says the master changed (its GUID and priority), and again
when the first SM comes back and takes mastership back (an SM that stalls on ibsim is seen and
restarted by `sim sm`: docs/sim.md, "When an SM stalls")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import ibtool
from ibtool.sim.clients import Clients
from ibtool.watch.plan import PlanView
from ibtool.watch.service import Watcher

pytestmark = [pytest.mark.ibsim]
FAST_POLLS = ("--conf", "sminfo_polling_timeout=1000", "--conf", "polling_retry_number=2",
              "--conf", "sweep_interval=0")


def sm(run, *args):
    return json.loads(ibtool("sim", "sm", run, *args, "--json", check=0, timeout=300).stdout)


def test_the_master_changes_and_comes_back(tmp_path):
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", tmp_path / "plan", check=0)
    run = tmp_path / "run"
    try:
        d = json.loads(ibtool("sim", "up", tmp_path / "plan" / "topology.net", "--sms", "2", "--engine", "minhop",
                              *FAST_POLLS, "--out", run, "--json", check=0, timeout=300).stdout)
        env = {"IBSIM_SOCKNAME": d["IBSIM_SOCKNAME"], "LD_PRELOAD": d["LD_PRELOAD"]}
        import os
        t = [1_800_000_000.0]
        w = Watcher(tmp_path / "w.db", PlanView(tmp_path / "plan"),
                    Clients(Path(d["scratch"]), environ={**os.environ, **env}), clock=lambda: t[0])

        def step():
            _, ev = w.step()
            t[0] += 3600
            return [(e["kind"], e.get("now")) for e in ev]
        with w:
            assert step() == []
            first = w.store.state()["view"]["sm"]
            assert (first["name"], first["priority"], first["state"]) == ("H[0,0]", 15, 3)
            sm(run, "--kill", "--sm", "1")
            assert sm(run, "--wait-master", "--sm", "2").get("state") == "MASTER"
            ev = step()
            assert [k for k, _ in ev] == ["sm_change"], ev
            assert (ev[0][1]["name"], ev[0][1]["priority"], ev[0][1]["state"]) == ("H[2,2]", 14, 3)
            assert sm(run, "--start", "--sm", "1").get("state") == "MASTER"
            ev = step()
            assert [k for k, _ in ev] == ["sm_change"] and ev[0][1]["name"] == "H[0,0]", ev
            assert step() == []
    finally:
        ibtool("sim", "down", run)
