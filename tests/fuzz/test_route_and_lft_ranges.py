"""Issue 24's cases of the bad-input suite: every `route` command on a partial discovery and on
numbers beyond their field, and every LFT reader on LIDs and ports beyond theirs. Each as a user
meets it: the exit code and the one line (file:line, the field, the value as the file writes it).

Before issue 24 a truncated ibnetdiscover file was routed (exit 0, tables for part of a fabric),
and the LFT readers said "LID 0x11 or port 1073741824 out of range" for a port of 2**64.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_regressions import bounded, edited, line_of, one_error

from support import FIXTURES, ibtool
from ibtool.errors import InputError
from ibtool.formats import lft

R = FIXTURES / "real"
HDOR, RUN = R / "ibsim-kns-k3-n2-hdor", R / "ibsim-kns-k3-n2-minhop-run"
FABRIC = HDOR / "ibnetdiscover.out"

# the route commands, given the fabric file, a scratch dir and a plan's layout.json (fr reads one)
ROUTES = {
    "hdor": lambda f, d, lay: ["route", "hdor", "--fabric", f, "--out", d / "x.lft"],
    "kantc": lambda f, d, lay: ["route", "kantc", "--fabric", f, "--out", d / "x.lft"],
    "equality": lambda f, d, lay: ["route", "equality", "--fabric", f, "--spec", "N14K6[-1,1,3,9](4)",
                                   "--out", d / "x.lft"],
    "fr": lambda f, d, lay: ["route", "fr", "--fabric", f, "--layout", lay, "--out", d / "x.lft",
                             "--node-name-map", R / "plan-kns-k3-n2.node-name-map"],
}


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sky")
    ibtool("topo", "skywalk", "--z", 4, "--c", 4, "--di", 3, "--do", 1, "--out", d / "sky", check=0)
    return d / "sky" / "layout.json"


def truncated(tmp_path: Path) -> Path:
    """The real dump cut after its switch records and two HCA records, as a discovery cut short
    leaves it: 5 HCAs seen only as the peers of their routers' ports."""
    lines = FABRIC.read_text().splitlines(keepends=True)
    out = tmp_path / "ibnetdiscover.out"
    out.write_text("".join(lines[:170]))
    return out


PEERS_ONLY = ["H[2,0] (0x0002c900000000e0)", "H[1,0] (0x0002c90000000080)", "H[0,2] (0x0002c90000000060)",
              "H[0,1] (0x0002c90000000040)", "H[0,0] (0x0002c90000000020)"]


@pytest.mark.parametrize("cmd", list(ROUTES))
def test_partial_discovery_is_refused_by_every_route_command(tmp_path, layout, cmd):
    f = truncated(tmp_path)
    msg = one_error(ibtool(*ROUTES[cmd](f, tmp_path, layout)))
    assert msg == (f"ibtool: error: {f}: partial discovery: 5 devices seen only as the peer of a port, with no "
                   f"record of their own: {', '.join(PEERS_ONLY)}; routing tables from part of a fabric are "
                   "refused (run ibnetdiscover again; --allow-partial routes the part that was read)")
    assert not (tmp_path / "x.lft").exists()


@pytest.mark.parametrize("cmd", list(ROUTES))
def test_allow_partial_routes_with_a_warning(tmp_path, layout, cmd):
    f = truncated(tmp_path)
    p = ibtool(*ROUTES[cmd](f, tmp_path, layout), "--allow-partial")
    warned = [ln for ln in p.stderr.splitlines() if ln.startswith("ibtool: warning:")]
    assert warned == [f"ibtool: warning: {f}: partial discovery: 5 devices seen only as the peer of a port, with no "
                      f"record of their own: {', '.join(PEERS_ONLY)}; routing only the part that was read "
                      "(--allow-partial)"], p.stderr
    assert "refused" not in p.stderr and "Traceback" not in p.stderr
    if cmd == "hdor":  # the KNS's routers and switches are all there: hdor routes what was read
        assert p.returncode == 0, p.stderr
        assert lft.read(tmp_path / "x.lft").lft
    else:  # a KNS is no KANTC, Equality network or this skywalk layout's fabric: refused for that
        assert p.returncode in (1, 2) and "partial" not in p.stderr.splitlines()[-1]


