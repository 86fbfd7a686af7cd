"""`ibtool plugin`."""

import click


@click.group(name="plugin")
def group():
    """(being built)"""
