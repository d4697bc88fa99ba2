# Thin wrapper: rule runtime_ir -> tileport.cpu.runtime_ir.run, for every kernel of one operator
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage
from tileport.cpu import runtime_ir

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
out = Path(snakemake.output.dir)
verdicts = {k: out / f"{k}.json" for k in p.variants}
with stage.guarded(snakemake, "runtime_ir", each={(k, None): v for k, v in verdicts.items()}):
    diff_dirs = {Path(d).name: Path(d) for d in i.ir_diffs}
    for kernel, variants in p.variants.items():
        (out / kernel).mkdir(parents=True, exist_ok=True)   # a directory even if the kernel crashes
        with stage.each_variant(snakemake, "runtime_ir", None, verdicts[kernel], kernel=kernel):
            diffs = {v: str(diff_dirs[kernel] / f"{v}.json") for v in variants}
            d = runtime_ir.run(p.op_dir, w.op, kernel, i.build, diffs, verdicts[kernel], out / kernel,
                               target=p.target)
            print(kernel, d["verdict"], d["summary"])
            print("cost:", d["details"].get("cost"))
