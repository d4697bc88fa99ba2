# Thin wrapper: rule write_kernel -> tileport.write_kernel.run_backend (translator / anthropic / replay / auto)
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import agents, stage, write_kernel

w, out, p = snakemake.wildcards, snakemake.output, snakemake.params
attempt, cap = snakemake.resources.attempt, snakemake.config["attempts"]["write_kernel"]
llm = snakemake.config["llm"]
with stage.guarded(snakemake, "write_kernel"):
    settings = None
    if p.backend != "translator":
        settings = agents.LlmSettings(**{k: v for k, v in llm.items() if k != "replay_dir"})
        if not settings.base_url:
            settings = agents.LlmSettings(**{**agents.settings_dict(settings), "base_url": None})
    d = write_kernel.run_backend(
        p.op_dir, w.kernel, out.rust, out.verdict, w.op, p.backend, settings=settings,
        analysis_json=snakemake.input.analysis,
        ref_ir=(list(snakemake.input.ref_ir) or [None])[0],
        results=Path(out.verdict).parent.parent.parent, replay_dir=llm.get("replay_dir"),
        attempt=attempt)
    # keep this attempt's verdict: Snakemake removes the outputs before a retry, and the next
    # attempt's prompt quotes it
    shutil.copyfile(out.verdict, Path(out.verdict).with_name(f"{w.kernel}.attempt-{attempt}.json"))
    print(f"attempt {attempt}/{cap}:", d["verdict"], d["summary"])
    if not Path(out.source_map).exists():
        Path(out.source_map).write_text('{"lines": []}\n')
    if d["verdict"] == "FAIL" and attempt < cap and p.backend != "translator":
        # an unusable LLM reply: Snakemake retries (each attempt keeps its log, verdict and
        # transcript); the deterministic translator would only repeat itself
        raise SystemExit(f"write_kernel attempt {attempt} of {cap}: {d['summary']}")
