# Thin wrapper: rule perf_diagnose -> tileport.gpu.perf_diagnose.diagnose
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import agents, job, stage
from tileport.gpu import perf_diagnose

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
llm = snakemake.config["llm"]
with stage.guarded(snakemake, "perf_diagnose"):
    # transcripts live under the workflow's results/ (a GPU round's tree has none of its own)
    role = agents.role_config(p.backend, llm, p.results, kernels=list(i.kernels),
                              stage="perf_diagnose" if p.round == 1 else f"perf_diagnose/round-{p.round}")
    # the ir_diff verdicts: one folder per kernel, <variant>.json inside
    diffs = [f for folder in i.ir_diffs for f in sorted(Path(folder).glob("*.json"))]
    # the runtime_ir verdicts: one folder per operator, <kernel>.json inside
    runtime = [f for folder in i.runtime for f in sorted(Path(folder).glob("*.json"))]
    d = perf_diagnose.diagnose(w.op, i.bench, diffs, snakemake.output.verdict,
                               threshold=snakemake.params.threshold,
                               loop_threshold=snakemake.params.loop_threshold,
                               attempt=snakemake.resources.attempt, role=role, runtime=runtime)
    print(d["verdict"], d["summary"])
