"""Debian's real Prometheus server (127.0.0.1 only) scrapes `ibtool watch run` over an ibsim fabric
(`ibtool sim up`) whose counters `ibtool sim set` raises; its HTTP API finds the rising counter by
the plan's cable ID, under infiniband-exporter's metric name, with the plan's labels beside."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
import urllib.parse
import urllib.request

import pytest

from support import IBTOOL, ibtool
from ibtool import children

pytestmark = [pytest.mark.ibsim, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def query(base: str, q: str) -> list[dict]:
    status, body = get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": q}))
    d = json.loads(body)
    assert status == 200 and d["status"] == "success", body
    return d["data"]["result"]


def until(what, timeout: float = 60.0, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = what()
        except OSError:
            got = None
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s")
        time.sleep(every)


def test_prometheus_finds_the_rising_counter_by_cable_id(tmp_path):
    ibtool("topo", "kns", "--k", "3", "--n", "2", "--radix", "8", "--out", tmp_path / "plan", check=0)
    ibtool("cabling", tmp_path / "plan", "--out", tmp_path / "plan" / "cabling", check=0)
    run = tmp_path / "run"
    r = ibtool("sim", "up", tmp_path / "plan" / "topology.net", "--engine", "minhop", "--out", run, "--json")
    watcher = prom = None
    logs = [open(tmp_path / n, "w") for n in ("w.out", "w.err", "p.out", "p.err")]
    try:
        assert r.returncode == 0, r.stderr
        env = dict(line.removeprefix("export ").split("=", 1) for line in (run / "sim" / "env.sh").read_text().splitlines()
                   if line.startswith("export "))
        wport, pport = free_port(), free_port()
        watcher = children.popen([*IBTOOL, "watch", "run", "--store", str(tmp_path / "w.db"), "--plan",
                                  str(tmp_path / "plan"), "--interval", "1", "--listen", f"127.0.0.1:{wport}"],
                                 env={**os.environ, **env}, cwd=tmp_path, stdout=logs[0], stderr=logs[1])
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            f"scrape_configs:\n  - job_name: ibtool-watch\n    static_configs:\n      - targets: ['127.0.0.1:{wport}']\n")
        assert shutil.which("prometheus"), "Debian's prometheus (scripts/debian-packages.txt; make setup)"
        prom = children.popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                               f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{pport}",
                               "--log.level=warn"], cwd=tmp_path, stdout=logs[2], stderr=logs[3])
        base = f"http://127.0.0.1:{pport}"
        until(lambda: get(f"{base}/-/ready")[0] == 200)
        series = 'infiniband_symbolerrorcounter_total{cable="C0009"}'
        first = until(lambda: query(base, series))
        assert {x["metric"]["local_name"] for x in first} == {"R[1,1]", "S[1,1]"}  # both ends of the cable
        assert all(float(x["value"][1]) == 0 for x in first)
        for v in (250, 900):  # the cable gets worse
            s = ibtool("sim", "set", run, "--counter", f"R[1,1] 3 SymbolErrorCounter={v}")
            assert s.returncode == 0, s.stderr
            got = until(lambda: [x for x in query(base, series) if float(x["value"][1]) == v])
        m = got[0]["metric"]
        assert (m["local_name"], m["local_port"], m["component"], m["remote_name"], m["remote_port"]) == \
            ("R[1,1]", "3", "switch", "S[1,1]", "2")
        assert (m["local_plan"], m["remote_plan"], m["plan_rate"]) == ("R[1,1] P3", "S[1,1] P2", "4xQDR")
        assert m["local_label"].startswith("C0009 / ") and m["local_rack"] and m["local_u"].isdigit()
        assert m["local_guid"] == "0x2c90000000090" and m["job"] == "ibtool-watch"
        # Prometheus's own view of the rise, by cable ID
        rise = until(lambda: query(base, f'increase({series}[1m]) > 0'))
        assert {x["metric"]["local_name"] for x in rise} == {"R[1,1]"}
        # the field exporter's gauges beside: QDR is 10 Gb/s a lane, 4 lanes
        speed = query(base, 'infiniband_speed{cable="C0009",local_name="R[1,1]"}')
        width = query(base, 'infiniband_width{cable="C0009",local_name="R[1,1]"}')
        assert float(speed[0]["value"][1]) == 10.0 and float(width[0]["value"][1]) == 4
        up = query(base, 'ibtool_watch_cable_up{cable="C0009"}')
        assert float(up[0]["value"][1]) == 1
        assert float(query(base, "infiniband_scrape_ok")[0]["value"][1]) == 1
    finally:
        if watcher is not None:
            watcher.send_signal(signal.SIGTERM)
            assert watcher.wait(timeout=30) == 143, (tmp_path / "w.err").read_text()
        if prom is not None:
            children.stop(prom)
        ibtool("sim", "down", run)
        for fh in logs:
            fh.close()
