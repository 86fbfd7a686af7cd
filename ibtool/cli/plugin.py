"""`ibtool plugin`: build and install the hdor routing engine for Debian's stock OpenSM."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
from pathlib import Path

import click

from ibtool import children, plandir
from ibtool.cli import InPath, OutPath
from ibtool.errors import EnvironmentProblem, InputError
from ibtool.plan import Plan
from ibtool.sim import opensm, opensm_options

PLUGIN_DIR = opensm.PLUGIN_DIR
LIB = "libhdor.so"
DEFAULT_CONF = Path("/etc/opensm/opensm.conf")
LDCONF = Path("/etc/ld.so.conf.d/ibtool-hdor.conf")


def _make(target: str | None = None, quiet: bool = False) -> None:
    if not shutil.which("make"):
        raise EnvironmentProblem("make not found; install build-essential (make setup does)")
    if not Path("/usr/include/infiniband/opensm/osm_opensm.h").exists():
        raise EnvironmentProblem("OpenSM headers not found; install the Debian packages libopensm-dev "
                                 "and libibumad-dev (make setup does)")
    argv = ["make", "-C", str(PLUGIN_DIR)] + ([target] if target else [])
    p = children.run(argv, capture_output=quiet, text=True)
    if p.returncode != 0:
        tail = ((p.stdout or "") + (p.stderr or "")).strip().splitlines()[-15:] if quiet else []
        raise EnvironmentProblem(f"{' '.join(argv)} failed (exit {p.returncode})" +
                                 ("\n" + "\n".join(tail) if tail else ""))


def multiarch_libdir() -> Path:
    """Where Debian's dynamic loader looks by default (/usr/lib/<multiarch triplet>)."""
    for argv in (["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], ["gcc", "-print-multiarch"]):
        try:
            out = children.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out:
            return Path("/usr/lib") / out
    return Path("/usr/lib/x86_64-linux-gnu")


def _root(destdir: Path | None, p: Path) -> Path:
    return destdir / p.relative_to("/") if destdir else p


def _read(path: Path, what: str) -> bytes | None:
    """The bytes of `path`, None when it does not exist; anything else unreadable is one line."""
    if not path.exists():
        return None
    if not path.is_file():
        raise InputError(f"{what} {path}: not a regular file")
    try:
        return path.read_bytes()
    except OSError as e:
        raise EnvironmentProblem(f"cannot read {path}: {e.strerror}") from None


def _write(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace `path` atomically with `data` (file mode `mode`), creating its directory; a path that
    is not a regular file (a device, a FIFO) is refused as every output of ibtool is."""
    from ibtool.formats import atomic_write
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb", perm=mode) as fh:
            fh.write(data)
    except OSError as e:
        hint = " (run as root, or use --prefix/--destdir)" if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) else ""
        raise EnvironmentProblem(f"cannot write {path}: {e.strerror}{hint}") from None


def update_conf(text: str, engines: list[str], plugin: str = "hdor",
                options: list[tuple[str, str]] = ()) -> tuple[str, list[str]]:
    """Set routing_engine (and `options`, e.g. a plan's) and add `plugin` to event_plugin_name in
    an opensm.conf text.

    Lines are read as OpenSM reads them (opensm_options.parse_line: '#' starts a comment, one pair
    of quotes dropped). The first active line of each key is rewritten in place, its comment kept;
    later active duplicates (OpenSM would take the last one) are commented out. Missing keys are
    appended. Returns (text, changes)."""
    lines = text.splitlines()
    changes: list[str] = []
    want = {"routing_engine": ",".join(engines), **dict(options)}
    seen: dict[str, int] = {}
    for i, ln in enumerate(lines):
        kv = opensm_options.parse_line(ln)
        if not kv or (kv[0] not in want and kv[0] != "event_plugin_name"):
            continue
        key, val = kv
        if key in seen:
            lines[i] = f"# {ln}  # superseded by line {seen[key] + 1} (ibtool plugin install)"
            changes.append(f"commented out duplicate '{ln.strip()}' (line {i + 1})")
            continue
        seen[key] = i
        if key == "event_plugin_name":
            names = [x for x in re.split(r"[,\s]+", val) if x and x != "(null)"]
            if plugin in names:
                continue
            new = " ".join(names + [plugin])  # OpenSM splits later plugin names on spaces only
        else:
            new = want[key]
            if val == new:
                continue
        lines[i] = f"{key} {new}" + (f"  {ln[ln.index('#'):]}" if "#" in ln else "")
        changes.append(f"{key}: '{val}' -> '{new}' (line {i + 1})")
    add = []
    if "event_plugin_name" not in seen:
        add.append(f"event_plugin_name {plugin}")
    add += [f"{k} {v}" for k, v in want.items() if k not in seen]
    if add:
        if lines and lines[-1].strip():
            lines.append("")
        lines.append("# hdor routing engine (ibtool plugin install): OpenSM tries the engines in order")
        lines.extend(add)
        changes.extend(f"added '{a}'" for a in add)
    return "\n".join(lines) + "\n", changes


def _small_file(path: Path, data: bytes, what: str, says: str, pre: str, dry_run: bool) -> None:
    """Write a small file of the install unless it already holds `data`; say which."""
    if _read(path, what) == data:
        click.echo(f"unchanged {path}")
        return
    click.echo(f"{pre}write {path}: {says}")
    if not dry_run:
        _write(path, data)


def _updn_roots(kc, path) -> bytes:
    """The roots of updn after hdor (as `ibtool topo kns` names them): the router at [0,...,0] and
    the indirect switch on its lowest switch port, next to each other."""
    by = kc.by_guid()
    r0 = next((x for x in kc.nodes if x.role == "router" and not any(x.coords)), None)
    if r0 is None:
        raise InputError("--kns-conf: no router at [0,...,0] for updn's roots", path=str(path))
    ends = sorted((pa, b) for a, pa, b, pb in kc.links if a == r0.guid and by[b].role == "switch")
    ends += sorted((pb, a) for a, pa, b, pb in kc.links if b == r0.guid and by[a].role == "switch")
    if not ends:
        raise InputError(f"--kns-conf: router {r0.guid:#018x} has no indirect switch for updn's roots", path=str(path))
    return f"0x{r0.guid:016x}\n0x{min(ends)[1]:016x}\n".encode()


def _planned_guids(kc) -> bool:
    """Every device of the description has a GUID as `ibtool topo` plans them (fabric.default_guid
    of its index): a plan's placeholders, which no real device has."""
    from ibtool.fabric import default_guid

    planned = {default_guid(i) for i in range(len(kc.nodes))}
    return bool(kc.nodes) and all(x.guid in planned for x in kc.nodes)


def _placeholder_lines(data: bytes | None) -> bool:
    """A GUID file (one GUID a line) whose GUIDs all look planned: the OUI and small node numbers of
    fabric.default_guid (a real device's low 40 bits are far from small)."""
    from ibtool.fabric import GUID_BASE

    guids = []
    for ln in (data or b"").decode(errors="replace").splitlines():
        word = ln.split("#", 1)[0].strip()
        if word:
            try:
                guids.append(int(word, 16))
            except ValueError:
                return False
    return bool(guids) and all(g >> 40 == GUID_BASE >> 40 and g & 0xF == 0 and g & (2**40 - 1) < 1 << 28
                               for g in guids)


def _refuse_planned(what: str, plan: Path | None) -> None:
    again = f"--plan {plan} " if plan else ""
    raise InputError(
        f"{what} describes the planned fabric: its GUIDs are the plan's placeholders, which no real device has, "
        "so hdor would decline the real fabric at every pass (HD20: not the KNS of the description) and OpenSM "
        "fall back to the next engine. Describe the real fabric, from a discovery with every cable in place:\n"
        "  ibnetdiscover > fabric.out\n"
        "  ibtool route hdor --fabric fabric.out --out hdor.lft --kns-conf hdor.conf\n"
        f"  ibtool plugin install {again}--kns-conf hdor.conf\n"
        "(--planned-guids installs it as it is: for a fabric that has the plan's GUIDs, such as ibsim "
        "emulating the plan)")


def _plan_files(extra: list[tuple[str, str]], plan: Path | None, cdir: Path) -> list[tuple[str, Path, Path]]:
    """The files the plan's options name inside the plan (root_guid_file ...): (key, the plan's
    file, where it goes: beside the conf, under its own name)."""
    if plan is None:
        return []
    home = (plan if plan.is_dir() else plan.parent).resolve()
    out = []
    for key, val in extra:
        if key in opensm_options.FILE_KEYS and val not in ("", "(null)"):
            src = Path(val)
            if src.is_file() and src.resolve().parent == home:
                out.append((key, src, cdir / src.name))
    return out


def _set(options: list[tuple[str, str]], key: str, val: str) -> list[tuple[str, str]]:
    """`options` with `key` set to `val` (replacing any value it had)."""
    return [o for o in options if o[0] != key] + [(key, val)]


def plan_options(plan: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """A plan's routing_engine and its other opensm.conf options, each checked, the files it names
    made absolute against the plan (it names them relative to itself, so it can be moved)."""
    conf = Plan.at(plan).opensm_conf
    text = _read(conf, "--plan")
    if text is None:
        raise InputError(f"--plan {plan}: no opensm.conf (a plan directory of `ibtool topo`?)")
    try:
        text = opensm_options.resolve_files(text.decode(), conf.resolve().parent)
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text (not an opensm.conf?)", path=str(conf)) from None
    opensm_options.check_text(text, str(conf))
    options = opensm_options.read(text)  # as OpenSM reads it: a repeated key's last line
    options.pop("event_plugin_name", None)
    if "routing_engine" not in options:
        raise InputError("no routing_engine line (not a plan's opensm.conf?)", path=str(conf))
    return opensm.parse_engines(options.pop("routing_engine"), f"{conf}: routing_engine"), list(options.items())


@click.group(name="plugin")
def group():
    """Build and install the hdor OpenSM routing engine (libhdor.so, an OpenSM event plugin).

    \b
    ibtool plugin build                       # make -C opensm_plugin -> opensm_plugin/libhdor.so
    ibtool plugin install --dry-run           # show what would change
    ibtool plugin install --plan cellia --kns-conf hdor.conf
                                              # /usr/lib/<triplet>/libhdor.so + /etc/opensm/opensm.conf
                                              # (the plan's options) + /etc/opensm/hdor.conf (the real
                                              # fabric's: ibtool route hdor --kns-conf on a discovery)
    systemctl restart opensm                  # Debian's unit reads /etc/opensm/opensm.conf
    """


@group.command(name="build")
@click.option("--intree", is_flag=True,
              help="Also build OpenSM 3.3.23 with hdor built in (Debian's source package with the patch series "
                   "opensm_plugin/intree/0*.patch applied by git am; about 3 minutes on 2 cores) -> "
                   "build/opensm-intree/opensm.")
@click.option("--deb", is_flag=True,
              help="Also build the Debian package opensm-hdor (the plugin where OpenSM loads it, the offline "
                   "core, the docs, an example opensm.conf) -> build/deb/opensm-hdor_<version>_<arch>.deb.")
def build_cmd(intree, deb):
    """Build opensm_plugin/libhdor.so against Debian's libopensm-dev (and libhdorcore.so, the offline core)."""
    _make()
    so = PLUGIN_DIR / LIB
    if not so.is_file():
        raise EnvironmentProblem(f"make succeeded but {so} is missing")
    click.echo(f"built {so} ({so.stat().st_size} bytes)")
    if intree:
        _make("intree")
    if deb:
        _make("deb")
        built = sorted((PLUGIN_DIR.parent / "build" / "deb").glob("opensm-hdor_*.deb"),
                       key=lambda p: p.stat().st_mtime)
        if not built:
            raise EnvironmentProblem("make deb succeeded but build/deb has no opensm-hdor package")
        click.echo(f"built {built[-1]} (install: dpkg -i {built[-1].name})")


@group.command(name="install")
@click.option("--prefix", type=OutPath(directory=True),
              help="Install the library into PREFIX/lib and register PREFIX/lib with the loader "
                   f"({LDCONF} + ldconfig) instead of the multiarch libdir.")
@click.option("--conf", type=OutPath(), default=DEFAULT_CONF, show_default=True,
              help="opensm.conf to create or update (Debian's opensm.service reads /etc/opensm/opensm.conf).")
@click.option("--engines", default=None,
              help="routing_engine list written into the conf (OpenSM tries them in order; after hdor an engine "
                   "without credit loops on a KNS: nue, or updn with its roots taken from the description; "
                   "docs/plugin.md \"The fallback\"). Default: the --plan's, else hdor,nue.")
@click.option("--plan", type=InPath(),
              help="A KNS plan directory (`ibtool topo kns`): its opensm.conf options (qos TRUE, and the "
                   "files any engine reads, made absolute: a plan names them relative to itself) go into "
                   "the conf too, its routing_engine unless --engines is given, and its hdor.conf unless "
                   "--kns-conf is given.")
@click.option("--destdir", type=OutPath(directory=True),
              help="Stage every file under this root (packaging); ldconfig is not run.")
@click.option("--kns-conf", "kns_conf", type=InPath(),
              help="A KNS description (hdor.conf, from `ibtool route hdor --kns-conf` or the plan of `ibtool topo "
                   "kns`) to install beside --conf, where hdor reads it.")
@click.option("--planned-guids", is_flag=True,
              help="Install a description whose GUIDs are a plan's placeholders (`ibtool topo`'s), for a fabric "
                   "that has them (ibsim emulating the plan); without it such a description is refused: a real "
                   "fabric's comes from `ibtool route hdor --kns-conf` on a discovery.")
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
def install_cmd(prefix, conf, engines, plan, destdir, kns_conf, planned_guids, dry_run):
    """Install libhdor.so where Debian's opensm finds it and enable it in opensm.conf.

    OpenSM dlopens lib<name>.so by bare name, so the library must be on the loader's default path
    (or in a directory registered with ldconfig); `event_plugin_name` exists only in the config file.
    With --kns-conf (or a --plan's hdor.conf) the KNS description goes beside the conf
    (/etc/opensm/hdor.conf): hdor then knows the KNS at its first sweep even when cables or
    switches are missing (docs/plugin.md).

    \b
    Examples:
      ibtool plugin install --dry-run                       # show what would change
      ibtool plugin install --plan cellia --kns-conf hdor.conf   # the plan's engines and options,
                                                                  # the real fabric's description
      ibtool plugin install --engines hdor,updn --kns-conf hdor.conf   # a description of the real fabric
      ibtool plugin install --destdir pkg --prefix /opt/ibtool   # staged for a package
    """
    plan_engines, extra = plan_options(plan) if plan else (None, [])
    names = opensm.parse_engines(engines, "--engines") if engines is not None else plan_engines or ["hdor", "nue"]
    from_plan = False
    if kns_conf is None and plan is not None:  # the plan's description (`ibtool topo kns` writes one)
        own = Plan.at(plan).hdor_conf
        kns_conf = own if own.is_file() else None
        from_plan = kns_conf is not None
    if "hdor" not in names:
        raise InputError(f"--engines {','.join(names)!r} does not list hdor" if engines is not None or not plan
                         else f"--plan {plan}: its routing_engine {','.join(names)} does not list hdor "
                              "(give --engines)")
    if names[-1] == "hdor":
        click.echo("note: hdor is last in routing_engine; a fabric hdor declines then gets OpenSM's "
                   "default minhop", err=True)

    src = PLUGIN_DIR / LIB
    if not dry_run:
        _make(quiet=True)  # no-op when up to date
    elif not src.is_file():
        click.echo(f"would build {src} (make -C {PLUGIN_DIR})")
    pre = "would " if dry_run else ""
    if destdir is not None:
        destdir = destdir.resolve()
    libdir = (prefix.resolve() / "lib") if prefix else multiarch_libdir()
    dst = _root(destdir, libdir / LIB)

    # read everything first: a conf that cannot be updated stops the install before any change
    cpath = _root(destdir, conf.resolve() if not conf.is_absolute() else conf)
    old_bytes = _read(cpath, "--conf")
    try:
        old = old_bytes.decode() if old_bytes is not None else None
    except UnicodeDecodeError:
        raise InputError(f"--conf {cpath}: not a text file (not UTF-8); is it an opensm.conf?") from None
    desc = roots = None
    if kns_conf is not None:  # a description hdor would refuse stops the install here, with its line
        from ibtool.formats import hdor_conf
        kc = hdor_conf.read(kns_conf)
        if not planned_guids and _planned_guids(kc):
            _refuse_planned(f"--plan {plan}: its hdor.conf" if from_plan else f"--kns-conf {kns_conf}", plan)
        cdir = (conf.resolve() if not conf.is_absolute() else conf).parent
        desc = (_root(destdir, cdir / plandir.HDOR_CONF), _read(kns_conf, "--kns-conf"), kc)
        # OpenSM programs hdor's SL2VL tables of a degraded KNS only with QoS on
        extra = _set(extra, "qos", "TRUE")
        if "updn" in names:  # updn finds no roots on a KNS by itself: from the description, beside it
            roots = (_root(destdir, cdir / "hdor-root-guids"), _updn_roots(kc, kns_conf))
            extra = _set(extra, "root_guid_file", str(cdir / "hdor-root-guids"))
    # the files the plan names (its root_guid_file ...) go beside the conf, which names them there
    beside = _plan_files(extra, plan, (conf.resolve() if not conf.is_absolute() else conf).parent)
    for key, _, dst_file in beside:
        extra = _set(extra, key, str(dst_file))
    new, changes = update_conf(old or "", names, options=extra)

    # 1. the library
    data = _read(src, "library")
    if data is not None and _read(dst, "installed library") == data:
        click.echo(f"unchanged {dst}")
    else:
        click.echo(f"{pre}install {dst} (from {src}{f', {len(data)} bytes' if data else ''})")
        if not dry_run:
            if data is None:
                raise EnvironmentProblem(f"make succeeded but {src} is missing")
            _write(dst, data)

    # 2. loader path for --prefix
    if prefix:
        _small_file(_root(destdir, LDCONF), f"{libdir}\n".encode(), "loader config", str(libdir), pre, dry_run)
    if destdir is None:
        click.echo(f"{pre}run ldconfig")
        if not dry_run:
            ldc = shutil.which("ldconfig", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
            if not ldc or children.run([ldc]).returncode != 0:
                raise EnvironmentProblem("ldconfig failed")

    # 3. opensm.conf
    if old is None:
        click.echo(f"{pre}create {cpath}:")
    elif not changes:
        click.echo(f"unchanged {cpath} (already has event_plugin_name hdor, routing_engine {','.join(names)})")
    else:
        click.echo(f"{pre}update {cpath}:")
    for c in changes:
        click.echo(f"  {c}")
    if (old is None or changes) and not dry_run:
        mode = 0o644
        if old is not None:  # keep the file's permissions (an opensm.conf may hold keys)
            mode = cpath.stat().st_mode & 0o7777
            backup = cpath.with_name(cpath.name + ".ibtool-bak")
            if not backup.exists():
                _write(backup, old_bytes, mode)
                click.echo(f"  saved the previous file as {backup}")
        _write(cpath, new.encode(), mode)
    # 4. the KNS description, beside the conf, updn's roots and the plan's files
    for key, src_file, dst_file in beside:
        data = _read(src_file, key)
        _small_file(_root(destdir, dst_file), data, key, f"from {src_file}", pre, dry_run)
        if _placeholder_lines(data):
            click.echo(f"note: {key} {dst_file} lists the plan's placeholder GUIDs; write the real devices' "
                       "GUIDs into it", err=True)
    if roots is not None:
        rpath, data = roots
        _small_file(rpath, data, "root GUID file", f"updn's roots {', '.join(data.decode().split())}", pre, dry_run)
    if desc is not None:
        dpath, data, kc = desc
        roles = {r: sum(1 for x in kc.nodes if x.role == r) for r in ("router", "switch", "hca")}
        what = (f"KNS k={kc.k} n={kc.n} s={kc.s}: {roles['router']} routers, {roles['switch']} switches, "
                f"{roles['hca']} HCAs, {len(kc.links)} cables" + (", with LIDs" if any(x.lids for x in kc.nodes) else ""))
        if _read(dpath, "installed description") == data:
            click.echo(f"unchanged {dpath} ({what})")
        else:
            click.echo(f"{pre}install {dpath} (from {kns_conf}: {what})")
            if dry_run:
                shown = data.decode(errors="replace").splitlines()
                for ln in shown[:12]:
                    click.echo(f"  | {ln}")
                if len(shown) > 12:
                    click.echo(f"  | ... ({len(shown) - 12} more lines)")
            else:
                _write(dpath, data)
    if names[names.index("hdor") + 1:][:1] in (["minhop"], ["dor"]):
        click.echo(f"note: {names[names.index('hdor') + 1]} after hdor makes credit loops on a KNS hdor declines; "
                   "nue does not (docs/plugin.md \"The fallback\")", err=True)
    if "updn" in names and kns_conf is None and "root_guid_file" not in dict(extra):
        click.echo("note: updn finds no roots on a KNS by itself: give --kns-conf (its roots are taken from the "
                   "description) or a root_guid_file", err=True)
    if not dry_run and destdir is None:
        click.echo("restart OpenSM to load it (systemctl restart opensm); check its log for "
                   "'hdor tables configured on all switches'")
