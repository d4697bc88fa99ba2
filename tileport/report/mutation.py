"""The mutation study's tables and figure (issue 36), from the ``mutation`` and ``mutation_gpu``
verdicts (:mod:`tileport.cpu.mutation`, :mod:`tileport.gpu.mutation_test`).

``summary.csv``: one row per mutant. ``study.json``: counts per kernel, catch rate per detector
(over compiling mutants) and per kind, the mutants exactly one detector catches, those only
tileport's two IR diffs catch (no SASS, grep or GPU check does), the mutants none catches, and
each detector's false-positive rate (flagged variants of the unmutated ports over all such
variants). The LaTeX table and the figure show the rates per kind; the GPU columns
show what ``mutation_gpu`` measured (any shape, and the manifest's test shapes alone, over the
mutants it ran), ``not run`` where it measured nothing; ``study.json`` ``gpu`` lists the
mutants only the numeric test catches, those only the IR checks catch, and those caught only on
unseen shapes. ``python -m tileport.report.mutation --results results`` writes them without
Snakemake.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from tileport.core.verdict import atomic_write_text  # noqa: E402
from tileport.report import tables  # noqa: E402

#: the detectors of the CPU study, then the GPU column (any shape) and its part on the
#: manifest's test shapes alone (what the unseen shapes add is the difference)
DETECTORS = ("ir_diff", "runtime_ir", "sass", "grep_count")
GPU = "gpu_test"
GPU_TEST = "gpu_test_shapes"
LABELS = {"ir_diff": "IR diff", "runtime_ir": "run-time pair", "sass": "SASS", "grep_count": "grep count",
          GPU: "GPU test", GPU_TEST: "GPU test, test shapes only"}
#: the GPU column's words a mutant was measured with (NOT_RUN: not measured)
GPU_MEASURED = ("CAUGHT", "MISSED")


#: kernel families (issue 36 counts compiling mutants per family), first that holds, by the ops
#: of the kernel's reference Tile IR (its first variant): an ``mma`` with ``exp`` / ``exp2`` is
#: attention, without them matmul; a ``reduce`` a reduction (norms, softmax, losses);
#: ``load_ptr_tko`` / ``store_ptr_tko`` without those gather / scatter; else elementwise
FAMILIES = (("attention", (r"= mma[fi]\b", r"= exp2?\b")), ("matmul", (r"= mma[fi]\b",)),
            ("reduction", (r"= reduce\b",)), ("gather/scatter", (r"= (load|store)_ptr_tko\b",)),
            ("elementwise", ()))


def family(tileir: str) -> str:
    """The kernel family (:data:`FAMILIES`) of a reference Tile IR text."""
    return next(name for name, pats in FAMILIES if all(re.search(p, tileir) for p in pats))


def family_of(results: Path, op: str, kernel: str) -> str:
    """:func:`family` of ``kernel``'s reference Tile IR under ``results/<op>/ref/<kernel>/``
    (the first variant's text), ``unknown`` where there is none."""
    texts = sorted((Path(results) / op / "ref" / kernel).glob("*.tileir"))
    return family(texts[0].read_text()) if texts else "unknown"


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
        gdet = (g.get("details") or {}) if g else {}
        gcol = gdet.get("mutants") or {}
        grec = {r["id"]: r for r in gdet.get("records") or []}
        fam = family_of(Path(p).parents[2], d["op"], d.get("kernel"))
        kernels.append({"op": d["op"], "kernel": d.get("kernel"), "family": fam, "verdict": d["verdict"],
                        "summary": d["summary"],
                        "baseline": (det.get("baseline") or {}).get("flags") or {},
                        "gpu_baseline": gdet.get("baseline") or {}})
        for m in det.get("mutants", []):
            r = {"op": d["op"], "kernel": d.get("kernel"), "family": fam, "id": m["id"], "kind": m["kind"],
                 "semantic": m["semantic"], "line": m["line"], "description": m["description"],
                 "compiles": m["compiles"], "rejected_by": (m.get("rejected_by") or {}).get("stage", ""),
                 "ir_identical": m.get("ir_identical", "")}
            for k in DETECTORS:
                r[k] = bool((m.get("caught") or {}).get(k)) if m["compiles"] else ""
            r[GPU] = gcol.get(m["id"], "NOT_RUN" if g is None or g["verdict"] == "NOT_RUN" else g["verdict"]) \
                if m["compiles"] else ""
            gr = grec.get(m["id"]) or {}
            # the GPU column's outcome (test / unseen / crashed / missed / rejected / not_run),
            # where a crash happened, and why
            r["gpu_outcome"], r["gpu_on"], r["gpu_why"] = gr.get("outcome", ""), gr.get("on", ""), gr.get("why", "")
            r[GPU_TEST] = ("" if not m["compiles"] else "NOT_RUN" if r[GPU] not in GPU_MEASURED
                           else "CAUGHT" if r[GPU] == "CAUGHT" and r["gpu_on"] == "test" else "MISSED")
            r["after"] = m["after"].strip()
            out.append(r)
    return pd.DataFrame(out), kernels


def aggregate(df: pd.DataFrame, kernels: list[dict]) -> dict:
    """The study's numbers (module doc); rates are fractions in [0, 1], None where nothing counts."""
    ok = df[df["compiles"] == True] if len(df) else df  # noqa: E712 - a column of bools and ""
    gpu_measured = bool(len(ok)) and ok[GPU].isin(GPU_MEASURED).any()
    dets = list(DETECTORS) + ([GPU, GPU_TEST] if gpu_measured else [])

    def caught(frame, k):
        return frame[k] == "CAUGHT" if k in (GPU, GPU_TEST) else frame[k] == True  # noqa: E712

    def rate(frame, k):
        # the GPU column over the mutants it measured (a mutant left NOT_RUN counts nowhere)
        if k in (GPU, GPU_TEST):
            frame = frame[frame[GPU].isin(GPU_MEASURED)]
        return round(float(caught(frame, k).mean()), 4) if len(frame) else None

    per_kernel = (df.groupby(["op", "kernel"]).agg(mutants=("id", "size"), compiling=("compiles", "sum"))
                  .reset_index().to_dict("records") if len(df) else [])
    # compiling mutants and kernels per family (issue 36 asks for >= 20 compiling mutants per family)
    per_family = {fam: {"kernels": sum(1 for kr in kernels if kr.get("family") == fam),
                        "compiling": int((ok["family"] == fam).sum()) if len(ok) else 0,
                        **({k: rate(ok[ok["family"] == fam], k) for k in dets} if len(ok) else {})}
                  for fam in sorted({kr.get("family", "unknown") for kr in kernels})}
    per_kind = {}
    for kind, f in ok.groupby("kind") if len(ok) else []:
        per_kind[kind] = {"n": int(len(f)), **{k: rate(f, k) for k in dets}}
    counted = [k for k in dets if k != GPU_TEST]       # a part of the GPU column is no detector of its own
    hits = ok.assign(n=sum(caught(ok, k).astype(int) for k in counted)) if len(ok) else ok
    only = {k: hits[(hits["n"] == 1) & caught(hits, k)][["op", "kernel", "id", "kind", "description"]]
            .to_dict("records") for k in counted} if len(ok) else {}
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
    if gpu_measured:     # the numeric test's: (variant, shape) cases the unmutated port fails
        flags = [b["status"] != "ok" for kr in kernels for b in kr["gpu_baseline"].values()]
        fp[GPU] = {"flagged": int(sum(flags)), "cases": len(flags),
                   "rate": round(sum(flags) / len(flags), 4) if flags else None}
    gpu = {}
    if gpu_measured:
        m = ok[ok[GPU].isin(GPU_MEASURED)]
        cols = ["op", "kernel", "id", "kind", "description", "gpu_outcome", "gpu_why", "after"]
        ir = caught(m, "ir_diff") | caught(m, "runtime_ir")
        gpu = {"measured": int(len(m)), "not_run": int(len(ok) - len(m)),
               "outcomes": {o: int(n) for o, n in ok["gpu_outcome"].replace("", "not_run").value_counts().items()},
               "outcomes_per_kind": {kind: {o: int(n) for o, n in f["gpu_outcome"].value_counts().items()}
                                     for kind, f in m.groupby("kind")},
               # what the numeric test sees that tileport's IR checks do not, and the reverse
               "only_gpu_not_ir": m[caught(m, GPU) & ~ir][cols].to_dict("records"),
               "only_ir_not_gpu": m[ir & ~caught(m, GPU)][cols].to_dict("records"),
               "only_unseen": m[m["gpu_outcome"] == "unseen"][cols].to_dict("records")}
    return {"kernels": len(kernels), "mutants": int(len(df)), "compiling": int(len(ok)),
            "not_compiling": {s: int(n) for s, n in df[df["compiles"] == False]["rejected_by"]  # noqa: E712
                              .value_counts().items()} if len(df) else {},
            "per_kernel": per_kernel, "per_family": per_family, "catch_rate": {k: rate(ok, k) for k in dets},
            "catch_rate_semantic": {k: rate(ok[ok["semantic"] == True], k) for k in dets} if len(ok) else {},  # noqa: E712
            "per_kind": per_kind, "only_one_detector": only, "only_tileport_ir": ir_only, "caught_by_none": none,
            "false_positive": fp, "gpu_measured": gpu_measured, "gpu": gpu,
            "verdicts": {kr["op"] + ":" + kr["kernel"]: kr["verdict"] for kr in kernels}}


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.0f} %"


