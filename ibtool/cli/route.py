"""`ibtool route`: reference routing computed in Python, written for OpenSM's `file` engine."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import click

from ibtool.cli import InPath, OutPath
from ibtool.errors import InputError
from ibtool.formats import lft
from ibtool.plan import Plan
from ibtool.routing import run
from ibtool.routing.run import File


def _warn(m: str) -> None:
    click.echo(f"ibtool: warning: {m}", err=True)


allow_partial_option = click.option(
    "--allow-partial", is_flag=True,
    help="Route a partial discovery (devices seen only as the peer of a port) anyway, with a warning; "
         "by default it is refused (exit 2), naming those devices.")


@click.group(name="route")
def group():
    """Compute forwarding tables in Python (reference engines) for OpenSM's `file` engine."""


@group.command(name="hdor")
@click.option("--fabric", "fabric_path", required=True, type=InPath(),
              help="The discovered fabric: ibnetdiscover output with LIDs (e.g. RUN/ibnetdiscover.out).")
@click.option("--out", "-o", required=True, type=OutPath(),
              help="LFT file to write, for `opensm -R file -U FILE` (conf key lfts_file).")
@click.option("--dump", type=OutPath(),
              help="Also write the coordinates dump (the opensm-hdor.dump format of docs/hdor.md).")
@click.option("--baseline", "baseline_path", type=InPath(),
              help="The same KNS while complete (ibnetdiscover output with LIDs, e.g. RUN/step-0/ibnetdiscover.out "
                   "of `sim run --faults`): --fabric is then routed as that KNS with failed elements "
                   "(docs/hdor.md section 6: detours on higher VLs, untouched routes unchanged).")
@click.option("--vls", default=8, show_default=True, type=click.IntRange(1, 15),
              help="Data VLs the ports offer: a degraded KNS that needs more is declined (exit 1).")
@click.option("--sl2vl", "sl2vl_out", type=OutPath(),
              help="Write the SL2VL tables hdor programs (opensm-sl2vl.dump format; all VL 0 without faults).")
@click.option("--path-sls", "path_sls_out", type=OutPath(),
              help="Write the SL of every HCA-to-HCA path (`saquery -p` format; all SL 0 without faults).")
@click.option("--kns-conf", "kns_conf", type=OutPath(),
              help="Also write the KNS description hdor.conf (docs/plugin.md) for the hdor engine on every SM "
                   "host: only from a discovery of the complete KNS (refused, saying why, otherwise).")
@click.option("--implementation", type=click.Choice(["python", "c"]), default="python", show_default=True,
              help="python: the Python reference (ibtool/routing/hdor.py); c: the C engine the OpenSM plugin "
                   "runs, without OpenSM (opensm_plugin/libhdorcore.so: `ibtool plugin build`), whose tables, "
                   "SL2VL rows and path SLs are the plugin's for the same fabric and failures.")
