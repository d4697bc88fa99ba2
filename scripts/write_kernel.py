# Thin wrapper: rule write_kernel -> tileport.cpu.write_kernel.run_backend (translator / anthropic / replay / auto)
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tileport.core import agents, job, stage
from tileport.cpu import write_kernel
from tileport.flow import route

# the job, handed over by the rule's shell command (tileport.core.job; no Snakemake import here)
snakemake = job.current()

w, out, p = snakemake.wildcards, snakemake.output, snakemake.params
attempt, cap = p.attempt, snakemake.config["attempts"]["write_kernel"]
llm = snakemake.config["llm"]
# attempt n exists only as the loop's next step: never beyond the cap, never after accept/stop
if attempt > cap:
    raise SystemExit(f"write_kernel: attempt {attempt} of {w.op}/{w.kernel} exceeds attempts.write_kernel "
                     f"= {cap} in config.yaml: not written")
previous = ""
if attempt > 1:
    # route n-1 said retry (its failure + IR diagnosis), or it accepted attempt n-1 and a GPU
    # round's route asked for attempt n (a functional failure or a slow port)
    routes = [json.loads(Path(f).read_text()) for f in snakemake.input.previous]
    asked = [d for d in routes[1:] if (d.get("request") or {}).get("kernel") == w.kernel
             and d["request"].get("attempt") == attempt]
    if routes[0].get("next") == "retry":
        previous = routes[0]["feedback"]
    elif asked:
        previous = asked[0]["feedback"]
    else:
        raise SystemExit(f"write_kernel: {snakemake.input.previous[0]} says '{routes[0].get('next')}', "
                         f"not 'retry', and no GPU round asked for it: attempt {attempt} of "
                         f"{w.op}/{w.kernel} is not part of the loop: not written")
with stage.guarded(snakemake, "write_kernel"):
    # this attempt is (re)written: its earlier exchanges move to previous/ (replay reads them)
    if p.backend != "replay":
        route.retire(Path(out.verdict).parents[4], w.op, w.kernel, attempt)
    settings = agents.settings_from_config(llm) if p.backend != "translator" else None
    d = write_kernel.run_backend(
        p.op_dir, w.kernel, out.rust, out.verdict, w.op, p.backend, settings=settings,
        analysis_json=snakemake.input.analysis,
        # the kernel's first variant's reference Tile IR (an LLM writer is shown it)
        ref_ir=next((Path(d) / w.kernel / f"{p.variants[0]}.tileir" for d in snakemake.input.ref_ir), None),
        results=Path(out.verdict).parents[4], replay_dir=llm.get("replay_dir"),
        attempt=attempt, previous=previous, target=p.target)
    print(f"attempt {attempt}/{cap}:", d["verdict"], d["summary"])
    if not Path(out.source_map).exists():
        Path(out.source_map).write_text('{"lines": []}\n')
