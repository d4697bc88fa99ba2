# Thin wrapper: rule gpu_test -> tileport.gpu.test.run  (without Snakemake: python -m tileport.gpu.test)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage
from tileport.gpu import test as gpu_test

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
with stage.guarded(snakemake, "gpu_test"):
    d = gpu_test.run(w.op, p.op_dir, Path(i.analysis).parent.parent, snakemake.output.verdict,
                     gpu=snakemake.config["gpu"], host_build=i.host_build, seed=p.seed,
                     attempt=snakemake.resources.attempt, nv_build=i.nv[0] if len(i.nv) else None)
    print(d["verdict"], d["summary"])