@allow_partial_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def hdor_cmd(fabric_path, out, dump, baseline_path, vls, sl2vl_out, path_sls_out, kns_conf, implementation,
             allow_partial, as_json):
    """Hybrid-DOR tables for a KNS fabric, as the hdor OpenSM engine computes them (docs/hdor.md).

    Writes every switch's table for every LID, with ` portguid` on each entry so OpenSM remaps
    LIDs that moved. A fabric that is not a complete KNS exits 1 with the reason, unless
    --baseline names the complete KNS it was: then failed cables, switches and routers are routed
    around as the C engine does after a fault, and --sl2vl / --path-sls write the VLs and SLs that
    keep the detours deadlock-free (check them with `ibtool verify routes --sl2vl --path-sls`).

    \b
    Examples:
      ibtool sim run kns/topology.net --engine minhop --out run
      ibtool route hdor --fabric run/ibnetdiscover.out --out hdor.lft --dump hdor.dump
      ibtool sim run kns/topology.net --engine file --conf lfts_file=$PWD/hdor.lft --out run2
    \b
    The description the engine reads beside opensm.conf (from a discovery of the complete fabric):
      ibtool route hdor --fabric run/ibnetdiscover.out --out hdor.lft --kns-conf hdor.conf
      ibtool plugin install --kns-conf hdor.conf
    \b
    The C engine the plugin runs inside OpenSM, on the same discovery (docs/plugin.md):
      ibtool route hdor --fabric run/ibnetdiscover.out --out hdor.lft --implementation c
    \b
    After a cable failure (`sim run --fail`):
      ibtool sim run kns/topology.net --engine hdor --fail "R[1,1] 3" --out faults
      ibtool route hdor --fabric faults/step-1/ibnetdiscover.out \\
          --baseline faults/step-0/ibnetdiscover.out --out hdor.lft --sl2vl sl2vl.dump --path-sls paths.out
      ibtool verify routes --fabric faults/step-1/ibnetdiscover.out --lfts hdor.lft \\
          --sl2vl sl2vl.dump --path-sls paths.out
    """
    from ibtool.formats import pathrecord, sl2vl
    from ibtool.routing import hdor

    outputs = {"--out": out, "--dump": dump, "--sl2vl": sl2vl_out, "--path-sls": path_sls_out, "--kns-conf": kns_conf}
    for option, path in outputs.items():
        if path:
            run.check_output(path, option)
    if kns_conf and baseline_path:
        raise InputError("--kns-conf is written from a discovery of the complete KNS; --baseline says --fabric "
                         "is a degraded one")
    if kns_conf and allow_partial:
        raise InputError("--kns-conf is written only from a complete discovery; --allow-partial accepts a partial one")
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))
    base = None

    engine = None

    def inputs(f) -> list[str]:
        nonlocal base, engine
        if implementation == "c":
            from ibtool.routing import hdor_c
            engine = hdor_c.Engine(vls)
        if not baseline_path:
            return []
        f0 = run.read_fabric(baseline_path, "--baseline", allow_partial, warn=_warn)
        try:
            if engine is not None:  # the C engine remembers the complete KNS, as inside OpenSM
                engine.load(f0)
                r0 = engine.route()
                if r0.degraded:
                    raise hdor.NotFamily("hdor", "KNS", "the C engine routed it as a degraded KNS (identified at first sight)")
                base = (f0, r0)
            else:
                base = (f0, hdor.compute(f0, first_sight=False))
        except hdor.NotFamily as e:
            raise InputError(f"--baseline: not a complete KNS: {e.reason}", path=str(baseline_path)) from None
        return [f"baseline: KNS {base[1].k}-ary {base[1].n}-direct from {baseline_path}"]

    def compute(f):
        if engine is not None and not kns_conf:
            engine.load(f)
            return engine.route(baseline=base[0] if base else None)
        if not kns_conf:
            return hdor.compute(f, baseline=base, vls=vls)
        # a description only of what is verified complete: before anything is written
        from ibtool.routing import hdor_description
        try:
            r = hdor.compute(f, first_sight=False)
        except hdor.NotFamily as e:
            raise InputError(f"--kns-conf: not a complete KNS: {e.reason} (a description is written only from "
                             f"a discovery of the whole fabric)", path=str(fabric_path)) from None
        odd = hdor_description.irregular(f, r)
        if odd:
            raise InputError(f"--kns-conf: the discovery looks incomplete: {odd[0]} (is a cable or switch "
                             f"missing? a description is written only from the whole fabric)", path=str(fabric_path))
        if engine is not None:  # the tables the C engine's; the description checked by the reference's
            engine.load(f)
            return engine.route()
        return r

    def files(f, r) -> list[File]:
        def conf():
            from ibtool.formats import hdor_conf
            from ibtool.routing import hdor_description
            hdor_conf.write(hdor_description.describe(f, r, comment=f"the KNS for the hdor routing engine, written "
                                                                    f"by `ibtool route hdor --kns-conf` from "
                                                                    f"{fabric_path}"), kns_conf)
        sls = (r.path_sls if r.path_sls is not None else _zero_sls(f)) if path_sls_out else None
        def tables():
            if engine is not None:  # in C: the same bytes, 43 M lines on KNS 16^3
                return engine.write_lft(out, hdor.port_guids(f))
            return lft.write_file_engine(r.tables, out, hdor.port_guids(f))
        return [File("--out", out, tables)] + \
            ([File("--dump", dump, lambda: _write_dump(r, f, dump))] if dump else []) + \
            ([File("--sl2vl", sl2vl_out, lambda: sl2vl.write(r.sl2vl or {}, f, sl2vl_out))] if sl2vl_out else []) + \
            ([File("--path-sls", path_sls_out, lambda: pathrecord.write(sls, path_sls_out))] if path_sls_out else []) + \
            ([File("--kns-conf", kns_conf, conf)] if kns_conf else [])

    done = run.route(fabric_path, compute, files, inputs=inputs, allow_partial=allow_partial, say=say, warn=_warn,
                     routed=lambda r: f"writing the tables of {len(r.routers) + len(r.switches)} switches x {r.lids} "
                                      f"LIDs")
    f, r = done.fabric, done.result
    spread = r.spread_summary()
    nsl = len(set((r.path_sls or {0: 0}).values()))
    summary = {"fabric": str(fabric_path), "k": r.k, "n": r.n, "s": r.s, "routers": len(r.routers),
               "switches": len(r.switches), "hcas": len(r.hcas), "lids": r.lids, "lft_file": str(out),
               "dump": str(dump) if dump else None, "spread": spread,
               "baseline": str(baseline_path) if baseline_path else None, "faults": r.faults, "vls": r.vls,
               "sls": nsl, "extra_hops": r.extra_hops,
               "sl2vl_file": str(sl2vl_out) if sl2vl_out else None,
               "path_sls_file": str(path_sls_out) if path_sls_out else None,
               "kns_conf": str(kns_conf) if kns_conf else None,
               "timings": done.timings}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(f"hdor: KNS {r.k}-ary {r.n}-direct {r.s}-indirect: {len(r.routers)} routers, {len(r.switches)} "
               f"switches, {len(r.hcas)} HCAs, {r.lids} LIDs; LFT file {out}" + (f", dump {dump}" if dump else ""))
    if kns_conf:
        click.echo(f"description {kns_conf}: {len(r.routers) + len(r.switches) + len(r.hcas)} devices, "
                   f"{f.num_links} cables" + (", with their LIDs" if f.port_lids else ""))
    if r.faults.get("first_sight"):
        m = r.faults["first_sight"]
        click.echo(f"identified at first sight: {m['routers']} router(s), {m['switches']} indirect switch(es), "
                   f"{m['cables']} router cable(s) missing")
    if r.faults:
        ex = r.extra_hops
        click.echo(f"degraded: {_faults_text(r.faults)}; {r.vls} VLs, {nsl} SLs; {ex.get('detoured', 0)} HCA pairs "
                   f"detoured, extra links max {ex.get('max', 0)} mean {ex.get('mean', 0)}")
    if spread["pairs"]:
        click.echo(f"spread: {spread['pairs']} router-dimension pairs with parallel links, "
                   f"{spread['min_lids']}..{spread['max_lids']} LIDs per port, "
                   f"max imbalance {spread['max_imbalance']}")
    else:
        click.echo("spread: no parallel router-switch links")