def table(agg: dict) -> pd.DataFrame:
    """Rows: each kind, all mutants, the false-positive rate; columns: each detector (the GPU
    column ``not run`` until measured)."""
    cols = list(DETECTORS) + [GPU, GPU_TEST]
    out = []
    for kind, r in sorted(agg["per_kind"].items()):
        out.append({"kind": kind, "n": r["n"], **{LABELS[k]: _pct(r.get(k)) if k in r else "not run" for k in cols}})
    out.append({"kind": "all", "n": agg["compiling"],
                **{LABELS[k]: _pct(agg["catch_rate"].get(k)) if k in agg["catch_rate"] else "not run" for k in cols}})
    out.append({"kind": "false positives (unmutated)", "n": agg["false_positive"]["ir_diff"]["variants"],
                **{LABELS[k]: _pct(agg["false_positive"][k]["rate"]) if k in agg["false_positive"] else "not run"
                   for k in cols}})
    if GPU in agg["false_positive"]:       # its rate is over (variant, shape) cases, not variants
        fpg = agg["false_positive"][GPU]
        out[-1][LABELS[GPU]] += f" of {fpg['cases']} cases"
        out[-1][LABELS[GPU_TEST]] = ""
    return pd.DataFrame(out)


def figure(agg: dict, out) -> None:
    """Heat map of the catch rate, kinds (rows) x detectors (columns)."""
    kinds = sorted(agg["per_kind"])
    dets = [k for k in list(DETECTORS) + [GPU, GPU_TEST] if k in agg["catch_rate"]]
    grid = [[(agg["per_kind"][k].get(d) or 0.0) for d in dets] for k in kinds] or [[0.0] * len(dets)]
    fig, ax = plt.subplots(figsize=(1.1 * len(dets) + 2.2, 0.28 * max(len(kinds), 1) + 1.2))
    im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for i, k in enumerate(kinds):
        for j, d in enumerate(dets):
            ax.text(j, i, f"{100 * grid[i][j]:.0f}", ha="center", va="center", fontsize=7,
                    color="white" if grid[i][j] < 0.6 else "black")
    ax.set_xticks(range(len(dets)), [LABELS[d] for d in dets], fontsize=8)
    ax.set_yticks(range(len(kinds)), [f"{k} ({agg['per_kind'][k]['n']})" for k in kinds], fontsize=7)
    gpu = (f"; GPU over the {agg['gpu']['measured']} it ran" if agg.get("gpu") else "")
    ax.set_title(f"catch rate (%) of {agg['compiling']} compiling mutants, {agg['kernels']} kernels{gpu}", fontsize=8)
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


def main(argv=None) -> int:
    """Command line: the tables from a results tree without Snakemake (after the GPU column came
    back from a GPU node: a Snakemake run on a machine without a GPU could redo ``mutation_gpu``
    and write NOT_RUN over it). Every ``<results>/mutation/<op>/<kernel>.json`` with its
    ``.gpu.json`` where there is one."""
    ap = argparse.ArgumentParser(description="tileport mutation study: the tables and figure")
    ap.add_argument("--results", default="results")
    a = ap.parse_args(argv)
    r = Path(a.results)
    studies = sorted(p for p in (r / "mutation").glob("*/*.json") if p.name.count(".") == 1)
    if not studies:
        print(f"no study under {r / 'mutation'}", file=sys.stderr)
        return 1
    gpus = [g for p in studies if (g := p.with_name(f"{p.stem}.gpu.json")).exists()]
    s = build(studies, gpus, r / "mutation/summary.csv", r / "mutation/study.json", r / "paper/mutation.tex",
              r / "paper/figures/mutation.svg")
    print(s["headline"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
