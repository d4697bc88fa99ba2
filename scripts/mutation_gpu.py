# Thin wrapper: rule mutation_gpu -> tileport.gpu.mutation_test.run
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.gpu import mutation_test

w = snakemake.wildcards
with stage.guarded(snakemake, "mutation_gpu"):
    d = mutation_test.run(w.op, w.kernel, snakemake.input.study, snakemake.output.verdict, gpu=snakemake.config["gpu"])
    print(d["verdict"], d["summary"])
