"""The report's data, read from verdicts only: ``summary.csv``, ``summary_ops.csv`` and the GPU
verdicts (``bench.json``, ``test.json``) of each operator's last GPU round.

Every function returns a pandas DataFrame (or a dict for provenance) that a rule of
``rules/report.smk`` writes under ``results/report/data/``; figures and tables read those files.
Times are in µs (CUPTI device time, or wall time per call for the host overhead and loop
columns); a ratio is reference time / port time (> 1: the port is faster).
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from tileport.core.verdict import VerdictError, read
from tileport.gpu.fold import DEFAULTS, MEASURED, loop_class
from tileport.gpu.perf_diagnose import OUTLIER_BAND
from tileport.report.summary import bench_failure, current_bench, last_round

from .interval import geomean_interval

# per-config columns of bench.json's details.rows the report uses (µs unless a ratio)
CONFIG_COLUMNS = ["op", "kernel", "variant", "shape", "reps", "ref_us", "port_us", "torch_us",
                  "ratio", "vs_torch", "ref_vs_torch", "ref_host_overhead_us",
                  "port_host_overhead_us"]
# loop timing (per-call time of back-to-back calls): drawn when the benchmark recorded it; the
# loop ratio's 95 % interval and cycles (rows timed before it existed have none), the host time
# per call (the enqueue alone, µs), the loop ratio before a selective re-timing (details.retimed),
# the harness version (only the current one's rows are gated: tileport.gpu.fold.current_harness)
LOOP_COLUMNS = ["ref_loop_us", "port_loop_us", "torch_loop_us", "loop_ratio", "loop_ratio_lo",
                "loop_ratio_hi", "loop_cycles", "ref_host_us", "port_host_us", "loop_ratio_prev", "harness"]
# ... and the row's own date (UTC, ISO 8601; rows timed before it existed have none)
LOOP_TEXT = ["timed_at"]
# the matched reading (reference / port device time, the reference compiled under the port's
# launch facts: tileport.gpu.matched; rows timed before it existed have none) and the cause
# perf_diagnose named for a config outside its band (the row's own ``cause``, else
# perf_diagnosis.json ``details.outliers``): columns only when some row has them
MATCHED_COLUMNS = ["ratio_matched"]
CAUSE_TEXT = ["cause"]
#: the outlier table's text where no cause was named
NOT_DIAGNOSED = "not diagnosed"
# stages of the coverage matrix: summary.csv column -> stage name shown
STAGES = {"analyze": "analyze", "reference_ir": "reference_ir", "write_kernel": "write_kernel",
          "rust_ir": "rust_ir", "ir_diff": "ir_diff", "test": "gpu_test", "ratio": "bench"}
# verdict classes of a coverage cell, worst first
CLASSES = ["error", "fail", "blocked", "below", "notes", "pass", "not_run"]


def read_csv(path: str | Path) -> pd.DataFrame:
    """A CSV written by tileport, every cell as text ('' for empty): numbers are parsed where a
    column is known to hold them, never guessed (summary.csv mixes numbers and reasons)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def number(text) -> float | None:
    """``text`` as a finite float, or None (``not_run (...)``, ``stale (...)``, ``''``, ...)."""
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _verdict(path: Path) -> dict | None:
    try:
        return read(path)
    except VerdictError:
        return None


def _round_root(results: Path, op: str) -> Path:
    return last_round(results, op)[1]