def _write_dump(r, f, path) -> None:
    """The coordinates dump: the C engine's own lines (opensm-hdor.dump as the plugin writes it), or
    the reference's."""
    from ibtool.formats import atomic_write
    from ibtool.routing import hdor
    if getattr(r, "dump_lines", None) is None:
        return hdor.write_dump(r, f, path)
    with atomic_write(path) as fh:
        fh.write("\n".join(r.dump_lines) + "\n")


def _zero_sls(f) -> dict:
    """Every HCA-to-HCA pair (source port base LID, destination LID) on SL 0: a complete KNS."""
    from ibtool.fabric import CA
    ca = [(lid, lmc) for (x, p), (lid, lmc) in f.port_lids.items() if f.types[x] == CA and f.peer(x, p)]
    return {(s, d): 0 for s, _ in ca for lid, lmc in ca for d in range(lid, lid + (1 << lmc)) if d != s}


def _faults_text(faults: dict) -> str:
    gone = [x for v in faults.values() for x in v]
    return "failed " + ", ".join(gone[:4]) + (f" and {len(gone) - 4} more" if len(gone) > 4 else "")


# ---------------------------------------------------------------- route fr (paper 004, issue 15)

@group.command(name="fr")
@click.option("--fabric", "fabric_path", required=True, type=InPath(),
              help="The discovered fabric: ibnetdiscover output with LIDs (e.g. RUN/ibnetdiscover.out).")
