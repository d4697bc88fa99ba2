"""The ``ir_diff`` stage: diff two IR files and write the verdict (:func:`run`)."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from tileport.core.verdict import Finding, Verdict, loc, port_fault, read, write

from .graph_diff import diff_ir
from .locations import attach_sources
from .parse import IRParseError


def run(ref_path, port_path, out_json, op: str, kernel: str | None = None,
        variant: str | None = None, attempt: int = 1, writer: str | None = None,
        target: str | None = None) -> dict:
    """Stage entry point: diff two IR files and write the ``ir_diff`` verdict JSON.

    ``details`` = ``{"first_divergence": finding dict | None, "stats": {...}}``,
    ``artifacts`` = ``{"ref": ref_path, "port": port_path}``.  A malformed or missing
    input gives verdict ERROR (owner "tool", a finding naming ``file:line``) instead of
    raising.  ``writer``: the kernel-writer backend of the port (the rust_ir verdict's
    ``details.writer``); a difference in a port the deterministic translator wrote is the
    translator's (owner ``tool``, :func:`tileport.core.verdict.port_fault`).  ``target``: the
    compiled GPU architecture (config ``gpu_target``; hints compare as they apply to it).
    Returns the written verdict document.
    """
    ref_path, port_path = str(ref_path), str(port_path)
    artifacts = {"ref": ref_path, "port": port_path}
    try:
        ref_text = Path(ref_path).read_text()
        port_text = Path(port_path).read_text()
        res = diff_ir(ref_text, port_text, ref_path, port_path, target)
    except IRParseError as exc:
        where = loc(exc.path, exc.line, exc.text.strip())
        side_ref = exc.path == ref_path
        f = Finding("input", "critical", "tool", f"cannot parse Tile IR: {exc}",
                    where if side_ref else None, None if side_ref else where)
        v = Verdict(stage="ir_diff", op=op, kernel=kernel, variant=variant, verdict="ERROR",
                    owner="tool", attempt=attempt, summary=f"ERROR: {exc}", findings=[f],
                    artifacts=artifacts, details={"first_divergence": asdict(f), "stats": {}})
        return write(v, out_json)
    except OSError as exc:
        f = Finding("input", "critical", "tool", f"cannot read IR file: {exc}",
                    loc(getattr(exc, "filename", None) or ref_path, None), None)
        v = Verdict(stage="ir_diff", op=op, kernel=kernel, variant=variant, verdict="ERROR",
                    owner="tool", attempt=attempt, summary=f"ERROR: {exc}", findings=[f],
                    artifacts=artifacts, details={"first_divergence": None, "stats": {}})
        return write(v, out_json)
    attach_sources(res, ref_text, port_text)
    owner, summary = res.owner, res.summary
    if res.verdict != "PASS":
        owner, fault = port_fault(writer, owner, summary)
        # notes are no failure: their owner is who would act on them, the summary stays as it is
        summary = summary if res.verdict == "PASS_WITH_NOTES" else fault
        for f in res.findings + ([res.first_divergence] if res.first_divergence else []):
            f.owner = port_fault(writer, f.owner, "")[0]
    v = Verdict(stage="ir_diff", op=op, kernel=kernel, variant=variant, verdict=res.verdict,
                owner=owner, attempt=attempt, summary=summary, findings=res.findings,
                artifacts=artifacts,
                details={"first_divergence": asdict(res.first_divergence) if res.first_divergence else None,
                         "stats": res.stats})
    return write(v, out_json)


def run_upstream_checked(ref_dir, port_dir, variant: str, out_json, op: str, kernel: str,
                         attempt: int = 1, target: str | None = None) -> dict:
    """The ``ir_diff`` verdict of one variant from the stage folders of both sides
    (``<ref_dir>/<variant>.tileir`` + ``.json`` of reference_ir, the same under ``port_dir`` of
    rust_ir): :func:`run` when both verdicts are PASS, else BLOCKED naming each side that is not
    (owner: the first such side's). Raises VerdictError when a side's verdict is unreadable."""
    ref, port = Path(ref_dir), Path(port_dir)
    ups = {"reference_ir": read(ref / f"{variant}.json"), "rust_ir": read(port / f"{variant}.json")}
    bad = {k: v for k, v in ups.items() if v["verdict"] != "PASS"}
    if bad:
        why = "; ".join(f"{k} {v['verdict']}: {v['summary']}" for k, v in bad.items())
        owner = next(iter(bad.values()))["owner"] or "kernel"
        return write(Verdict(stage="ir_diff", op=op, kernel=kernel, variant=variant, verdict="BLOCKED",
                             owner=owner, attempt=attempt, summary=f"no IR to compare: {why}",
                             findings=[Finding("build", "critical", owner, why)]), out_json)
    return run(ref / f"{variant}.tileir", port / f"{variant}.tileir", out_json, op, kernel, variant,
               attempt=attempt, writer=(ups["rust_ir"].get("details") or {}).get("writer"), target=target)
