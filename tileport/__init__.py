"""tileport: port cuTile Python kernels to cuTile Rust and prove each port faithful.

The package is layered; a module imports only from its own layer or the layers below, never in a
loop (tests/test_layers.py), bottom to top: ``core``, ``model``, ``translate``, ``ir_diff``,
``cpu``, ``host``, ``nvidia``, ``gpu``, ``flow``, ``report`` (docs/architecture.md). Each stage
module holds the logic of one Snakemake rule; ``scripts/`` holds thin wrappers that call them.
"""
__version__ = "0.1.0"
