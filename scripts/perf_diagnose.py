# Thin wrapper: rule perf_diagnose -> tileport.perf_diagnose.diagnose
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import agents, perf_diagnose, stage

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
llm = snakemake.config["llm"]
with stage.guarded(snakemake, "perf_diagnose"):
    role = agents.role_config(p.backend, llm, Path(snakemake.output.verdict).parents[1],
                              kernels=list(i.kernels))
    d = perf_diagnose.diagnose(w.op, i.bench, list(i.ir_diffs), snakemake.output.verdict,
                               threshold=snakemake.params.threshold,
                               attempt=snakemake.resources.attempt, role=role)
    print(d["verdict"], d["summary"])