@click.option("--layout", "layout_path", required=True, type=InPath(),
              help="The plan's layout.json (written by `ibtool topo`): the cable lengths.")
@click.option("--node-name-map", "nnm", type=InPath(),
              help="Plan names by GUID (default: the node-name-map beside --layout).")
@click.option("--out", "-o", required=True, type=OutPath(),
              help="LFT file to write, for `opensm -R file -U FILE` (conf key lfts_file).")
@click.option("--nr", is_flag=True, help="Nearest Routing: fewest hops (lowest latency among them) instead of FR.")
@click.option("--switch-delay", default=60.0, show_default=True, type=click.FloatRange(min=0),
              help="ns a packet spends crossing a switch.")
@click.option("--ns-per-m", default=5.0, show_default=True, type=click.FloatRange(min=0),
              help="Cable delay, ns per metre (optical: 5).")
@click.option("--sl-out", type=OutPath(),
              help="Deadlock-free FR: also assign every route to a layer (SL = VL) so each VL's channel "
                   "dependency graph is acyclic, and write 'src_lid dst_lid sl' lines here (small fabrics).")
@click.option("--max-vls", default=8, show_default=True, type=click.IntRange(1, 15),
              help="Layers --sl-out may use.")
@allow_partial_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def fr_cmd(fabric_path, layout_path, nnm, out, nr, switch_delay, ns_per_m, sl_out, max_vls, allow_partial, as_json):
    """Fastest Routing of paper 004 (Skywalk): lowest-latency paths, cables weighted by length.

    A hop costs the switch delay plus ns/m x the cable's length in layout.json; equal-cost paths
    share the LIDs of a destination port by port. --nr gives Nearest Routing (fewest hops) for
    comparison. Prints the max and average switch-to-switch latency (300 ns injection included).
    The tables are destination-based and carry no SLs: check deadlock freedom with
    `ibtool verify routes` (it prints a channel-dependency cycle when there is one). --sl-out
    writes the SL per (source LID, destination LID) that makes them deadlock-free on that many
    VLs; OpenSM's file engine cannot hand those SLs out (docs/topologies.md says why).

    \b
    Example:
      ibtool topo skywalk --z 4 --c 16 --di 3 --do 2 --out sky
      ibtool sim run sky/topology.net --out run
      ibtool route fr --fabric run/ibnetdiscover.out --layout sky/layout.json --out fr.lft
      ibtool sim run sky/topology.net --engine file --conf lfts_file=$PWD/fr.lft --out run2
    """
    from ibtool.formats import node_name_map
    from ibtool.layout import Layout
    from ibtool.routing import fr, hdor

    nnm = nnm or Plan.at(layout_path).node_name_map  # the node-name-map of the layout's plan
    names = node_name_map.read(nnm) if nnm.is_file() else None
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))
    lay = None

    def inputs(f) -> list[str]:
        nonlocal lay
        lay = Layout.read(layout_path, f)
        return [f"cables from {layout_path}"]

    def compute(f):
        return SimpleNamespace(tables=fr.compute(f, lay.length, switch_delay, ns_per_m, nr=nr),
                               stats=fr.latency_stats(fr.graph(f, lay.length, switch_delay, ns_per_m), nr=nr))

    layers = None

    def sls(f, tables) -> str:
        nonlocal layers
        layer, layers = fr.layers(f, tables, max_vls)
        fr.write_sls(f, layer, layers, sl_out)
        return f"{layers} layers (VLs) make every route deadlock-free; SLs in {sl_out}"

    done = run.route(fabric_path, compute, lambda f, r: [
        File("--out", out, lambda: lft.write_file_engine(r.tables, out, hdor.port_guids(f)))] + (
        [File("--sl-out", sl_out, lambda: sls(f, r.tables))] if sl_out else []),
        outputs={"--out": out, "--sl-out": sl_out}, inputs=inputs, allow_partial=allow_partial, names=names,
        say=say, warn=_warn)
    tables, stats = done.result.tables, done.result.stats
    routing = "NR" if nr else "FR"
    summary = {"fabric": str(fabric_path), "layout": str(layout_path), "routing": routing, "lft_file": str(out),
               "switch_delay_ns": switch_delay, "ns_per_m": ns_per_m, "switches": len(tables.lft),
               "max_lid": tables.max_lid, "latency": stats, "layers": layers,
               "sl_file": str(sl_out) if sl_out else None,
               "timings": {k: done.timings[k] for k in ("read_s", "route_s")}}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(f"{routing}: {len(tables.lft)} switches, LIDs up to {tables.max_lid}; latency max "
               f"{stats['max_ns']:.0f} ns, avg {stats['avg_ns']:.1f} ns at {switch_delay:g} ns switches; "
               f"LFT file {out}")


