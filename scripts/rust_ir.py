# Thin wrapper: rule rust_ir -> tileport.rust_ir.dump
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import rust_ir, stage
from tileport.verdict import atomic_write_text

w, out = snakemake.wildcards, snakemake.output
stage.apply_tools(snakemake.params.tools)
with stage.logged(snakemake.log[0], snakemake.resources.attempt):
    d = rust_ir.dump(Path(snakemake.input[0]).parent, w.op, w.kernel, w.variant,
                     snakemake.input.build, out.bytecode, out.text, out.verdict,
                     target=snakemake.params.target, attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
    if d["verdict"] != "PASS":
        for p in (out.bytecode, out.text):
            if not Path(p).exists():
                atomic_write_text(p, f"# {d['verdict']}: {d['summary']}\n")
