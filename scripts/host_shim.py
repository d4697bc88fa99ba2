# Thin wrapper: rule host_shim -> tileport.host.shim.write_shim (deterministic) or write_shim_llm (the LLM
# host builder: backend anthropic/replay, or auto when the previous GPU round's route asked for it)
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import agents, job, stage
from tileport.host import shim as host

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, i, o, p = snakemake.wildcards, snakemake.input, snakemake.output, snakemake.params
with stage.guarded(snakemake, "host_shim"):
    asked = {}
    if i.previous:
        d = json.loads(Path(i.previous[0]).read_text())
        if (d.get("request") or {}).get("role") == "host_builder":
            asked = d
    llm = p.backend in ("anthropic", "replay") or (p.backend == "auto" and asked)
    if llm:
        # the workflow's results/ (transcripts live there, whichever tree the shim is for)
        role = agents.role_config(p.backend, snakemake.config["llm"], Path(snakemake.input.analysis).parents[1])
        d = host.write_shim_llm(w.op, i.analysis, Path(o.verdict).parent.parent, o.ffi_rs, o.ffi_json,
                                o.verdict, role, rnd=p.round, previous=asked.get("feedback", ""),
                                attempt=snakemake.resources.attempt)
    else:
        d = host.write_shim(w.op, i.analysis, Path(o.verdict).parent.parent, o.ffi_rs, o.ffi_json, o.verdict,
                            attempt=snakemake.resources.attempt)
    print(d["verdict"], d["summary"])
