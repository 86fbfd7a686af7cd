"""`ibtool topo`."""

import click


@click.group(name="topo")
def group():
    """(being built)"""
