"""A run directory: the files `ibtool sim run` (and each OUT/step-N/ of `sim run --faults`) and
`ibtool collect` write, by name, and where the checks find each of them. Every module names these
files through here (docs/sim.md and docs/collect.md list them for users).
"""

from __future__ import annotations

import json
from pathlib import Path

from ibtool import plandir
from ibtool.errors import InputError

FABRIC = "ibnetdiscover.out"  # the fabric as discovered (ibnetdiscover)
LFTS = "dump_fts.out"  # the forwarding tables as the switches report them (dump_fts)
LFTS_RAW = "dump_fts.raw.out"  # dump_fts's own output, kept when its top LID was added (sim run)
SUMMARY = "summary.json"  # what ran and its verdict
PATH_SLS = "saquery-paths.out"  # the SL of each path (saquery -p): `--path-sls`
PERFQUERY = "perfquery.out"  # port counters (perfquery)
SL2VL = "sl2vl.dump"  # collect: the SL2VL tables read by MADs
OPENSM_CONF = plandir.OPENSM_CONF  # the conf OpenSM ran with, named as a plan's
OPENSM_LOG = "opensm.log"
OPENSM_STDERR = "opensm.stderr"  # sim run --path-sls: OpenSM runs on as the SA, its stderr here
HDOR_CONF = plandir.HDOR_CONF  # the KNS description hdor ran with, beside opensm.conf (sim run --hdor-conf)
IBSIM_LOG = "ibsim.log"
OSM = "osm"  # sim run: OpenSM's own dumps (its OSM_TMP_DIR)
OSM_LFTS = "opensm-lfts.dump"
OSM_SL2VL = "opensm-sl2vl.dump"
OSM_HDOR = "opensm-hdor.dump"  # the hdor engine's coordinates and roles
OSM_CACHE = "cache"  # osm/cache: OpenSM's OSM_CACHE_DIR (guid2lid, hdor's remembered KNS)
OSM_DUMPS = (OSM_SL2VL, OSM_HDOR, OSM_LFTS)  # rewritten every sweep (log flag 0x40)
EXPECTED = "expected.net"  # a fault step: the plan without what was down at that step
STEP = "step-"  # sim run --faults: OUT/step-0, step-1, ...


def step(run: Path, k: int) -> Path:
    """OUT/step-K of a fault scenario."""
    return Path(run) / f"{STEP}{k}"


def fabric(run: Path) -> Path:
    return Path(run) / FABRIC


def lfts(run: Path) -> Path:
    """dump_fts.out, or OpenSM's own LFT dump when dump_fts left none (or an empty one)."""
    p = Path(run) / LFTS
    if not p.is_file() or p.stat().st_size == 0:
        p = Path(run) / OSM / OSM_LFTS
    return p


def sl2vl(run: Path) -> Path | None:
    """OpenSM's SL2VL dump (sim run), else the one collect read; None when neither is there."""
    return _first(Path(run) / OSM / OSM_SL2VL, Path(run) / SL2VL)


def path_sls(run: Path) -> Path | None:
    return _first(Path(run) / PATH_SLS)


def hdor_dump(run: Path) -> Path | None:
    return _first(Path(run) / OSM / OSM_HDOR)


def perfquery(run: Path) -> Path | None:
    return _first(Path(run) / PERFQUERY)


def steps(run: Path) -> list[Path]:
    """The steps of a fault scenario (OUT/step-N with a summary or a discovered fabric: a step
    whose summary is lost is still a step), in step order."""
    found = {p.parent for name in (SUMMARY, FABRIC) for p in Path(run).glob(f"{STEP}*/{name}")}
    return sorted(found, key=lambda d: int(d.name[len(STEP):]) if d.name[len(STEP):].isdigit() else -1)


def summary(run: Path) -> dict:
    """The run's summary.json ({} when there is none); InputError when it is not one of ours."""
    path = Path(run) / SUMMARY
    if not path.is_file():
        return {}
    try:
        out = json.loads(path.read_bytes())
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=str(path)) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON: {e.msg}", path=str(path), line=e.lineno) from None
    except UnicodeDecodeError:
        raise InputError("not JSON: not UTF-8 text", path=str(path)) from None
    except ValueError as e:  # e.g. an integer beyond Python's 4300-digit limit
        raise InputError(f"not JSON: {str(e).split(';')[0][:80]}", path=str(path)) from None
    except RecursionError:
        raise InputError("not an `ibtool sim run` summary: nested too deeply", path=str(path)) from None
    if not isinstance(out, dict) or not isinstance(out.get("net") or "", str):
        raise InputError("not an `ibtool sim run` summary (expected an object with \"net\" a file name)",
                         path=str(path))
    # what `sim run` writes, nothing else: "ok": NaN, -1 or "yes" is not a passed run
    for key, types in _SUMMARY_TYPES.items():
        if key in out and not isinstance(out[key], types):
            raise InputError(f"{key!r} is {json.dumps(out[key])[:40]}, expected "
                             f"{' or '.join('null' if t is type(None) else t.__name__ for t in types)}", path=str(path))
    for key in ("requested", "engines"):  # engine names, as `sim run` lists them
        if isinstance(out.get(key), list) and not all(isinstance(x, str) for x in out[key]):
            raise InputError(f"{key!r} is {json.dumps(out[key])[:40]}, expected a list of engine names",
                             path=str(path))
    return out


_SUMMARY_TYPES = {"ok": (bool,), "subnet_up": (bool,), "fallback": (bool,), "interrupted": (bool,),
                  "engine": (str, type(None)), "requested": (list, type(None)), "engines": (list, type(None)),
                  "hdor_declined": (str, type(None)), "kind": (str, type(None)), "counters": (dict, type(None)),
                  "items": (dict, type(None))}


def plan_of(run: Path, net: str) -> Path | None:
    """The plan a summary names: as written, or relative to the run or its parent."""
    run = Path(run)
    for cand in (Path(net), run / net, run.parent / net):
        try:
            if cand.is_file():
                return cand
        except (OSError, ValueError):  # a name too long, or with a NUL: not a file here
            pass
    return None


def _first(*paths: Path) -> Path | None:
    return next((p for p in paths if p.is_file()), None)
