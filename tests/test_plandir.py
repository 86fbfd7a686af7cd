"""A plan directory's files are named in one module (issue 37): every file name of
`ibtool.plandir` is spelled as a path in plandir.py and in no other module of ibtool/, so a
command finds a plan's files through `ibtool.plan.Plan` (or, below it, through plandir's names).

"Spelled as a path" is a string of the code that is the name, or a path (no blanks) with the name
as a part between slashes ("cabling/cables.csv", the "/topology.net" of f"{d}/topology.net").
Not counted: docstrings and help texts (prose, which mentions the files for users), absolute
paths (a system's file: /etc/opensm/opensm.conf), and a plain word (`cabling`, also a command
group's and a template folder's name) unless it is joined to a path (`d / "cabling"`,
`.with_name(...)`, `Path(...)`), kept in a name (`CABLING = "cabling"`) or is a path with another
plan file ("cabling/cables.csv").
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from ibtool import plandir
from ibtool.plan import Plan

ROOT = Path(__file__).resolve().parents[1]


def _docstrings(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _path_operands(tree) -> set[int]:
    """Strings joined to a path (`x / "s"`, `"s" / x`, `p.with_name("s")`, `Path("s")`,
    `p.joinpath("s")`) or kept in a name for one (`CABLING = "s"`)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            out.update(id(x) for x in (node.left, node.right) if isinstance(x, ast.Constant))
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in ("with_name", "joinpath", "Path"):
                out.update(id(a) for a in node.args if isinstance(a, ast.Constant))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
            out.add(id(node.value))  # NAME = "...": a name kept for later paths
    return out


def _in_fstrings(tree) -> set[int]:
    return {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}


def spellings(package: Path) -> dict[str, set[str]]:
    """plan file name -> the modules of `package` that spell it as a path."""
    found: dict[str, set[str]] = {name: set() for name in plandir.FILES}
    for py in sorted(package.rglob("*.py")):
        tree = ast.parse(py.read_text(), str(py))
        skip, joined, pieces = _docstrings(tree), _path_operands(tree), _in_fstrings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in skip:
                continue
            text = node.value
            if any(c.isspace() for c in text) or (text.startswith("/") and id(node) not in pieces):
                continue
            parts = text.split("/")
            for name in plandir.FILES:
                if name not in parts:
                    continue
                word = not any(c in name for c in ".-")
                if not word or id(node) in joined or any(p in plandir.FILES for p in parts if p != name):
                    found[name].add(str(py.relative_to(package.parent)))
    return found


def test_every_plan_file_name_is_spelled_in_plandir_alone():
    found = spellings(ROOT / "ibtool")
    assert found == {name: {"ibtool/plandir.py"} for name in plandir.FILES}


def test_a_second_spelling_is_found(tmp_path):
    """The check can fail: a copy of the package where three modules spell plan files again, in
    the three ways the idiom was written (issue 37)."""
    shutil.copytree(ROOT / "ibtool", tmp_path / "ibtool", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "ibtool" / "cli" / "verify.py", "a") as fh:
        fh.write('\n\ndef _net(x):\n    return x / "topology.net" if x.is_dir() else x\n')
    with open(tmp_path / "ibtool" / "verify" / "run.py", "a") as fh:
        fh.write('\n\ndef _conf(net):\n    return net.with_name("opensm.conf")\n')
    with open(tmp_path / "ibtool" / "cli" / "cabling.py", "a") as fh:
        fh.write('\n\ndef _pkg(d):\n    return d / "cabling"\n')
    found = spellings(tmp_path / "ibtool")
    assert found[plandir.NET] == {"ibtool/plandir.py", "ibtool/cli/verify.py"}
    assert found[plandir.OPENSM_CONF] == {"ibtool/plandir.py", "ibtool/verify/run.py"}
    assert found[plandir.CABLING] == {"ibtool/plandir.py", "ibtool/cli/cabling.py"}


def test_a_plan_is_a_directory_or_its_net_file(tmp_path):
    d = tmp_path / "cellia"
    d.mkdir()
    (d / plandir.NET).write_text("")
    by_dir, by_net = Plan.at(d), Plan.at(d / plandir.NET)
    assert by_dir.net == by_net.net == d / plandir.NET and by_dir.dir == by_net.dir == d
    assert by_dir.opensm_conf == d / plandir.OPENSM_CONF and by_dir.cabling == d / plandir.CABLING
    assert by_dir.discovered  # no fabric.json: what built it is unknown
    (d / plandir.FABRIC_JSON).write_text("{}")
    assert not by_dir.discovered and by_dir.summary() == {}
    assert by_dir.cable_list() is None
    (d / plandir.CABLING).mkdir()
    (d / plandir.CABLING / plandir.CABLES_CSV).write_text("")
    assert by_net.cable_list() == d / plandir.CABLING / plandir.CABLES_CSV
