"""Stage ``summary``: ``results/summary.csv``, one row per (op, kernel, variant).

Columns (stable; papers and scripts read them): ``op,kernel,variant,analyze,reference_ir,
write_kernel,rust_ir,ir_diff,attempts,test,ratio`` then ``rust_build,owner,note``. Each stage
column holds that stage's verdict word, ``missing`` when its verdict file is absent or
invalid, ``not_run`` for stages that do not exist yet (``test``, ``ratio``: GPU stages).
An operator whose manifest is malformed gets one row with kernel/variant ``-``.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

from .verdict import VerdictError, atomic_write_text, read

COLUMNS = ["op", "kernel", "variant", "analyze", "reference_ir", "write_kernel", "rust_ir",
           "ir_diff", "attempts", "test", "ratio", "rust_build", "owner", "note", "diagnosis"]


def _v(path: Path) -> dict | None:
    try:
        return read(path)
    except VerdictError:
        return None


def _word(doc: dict | None) -> str:
    return doc["verdict"] if doc else "missing"


def rows_for(results: Path, op: str, variants: list, manifest_error: str | None) -> list[dict]:
    """Summary rows of one operator, read from its verdict files under ``results/<op>``."""
    r = results / op
    an = _v(r / "analysis.json")
    if manifest_error or not variants:
        return [{"op": op, "kernel": "-", "variant": "-", "analyze": _word(an),
                 "reference_ir": "not_run", "write_kernel": "not_run", "rust_ir": "not_run",
                 "ir_diff": "not_run", "attempts": 0, "test": "not_run", "ratio": "not_run",
                 "rust_build": "not_run", "owner": (an or {}).get("owner") or "kernel",
                 "note": (manifest_error or (an or {}).get("summary", "")).replace("\n", " ")[:300],
                 "diagnosis": ""}]
    build = _v(r / "rust" / "build.json")
    out = []
    for kernel, variant in variants:
        wk = _v(r / "write_kernel" / f"{kernel}.json")
        ref = _v(r / "ref" / kernel / f"{variant}.json")
        rir = _v(r / "rust_ir" / kernel / f"{variant}.json")
        dif = _v(r / "ir_diff" / kernel / f"{variant}.json")
        dia = _v(r / "diagnosis" / kernel / f"{variant}.json")
        # the note is the first non-passing stage's own summary, in pipeline order
        note, owner = "", ""
        for d in (an, ref, wk, build, rir, dif):
            if d is None:
                note = note or "a verdict file is missing"
                break
            if d["verdict"] not in ("PASS", "PASS_WITH_NOTES"):
                note, owner = f"{d['stage']}: {d['summary']}", d.get("owner") or ""
                break
        if not note and dif is not None:
            fd = (dif.get("details") or {}).get("first_divergence")
            note = dif["summary"] if dif["verdict"] != "PASS" else ""
            if fd and not note:
                note = fd.get("message", "")
        out.append({
            "op": op, "kernel": kernel, "variant": variant, "analyze": _word(an),
            "reference_ir": _word(ref), "write_kernel": _word(wk), "rust_ir": _word(rir),
            "ir_diff": _word(dif), "attempts": (wk or {}).get("attempt", 0),
            "test": "not_run", "ratio": "not_run", "rust_build": _word(build),
            "owner": owner, "note": note.replace("\n", " ")[:300],
            "diagnosis": (dia["summary"] if dia and dia["verdict"] == "FAIL" else "")[:500],
        })
    return out


def write_summary(results: str | Path, ops: list, variants: dict, manifest_errors: dict,
                  out_csv: str | Path, skipped: dict | None = None) -> list[dict]:
    """Write ``summary.csv`` (atomically) for ``ops`` (+ one ``not_run`` row per ``skipped``
    folder, with its reason); returns the rows."""
    results = Path(results)
    rows = []
    for name, why in (skipped or {}).items():
        rows.append({c: "not_run" for c in COLUMNS} | {"op": name, "kernel": "-", "variant": "-",
                                                      "attempts": 0, "owner": "kernel",
                                                      "note": why.replace("\n", " ")[:300],
                                                      "diagnosis": ""})
    for op in ops:
        rows += rows_for(results, op, [tuple(x) for x in variants.get(op, [])],
                         manifest_errors.get(op))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(out_csv, buf.getvalue())
    return rows


def format_table(csv_path: str | Path, columns=("op", "kernel", "variant", "analyze", "reference_ir",
                                                "write_kernel", "rust_ir", "ir_diff")) -> str:
    """A fixed-width text table of ``summary.csv`` (chosen columns) plus verdict counts."""
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    widths = {c: max([len(c)] + [len(r.get(c, "")) for r in rows]) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns)]
    lines += ["  ".join(r.get(c, "").ljust(widths[c]) for c in columns) for r in rows]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["ir_diff"]] = counts.get(r["ir_diff"], 0) + 1
    lines.append("ir_diff: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                 + f" ({len(rows)} rows)")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(format_table(sys.argv[1] if len(sys.argv) > 1 else "results/summary.csv"))
