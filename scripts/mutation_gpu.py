# Thin wrapper: rule mutation_gpu -> tileport.gpu.mutation_test.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.gpu import mutation_test

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
with stage.guarded(snakemake, "mutation_gpu"):
    d = mutation_test.run(w.op, w.kernel, i.study, snakemake.output.verdict, gpu=snakemake.config["gpu"],
                          host_json=i.host, op_dir=p.op_dir, results="results", settings=p.settings, seed=p.seed)
    print(d["verdict"], d["summary"])