# a number beyond its field in the fabric file: (what is replaced, by what, the message after file:line)
FABRIC_EDITS = [
    ("enhanced port 0 lid 3 lmc 0", "enhanced port 0 lid 65536 lmc 0", "unicast LID 0x10000 is outside 0x1..0xbfff"),
    ("# lid 5 lmc 0", "# lid 49152 lmc 0", "unicast LID 0xc000 is outside 0x1..0xbfff"),
    ('[2]	"S-0002c90000000150"[3]', '[255]	"S-0002c90000000150"[3]', "port 255 of 'S-0002c90000000110' is outside 1..8"),
    ('"S-0002c90000000150"[3]', '"S-0002c90000000150"[18446744073709551616]',
     "remote port 18446744073709551616 is outside 1..254"),
]


@pytest.mark.parametrize("cmd", list(ROUTES))
@pytest.mark.parametrize("old, new, says", FABRIC_EDITS, ids=[e[2].split(" is")[0] for e in FABRIC_EDITS])
def test_number_beyond_its_field_in_the_fabric_of_every_route_command(tmp_path, layout, cmd, old, new, says):
    f = edited(tmp_path, FABRIC, old, new)
    msg = one_error(bounded(*ROUTES[cmd](f, tmp_path, layout)))
    assert msg == f"ibtool: error: {f}:{line_of(f, new)}: {says}"
    assert not (tmp_path / "x.lft").exists()


def _file_engine_lfts(tmp_path: Path) -> Path:
    """The file engine's LFT file, as `ibtool route hdor` writes it for this fabric."""
    out = tmp_path / "hdor.lft"
    ibtool("route", "hdor", "--fabric", FABRIC, "--out", out, check=0)
    return out


# every LFT reader's format: (how to get a real file, the entry of LID 2 as it writes it)
LFT_FORMATS = {
    "dump_fts.out": (lambda t: HDOR / "dump_fts.out", "{lid} {port} : "),
    "opensm-lfts.dump": (lambda t: HDOR / "opensm-lfts.dump", "{lid} {port} # "),
    "opensm.fdbs": (lambda t: RUN / "osm" / "opensm.fdbs", "{lid} : {port}  :"),
    "file engine LFT": (_file_engine_lfts, "{lid} {port} portguid"),
}
BAD_LIDS = ["0x0000", "0xc000", "0xffff", "0xffffffff", "0x10000000000000000"]
BAD_PORTS = ["255", "256", "1073741824", "18446744073709551616"]


@pytest.mark.parametrize("fmt", list(LFT_FORMATS))
def test_every_lft_reader_names_the_field_and_the_value_as_written(tmp_path, fmt):
    seed, entry = LFT_FORMATS[fmt]
    text = seed(tmp_path).read_text()
    real = entry.format(lid="0x0002", port="002")
    assert real in text, real
    cases = [(entry.format(lid=lid, port="002"), f"LID {lid} is outside 0x0001..0xbfff (the unicast LIDs)")
             for lid in BAD_LIDS]
    cases += [(entry.format(lid="0x0002", port=p), f"port {p} of LID 0x0002 is outside 0..254") for p in BAD_PORTS]
    for new, says in cases:
        f = tmp_path / "lfts"
        f.write_text(text.replace(real, new, 1))
        with pytest.raises(InputError) as e:
            lft.read(f)
        assert str(e.value) == f"{f}:{line_of(f, new)}: {says}"


def test_a_5000_digit_value_is_shown_cut(tmp_path):
    f = edited(tmp_path, HDOR / "dump_fts.out", "0x0002 002 : ", "0x0002 " + "9" * 5000 + " : ")
    with pytest.raises(InputError) as e:
        lft.read(f)
    assert str(e.value) == f"{f}:{line_of(f, '9' * 50)}: port 999999999999... (5000 characters) of LID 0x0002 " \
                           "is outside 0..254"
