# Thin wrapper: rule mutation_host -> tileport.host.mutants.build
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.host import mutants

w, i, o = snakemake.wildcards, snakemake.input, snakemake.output
with stage.guarded(snakemake, "mutation_host"):
    d = mutants.build(w.op, w.kernel, i.study, i.work, i.ffi, o.host, o.verdict)
    print(d["verdict"], d["summary"])
