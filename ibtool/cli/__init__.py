"""Command-line interface: thin click groups that parse, call the library and print."""
