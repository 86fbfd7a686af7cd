"""ibtool: generate, route, emulate, verify and benchmark InfiniBand fabrics of hybrid topologies."""

__version__ = "0.1.0"
