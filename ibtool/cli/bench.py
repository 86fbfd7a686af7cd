"""`ibtool bench`."""

import click


@click.group(name="bench")
def group():
    """(being built)"""
