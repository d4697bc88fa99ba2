# Thin wrapper: rule analyze -> tileport.cpu.analyze.run_backend (deterministic, or + the LLM analyser's notes)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import agents, job, stage
from tileport.cpu import analyze

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

with stage.guarded(snakemake, "analyze"):
    p = snakemake.params
    role = (None if p.backend == "deterministic"
            else agents.role_config(p.backend, snakemake.config["llm"], Path(snakemake.output[0]).parents[1]))
    d = analyze.run_backend(p.op_dir, snakemake.output[0], snakemake.wildcards.op, p.backend, role,
                            target=p.target)
    print(d["verdict"], d["summary"])
