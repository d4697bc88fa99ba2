"""Stage ``mutation_gpu``: the numeric-test column of the mutation study (issue 36), on a GPU.

Each compiling mutant of ``results/mutation/<op>/<kernel>.json`` would run against the cuTile
Python reference on the manifest's test shapes and on unseen shapes (other extents, sizes not
divisible by 16). Without a GPU the verdict is NOT_RUN (config ``gpu``, as ``gpu_test``): the
column is never filled with a value no GPU measured. On a GPU the verdict is ERROR owner ``tool``
until tileport builds a host library from the mutants' sources (the host library today holds
the accepted ports only, :mod:`tileport.host.shim`).
"""
from __future__ import annotations

from pathlib import Path

from tileport.core.verdict import Finding, Verdict, read, write
from tileport.gpu.test import gpu_gate


def run(op: str, kernel: str, mutation_json, out_json, gpu: str = "auto") -> dict:
    """Write the GPU column's verdict for one kernel's mutants; never raises on a missing GPU."""
    study = read(mutation_json)
    gated = gpu_gate("mutation_gpu", op, gpu, out_json)
    if gated is not None:
        return gated
    n = sum(1 for m in (study.get("details") or {}).get("mutants", []) if m.get("compiles"))
    msg = (f"{n} compiling mutant(s) of {kernel}: tileport cannot run them yet -- the host library "
           f"({Path('results/host/libtileport_host.so')}) is built from the accepted ports only")
    return write(Verdict(stage="mutation_gpu", op=op, kernel=kernel, verdict="ERROR", owner="tool", summary=msg,
                         findings=[Finding("build", "critical", "tool", msg)]), out_json)
