"""Layer 7: NVIDIA's shipped cuTile Rust ports as the yardstick -- building them (``port``) and
calling them (``ffi``). Imports the layers below."""
