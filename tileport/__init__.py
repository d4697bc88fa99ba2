"""tileport: port cuTile Python kernels to cuTile Rust and prove each port faithful.

Each stage module (``analyze``, ``reference_ir``, ``write_kernel``, ``rust_ir``,
``ir_diff``, ``summary``) holds the logic of one Snakemake rule; the scripts in
``scripts/`` are thin wrappers that call them.
"""
__version__ = "0.1.0"
