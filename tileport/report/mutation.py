"""The mutation study's tables and figure (issue 36), from the ``mutation`` and ``mutation_gpu``
verdicts (:mod:`tileport.cpu.mutation`, :mod:`tileport.gpu.mutation_test`).

``summary.csv``: one row per mutant. ``study.json``: counts per kernel, catch rate per detector
(over compiling mutants) and per kind, the mutants exactly one detector catches, those only
tileport's two IR diffs catch (no SASS, grep or GPU check does), the mutants none catches, and
each detector's false-positive rate (flagged variants of the unmutated ports over all such
variants). The LaTeX table and the figure show the rates per kind; the GPU column
shows what ``mutation_gpu`` measured, ``not run`` where it measured nothing.
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from tileport.core.verdict import atomic_write_text  # noqa: E402
from tileport.report import tables  # noqa: E402

#: the detectors of the CPU study, then the GPU column
DETECTORS = ("ir_diff", "runtime_ir", "sass", "grep_count")
GPU = "gpu_test"
LABELS = {"ir_diff": "IR diff", "runtime_ir": "run-time pair", "sass": "SASS", "grep_count": "grep count",
          GPU: "GPU test"}


def rows(studies: list, gpus: list) -> tuple[pd.DataFrame, list[dict]]:
    """One row per mutant, and one record per kernel (its verdict, counts, baseline flags)."""
    gpu_doc = {}
    for p in gpus:
        d = json.loads(Path(p).read_text())
        gpu_doc[(d["op"], d.get("kernel") or Path(p).name.split(".")[0])] = d
    out, kernels = [], []
    for p in studies:
        d = json.loads(Path(p).read_text())
        det = d.get("details") or {}
        g = gpu_doc.get((d["op"], d.get("kernel")))
        gcol = ((g.get("details") or {}).get("mutants") if g else None) or {}
        kernels.append({"op": d["op"], "kernel": d.get("kernel"), "verdict": d["verdict"], "summary": d["summary"],
                        "baseline": (det.get("baseline") or {}).get("flags") or {}})
        for m in det.get("mutants", []):
            r = {"op": d["op"], "kernel": d.get("kernel"), "id": m["id"], "kind": m["kind"],
                 "semantic": m["semantic"], "line": m["line"], "description": m["description"],
                 "compiles": m["compiles"], "rejected_by": (m.get("rejected_by") or {}).get("stage", ""),
                 "ir_identical": m.get("ir_identical", "")}
            for k in DETECTORS:
                r[k] = bool((m.get("caught") or {}).get(k)) if m["compiles"] else ""
            r[GPU] = gcol.get(m["id"], "NOT_RUN" if g is None or g["verdict"] == "NOT_RUN" else g["verdict"]) \
                if m["compiles"] else ""
            r["after"] = m["after"].strip()
            out.append(r)
    return pd.DataFrame(out), kernels


def aggregate(df: pd.DataFrame, kernels: list[dict]) -> dict:
    """The study's numbers (module doc); rates are fractions in [0, 1], None where nothing counts."""
    ok = df[df["compiles"] == True] if len(df) else df  # noqa: E712 - a column of bools and ""
    gpu_measured = bool(len(ok)) and ok[GPU].isin(["CAUGHT", "MISSED"]).any()
    dets = list(DETECTORS) + ([GPU] if gpu_measured else [])

    def caught(frame, k):
        return frame[k] == "CAUGHT" if k == GPU else frame[k] == True  # noqa: E712

    def rate(frame, k):
        return round(float(caught(frame, k).mean()), 4) if len(frame) else None

    per_kernel = (df.groupby(["op", "kernel"]).agg(mutants=("id", "size"), compiling=("compiles", "sum"))
                  .reset_index().to_dict("records") if len(df) else [])
    per_kind = {}
    for kind, f in ok.groupby("kind") if len(ok) else []:
        per_kind[kind] = {"n": int(len(f)), **{k: rate(f, k) for k in dets}}
    hits = ok.assign(n=sum(caught(ok, k).astype(int) for k in dets)) if len(ok) else ok
    only = {k: hits[(hits["n"] == 1) & caught(hits, k)][["op", "kernel", "id", "kind", "description"]]
            .to_dict("records") for k in dets} if len(ok) else {}
    # what only tileport's IR checks see: caught by the hint-free or run-time diff, by no other
    ir_only = hits[(caught(hits, "ir_diff") | caught(hits, "runtime_ir"))
                   & ~caught(hits, "sass") & ~caught(hits, "grep_count")
                   & (~caught(hits, GPU) if GPU in dets else True)][["op", "kernel", "id", "kind", "description",
                                                                      "after"]].to_dict("records") if len(ok) else []
    none = hits[hits["n"] == 0][["op", "kernel", "id", "kind", "description", "ir_identical", "after"]] \
        .to_dict("records") if len(ok) else []
    fp = {}
    for k in DETECTORS:
        flags = [bool(v[k]) for kr in kernels for v in kr["baseline"].values()]
        fp[k] = {"flagged": int(sum(flags)), "variants": len(flags),
                 "rate": round(sum(flags) / len(flags), 4) if flags else None}
    return {"kernels": len(kernels), "mutants": int(len(df)), "compiling": int(len(ok)),
            "not_compiling": {s: int(n) for s, n in df[df["compiles"] == False]["rejected_by"]  # noqa: E712
                              .value_counts().items()} if len(df) else {},
            "per_kernel": per_kernel, "catch_rate": {k: rate(ok, k) for k in dets},
            "catch_rate_semantic": {k: rate(ok[ok["semantic"] == True], k) for k in dets} if len(ok) else {},  # noqa: E712
            "per_kind": per_kind, "only_one_detector": only, "only_tileport_ir": ir_only, "caught_by_none": none,
            "false_positive": fp, "gpu_measured": gpu_measured,
            "verdicts": {kr["op"] + ":" + kr["kernel"]: kr["verdict"] for kr in kernels}}


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.0f} %"


