# Thin wrapper: every rule of rules/report.smk -> tileport.report.build.run_rule
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.report import build

with stage.logged(snakemake.log[0]):
    build.run_rule(snakemake.rule, dict(snakemake.input.items()), dict(snakemake.output.items()),
                   dict(snakemake.params.items()), snakemake.config)
    print(f"{snakemake.rule}: wrote {', '.join(snakemake.output)}")
