"""The `ibtool` command. Each subcommand group lives in its own module of this package."""

from __future__ import annotations

import importlib
import sys

import click

from ibtool import __version__
from ibtool.errors import IbtoolError

# One line per command group; a group module defines `group`.
GROUPS = ["topo", "sim", "verify", "route", "plugin", "bench"]


class _Main(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except IbtoolError as e:
            click.echo(f"ibtool: error: {e}", err=True)
            sys.exit(e.exit_code)
        except KeyboardInterrupt as e:  # Ctrl-C: 130; SIGTERM: 143 (Interrupted), as shells report them
            click.echo("ibtool: interrupted", err=True)
            sys.exit(128 + getattr(e, "signum", 2))
        except BrokenPipeError:
            sys.exit(1)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ibtool")
def cli():
    """ibtool: build, route and verify InfiniBand fabrics of hybrid topologies.

    \b
    Typical session:
      ibtool topo kns --k 6 --n 2 --radix 8 --out cellia      # plan: net file, node-name-map, opensm.conf
      ibtool sim run cellia/topology.net --engine hdor --out run   # emulate in ibsim, route, discover
      ibtool verify all run                                    # cabling, coordinates, every route
      ibtool verify topology --plan cellia/topology.net --discovered real-fabric.ibnetdiscover
      ibtool bench run -i inv.yaml --benchmarks hpcc --mappings linear,random --engines updn,hdor -o results

    Exit codes: 0 ok, 1 check failed, 2 bad input, 3 missing tool or host.
    """


for _name in GROUPS:
    _mod = importlib.import_module(f"ibtool.cli.{_name}")
    cli.add_command(_mod.group)


def main():
    cli(prog_name="ibtool")


if __name__ == "__main__":
    main()
