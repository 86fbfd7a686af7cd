"""Command-line interface: thin click groups that parse, call the library and print."""

from pathlib import Path

import click


def _option(param) -> str | None:
    """How an error names a parameter: its long option (an argument: by its path alone)."""
    opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
    return max(opts, key=len) if opts else None


class OutPath(click.Path):
    """An output path option (a file, or with directory=True a directory): as
    click.Path(path_type=Path), but "" is refused, not taken as the current directory (an unset
    shell variable must not write into wherever the user stands), and what it names is checked
    before any work by the one rule every writer follows (ibtool.formats.output_target): a
    device, FIFO, socket, or a directory where a file goes, is refused, naming it; a symlink is
    followed to a regular file (a directory)."""

    def __init__(self, directory: bool = False, **kw):
        self.directory = directory
        kw.setdefault("path_type", Path)
        super().__init__(**kw)

    def convert(self, value, param, ctx):
        from ibtool.formats import output_target
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path (say . for the current directory)", param, ctx)
        if isinstance(value, (str, Path)):  # before click's own checks, so every refusal reads alike
            output_target(value, _option(param), directory=self.directory)  # an InputError: one line, exit 2
        return super().convert(value, param, ctx)


class InPath(click.Path):
    """An input path option: click.Path (path_type=Path unless given), and a FIFO, device or
    socket refused before anything is read (ibtool.formats.check_input; the readers refuse them
    too): a FIFO nobody writes to would block the command for ever."""

    def __init__(self, **kw):
        kw.setdefault("path_type", Path)
        super().__init__(**kw)

    def convert(self, value, param, ctx):
        from ibtool.formats import check_input
        if isinstance(value, (str, Path)):
            check_input(value, _option(param), directory_ok=self.dir_okay)
        return super().convert(value, param, ctx)


def finite_seconds(ctx, param, value):
    """click callback: a timeout is a finite number of seconds, at least 1 (nan and inf are not)."""
    if value is not None and not 1 <= value <= 7 * 86400:  # also false for nan
        raise click.BadParameter(f"{value} is not a number of seconds in 1..604800")
    return value
