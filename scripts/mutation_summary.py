# Thin wrapper: rule mutation_summary -> tileport.report.mutation.build
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.report import mutation

i, o = snakemake.input, snakemake.output
with stage.guarded(snakemake, "mutation_summary"):
    s = mutation.build(list(i.studies), list(i.gpu), o.csv, o.study, o.tex, o.fig)
    print(s["headline"])
