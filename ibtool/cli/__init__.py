"""Command-line interface: thin click groups that parse, call the library and print."""

from pathlib import Path

import click


class OutPath(click.Path):
    """An output path option: as click.Path(path_type=Path), but "" is refused, not taken as the
    current directory (an unset shell variable must not write into wherever the user stands)."""

    def __init__(self, **kw):
        super().__init__(path_type=Path, **kw)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path (say . for the current directory)", param, ctx)
        return super().convert(value, param, ctx)


def finite_seconds(ctx, param, value):
    """click callback: a timeout is a finite number of seconds, at least 1 (nan and inf are not)."""
    if value is not None and not 1 <= value <= 7 * 86400:  # also false for nan
        raise click.BadParameter(f"{value} is not a number of seconds in 1..604800")
    return value
