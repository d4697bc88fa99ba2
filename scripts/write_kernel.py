# Thin wrapper: rule write_kernel -> tileport.write_kernel.run_backend (translator / anthropic / replay / auto)
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import agents, stage, write_kernel

w, out, p = snakemake.wildcards, snakemake.output, snakemake.params
attempt, cap = p.attempt, snakemake.config["attempts"]["write_kernel"]
llm = snakemake.config["llm"]
with stage.guarded(snakemake, "write_kernel"):
    settings = agents.settings_from_config(llm) if p.backend != "translator" else None
    # attempt n > 1: the previous attempt's failure, IR diff and diagnosis (route n-1's feedback)
    previous = json.loads(Path(snakemake.input.previous[0]).read_text())["feedback"] if attempt > 1 else ""
    d = write_kernel.run_backend(
        p.op_dir, w.kernel, out.rust, out.verdict, w.op, p.backend, settings=settings,
        analysis_json=snakemake.input.analysis,
        ref_ir=(list(snakemake.input.ref_ir) or [None])[0],
        results=Path(out.verdict).parents[4], replay_dir=llm.get("replay_dir"),
        attempt=attempt, previous=previous)
    print(f"attempt {attempt}/{cap}:", d["verdict"], d["summary"])
    if not Path(out.source_map).exists():
        Path(out.source_map).write_text('{"lines": []}\n')
