# Thin wrapper: rule perf_diagnose -> tileport.perf_diagnose.diagnose
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import perf_diagnose, stage

w, i = snakemake.wildcards, snakemake.input
with stage.guarded(snakemake, "perf_diagnose"):
    d = perf_diagnose.diagnose(w.op, i.bench, list(i.ir_diffs), snakemake.output.verdict,
                               threshold=snakemake.params.threshold,
                               attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
