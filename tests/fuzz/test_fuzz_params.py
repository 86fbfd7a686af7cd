"""Abusive command lines: option values beyond their range, of the wrong type, empty, with
newlines or NULs. In-process (click's runner), under the suite's memory and time bounds: exit
0, 1 or 2 and never an exception other than the exit itself."""

from __future__ import annotations

import shutil

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from limits import examples, time_bound
from mutate import FIXTURES

from ibtool.cli.main import cli

settings.load_profile("fuzz")

ODD = ["0", "1", "-1", "2", "3", "8", "36", "255", "1e3", "nan", "inf", "-inf", "", " ", "0x10", "99999999999999999999",
       "9" * 5000, "a\nb", "\x00", "hdor,minhop", "no_fallback", "x=y", "lmc=1\nfoo=2", "=", "lmc=", "é"]
value = st.sampled_from(ODD)


def _invoke(args: list[str]):
    with time_bound():
        r = CliRunner().invoke(cli, args, catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    assert r.exit_code in (0, 1, 2, 5), (args, r.exit_code, r.output[-500:])  # 5: NOT CHECKED


@settings(max_examples=examples(150))
@given(k=value, n=value, radix=value, hcas=value, mult=value, engine=value)
def test_topo_kns_options(tmp_path_factory, bounded_memory, k, n, radix, hcas, mult, engine):
    # k^n stays small: with s = 1 the switch radix bounds k, and n is at most 3 unless refused
    if n.strip().isdigit() and len(n) < 7 and int(n) > 3:
        n = "3"
    out = tmp_path_factory.getbasetemp() / "kns"
    shutil.rmtree(out, ignore_errors=True)
    _invoke(["topo", "kns", "--k", k, "--n", n, "--radix", radix, "--hcas-per-router", hcas,
             "--multiplicity", mult, "--engine", engine, "--out", str(out)])


@settings(max_examples=examples(60))
@given(timeout=value, flags=value, conf=value, engine=value)
def test_sim_run_options(tmp_path_factory, bounded_memory, timeout, flags, conf, engine):
    out = tmp_path_factory.getbasetemp() / "sim"
    _invoke(["sim", "run", str(FIXTURES / "real" / "plan-kns-k3-n2.net"), "--out", str(out), "--timeout", timeout,
             "--log-flags", flags, "--conf", conf, "--engine", engine, "--no-discover"])


@settings(max_examples=examples(60))
@given(perm=value, expect=st.sampled_from(["hdor", "none", "", "x"]))
def test_verify_all_options(bounded_memory, perm, expect):
    _invoke(["verify", "all", str(FIXTURES / "real" / "ibsim-kns-k3-n2-minhop-run"), "--permutations", perm,
             "--expect", expect])
