# Thin wrapper: rule summary -> tileport.report.summary.write_summary
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.report import summary

with stage.guarded(snakemake, "summary"):
    rows = summary.write_summary(Path(snakemake.output[0]).parent, snakemake.params.ops,
                                 snakemake.params.variants, snakemake.params.manifest_errors,
                                 snakemake.output[0], skipped=snakemake.params.skipped,
                                 ops_csv=snakemake.output[1],
                                 threshold=snakemake.params.threshold,
                                 loop_threshold=snakemake.params.loop_threshold)
    print(f"{len(rows)} rows")
