"""Layer 2: what an operator is -- its manifest (variants, shapes, tolerances), the cuTile Python
frontend (kernels, constexprs, constructs), declared defects and PyTorch uses. Imports core only."""