# ------------------------------------------------------------------ equality (paper 002, issue 14)

def _equality_sets(spec: str | None, plan: Path | None):
    """(N, S_A, S_B) from --spec (full notation) or the plan's fabric.json (`ibtool topo` records
    the spec it built)."""
    from ibtool.topologies.equality import check_sets, eq1, parse_spec

    if bool(spec) == bool(plan):
        raise InputError("give the link sets: --spec 'N14K6[-1,1,3,9](4)' or --plan PLAN_DIR (one of them)")
    if plan:
        p = Plan.at(plan)
        if not p.fabric_json.is_file():
            raise InputError("no such file (a plan of `ibtool topo equality` holds it)", path=str(p.fabric_json))
        try:
            spec = p.summary()["params"]["spec"]
        except (KeyError, TypeError):
            raise InputError("not an Equality plan's fabric.json (no params.spec)", path=str(p.fabric_json)) from None
    sp = parse_spec(spec)
    if sp.sa is None:
        raise InputError(f"--spec {spec!r}: give the link sets (the full notation, e.g. N14K6[-1,1,3,9](4))")
    check_sets(sp.n, sp.sa, sp.sb)
    if eq1(sp.n, sp.sa, sp.sb) != sp.k:
        raise InputError(f"--spec {spec!r}: K{sp.k} disagrees with Eq. 1 ({eq1(sp.n, sp.sa, sp.sb)})")
    return sp.n, sp.sa, sp.sb


@group.command(name="equality")
@click.option("--fabric", "fabric_path", required=True, type=InPath(),
              help="The discovered fabric: ibnetdiscover output with LIDs (e.g. RUN/ibnetdiscover.out).")
@click.option("--out", "-o", required=True, type=OutPath(),
              help="LFT file to write, for OpenSM's file engine (conf key lfts_file).")
@click.option("--spec", help="The link sets in the paper's notation, e.g. 'N14K6[-1,1,3,9](4)'.")
@click.option("--plan", type=InPath(),
              help="Or the plan directory (its fabric.json records the spec `ibtool topo` built).")
