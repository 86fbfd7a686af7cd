"""hdor under valgrind in Debian's opensm (daemon mode, ibsim): three routing passes (start-up,
SIGHUP re-sweeps), then shutdown; no memory error and no leak may involve hdor's code. OpenSM and
umad2sim have their own reports (umad2sim's reads past its buffers, a strdup in
osm_subn_set_default_opt, a MAD in the vendor layer); those are not hdor's and are not counted."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hdor_walk import PLUGIN, fat_tree, libhdor  # noqa: F401
from ibtool import mad
from ibtool.formats import ibnetdiscover
from ibtool.sim.clients import Clients
from ibtool.sim.runner import ibsim
from ibtool.topologies.kns import kns

pytestmark = [pytest.mark.ibsim, pytest.mark.slow, pytest.mark.usefixtures("libhdor")]

RECORD = re.compile(r"^==\d+==\s+(\S.*)$")


def valgrind_records(text: str) -> list[list[str]]:
    """valgrind's report split into records (a headline and its stack lines)."""
    recs, cur = [], []
    for ln in text.splitlines():
        m = RECORD.match(ln)
        if not m:
            continue
        body = m.group(1)
        if body.startswith(("at ", "by ", "Address ", "Block ", "Uninitialised")):
            if cur:
                cur.append(body)
        else:
            if cur:
                recs.append(cur)
            cur = [body]
    if cur:
        recs.append(cur)
    return recs


def hdor_problems(text: str) -> list[str]:
    bad = []
    for rec in valgrind_records(text):
        head = rec[0]
        if not re.match(r"(Invalid|Conditional|Use of uninit|Syscall param|Mismatched|Source and dest|"
                        r"\d[\d,]* bytes in [\d,]+ blocks are (definitely|indirectly|possibly) lost)", head):
            continue
        if any("hdor" in ln for ln in rec[1:]):
            bad.append("\n".join(rec))
    return bad


