"""The what-if ranking as a page: the fabric drawn (ibtool.drawing, the family's shape) with every
cable and switch coloured by the class of its failure, the top N in a table in the words of a fix
sheet ("keep a spare for S[0,1]", "inspect C0043 first"), each row opening its details and
pointing at its element on the drawing (and an element on the drawing at its row).

One self-contained file beside results.json (styles, drawing and a few lines of JavaScript inside;
nothing from the network), printable on A4.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from ibtool import __version__, drawing
from ibtool.drawing import Mark
from ibtool.formats import atomic_write
from ibtool.templating import nobreak
from ibtool.whatif.rank import CLASSES, hot_text

TOP = 50  # rows of the table
# by class, most critical first (dark red) to no effect (green); "not measured" grey
COLOURS = ("#67001f", "#9e0142", "#d7191c", "#f46d43", "#fdae61", "#9a9a9a", "#e6c700", "#fee08b", "#a6d96a",
           "#1a9850")

CSS = """
body{font:10.5pt/1.4 "DejaVu Sans",Arial,sans-serif;margin:1.2em;color:#111}
h1{font-size:17pt;margin:0 0 .2em}h2{font-size:13pt;margin:1.1em 0 .4em}
.meta{color:#444;margin-bottom:.8em;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;margin:.3em 0 .8em}
th,td{border:1px solid #aaa;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#eee}td.n{text-align:right;white-space:nowrap}
.id{white-space:nowrap}td.what{overflow-wrap:anywhere}thead{display:table-header-group}
tr.row{cursor:pointer}tr.sel{background:#fff3b0}
.chip{display:inline-block;width:.9em;height:.9em;border-radius:2px;vertical-align:-.1em;margin-right:.3em;
  -webkit-print-color-adjust:exact;print-color-adjust:exact}
figure{margin:0}figure svg.ibd{width:100%;height:auto;max-height:80vh;border:1px solid #ddd}
figcaption{color:#444;font-size:9pt}
svg.ibd text.mark:not([data-mark]){display:none}
table.kv{width:auto;margin:.2em 0}table.kv th{background:none;font-weight:normal;color:#444;white-space:nowrap}
.legend span{display:inline-block;margin-right:1em;white-space:nowrap}
#info{position:sticky;top:0;background:#fffbe6;border:1px solid #cc9;padding:4px 8px;min-height:1.4em;
  white-space:pre-wrap;overflow-wrap:anywhere;font-size:9pt}
details.detail{border:1px solid #ccc;margin:.3em 0;padding:.2em .6em}details.detail[open]{background:#fafafa}
details.detail pre{white-space:pre-wrap;overflow-wrap:anywhere;font-size:8.5pt;margin:.3em 0}
svg.ibd .m.sel,svg.ibd .mdev.sel{stroke-width:7;stroke-opacity:1}
@page{size:A4;margin:12mm}
@media print{body{margin:0;font-size:9pt}.noprint{display:none}
  figure svg.ibd{border:none;max-height:170mm}tr{page-break-inside:avoid}h2{page-break-after:avoid}
  details.detail{page-break-inside:avoid}}
""" + "".join(f"svg.ibd .m.c{i}{{stroke:{c};stroke-width:{3.5 if i < 6 else 2.2}}}"
              f"svg.ibd .mdev.c{i}{{stroke:{c};fill:none;stroke-width:{3 if i < 6 else 2}}}"
              f".chip.c{i}{{background:{c}}}" for i, c in enumerate(COLOURS))

JS = """
(function(){
  var info=document.getElementById("info");
  function pick(ref){
    document.querySelectorAll(".sel").forEach(function(e){e.classList.remove("sel")});
    if(!ref)return;
    var row=document.getElementById(ref);if(row){row.classList.add("sel");}
    document.querySelectorAll('svg.ibd [data-ref="'+ref+'"]').forEach(function(e){e.classList.add("sel")});
    var d=document.getElementById("d"+ref.slice(1));if(d){d.open=true;}
  }
  document.querySelectorAll("tr.row").forEach(function(r){r.addEventListener("click",function(){
    pick(r.id);var d=document.getElementById("d"+r.id.slice(1));if(d){d.scrollIntoView({block:"nearest"});}
  });});
  document.querySelectorAll("svg.ibd [data-ref]").forEach(function(e){e.addEventListener("click",function(ev){
    var t=e.querySelector(":scope > title");if(info&&t){info.textContent=t.textContent;}
    pick(e.getAttribute("data-ref"));ev.stopPropagation();
    var r=document.getElementById(e.getAttribute("data-ref"));if(r){r.scrollIntoView({block:"nearest"});}
  });});
})();
"""


def _fabric(src):
    """What to draw on: the plan with its family's labels, else the fabric read."""
    return src.drawn if src.drawn is not None else src.fabric


def marks(rows: list[dict], top: int) -> list[Mark]:
    """Every failure's element coloured by its class; the top rows labelled with their rank."""
    out = []
    for r in rows:
        k = f"c{CLASSES.index(r['class'])}"
        label = f"#{r['rank']}" if r["rank"] <= top else ""
        text = f"#{r['rank']} {r['id']} ({r['class']}): {r['advice']}"
        ref = f"r{r['rank']}"
        for p in r.get("parts") or []:
            if p["kind"] == "cable":
                (a, pa), (b, pb) = p["ends"]
                out.append(Mark(k, label, text, ends=((a, pa), (b, pb)), ref=ref))
            else:
                out.append(Mark(k, label, text, device=p["id"], ref=ref))
            label = ""
    # the most critical drawn last: on top of the others
    return sorted(out, key=lambda m: -int(m.kind[1:]))


def _cell(v) -> str:
    return "" if v is None else escape(str(v))


def table(rows: list[dict], top: int) -> str:
    body = []
    for r in rows[:top]:
        i = CLASSES.index(r["class"])
        parts = r.get("parts") or []
        lab = "<br>".join(escape(p["labels"][0]) for p in parts if p.get("labels"))  # it names both ends
        where = "<br>".join(escape(" - ".join(p["where"])) for p in parts if p.get("where"))
        e = r.get("extra_hops") or {}
        a2a = f"{r['a2a_max_load']}" + (f" ({r['a2a_increase']:+d})" if r.get("a2a_increase") else "") \
            if "a2a_max_load" in r else ""
        body.append(
            f'<tr class="row" id="r{r["rank"]}" data-class="{escape(r["class"])}"><td class="n">{r["rank"]}</td>'
            f'<td><span class="id">{escape(r["id"])}</span>' + (f'<br><small>{lab}</small>' if lab else "")
            + (f'<br><small>{where}</small>' if where else "") + "</td>"
            f'<td><span class="chip c{i}"></span>{escape(r["class"])}</td>'
            f'<td class="n">{_cell(r.get("pairs_disconnected"))}</td><td class="n">{_cell(r.get("vls_used"))}</td>'
            f'<td class="n">{a2a}</td><td class="n">{_cell(r.get("perm_max_load"))}</td>'
            f'<td class="n">{_cell(e.get("max"))}</td><td class="what">{nobreak(r["advice"])}</td></tr>')
    return ('<table id="ranking"><thead><tr><th>#</th><th>failure</th><th>class</th><th>host pairs cut</th>'
            '<th>VLs</th><th>all-to-all max load</th><th>perm. max load</th><th>extra hops</th><th>what to do</th>'
            '</tr></thead><tbody>' + "".join(body) + "</tbody></table>")


DETAIL = (("down", "fails (as `sim run --fail` names it)"), ("outcome", "outcome"), ("engine", "tables by"),
          ("decline", "declined"), ("error", "not measured"), ("hcas_lost", "HCAs lost with it"),
          ("pairs_lost", "host pairs lost with them"), ("pairs_undelivered", "host pairs still up, cut apart"),
          ("pairs_rerouted", "host pairs rerouted"), ("extra_hops", "extra hops of those"),
          ("vls", "VLs the engine says it needs"), ("vls_used", "VLs the routes use"),
          ("deadlock_free", "deadlock-free (per VL)"), ("dependencies_per_vl", "channel dependencies per VL"),
          ("cycle", "credit loop"), ("a2a_max_load", "all-to-all max link load"), ("a2a_increase", "... increase"),
          ("perm_max_load", "worst permutation's max link load"), ("perm_increase", "... increase"),
          ("routes_per_link", "routes per link"), ("undelivered", "pairs undelivered, by kind"),
          ("entries_changed", "table entries whose route changed"))


def _val(v) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {x}" for k, x in v.items() if x not in (0, None)) or "none"
    if isinstance(v, list):
        return "; ".join(str(x) for x in v)
    return str(v)


def details(rows: list[dict], top: int) -> str:
    out = []
    for r in rows[:top]:
        kv = "".join(f"<tr><th>{escape(t)}</th><td>{escape(_val(r[k]))}</td></tr>" for k, t in DETAIL
                     if k in r and r[k] not in (None, [], {}))
        hot = "".join(f"<li>{escape(hot_text(h))}: all-to-all load {h[1]} (before {h[2]})</li>" for h in r.get("hot_links") or [])
        out.append(f'<details class="detail" id="d{r["rank"]}"><summary>#{r["rank"]} {escape(r["id"])}: '
                   f'{escape(r["advice"])}</summary><table class="kv">{kv}</table>'
                   + (f"<p>links that gain the most all-to-all load:</p><ul>{hot}</ul>" if hot else "")
                   + "</details>")
    return "".join(out)


def legend(res: dict) -> str:
    return '<div class="legend">' + "".join(
        f'<span><i class="chip c{CLASSES.index(c)}"></i>{escape(c)}: {n:,}</span>' for c, n in res["classes"].items()) \
        + "</div>"


def html(res: dict, src, top: int = TOP) -> str:
    rows = res["rows"]
    f = _fabric(src)
    sc = drawing.scene_for(f)
    svg, note = "", "no drawing: a fabric without a shape to draw it in"
    if sc is not None:
        sc.marks = marks(rows, top)
        svg = drawing.render(sc, desc=f"what-if of {res['source']}; made {drawing.made_at()} by ibtool {__version__}")
        missed = sum(1 for m in sc.marks if not m.drawn)
        note = sc.note + (f"; {missed} elements not on the drawing" if missed else "")
    b = res["before"]
    fs = res["failures"]
    hosts = fs["hosts_not_routed"]
    meta = (f"source <code>{escape(res['source'])}</code>" + (f" &middot; plan <code>{escape(res['plan'])}</code>"
                                                               if res.get("plan") else "")
            + f" &middot; engine {escape(res['engine']['name'])}: {escape(res['engine']['how'])}"
            + f" &middot; subnet manager on {escape(res['sm'])}<br>{fs['routed']:,} failures ({escape(fs['how'])})"
            + (f"; not routed: {hosts.get('host_cables', 0):,} host cables and {hosts.get('hcas', 0):,} HCAs, "
               f"each of which disconnects only its host" if hosts else "")
            + f"<br>fault-free: {b.get('hcas', 0):,} HCAs, all-to-all max link load {b.get('a2a_max_load')}, worst of "
              f"{b.get('permutations')} permutations {b.get('perm_max_load')} &middot; made {drawing.made_at()} by "
              f"ibtool {__version__} &middot; <a href=\"results.json\">results.json</a> &middot; "
              f"<a href=\"results.csv\">results.csv</a>")
    fig = (f'<figure>{legend(res)}{svg}<figcaption>{escape(note)}. Every cable and switch in the colour of its '
           f'failure\'s class; the top {min(top, len(rows))} numbered. Click one for its row.</figcaption>'
           f'<div id="info" class="noprint"></div></figure>') if svg else f"<p>{escape(note)}</p>"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>ibtool whatif: '
            f'{escape(res["source"])}</title><style>{CSS}</style></head><body>\n<h1>What if it fails: '
            f'{escape(src.fabric.name or Path(res["source"]).name)}</h1>\n<div class="meta">{meta}</div>\n'
            f'{fig}\n<h2>The ranking</h2>{table(rows, top)}\n'
            f'<h2>Details</h2>{details(rows, top)}\n<script>{JS}</script>\n</body></html>\n')


def write(out: Path, res: dict, src, path: Path | None = None, top: int = TOP) -> Path:
    path = Path(path) if path else Path(out) / "whatif.html"
    with atomic_write(path) as fh:
        fh.write(html(res, src, top))
    return path
