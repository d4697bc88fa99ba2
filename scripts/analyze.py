# Thin wrapper: rule analyze -> tileport.cpu.analyze.run_backend (deterministic, or + the LLM analyser's notes)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import agents, stage
from tileport.cpu import analyze

with stage.guarded(snakemake, "analyze"):
    p = snakemake.params
    role = (None if p.backend == "deterministic"
            else agents.role_config(p.backend, snakemake.config["llm"], Path(snakemake.output[0]).parents[1]))
    d = analyze.run_backend(p.op_dir, snakemake.output[0], snakemake.wildcards.op, p.backend, role,
                            target=p.target)
    print(d["verdict"], d["summary"])
