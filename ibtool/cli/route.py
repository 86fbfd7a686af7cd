"""`ibtool route`."""

import click


@click.group(name="route")
def group():
    """(being built)"""
