# Thin wrapper: rule gpu_test -> tileport.gpu_test.run  (without Snakemake: python -m tileport.gpu_test)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import gpu_test, stage

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
with stage.guarded(snakemake, "gpu_test"):
    d = gpu_test.run(w.op, p.op_dir, Path(i.analysis).parent.parent, snakemake.output.verdict,
                     gpu=snakemake.config["gpu"], host_build=i.host_build, seed=p.seed,
                     attempt=snakemake.resources.attempt, nv_build=i.nv[0] if len(i.nv) else None)
    print(d["verdict"], d["summary"])
