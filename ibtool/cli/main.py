"""The `ibtool` command. Each subcommand group lives in its own module of this package."""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import sys

import click

from ibtool import __version__
from ibtool.errors import IbtoolError, OutOfMemory
from ibtool.formats import READ, shown

# One line per command group; a group module defines `group`.
GROUPS = ["topo", "sim", "verify", "route", "plugin", "bench", "analyze", "cabling", "collect", "watch", "whatif"]


class _Watched:
    """stdout, noting whether anything was written: a command that already printed its JSON
    report (and then failed its check) must not get a second JSON document after it."""

    def __init__(self, stream):
        self._stream, self.written = stream, False

    def write(self, text):
        self.written = self.written or bool(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _fail(ctx, message: str, code: int):
    """The one-line error on stderr; with --json also the error object on stdout when the command
    printed nothing there, so a script that reads stdout gets one JSON document whatever happened:
    {"ok": false, "error": "...", "exit_code": N}."""
    click.echo(f"ibtool: error: {message}", err=True)
    out = sys.stdout
    if ctx.meta.get("json") and not (isinstance(out, _Watched) and out.written):
        click.echo(json.dumps({"ok": False, "error": message, "exit_code": code}, indent=2))
    sys.exit(code)


def _closed(stream) -> bool:
    """The reader of this pipe is gone (`ibtool ... | head` after head exited)."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _closed_pipe(ctx=None, error: BrokenPipeError | None = None):
    """Output to a closed pipe: end quietly as the infiniband-diags tools do, killed by SIGPIPE
    (a shell says 141), never exit 1 ("check failed") and no message. A pipe to a child that broke
    is not that: an environment problem, said in one line."""
    if error is not None and not (_closed(sys.__stdout__) or _closed(sys.__stderr__)):
        _fail(ctx, f"a pipe to a child process closed early: {error}", 3)
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            os.dup2(devnull, stream.fileno())  # what Python would still flush goes nowhere
        except (OSError, ValueError, AttributeError):
            pass
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)


class _Main(click.Group):
    """The command groups are imported when named (each pulls in numpy, jinja2 ... of its own):
    `ibtool bench parse` does not pay for the routing and layout modules it never runs."""

    def list_commands(self, ctx):
        return sorted(GROUPS)

    def get_command(self, ctx, cmd_name):
        if cmd_name not in GROUPS:
            return None
        return importlib.import_module(f"ibtool.cli.{cmd_name}").group

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            ctx = super().make_context(info_name, list(args), parent=parent, **extra)
        except BrokenPipeError:  # `ibtool --help | head`
            _closed_pipe()
        ctx.meta["json"] = "--json" in args  # every command's machine-readable switch
        if ctx.meta["json"] and not isinstance(sys.stdout, _Watched):
            sys.stdout = _Watched(sys.stdout)
        return ctx

    def invoke(self, ctx):
        READ.clear()  # the inputs of this command (tests run many in one process)
        try:
            return super().invoke(ctx)
        except IbtoolError as e:
            _fail(ctx, str(e), e.exit_code)
        except click.ClickException as e:
            if not ctx.meta.get("json"):
                raise
            _fail(ctx, e.format_message(), e.exit_code)
        except KeyboardInterrupt as e:  # Ctrl-C: 130; SIGTERM: 143 (Interrupted), as shells report them
            click.echo("ibtool: interrupted", err=True)
            sys.exit(128 + getattr(e, "signum", 2))
        except BrokenPipeError as e:
            _closed_pipe(ctx, e)
        except MemoryError:  # a fabric or input too large for this machine's memory: its own exit code
            on = f" on {shown(READ[-1])} (the last input read)" if READ else " (no input file read)"
            _fail(ctx, f"out of memory in `ibtool {ctx.invoked_subcommand or ''}`{on}: the fabric or input is too "
                       "large for this machine's memory (nothing was written)", OutOfMemory.exit_code)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ibtool")
def cli():
    """ibtool: build, route and verify InfiniBand fabrics of hybrid topologies.

    \b
    Typical session:
      ibtool topo kns --k 6 --n 2 --radix 8 --out cellia      # plan: net file, node-name-map, opensm.conf
      ibtool sim run cellia/topology.net --engine hdor --out run   # emulate in ibsim, route, discover
      ibtool verify all run                                    # cabling, coordinates, every route
      ibtool analyze cellia                                    # diameter, bisection, latency, cost
      ibtool cabling cellia --out cellia/cabling               # cable list, rack sheets, labels, BOM
      ibtool sim run cellia/topology.net --engine hdor --fail "R[1,1] 3" --out f   # a cable fails
      ibtool collect --out run0            # on a host of a real fabric: topology, tables, counters
      ibtool verify all run0 --plan cellia/topology.net        # miswired cables, routes, cable health
      ibtool bench run -i inv.yaml --benchmarks hpcc --mappings linear,random --engines updn,hdor -o results

    Exit codes: 0 ok, 1 check failed, 2 bad input, 3 missing tool or host.
    """


def main():
    try:
        cli(prog_name="ibtool")
    finally:
        try:
            sys.stdout.flush()  # what is still buffered: its reader may be gone too
        except BrokenPipeError:
            _closed_pipe()


if __name__ == "__main__":
    main()
