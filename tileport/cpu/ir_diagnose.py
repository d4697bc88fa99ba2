"""Stage ``ir_diagnose`` (role: IR diagnoser, deterministic backend).

Reads an ``ir_diff`` verdict and, for every critical finding, points at the source lines that
produced the diverging ops and says what the kernel writer should change:

* the reference op's ``kernel.py`` line and the port op's generated ``.rs`` line, both from the
  Tile IR debug info (``tileirdisasm -g``, see :mod:`tileport.ir_diff.locations`);
* the ``kernel.py`` line that the translator turned into that ``.rs`` line, from the
  translator's source map (``<kernel>.rs.map.json``);
* advice by finding category.

Writes ``results/<op>/diagnosis/<kernel>/<variant>.json`` (the common verdict shape):
verdict ``PASS`` (nothing to diagnose: the diff passed), ``FAIL`` (diagnoses in
``details.diagnoses``; the next kernel-writer attempt reads them) or ``BLOCKED`` (no diff ran).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from tileport.core.source import source_lines
from tileport.core.verdict import Finding, Verdict, VerdictError, read, write

ADVICE = {
    "memory": "load/store through the same partition view as the reference: same array, tile "
              "shape, padding value, index and view kind (partition view vs pointer)",
    "reduction": "reduce over the same axis with the same combiner and identity (ct.sum -> "
                 "reduce_sum, ct.max -> reduce_max, ct.min -> reduce_min)",
    "cast": "convert at the same point and to the same element type as the reference's astype",
    "math": "compute the same operation on the same operands in the same order (non-commutative "
            "ops: sub, div, mma), with the same rounding and flush-to-zero",
    "constant": "use the reference's constant value and type",
    "control_flow": "keep the reference's loop bounds, step and loop-carried values, and keep "
                    "stores inside/outside the loop where the reference has them",
    "signature": "declare the entry parameters like the reference: same arrays (rank, element "
                 "type), scalars and order; strides as the launch passes them",
    "hint": "carry the reference's hints (latency, TMA allowance, occupancy)",
}


def _line(path: Path, line: int | None) -> str:
    try:
        return source_lines(path.read_text())[line - 1].strip() if line else ""
    except (OSError, IndexError):
        return ""


def _split_source(src: str | None) -> tuple[str, int] | None:
    if not src or ":" not in src:
        return None
    file, _, line = src.rpartition(":")
    return (file, int(line)) if line.isdigit() else None


def diagnose_finding(f: dict, crate: Path, smap: dict[int, int], kernel_py: Path) -> dict:
    """One diagnosis for one critical ``ir_diff`` finding (a dict of the verdict schema).

    Returns ``{"category", "message", "reference": {"ir", "python"}, "port": {"ir", "rust",
    "python_of_rust"}, "advice"}``; a source side is None when the IR line carries no location.
    """
    out = {"category": f["category"], "message": f["message"],
           "reference": {"ir": f.get("ref"), "python": None},
           "port": {"ir": f.get("port"), "rust": None, "python_of_rust": None}}
    rsrc = _split_source((f.get("ref") or {}).get("source"))
    if rsrc:
        p = Path(rsrc[0])
        p = p if p.exists() else kernel_py
        out["reference"]["python"] = {"file": str(p), "line": rsrc[1], "text": _line(p, rsrc[1])}
    psrc = _split_source((f.get("port") or {}).get("source"))
    if psrc:
        rs = crate / psrc[0]
        out["port"]["rust"] = {"file": str(rs), "line": psrc[1], "text": _line(rs, psrc[1])}
        py_line = smap.get(psrc[1])
        if py_line:
            out["port"]["python_of_rust"] = {"file": str(kernel_py), "line": py_line,
                                             "text": _line(kernel_py, py_line)}
    ref_t = (f.get("ref") or {}).get("text", "")
    port_t = (f.get("port") or {}).get("text", "")
    where = []
    if out["reference"]["python"]:
        r = out["reference"]["python"]
        where.append(f"the reference computes it at {r['file']}:{r['line']} `{r['text']}` "
                     f"as `{ref_t.split(' loc(')[0]}`")
    if out["port"]["rust"]:
        r = out["port"]["rust"]
        where.append(f"the port at {r['file']}:{r['line']} `{r['text']}` gives "
                     f"`{port_t.split(' loc(')[0]}`")
    if f["category"] == "reduction":
        rc, pc = _combiner(f.get("ref")), _combiner(f.get("port"))
        if rc or pc:
            where.append(f"the reference combines with `{rc}`, the port with `{pc}`")
    out["advice"] = ADVICE.get(f["category"], "make the port compute what the reference does") + \
        (": " + "; ".join(where) if where else "")
    return out


def _combiner(where: dict | None) -> str | None:
    """The combiner op (``addf``, ``maxf`` ...) in the region of the reduce/scan op at ``where``."""
    if not where or not where.get("line"):
        return None
    try:
        lines = Path(where["file"]).read_text().splitlines()
    except OSError:
        return None
    for text in lines[where["line"]:where["line"] + 4]:
        m = re.match(r"\s*%\S+ = (\w+) ", text)
        if m:
            return m.group(1)
    return None


def run(diff_json, crate, source_map, kernel_py, out_json, op, kernel, variant) -> dict:
    """Write the diagnosis verdict for one (kernel, variant); never raises on bad input."""
    base = dict(stage="ir_diagnose", op=op, kernel=kernel, variant=variant)
    try:
        diff = read(diff_json)
    except VerdictError as exc:
        return write(Verdict(**base, verdict="BLOCKED", owner="tool", summary=str(exc)), out_json)
    if diff["verdict"] in ("PASS", "PASS_WITH_NOTES"):
        return write(Verdict(**base, verdict="PASS", owner=None,
                             summary=f"nothing to diagnose (ir_diff {diff['verdict']})"), out_json)
    if diff["verdict"] != "FAIL":
        return write(Verdict(**base, verdict="BLOCKED", owner=diff["owner"],
                             summary=f"no IR diff to diagnose: {diff['summary']}"), out_json)
    try:
        smap = {int(r): int(p) for r, p in json.loads(Path(source_map).read_text())["lines"]}
    except (OSError, ValueError, KeyError, TypeError):
        smap = {}
    crits = [f for f in diff["findings"] if f["severity"] == "critical"]
    diags = [diagnose_finding(f, Path(crate), smap, Path(kernel_py)) for f in crits]
    findings = [Finding(d["category"], "critical", f.get("owner", "kernel"), d["advice"],
                        ref=f.get("ref"), port=f.get("port")) for d, f in zip(diags, crits)]
    first = diags[0] if diags else None
    head = first["advice"] if first else diff["summary"]
    return write(Verdict(**base, verdict="FAIL", owner=diff["owner"] or "kernel",
                         summary=f"{len(diags)} divergence(s) to fix; first: {head}"[:2000],
                         findings=findings, details={"diagnoses": diags, "from": str(diff_json)},
                         artifacts={"ir_diff": str(diff_json)}), out_json)