def sweeps(net: Path, tmp: Path, fab, conf: str, passes: int, marker: str) -> tuple[str, str]:
    osm = tmp / "osm"
    osm.mkdir()
    (tmp / "opensm.conf").write_text(conf + "force_log_flush TRUE\n")
    log = tmp / "opensm.log"
    vg = tmp / "valgrind.txt"
    with ibsim(net, tmp / "work", fab) as sim:
        env = sim.env(OSM_TMP_DIR=str(osm), OSM_CACHE_DIR=str(osm), LD_LIBRARY_PATH=str(PLUGIN))
        p = subprocess.Popen(["valgrind", "--leak-check=full", "--keep-debuginfo=yes", "--num-callers=40",
                              f"--log-file={vg}", "/usr/sbin/opensm", "-F", str(tmp / "opensm.conf"),
                              "-f", str(log), "-D", "0x03", "-s", "0"],
                             cwd=sim.work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            def count():
                return log.read_text(errors="replace").count(marker) if log.exists() else 0

            deadline = time.monotonic() + 240
            for i in range(passes):
                if i:
                    p.send_signal(signal.SIGHUP)  # heavy sweep: re-route from scratch
                while count() <= i and time.monotonic() < deadline and p.poll() is None:
                    time.sleep(0.2)
                assert count() > i, f"pass {i + 1} never logged {marker!r}"
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    return log.read_text(errors="replace"), vg.read_text(errors="replace")


@pytest.mark.parametrize("params,summary", [
    (dict(k=3, n=2, multiplicity=2), "k=3 n=2 s=1: 15 switches, 24 LIDs"),
    (dict(k=4, n=2, s=2, radix=8), "k=4 n=2 s=2: 48 switches, 64 LIDs"),  # BFS hop matrices, in-group sets
], ids=["kns-3-2-m2", "kns-4-2-s2"])
def test_valgrind_three_passes_no_hdor_errors_or_leaks(tmp_path, params, summary):
    f = kns(**params)
    net = tmp_path / "kns.net"
    ibnetdiscover.write(f, net)
    log, vg = sweeps(net, tmp_path, f, "event_plugin_name hdor\nrouting_engine hdor,minhop\n", 3,
                     "hdor tables configured on all switches")
    assert "ERROR SUMMARY" in vg and "LEAK SUMMARY" in vg, vg[-2000:]
    passes = re.findall(re.escape("hdor: routed " + summary) + r", \d+ us \(pass (\d+)", log)
    assert len(passes) >= 3 and passes[:3] == ["1", "2", "3"], passes
    assert hdor_problems(vg) == []


def test_valgrind_declining_passes_no_hdor_errors_or_leaks(tmp_path):
    """The decline path (analysis abandoned half way) frees everything too."""
    f = fat_tree()
    net = tmp_path / "ft.net"
    ibnetdiscover.write(f, net)
    log, vg = sweeps(net, tmp_path, f, "event_plugin_name hdor\nrouting_engine hdor,minhop\n", 2,
                     "hdor: declined (HD")
    assert "minhop tables configured on all switches" in log
    assert "LEAK SUMMARY" in vg
    assert hdor_problems(vg) == []


def test_valgrind_failures_and_recoveries_no_hdor_errors_or_leaks(tmp_path, monkeypatch):
    """One OpenSM under valgrind keeps running while a cable, an indirect switch and a router fail
    and come back (ibsim's console): every pass is hdor's (complete, degraded, complete again),
    OpenSM never crashes, and no memory error or leak involves hdor's code, after 7 sweeps that
    remembered, replaced and freed the KNS and published and retired path-SL tables. Then, a
    cable down, OpenSM is started again three times (docs/hdor.md section 7): with its cache (the
    remembered KNS read from disk), with an empty cache (identified at first sight: a cold degraded
    start), and with an empty cache and hdor.conf beside its opensm.conf (the description read);
    each run is checked the same way."""
    from ibtool.sim import faults
    from ibtool.sim.live import LiveFabric

    f = kns(k=3, n=2)
    net = tmp_path / "kns.net"
    ibnetdiscover.write(f, net)
    vg = tmp_path / "valgrind.txt"
    wrapper = tmp_path / "bin" / "opensm"  # LiveFabric starts `opensm` from PATH: run it under valgrind
    wrapper.parent.mkdir()
    wrapper.write_text("#!/bin/sh\nexec valgrind --leak-check=full --keep-debuginfo=yes --num-callers=40 "
                       f"--log-file={vg}.%p /usr/sbin/opensm \"$@\"\n")  # one report per OpenSM
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:/usr/bin:/bin:/usr/sbin:/sbin")
    ids = [ibnetdiscover.node_id(f, i) for i in range(f.num_nodes)]

    def where(spec: str) -> str:
        node, port = faults.target(f, spec, "test")
        return f'"{ids[node]}"' + (f"[{port}]" if port else "")

    router = f.index("R[1,1]")
    cable = next(f"R[1,1] {port}" for port, peer, _ in f.neighbors(router) if f.types[peer] == 2)
    steps = [("Unlink", cable), ("Unlink", "S[0,2]"), ("ReLink", cable), ("ReLink", "S[0,2]"),
             ("Unlink", "R[2,0]"), ("ReLink", "R[2,0]")]
    lf = LiveFabric(net, tmp_path / "live", ["hdor"], timeout=300, conf_options=[("qos", "TRUE")],
                    opensm_args=["-D", "0x07"])
    with lf:
        assert lf.outcome.get("engine") == "hdor", lf.outcome
        # a multicast group of every HCA: each pass after this builds its tree (hdor's, section 15)
        hcas = [f.port_guid(i, p) for i in range(f.num_nodes) if not f.is_switch(i) for p, _, _ in f.neighbors(i)]
        got = mad.mcast_join(Clients(lf.scratch, timeout=120, environ=lf.env()), "ff12:601b:ffff::1", hcas, 120)
        assert len(got) == len(hcas), got

        def configured() -> int:
            return lf.opensm_log.read_text(errors="replace").count("hdor tables configured on all switches")

        for cmd, spec in steps:
            before = configured()
            lf.console(f"{cmd} {where(spec)}")
            deadline = time.monotonic() + 180
            while configured() <= before and time.monotonic() < deadline and lf._opensm.poll() is None:
                time.sleep(0.5)
            assert lf._opensm.poll() is None, f"OpenSM exited after {cmd} {spec}"
            assert configured() > before, f"no hdor tables after {cmd} {spec}"
        lf._opensm.send_signal(signal.SIGTERM)  # let valgrind finish its leak check (stop() kills after 3 s)
        rc = lf._opensm.wait(timeout=300)
        log = lf.opensm_log.read_text(errors="replace")
        degraded = re.findall(r"hdor: routed k=3 n=2 s=1: .*degraded KNS", log)
        complete = re.findall(r"hdor: routed k=3 n=2 s=1: \d+ switches, \d+ LIDs, \d+ us \(pass \d+; analysis", log)
        assert len(degraded) >= 4 and len(complete) >= 3, (len(degraded), len(complete))
        trees = re.findall(r"hdor: multicast group 0x[0-9A-F]+: (\d+) member port", log)
        assert len(trees) >= len(steps) and str(len(hcas)) in trees, trees  # (R[2,0]'s HCA leaves)
        assert "hdor: declined" not in log
        assert rc == 0, rc
        lf.sm_stop(1)  # it has exited (valgrind's report written): forget it
        # starts with a cable down: the remembered KNS, then first sight, then a description
        assert (lf.work / "osm" / "cache" / "hdor-kns.conf").is_file()
        shutil.copyfile(lf.work / "osm" / "cache" / "hdor-kns.conf", tmp_path / "described.conf")
        lf.console(f"Unlink {where(cable)}")
        for how, want in (("cache", "the KNS of"), ("empty cache", "identified at first sight"),
                          ("description", "the KNS of")):
            if how != "cache":
                for x in (lf.work / "osm" / "cache").iterdir():
                    x.unlink()
            if how == "description":
                shutil.copyfile(tmp_path / "described.conf", lf.work / "hdor.conf")
            out = lf.restart_opensm(["hdor"])
            assert out["engine"] == "hdor", (how, out)
            log = lf.opensm_log.read_text(errors="replace")
            line = re.findall(r"hdor: routed k=3 n=2 s=1: .*degraded KNS.*", log)
            assert line and want in line[0], (how, line)
            lf._opensm.send_signal(signal.SIGTERM)
            assert lf._opensm.wait(timeout=300) == 0, how
            lf.sm_stop(1)  # it has exited (valgrind's report written): forget it
    reports = sorted(tmp_path.glob("valgrind.txt.*"))
    assert len(reports) == 4, reports
    for r in reports:
        text = r.read_text(errors="replace")
        assert "ERROR SUMMARY" in text and "LEAK SUMMARY" in text, (r, text[-2000:])
        assert hdor_problems(text) == [], r


def test_record_parser_finds_an_hdor_leak():
    text = """==1== 24 bytes in 1 blocks are definitely lost in loss record 2 of 6
==1==    at 0x48417B4: malloc (vg_replace_malloc.c:381)
==1==    by 0x5A1B2C3: hdor_build_lid_matrices (hdor.c:900)
==1==
==1== 20 bytes in 1 blocks are definitely lost in loss record 1 of 6
==1==    at 0x48417B4: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)
==1==    by 0x15EA10: osm_subn_set_default_opt (in /usr/sbin/opensm)
"""
    bad = hdor_problems(text)
    assert len(bad) == 1 and "hdor_build_lid_matrices" in bad[0]
