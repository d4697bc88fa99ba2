# Thin wrapper: rule bench -> tileport.gpu.bench.run  (without Snakemake: python -m tileport.gpu.bench)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import job, stage
from tileport.gpu import bench

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, i, o, p = snakemake.wildcards, snakemake.input, snakemake.output, snakemake.params
with stage.guarded(snakemake, "bench"):
    d = bench.run(w.op, p.op_dir, Path(i.analysis).parent.parent, o.csv, o.verdict, gpu=snakemake.config["gpu"],
                  cfg={**p.bench, "threshold": snakemake.config["bench"]["threshold"],
                       "loop_threshold": snakemake.config["bench"]["loop_threshold"]},
                  host_build=i.host_build, attempt=snakemake.resources.attempt,
                  nv_build=i.nv[0] if len(i.nv) else None)
    print(d["verdict"], d["summary"])