@allow_partial_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def equality_cmd(fabric_path, out, spec, plan, allow_partial, as_json):
    """Universal routing table of an Equality network (paper 002, Eq. 2) as file-engine LFTs.

    Numbers the routers from the discovered wiring (not from names), builds the one table of
    shortest first hops from r_0 and applies it to every router by Eq. 2, spreading the LIDs
    over equal shortest paths. All routes use VL0: `ibtool verify routes` says whether that is
    deadlock-free and shows a cycle if not. A fabric that is not the given network exits 1.

    \b
    Example:
      ibtool topo equality --spec 'N14K6[-1,1,3,9](4)' --hcas-per-router 4 --radix 12 --out eq
      ibtool sim run eq/topology.net --out run                  # the plan's engine (nue)
      ibtool route equality --fabric run/ibnetdiscover.out --plan eq --out eq.lft
      ibtool sim run eq/topology.net --engine file --conf lfts_file=$PWD/eq.lft --out run2
      ibtool verify routes --fabric run2/ibnetdiscover.out --lfts run2/dump_fts.out
    """
    from ibtool.routing import equality
    from ibtool.routing.hdor import port_guids

    n, sa, sb = _equality_sets(spec, plan)
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))
    done = run.route(fabric_path, lambda f: equality.compute(f, n, sa, sb),
                     lambda f, r: [File("--out", out, lambda: lft.write_file_engine(r.tables, out, port_guids(f)))],
                     outputs={"--out": out}, allow_partial=allow_partial, say=say, warn=_warn,
                     routed=lambda r: f"numbered {r.n} routers from the wiring; writing {len(r.tables.lft)} tables")
    f, r = done.fabric, done.result
    s = {"fabric": str(fabric_path), "lft_file": str(out), **r.summary(),
         "numbering": {f"r{i}": f.names[node] for i, node in enumerate(r.router)},
         "timings": done.timings}
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    ch = s["shortest_path_choices"]
    click.echo(f"equality: {r.n} routers, K = {r.k}, {r.lids} LIDs; diameter {s['diameter']}, average distance "
               f"{s['average_distance']}; {ch['min']}..{ch['max']} shortest first hops per destination "
               f"(mean {ch['mean']}); LFT file {out}")


@group.command(name="kantc")
@click.option("--fabric", "fabric_path", required=True, type=InPath(),
              help="The discovered fabric: ibnetdiscover output with LIDs (e.g. RUN/ibnetdiscover.out).")
@click.option("--out", "-o", required=True, type=OutPath(),
              help="LFT file to write, for `opensm -R file -U FILE` (conf key lfts_file).")
@click.option("--dump", type=OutPath(),
              help="Also write the recovered labels <G,L,D,C>, one line per node.")
@allow_partial_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def kantc_cmd(fabric_path, out, dump, allow_partial, as_json):
    """Paper 001's routing for KANTC (Algorithm 1) and MiKANTC (Algorithm 2) (routing/kantc.py).

    Labels are recovered from the wiring (never from names or port numbers): cubes, intermediate
    switches, levels, groups and words. In a cube: dimension order to the destination, or to the
    nearest intermediate switch; in the tree: up to the nearest common ancestor, then down. A
    fabric that is not a complete KANTC/MiKANTC exits 1 with the reason.

    \b
    Example:
      ibtool topo kantc --k 3 --n 3 --out kantc
      ibtool sim run kantc/topology.net --out run
      ibtool route kantc --fabric run/ibnetdiscover.out --out kantc.lft --dump kantc.labels
      ibtool sim run kantc/topology.net --engine file --conf lfts_file=$PWD/kantc.lft --out run2
      ibtool verify all run2     # delivery; VL0 deadlock status (a cycle for k >= 4: use updn)
    """
    from ibtool.routing import kantc

    say = (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))
    done = run.route(fabric_path, kantc.compute, lambda f, r: [
        File("--out", out, lambda: lft.write_file_engine(r.tables, out, kantc.port_guids(f)))] + (
        [File("--dump", dump, lambda: kantc.write_dump(r, f, dump))] if dump else []),
        outputs={"--out": out, "--dump": dump}, allow_partial=allow_partial, say=say, warn=_warn)
    f, r = done.fabric, done.result
    family = "MiKANTC" if r.mirrored else "KANTC"
    summary = {"fabric": str(fabric_path), "family": family, "k": r.k, "n": r.n, "cubes": len(r.cubes),
               "switches": len(r.tables.lft), "hcas": sum(1 for t in f.types if t == 1), "lids": r.lids,
               "lft_file": str(out), "dump": str(dump) if dump else None, "timings": done.timings}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(f"kantc: {family}({r.k},{r.n}): {len(r.cubes)} cubes, {summary['switches']} switches, "
               f"{summary['hcas']} HCAs, {r.lids} LIDs; LFT file {out}" + (f", dump {dump}" if dump else ""))
