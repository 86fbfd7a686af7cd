"""`ibtool verify`."""

import click


@click.group(name="verify")
def group():
    """(being built)"""