def configs(results: str | Path, summary_csv: str | Path) -> pd.DataFrame:
    """One row per benchmarked config (kernel x variant x perf shape) of every operator:
    :data:`CONFIG_COLUMNS` (+ :data:`LOOP_COLUMNS` and :data:`LOOP_TEXT` when any row has loop
    timing, ``ratio_matched`` when any row has the matched reading, ``cause`` when any config has
    one) and ``round``, from ``details.rows`` of the operator's last GPU round's ``bench.json``.
    Only variants whose ``summary.csv`` ratio is a number count (a stale, not-run or failed
    measurement is not a result), and only configs that ran without error.
    ``loop_ratio_prev`` is set only on a row that a selective run (``--configs``,
    ``--configs-below-loop``; ``details.retimed``) timed again over a kept loop ratio. ``cause``:
    the row's own field, else the cause the round's ``perf_diagnosis.json`` names for the config
    (``details.outliers``, :func:`tileport.gpu.perf_diagnose.outliers`); empty for the others."""
    results = Path(results)
    summ = read_csv(summary_csv)
    measured = {(r.op, r.kernel, r.variant) for r in summ.itertuples() if number(r.ratio) is not None}
    rows = []
    for op in dict.fromkeys(summ["op"]):
        if not any(m[0] == op for m in measured):
            continue
        root = _round_root(results, op)
        # as summary.csv took it: its rows still valid against the manifest now (the rest pending)
        b = current_bench(_verdict(root / op / "bench.json"), results.resolve().parent / "operators" / op,
                          results, op)
        if b is None:
            continue
        rnd = 1 if root == results else int(root.name)
        loops = _csv_loops(root / op / "bench.csv")
        causes = diagnosed_causes(root / op / "perf_diagnosis.json")
        for r in (b.get("details") or {}).get("rows") or []:
            if r.get("error") or (op, r.get("kernel"), r.get("variant")) not in measured:
                continue
            key = (r.get("kernel"), r.get("variant"), r.get("shape"))
            row = {**{c: r.get(c) for c in CONFIG_COLUMNS + LOOP_COLUMNS + LOOP_TEXT + MATCHED_COLUMNS},
                   "cause": r.get("cause") or causes.get(key), "op": op, "round": rnd}
            for c, v in loops.get(key, {}).items():
                row[c] = v if row[c] is None else row[c]
            rows.append(row)
    df = pd.DataFrame(rows, columns=CONFIG_COLUMNS + LOOP_COLUMNS + LOOP_TEXT + MATCHED_COLUMNS + CAUSE_TEXT
                      + ["round"])
    if df[LOOP_COLUMNS].isna().all().all():        # no loop timing recorded (or no row)
        df = df.drop(columns=LOOP_COLUMNS + LOOP_TEXT)
    df["ratio_matched"] = pd.to_numeric(df["ratio_matched"], errors="coerce")
    return df.drop(columns=[c for c in MATCHED_COLUMNS + CAUSE_TEXT if df[c].isna().all()])


def diagnosed_causes(path: Path) -> dict:
    """``{(kernel, variant, shape): cause}`` of the configs a ``perf_diagnosis.json`` names
    outside its band (``details.outliers``: :func:`tileport.gpu.perf_diagnose.outliers`); ``{}``
    for a missing or unreadable file and for a diagnosis written before outliers existed."""
    v = _verdict(path) if path.is_file() else None
    out = {}
    for o in ((v or {}).get("details") or {}).get("outliers") or []:
        if isinstance(o, dict) and o.get("cause"):
            out[(o.get("kernel"), o.get("variant"), o.get("shape"))] = str(o["cause"])
    return out


def _csv_loops(path: Path) -> dict:
    """Loop-timing columns of ``bench.csv`` by (kernel, variant, shape), as numbers: the
    benchmark writes them there (and into ``details.rows`` when they are among its columns)."""
    try:
        df = read_csv(path)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return {}
    cols = [c for c in LOOP_COLUMNS if c in df.columns]
    return {(r["kernel"], r["variant"], r["shape"]): {c: number(r[c]) for c in cols}
            for r in df.to_dict("records")} if cols else {}


