"""Layer 5: the CPU stages -- import a TileGym source, analyse, dump the reference Tile IR, write
the Rust kernel, build it and dump its Tile IR, diagnose an IR diff. Imports core, model,
translate and ir_diff."""
