# Thin wrapper: rule rust_ir -> tileport.cpu.rust_ir.dump
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.cpu import rust_ir

w, out = snakemake.wildcards, snakemake.output
with stage.guarded(snakemake, "rust_ir"):
    d = rust_ir.dump(snakemake.params.op_dir, w.op, w.kernel, w.variant,
                     snakemake.input.build, out.bytecode, out.text, out.verdict,
                     target=snakemake.params.target, attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
