"""The packages (docs/plugin.md "Packages"): the Debian package opensm-hdor (`make -C opensm_plugin
deb`) installed with dpkg, loaded by OpenSM from the system's paths and removed without touching
OpenSM's own files; the Python sdist and wheel (`python -m build`, `twine check`) installed into a
fresh venv and run outside the repository."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from hdor_walk import ROOT, check_routes, run_opensm
from ibtool.formats import ibnetdiscover
from ibtool.topologies.kns import kns
from support import ibtool

pytestmark = [pytest.mark.slow]

VENV_BIN = Path(sys.executable).parent


def dpkg(*args, check=True) -> subprocess.CompletedProcess:
    """dpkg, waiting while another dpkg or apt holds its lock (a shared machine)."""
    deadline = time.monotonic() + 120
    while True:
        p = subprocess.run(["dpkg", *args], capture_output=True, text=True)
        if p.returncode == 0 or "lock" not in p.stderr or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert not check or p.returncode == 0, p.stdout + p.stderr
    return p


def package_files(pkg: str) -> dict[str, str]:
    """Every regular file of an installed package, with its SHA-256."""
    out = {}
    for line in dpkg("-L", pkg).stdout.splitlines():
        p = Path(line)
        if p.is_file() and not p.is_symlink():
            out[line] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.mark.ibsim
def test_deb_installs_the_plugin_where_opensm_loads_it(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("dpkg -i needs root (as `make setup` does)")
    r = ibtool("plugin", "build", "--deb", check=0, timeout=900)  # make -C opensm_plugin deb
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
    deb = ROOT / "build" / "deb" / f"opensm-hdor_{version}_{arch}.deb"
    assert f"built {deb} (install: dpkg -i {deb.name})" in r.stdout, r.stdout
    field = lambda f: subprocess.run(["dpkg-deb", "-f", str(deb), f], capture_output=True,  # noqa: E731
                                     text=True).stdout.strip()
    osm = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "opensm"], capture_output=True,
                         text=True).stdout.split("-")[0]
    assert field("Package") == "opensm-hdor" and field("Version") == version
    assert f"opensm (>= {osm}), opensm (<< {osm}+~)" in field("Depends")
    multiarch = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True,
                               text=True).stdout.strip()
    libdir = Path("/usr/lib") / multiarch
    ours = [libdir / "libhdor.so", libdir / "libhdorcore.so"]
    listed = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True).stdout
    for f in (*ours, Path("/usr/share/doc/opensm-hdor/examples/opensm.conf"),
              Path("/usr/share/doc/opensm-hdor/plugin.md.gz"), Path("/usr/include/hdor/hdor_offline.h")):
        assert f".{f}\n" in listed, f
    assert "/etc/" not in listed  # OpenSM's configuration is the admin's: the package ships an example

    before = package_files("opensm")
    # a library left by `ibtool plugin install` is put back afterwards (dpkg -r removes the package's)
    saved = {f: f.read_bytes() for f in ours if f.exists()}
    try:
        dpkg("-i", str(deb))
        assert dpkg("-S", str(libdir / "libhdor.so")).stdout.startswith("opensm-hdor:")
        # the offline core where hdor_c looks when no source tree is beside the package
        found = subprocess.run([sys.executable, "-c", "import ctypes.util as u; print(u.find_library('hdorcore'))"],
                               capture_output=True, text=True).stdout.strip()
        assert found == "libhdorcore.so", found
        # and the plugin where ibtool's runs look when it has no checkout beside it (a wheel)
        from ibtool.sim import opensm
        assert opensm.plugin_dir(tmp_path / "no-checkout") == libdir
        # OpenSM from the system's paths: /usr/sbin/opensm, the plugin from the loader's default
        # directory (no LD_LIBRARY_PATH), the packaged example configuration
        conf = Path("/usr/share/doc/opensm-hdor/examples/opensm.conf").read_text()
        f = kns(k=3, n=2, hcas_per_router=1, radix=8)
        net = tmp_path / "kns.net"
        ibnetdiscover.write(f, net)
        rc, log, _ = run_opensm(net, tmp_path / "run", "/usr/sbin/opensm", conf, env={"LD_LIBRARY_PATH": ""})
        assert rc == 0, log[-3000:]
        assert "hdor: registered external routing engine 'hdor'" in log
        assert "hdor tables configured on all switches" in log and "hdor: declined" not in log
        assert check_routes(tmp_path / "run")["hca_paths"] == 9 * 8
    finally:
        dpkg("-r", "opensm-hdor", check=False)
        for f, data in saved.items():
            f.write_bytes(data)
    status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "opensm-hdor"], capture_output=True, text=True)
    assert "installed" not in status.stdout.replace("not-installed", ""), status.stdout
    for f in ours:
        assert f.exists() == (f in saved), f
    assert package_files("opensm") == before
    assert dpkg("--verify", "opensm", check=False).stdout == ""


def test_wheel_and_sdist_install_into_a_fresh_venv(tmp_path):
    dist = tmp_path / "dist"
    p = subprocess.run([str(VENV_BIN / "python"), "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    whl = dist / f"ibtool-{project['version']}-py3-none-any.whl"
    sdist = dist / f"ibtool-{project['version']}.tar.gz"
    assert whl.is_file() and sdist.is_file(), sorted(dist.iterdir())
    p = subprocess.run([str(VENV_BIN / "twine"), "check", "--strict", str(whl), str(sdist)], capture_output=True,
                       text=True)
    assert p.returncode == 0 and p.stdout.count("PASSED") == 2, p.stdout + p.stderr

    # the templates and the dependencies are in the wheel
    names = set(zipfile.ZipFile(whl).namelist())
    templates = sorted(str(x.relative_to(ROOT)) for x in (ROOT / "templates").rglob("*") if x.is_file())
    assert templates and all(f"ibtool/{t}" in names for t in templates), sorted(n for n in names if "templ" in n)
    meta = zipfile.ZipFile(whl).read(f"ibtool-{project['version']}.dist-info/METADATA").decode()
    requires = [ln.split(": ", 1)[1] for ln in meta.splitlines() if ln.startswith("Requires-Dist: ")]
    assert [r for r in requires if "extra ==" not in r] == project["dependencies"]

    # a fresh venv with only the wheel installed (no index: nothing is downloaded); the
    # dependencies it declares, checked above, are the project venv's, appended to its path by a
    # .pth file after the wheel is installed
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    p = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--no-deps", str(whl)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    site = next((venv / "lib").glob("python3*/site-packages"))
    deps = next((VENV_BIN.parent / "lib").glob("python3*/site-packages"))
    (site / "ibtool-test-deps.pth").write_text(f"{deps}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    work = tmp_path / "elsewhere"
    work.mkdir()
    run = lambda *a: subprocess.run([str(venv / "bin" / "ibtool"), *map(str, a)], cwd=work, env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=300)
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import ibtool.templating as t; print(t.TEMPLATES)"],
                           cwd=work, env=env, capture_output=True, text=True)
    assert where.stdout.strip() == str(site / "ibtool" / "templates"), where.stdout + where.stderr
    p = run("topo", "kns", "--k", 3, "--n", 2, "--radix", 8, "--out", "plan")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "routing_engine hdor,nue" in (work / "plan" / "opensm.conf").read_text()  # rendered from its template
    p = run("verify", "topology", "--plan", "plan/topology.net", "--discovered", "plan/topology.net")
    assert p.returncode == 0 and p.stdout.startswith("verify: PASS"), p.stdout + p.stderr