def _gm(xs) -> float | None:
    xs = [float(x) for x in xs if x is not None and not pd.isna(x) and float(x) > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def loop_classes(cfg: pd.DataFrame, loop_threshold: float) -> pd.Series:
    """Each config's side of the loop gate (``pass``, ``below``, ``undecided``; None without loop
    timing): :func:`tileport.gpu.fold.loop_class`, the benchmark's and the summary's one definition,
    against ``loop_threshold`` (config.yaml ``bench.loop_threshold``), on :func:`configs`' rows."""
    rows = pd.DataFrame({c: _col(cfg, c) for c in ("loop_ratio", "loop_ratio_hi", "harness")}).to_dict("records")
    return pd.Series([loop_class({k: v for k, v in r.items() if pd.notna(v)}, loop_threshold) for r in rows],
                     index=cfg.index, dtype=object)


def operators(cfg: pd.DataFrame, summary_ops_csv: str | Path, loop_threshold: float | None = None) -> pd.DataFrame:
    """One row per operator of ``summary_ops.csv`` plus ``ALL``: ``configs``, ``geomean_ratio``
    with its 95 % bootstrap interval ``ci_low``/``ci_high`` over the operator's configs
    (:func:`tileport.report.interval.geomean_interval`; empty for one config), ``verdict`` (as
    summary_ops.csv judged it, with config.yaml's threshold), ``vs_torch`` and ``ref_vs_torch``
    (geomeans of torch / port and torch / reference time), and when the configs carry loop
    timing ``loop_geomean``, ``loop_ci_low``, ``loop_ci_high`` and the loop gate's counts
    ``loop_below``, ``loop_undecided`` (:func:`loop_classes` against ``loop_threshold``,
    config.yaml ``bench.loop_threshold``, default :data:`tileport.gpu.fold.DEFAULTS`'; empty for an
    operator without loop timing). ALL: every config of every operator (its interval resamples
    configs, not operators)."""
    ops = read_csv(summary_ops_csv)
    loop = "loop_ratio" in cfg.columns
    gate = loop_classes(cfg, DEFAULTS["loop_threshold"] if loop_threshold is None else loop_threshold)
    out = []
    for r in ops.itertuples():
        sub = cfg[cfg["op"] == r.op] if r.op != "ALL" else cfg
        row = {"op": r.op, "configs": len(sub), "verdict": r.verdict,
               "configs_pending": number(getattr(r, "configs_pending", None))}
        row.update(_ratio_cols(sub["ratio"].tolist(), ""))
        row["vs_torch"] = _gm(sub["vs_torch"]) if len(sub) else None
        row["ref_vs_torch"] = _gm(sub["ref_vs_torch"]) if len(sub) else None
        if loop:
            row.update(_ratio_cols([x for x in sub["loop_ratio"] if number(x) is not None], "loop_"))
            g = gate[sub.index]
            if g.notna().any():
                row.update(loop_below=int((g == "below").sum()), loop_undecided=int((g == "undecided").sum()))
        out.append(row)
    cols = ["op", "configs", "geomean_ratio", "ci_low", "ci_high", "verdict", "vs_torch", "ref_vs_torch"]
    if "configs_pending" in ops.columns:        # perf configs not timed yet (summary_ops.csv)
        cols.insert(2, "configs_pending")
    if loop:
        cols += ["loop_geomean", "loop_ci_low", "loop_ci_high", "loop_below", "loop_undecided"]
    return pd.DataFrame(out, columns=cols)


def loop_gate(cfg: pd.DataFrame, loop_threshold: float) -> tuple[pd.DataFrame, dict]:
    """The loop gate per config, from :func:`configs`' frame: (the configs whose gate is not
    passed, counts). The configs: :func:`loop_classes` ``below`` first, then ``undecided``, each
    lowest loop ratio first, with column ``gate`` (``below``, ``undecided``; ``below, no
    interval`` for a row timed before the loop ratio had its interval: its ratio alone judged)
    beside their loop columns (times in µs per call). Counts: ``timed`` (configs with loop
    timing), ``pass``, ``below``, ``undecided``, ``retimed`` (configs re-timed by a selective run:
    ``loop_ratio_prev`` set) and ``retimed_pass`` (of those, passing now). ``loop_threshold``:
    config.yaml ``bench.loop_threshold``."""
    gate = loop_classes(cfg, loop_threshold)
    prev = _col(cfg, "loop_ratio_prev").notna()
    counts = {"timed": int(gate.notna().sum()), **{c: int((gate == c).sum()) for c in ("pass", "below", "undecided")},
              "retimed": int((prev & gate.notna()).sum()), "retimed_pass": int((prev & (gate == "pass")).sum())}
    out = cfg.assign(gate=gate.where((gate != "below") | _col(cfg, "loop_ratio_hi").notna(), "below, no interval"),
                     _order=gate.map({"below": 0, "undecided": 1}), _ratio=_col(cfg, "loop_ratio"))
    out = out[out["_order"].notna()].sort_values(["_order", "_ratio"], kind="stable")
    return out.drop(columns=["_order", "_ratio"]).reset_index(drop=True), counts


def outside(x, band: float = OUTLIER_BAND) -> bool:
    """``x`` is a ratio below ``1 - band`` or above ``1 + band`` (False for a missing value)."""
    v = number(x)
    return v is not None and (v < 1 - band or v > 1 + band)


def outliers(cfg: pd.DataFrame, band: float = OUTLIER_BAND) -> tuple[pd.DataFrame, dict]:
    """Every config whose ``ratio`` (reference / port device time, as each runtime launches its
    kernel) or ``ratio_matched`` (the matched reading, where the row has one) lies outside
    ``1 +- band`` (:data:`tileport.gpu.perf_diagnose.OUTLIER_BAND`, 3 %: perf_diagnose names
    a cause for these), from :func:`configs`' frame, farthest from parity first (by the
    larger ``|log ratio|`` of the two readings). Returns (rows: ``op, kernel, variant, shape,
    ratio, ratio_matched`` (NaN where absent), ``cause`` (:data:`NOT_DIAGNOSED` where none was
    named); counts: ``configs``, ``matched`` (configs with a matched reading), ``outside``,
    ``outside_ratio``, ``outside_matched`` and ``causes`` ({cause: configs})). A frame without
    the ``ratio_matched`` or ``cause`` column reads as every row lacking them."""
    rm, cause = _col(cfg, "ratio_matched"), _col(cfg, "cause")
    out_r = cfg["ratio"].map(lambda x: outside(x, band)) if len(cfg) else pd.Series(dtype=bool)
    out_m = rm.map(lambda x: outside(x, band)) if len(cfg) else pd.Series(dtype=bool)
    pick = out_r | out_m

    def far(r):
        return max(abs(math.log(x)) for x in (r["ratio"], r["ratio_matched"]) if number(x) and x > 0)

    rows = cfg.loc[pick, ["op", "kernel", "variant", "shape", "ratio"]].assign(
        ratio_matched=rm[pick], cause=[c if isinstance(c, str) and c.strip() else NOT_DIAGNOSED
                                       for c in cause[pick]])
    if len(rows):
        rows = rows.assign(_far=rows.apply(far, axis=1)).sort_values("_far", ascending=False, kind="stable")
    rows = rows.drop(columns=["_far"], errors="ignore").reset_index(drop=True)
    counts = {"configs": len(cfg), "matched": int(rm.notna().sum()), "outside": int(pick.sum()),
              "outside_ratio": int(out_r.sum()), "outside_matched": int(out_m.sum()),
              "causes": {str(c): int(n) for c, n in rows["cause"].value_counts(sort=False).items()}}
    return rows, counts


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    """Column ``name`` of ``df``, all NaN where ``df`` has none."""
    return df[name] if name in df.columns else pd.Series(float("nan"), index=df.index)


def _ratio_cols(ratios: list, prefix: str) -> dict:
    name = "loop_geomean" if prefix else "geomean_ratio"
    ratios = [float(x) for x in ratios]
    if not ratios:
        return {name: None, f"{prefix}ci_low": None, f"{prefix}ci_high": None}
    iv = geomean_interval(ratios)
    if iv is None:
        return {name: ratios[0], f"{prefix}ci_low": None, f"{prefix}ci_high": None}
    return {name: iv[0], f"{prefix}ci_low": iv[1], f"{prefix}ci_high": iv[2]}


def verdict_class(stage: str, text: str, threshold: float) -> str:
    """The coverage class (:data:`CLASSES`) of one summary.csv cell: a stage verdict word, the
    ``test`` column (PASS / FAIL / ``not_run (...)``) or the ``ratio`` column (a number judged
    against ``threshold``, or a verdict word / reason)."""
    t = (text or "").strip()
    if stage == "ratio":
        x = number(t)
        if x is not None:
            return "pass" if x >= threshold else "below"
    word = t.split(" ", 1)[0].upper()
    # REF_DEFECT / FAITHFUL_REF_DEFECT: the port is faithful to a reference with a declared defect
    # (tileport.model.defects): it passes, with a note
    return {"PASS": "pass", "ALL_PASS": "pass", "DONE": "pass", "PASS_WITH_NOTES": "notes",
            "REF_DEFECT": "notes", "FAITHFUL_REF_DEFECT": "notes",
            "BELOW_THRESHOLD": "below", "FAIL": "fail", "BLOCKED": "blocked",
            "ERROR": "error"}.get(word, "not_run")


def coverage(summary_csv: str | Path, threshold: float) -> pd.DataFrame:
    """Kernel x stage coverage, one row per (op, kernel, stage): ``source`` (summary.csv's
    ``source`` column when it has one, else ``operators/<op>``), ``verdict`` = the worst class
    over the kernel's variants that ran the stage (``not_run`` when none did; the bench's is
    summary.csv's ``bench`` word where it says FAIL or ERROR, else the ``ratio`` judged against
    ``threshold``), ``passed`` (variants
    whose class is pass or notes) and ``variants``. Rows of an operator with no kernel (a
    malformed manifest) have kernel ``-``. Order: operators and kernels as in summary.csv."""
    summ = read_csv(summary_csv)
    has_source = "source" in summ.columns
    out = []
    for (op, kernel), grp in summ.groupby(["op", "kernel"], sort=False):
        src = next((s for s in grp["source"] if s), "") if has_source else ""
        for col, stage in STAGES.items():
            cls = [verdict_class(col, v, threshold) for v in grp[col]]
            if col == "ratio" and "bench" in grp.columns:
                # a timed variant whose timed output missed: its ratio is a number, its bench FAIL
                cls = [verdict_class("bench", b, threshold) if bench_failure(b) else c
                       for c, b in zip(cls, grp["bench"])]
            ran = [c for c in cls if c != "not_run"]
            worst = min(ran, key=CLASSES.index) if ran else "not_run"
            out.append({"op": op, "kernel": kernel, "source": src or f"operators/{op}",
                        "stage": stage, "verdict": worst,
                        "passed": sum(c in ("pass", "notes") for c in cls), "variants": len(cls)})
    return pd.DataFrame(out, columns=["op", "kernel", "source", "stage", "verdict", "passed", "variants"])


def coverage_families(cov: pd.DataFrame) -> pd.DataFrame:
    """Per operator family (one operator folder) and ``ALL``: ``kernels``, ``ir_pass`` (kernels
    whose every variant's IR diff is PASS / PASS_WITH_NOTES) and ``gpu_pass`` (kernels whose
    every variant passed the GPU test), from :func:`coverage`'s rows."""
    out = []

    def count(sub):
        ks = sub[sub["kernel"] != "-"].groupby("kernel", sort=False)
        ir = sum(1 for _, g in ks if ((g["stage"] == "ir_diff") & (g["passed"] == g["variants"])
                                      & (g["variants"] > 0)).any())
        gpu = sum(1 for _, g in ks if ((g["stage"] == "gpu_test") & (g["passed"] == g["variants"])
                                       & (g["variants"] > 0)).any())
        return {"kernels": len(ks), "ir_pass": ir, "gpu_pass": gpu}

    for op, sub in cov.groupby("op", sort=False):
        out.append({"family": op, "source": sub["source"].iloc[0], **count(sub)})
    # ALL: kernels named op/kernel (two operators may have kernels of the same name)
    out.append({"family": "ALL", "source": "", **count(cov.assign(
        kernel=cov["kernel"].where(cov["kernel"] == "-", cov["op"] + "/" + cov["kernel"])))})
    return pd.DataFrame(out, columns=["family", "source", "kernels", "ir_pass", "gpu_pass"])


def llm_use(summary_csv: str | Path, summary_ops_csv: str | Path) -> pd.DataFrame:
    """LLM use per kernel: ``attempts`` (kernel-writer attempts behind the published port),
    ``llm_calls``, ``tokens_in``, ``tokens_out`` (the writer's and the IR diagnoser's calls for that
    kernel, as summary.csv counts them), plus one row per operator with kernel ``(other roles)``
    holding what summary_ops.csv counts beyond its kernels (analyser, host builder, perf
    diagnoser). Integers; a kernel row per (op, kernel) of summary.csv."""
    summ, ops = read_csv(summary_csv), read_csv(summary_ops_csv)
    out = []
    num = lambda x: int(float(x)) if number(x) is not None else 0  # noqa: E731
    for (op, kernel), g in summ.groupby(["op", "kernel"], sort=False):
        if kernel == "-":
            continue
        r = g.iloc[0]
        out.append({"op": op, "kernel": kernel, "attempts": max(num(a) for a in g["attempts"]),
                    "llm_calls": num(r["llm_calls"]), "tokens_in": num(r["tokens_in"]),
                    "tokens_out": num(r["tokens_out"])})
    df = pd.DataFrame(out, columns=["op", "kernel", "attempts", "llm_calls", "tokens_in", "tokens_out"])
    other = []
    for r in ops.itertuples():
        if r.op == "ALL":
            continue
        k = df[df["op"] == r.op]
        rest = {c: num(getattr(r, c)) - int(k[c].sum()) for c in ("llm_calls", "tokens_in", "tokens_out")}
        if any(v > 0 for v in rest.values()):
            other.append({"op": r.op, "kernel": "(other roles)", "attempts": 0, **rest})
    return pd.concat([df, pd.DataFrame(other, columns=df.columns)], ignore_index=True) if other else df


# --- provenance -------------------------------------------------------------------------------
UNKNOWN = "unknown"


def _tileiras(text: str) -> str:
    import re

    m = re.search(r"\bV(\d+(?:\.\d+)+)", text or "")
    return m.group(1) if m else (text or UNKNOWN)


def flat_provenance(details: dict) -> dict:
    """One GPU verdict's provenance as flat fields: ``details.provenance`` (written by
    :func:`tileport.core.provenance.collect` on the GPU node), completed from ``details.env``
    (device, driver, torch, CUDA runtime, Python, cuda-tile, tileiras: what verdicts written
    before provenance existed record); ``unknown`` where neither says."""
    p = details.get("provenance") if isinstance(details.get("provenance"), dict) else {}
    env = details.get("env") if isinstance(details.get("env"), dict) else {}
    gpu, ver = p.get("gpu") or {}, p.get("versions") or {}
    tp, tg = p.get("tileport") or {}, p.get("tilegym") or {}

    def pick(*vals):
        return next((str(v) for v in vals if v not in (None, "", UNKNOWN, "not installed")), UNKNOWN)

    name = pick(gpu.get("name"), env.get("device"))
    cap = env.get("capability")
    b = p.get("bench") or {}
    return {
        "gpu": f"{name} ({cap})" if cap and name != UNKNOWN else name,
        "driver": pick(gpu.get("driver"), env.get("driver")),
        "cuda_driver": pick(gpu.get("cuda_driver")),
        "cuda_runtime": pick(ver.get("cuda_runtime"), env.get("torch_cuda")),
        "sm_clock_mhz": gpu.get("sm_clock_mhz", UNKNOWN), "mem_clock_mhz": gpu.get("mem_clock_mhz", UNKNOWN),
        "sm_clock_max_mhz": gpu.get("sm_clock_max_mhz", UNKNOWN),
        "mem_clock_max_mhz": gpu.get("mem_clock_max_mhz", UNKNOWN),
        "cuda_tile": pick(ver.get("cuda_tile"), env.get("cuda_tile")),
        "tileiras": pick(ver.get("tileiras"), _tileiras(env.get("tileiras", "")) if env.get("tileiras") else None),
        "cutile": pick(ver.get("cutile")), "torch": pick(ver.get("torch"), env.get("torch")),
        "python": pick(ver.get("python"), env.get("python")),
        "commit": pick(tp.get("describe")),
        "tilegym": pick(tg.get("version")), "tilegym_sha256": pick(tg.get("wheel_sha256")),
        "config_sha256": pick(p.get("config_sha256")),
        "bench": bench_text(b) if b else UNKNOWN,
        "date": pick(p.get("date")),
    }


def bench_text(b: dict) -> str:
    """Benchmark settings (config.yaml ``bench`` keys) as one line, e.g. ``warm-up 20 ms, 150 ms
    per side and config, 10-100 reps, L2 flush 256 MiB, seed 0``; keys it does not know are
    appended as ``key=value``."""
    known = {"warmup_ms", "rep_ms", "min_reps", "max_reps", "l2_flush_mib", "seed", "threshold"}
    parts = []
    if "warmup_ms" in b:
        parts.append(f"warm-up {b['warmup_ms']} ms")
    if "rep_ms" in b:
        parts.append(f"{b['rep_ms']} ms per side and config")
    if "min_reps" in b or "max_reps" in b:
        parts.append(f"{b.get('min_reps', '?')}-{b.get('max_reps', '?')} reps")
    if "l2_flush_mib" in b:
        parts.append(f"L2 flush {b['l2_flush_mib']} MiB")
    if "seed" in b:
        parts.append(f"seed {b['seed']}")
    if "threshold" in b:
        parts.append(f"threshold {b['threshold']}")
    parts += [f"{k}={b[k]}" for k in sorted(b) if k not in known]
    return ", ".join(parts)


def _merge(values: list[tuple[str, object]]) -> str:
    """One table cell from (op, value) pairs: the value when all agree; for numbers the range
    ``min-max``; else each distinct value with its operators."""
    vals = [v for _, v in values]
    if not vals:
        return UNKNOWN
    if all(v == vals[0] for v in vals):
        return str(vals[0])
    nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(nums) == len(vals):
        return f"{min(nums):g}-{max(nums):g}"
    groups: dict[str, list[str]] = {}
    for op, v in values:
        groups.setdefault(str(v), []).append(op)
    return "; ".join(f"{v} ({', '.join(dict.fromkeys(ops))})" for v, ops in groups.items())


def measured_ops(summary_csv: str | Path) -> list[str]:
    """Operators with a GPU measurement summary.csv shows (a PASS/REF_DEFECT/FAIL test or a numeric ratio;
    stale and not-run ones are not measurements)."""
    summ = read_csv(summary_csv)
    ok = summ[summ["test"].isin(["PASS", "REF_DEFECT", "FAIL"]) | summ["ratio"].map(lambda x: number(x) is not None)]
    return list(dict.fromkeys(ok["op"]))


def provenance(results: str | Path, summary_csv: str | Path, report_side: dict,
               threshold: float | None = None) -> dict:
    """Provenance of the report: ``ops`` = {op: {"gpu_test": fields, "bench": fields}} from the
    last GPU round's verdicts (:func:`flat_provenance`) of every measured operator,
    ``report`` = ``report_side`` (:func:`tileport.core.provenance.collect` on the CPU side when the
    report was built, plus its ``config`` bench settings), ``tilegym_input`` (summary.csv's
    ``source`` column names tilegym), and ``rows``: the provenance table as
    [{"field", "value"}] (values merged over operators, :func:`_merge`; clocks from the
    benchmark verdicts, which sample them right after the last timed call)."""
    results = Path(results)
    per_op: dict[str, dict] = {}
    for op in measured_ops(summary_csv):
        root = _round_root(results, op)
        for stage, name in (("gpu_test", "test.json"), ("bench", "bench.json")):
            v = _verdict(root / op / name)
            if v is not None and v["verdict"] in MEASURED:
                per_op.setdefault(op, {})[stage] = flat_provenance(v.get("details") or {})
    summ = read_csv(summary_csv)
    tg_input = "source" in summ.columns and summ["source"].str.contains("tilegym").any()
    rep = report_side or {}

    def over(field, stages=("gpu_test", "bench")):
        return [(op, d[s][field]) for op, d in per_op.items() for s in stages if s in d]

    def merged(field, stages=("gpu_test", "bench")):
        return _merge(over(field, stages))

    rv, rt, rg = rep.get("versions") or {}, rep.get("tileport") or {}, rep.get("tilegym") or {}
    def clock(cur, mx):
        now, top = merged(cur, ("bench",)), merged(mx, ("bench",))
        return now if now == UNKNOWN or top == UNKNOWN else f"{now} (max {top})"

    cutile = merged("cutile")
    if tg_input:
        tg_ver = merged("tilegym")
        tg_sha = merged("tilegym_sha256")
        if tg_sha == UNKNOWN:
            tg_ver, tg_sha = rg.get("version", UNKNOWN), rg.get("wheel_sha256", UNKNOWN)
        tilegym_cell = f"tilegym {tg_ver}, wheel sha256 {tg_sha}"
    else:
        tilegym_cell = "not the input (operators/ sources)"
    dates = sorted(d for _, d in over("date") if d != UNKNOWN)
    rows = [
        ("GPU", merged("gpu")),
        ("driver", merged("driver")),
        ("CUDA (driver supports / torch runtime)", f"{merged('cuda_driver')} / {merged('cuda_runtime')}"),
        ("SM clock at benchmark time (MHz)", clock("sm_clock_mhz", "sm_clock_max_mhz")),
        ("memory clock at benchmark time (MHz)", clock("mem_clock_mhz", "mem_clock_max_mhz")),
        ("cuda-tile (cuTile Python)", merged("cuda_tile")),
        ("tileiras", merged("tileiras")),
        ("cutile (cuTile Rust)", cutile if cutile != UNKNOWN else
         f"{rv.get('cutile', UNKNOWN)} (Cargo.lock when the report was built)"),
        ("torch", merged("torch")),
        ("Python (GPU node)", merged("python")),
        ("tileport commit (GPU stages)", merged("commit")),
        ("tileport commit (report)", rt.get("describe", UNKNOWN)),
        ("TileGym", tilegym_cell),
        ("config sha256 (GPU stages)", merged("config_sha256")),
        ("config sha256 (report)", str(rep.get("config_sha256", UNKNOWN))),
        ("bench settings (GPU stages)", merged("bench", ("bench",))),
        ("bench settings (config at report time)",
         bench_text({**(rep.get("bench") or {}), **({"threshold": threshold} if threshold is not None else {})})),
        ("measured (UTC)", f"{dates[0]} .. {dates[-1]}" if len(set(dates)) > 1 else (dates[0] if dates else UNKNOWN)),
        ("report built (UTC)", rep.get("date", UNKNOWN)),
        ("operators measured", f"{len(per_op)}: {', '.join(per_op)}" if per_op else "none"),
    ]
    return {"schema": "tileport.report-provenance/1", "ops": per_op, "report": rep,
            "tilegym_input": bool(tg_input),
            "rows": [{"field": f, "value": v} for f, v in rows]}


def short_provenance(prov: dict) -> str:
    """The provenance in one sentence, for captions: GPU, driver, CUDA, cuda-tile, cutile,
    tileport commit and measurement date (fields of :func:`provenance`'s rows)."""
    r = {x["field"]: x["value"] for x in prov.get("rows", [])}
    return (f"Measured on {r.get('GPU', UNKNOWN)}, driver {r.get('driver', UNKNOWN)}, CUDA "
            f"{r.get('CUDA (driver supports / torch runtime)', UNKNOWN)}; cuda-tile "
            f"{r.get('cuda-tile (cuTile Python)', UNKNOWN)}, cutile {r.get('cutile (cuTile Rust)', UNKNOWN)}, "
            f"torch {r.get('torch', UNKNOWN)}; tileport {r.get('tileport commit (GPU stages)', UNKNOWN)} "
            f"(report {r.get('tileport commit (report)', UNKNOWN)}); measured {r.get('measured (UTC)', UNKNOWN)}.")
