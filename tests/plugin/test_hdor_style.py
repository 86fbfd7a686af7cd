"""The hdor engine as upstream OpenSM would review it (issue 38): upstream's coding style (Linux
kernel style, doc/opensm-coding-style.txt) checked by Debian's clang-format with the kernel-style
configuration beside the sources (`make -C opensm_plugin style`: zero findings), units a reviewer
reads in one sitting (none over 1,500 lines, no function over 150), and a core that knows no
OpenSM type (only the adapter, osm_ucast_hdor.c, includes OpenSM's headers)."""

from __future__ import annotations

import re
import shutil
import subprocess

from hdor_walk import ENGINE_FILES, PLUGIN

CORE = [f for f in ENGINE_FILES if f.name != "osm_ucast_hdor.c"] + [PLUGIN / "hdor_offline.c",
                                                                   PLUGIN / "hdor_offline.h"]


def test_style_check_has_no_findings():
    p = subprocess.run(["make", "-s", "-C", str(PLUGIN), "style"], capture_output=True, text=True)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    assert "warning" not in (p.stdout + p.stderr)


def test_style_check_finds_a_misformatted_line(tmp_path):
    """The check can fail: a copy with one line in another style is a finding, named by file."""
    for f in [PLUGIN / ".clang-format", *ENGINE_FILES]:
        shutil.copy2(f, tmp_path / f.name)
    src = tmp_path / "osm_hdor_mcast.c"
    src.write_text(src.read_text().replace("\tif (p == 0)\n\t\treturn -1;", "    if(p==0) return -1;", 1))
    p = subprocess.run(["clang-format", "--style=file", "--dry-run", "-Werror", str(src)], capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode != 0 and "osm_hdor_mcast.c" in p.stderr


def functions(text: str):
    """(name, lines) of every function definition: its signature line at column 0, its body from
    the `{` alone at column 0 to the `}` alone at column 0."""
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        if ln == "{" and i:
            j = i - 1
            while j > 0 and not re.match(r"^[A-Za-z_].*\(", lines[j]):
                j -= 1
            name = re.search(r"(\w+)\s*\(", lines[j]).group(1)
            end = lines.index("}", i)
            yield name, end - j + 1


def test_units_and_functions_a_reviewer_can_read():
    sizes = {f.name: len(f.read_text().splitlines()) for f in [*ENGINE_FILES, PLUGIN / "hdor_offline.c"]}
    assert max(sizes.values()) <= 1500, sizes
    long = [(f.name, name, n) for f in ENGINE_FILES for name, n in functions(f.read_text()) if n > 150]
    assert long == [], long
    # the parser sees the functions (a unit has dozens)
    assert len(list(functions((PLUGIN / "osm_hdor_detour.c").read_text()))) > 20


def test_the_core_knows_no_opensm_type():
    for f in CORE:
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", f.read_text(), flags=re.S)  # code, not comments
        assert "#include <opensm" not in text and "#include <complib" not in text, f.name
        assert not re.search(r"\b(osm_\w+_t|ib_net\d+_t|cl_qmap\w*)\b", text), f.name
    assert "#include <opensm/osm_opensm.h>" in (PLUGIN / "osm_ucast_hdor.c").read_text()
