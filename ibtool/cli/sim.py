"""`ibtool sim`."""

import click


@click.group(name="sim")
def group():
    """(being built)"""
