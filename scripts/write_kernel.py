# Thin wrapper: rule write_kernel -> tileport.write_kernel.run (backend: translator)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport import stage, write_kernel

w, out = snakemake.wildcards, snakemake.output
attempt, cap = snakemake.resources.attempt, snakemake.params.cap
stage.apply_tools(snakemake.params.tools)
with stage.logged(snakemake.log[0], attempt):
    d = write_kernel.run(Path(snakemake.input[0]).parent, w.kernel, out.rust, out.verdict, w.op,
                         attempt=attempt)
    print(f"attempt {attempt}/{cap}:", d["verdict"], d["summary"])
    if not Path(out.source_map).exists():
        Path(out.source_map).write_text('{"lines": []}\n')
    if d["verdict"] != "PASS" and attempt < cap:
        # a failed attempt: Snakemake retries (the per-attempt log stays)
        raise SystemExit(f"write_kernel attempt {attempt} of {cap}: {d['summary']}")
