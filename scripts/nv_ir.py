# Thin wrapper: rule nv_ir -> tileport.nvidia.port.dump (NVIDIA's entry compiled for one reference variant)
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))
from tileport.core import stage
from tileport.nvidia import port as nv_port

w, i, o, p = snakemake.wildcards, snakemake.input, snakemake.output, snakemake.params
with stage.guarded(snakemake, "nv_ir"):
    d = nv_port.dump(p.op_dir, w.op, w.kernel, w.variant, i.build, o.bytecode, o.text, o.verdict,
                     target=p.target, attempt=snakemake.resources.attempt, other_build=i.other)
    print(d["verdict"], d["summary"])