def table(agg: dict) -> pd.DataFrame:
    """Rows: each kind, all mutants, the false-positive rate; columns: each detector (the GPU
    column ``not run`` until measured)."""
    cols = list(DETECTORS) + [GPU]
    out = []
    for kind, r in sorted(agg["per_kind"].items()):
        out.append({"kind": kind, "n": r["n"], **{LABELS[k]: _pct(r.get(k)) if k in r else "not run" for k in cols}})
    out.append({"kind": "all", "n": agg["compiling"],
                **{LABELS[k]: _pct(agg["catch_rate"].get(k)) if k in agg["catch_rate"] else "not run" for k in cols}})
    out.append({"kind": "false positives (unmutated)", "n": agg["false_positive"]["ir_diff"]["variants"],
                **{LABELS[k]: _pct(agg["false_positive"][k]["rate"]) if k in agg["false_positive"] else "not run"
                   for k in cols}})
    return pd.DataFrame(out)


def figure(agg: dict, out) -> None:
    """Heat map of the catch rate, kinds (rows) x detectors (columns)."""
    kinds = sorted(agg["per_kind"])
    dets = [k for k in list(DETECTORS) + [GPU] if k in agg["catch_rate"]]
    grid = [[(agg["per_kind"][k].get(d) or 0.0) for d in dets] for k in kinds] or [[0.0] * len(dets)]
    fig, ax = plt.subplots(figsize=(1.1 * len(dets) + 2.2, 0.28 * max(len(kinds), 1) + 1.2))
    im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for i, k in enumerate(kinds):
        for j, d in enumerate(dets):
            ax.text(j, i, f"{100 * grid[i][j]:.0f}", ha="center", va="center", fontsize=7,
                    color="white" if grid[i][j] < 0.6 else "black")
    ax.set_xticks(range(len(dets)), [LABELS[d] for d in dets], fontsize=8)
    ax.set_yticks(range(len(kinds)), [f"{k} ({agg['per_kind'][k]['n']})" for k in kinds], fontsize=7)
    ax.set_title(f"catch rate (%) of {agg['compiling']} compiling mutants, {agg['kernels']} kernels", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.04)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def build(studies: list, gpus: list, out_csv, out_json, out_tex, out_fig) -> dict:
    """Write summary.csv, study.json, the LaTeX table (+ its CSV and HTML beside it) and the
    figure; returns study.json's document with a ``headline``."""
    df, kernels = rows(studies, gpus)
    atomic_write_text(out_csv, df.to_csv(index=False, lineterminator="\n"))
    agg = aggregate(df, kernels)
    agg["headline"] = (f"{agg['mutants']} mutants of {agg['kernels']} kernels, {agg['compiling']} compile; catch "
                       "rate " + ", ".join(f"{k} {_pct(v)}" for k, v in agg["catch_rate"].items())
                       + f"; {len(agg['caught_by_none'])} caught by none")
    atomic_write_text(out_json, json.dumps(agg, indent=1, default=str) + "\n")
    t = table(agg)
    tex = Path(out_tex)
    tables.write(t, {}, {"tex": tex, "csv": tex.with_suffix(".csv"), "html": tex.with_suffix(".html")},
                 "Mutation study: share of compiling mutants each check catches, per mutation kind; last row: "
                 "share of the unmutated ports' variants each check flags.", "tab:mutation",
                 [{"field": "studies", "value": str(len(kernels))},
                  {"field": "headline", "value": agg["headline"]}])
    figure(agg, out_fig)
    return agg
