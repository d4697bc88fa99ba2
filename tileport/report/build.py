"""The jobs of ``rules/report.smk``: each function reads its inputs (paths), writes its outputs
and returns nothing; :func:`run_rule` maps a rule name to its function for ``scripts/report.py``.

Data files (``results/report/data/``): ``configs.csv``, ``operators.csv``, ``coverage.csv``,
``llm.csv`` (floats with 10 significant digits, the tables round them) and ``provenance.json``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tileport.core import provenance as tp_provenance
from tileport.core.verdict import atomic_write_text
from tileport.gpu.bench import DEFAULTS
from tileport.report import data, figures, tables

TABLES = ("operators", "loop_gate", "outliers", "coverage", "provenance")


def _csv(df: pd.DataFrame, path) -> None:
    atomic_write_text(path, df.to_csv(index=False, lineterminator="\n", float_format="%.10g"))


def configs(results, summary_csv, out_csv) -> None:
    _csv(data.configs(results, summary_csv), out_csv)


def operators(configs_csv, summary_ops_csv, out_csv, loop_threshold: float | None = None) -> None:
    """``operators.csv``; ``loop_threshold`` (config.yaml ``bench.loop_threshold``) for the loop
    gate's counts."""
    _csv(data.operators(pd.read_csv(configs_csv), summary_ops_csv, loop_threshold), out_csv)


def coverage(summary_csv, threshold: float, out_csv) -> None:
    _csv(data.coverage(summary_csv, threshold), out_csv)


def llm(summary_csv, summary_ops_csv, out_csv) -> None:
    _csv(data.llm_use(summary_csv, summary_ops_csv), out_csv)


def provenance(results, summary_csv, config: dict, threshold: float, out_json) -> None:
    """``provenance.json``: :func:`tileport.report.data.provenance`, with the CPU side's
    :func:`tileport.core.provenance.collect` of now."""
    side = tp_provenance.collect(bench=(config or {}).get("bench"), config=config, gpu=False)
    prov = data.provenance(results, summary_csv, side, threshold)
    atomic_write_text(out_json, json.dumps(prov, indent=1, default=str) + "\n")


def _prov(path) -> dict:
    return json.loads(Path(path).read_text())


TITLES = {"ratio": "Port vs reference: the ratio of every config (ECDF)",
          "times": "Device time per perf config",
          "host_overhead": "Host overhead per call",
          "coverage_matrix": "Coverage: kernels x stages",
          "llm_roles": "Where the LLM roles ran"}
#: figure -> its module under tileport/report/figures/ (each has ``draw(df)``)
FIGURE_MODULES = {"ratio": "ratio", "times": "times", "host_overhead": "host", "coverage_matrix": "coverage",
                  "llm_roles": "llm"}


def figure(name: str, inputs: dict, threshold: float, out: dict) -> None:
    """Draw figure ``name`` (:data:`FIGURE_MODULES`) from ``inputs`` (``data``: its data CSV,
    ``provenance``: provenance.json) into ``out`` (``pdf``, ``svg``, ``png``). ``threshold``
    (config.yaml ``bench.threshold``) is kept for the rules' signature; no figure draws it now."""
    import importlib


    # one figure module per job, imported by name: a figure rule's code inputs are that module
    # and this one (rules/report.smk), so editing one figure redraws that figure alone
    draw = importlib.import_module(f"tileport.report.figures.{FIGURE_MODULES[name]}").draw
    df = pd.read_csv(inputs["data"])
    fig = draw(df)
    figures.save(fig, out, TITLES[name], data.short_provenance(_prov(inputs["provenance"])))


CAPTIONS = {
    "operators": ("Device time of the cuTile Rust port against the cuTile Python reference, per "
                  "operator: geomean over its perf configs of reference time / port time (above 1: "
                  "the port is faster) with a 95 % BCa bootstrap interval over the configs; "
                  "torch/port and torch/ref: geomean of PyTorch time over port and reference time."),
    "loop_gate": ("Loop gate per config: the configs whose loop ratio (reference / port time per call of "
                  "back-to-back calls, geomean over carry-over-balanced cycles) is under the loop threshold "
                  "{thr:g} (config.yaml bench.loop_threshold): below = its 95 % t interval over the cycles "
                  "entirely under it, undecided = the interval reaching it (within the measurement's noise); "
                  "a row timed before the interval existed is judged by its ratio alone (no interval). Config: "
                  "operator / kernel / variant / shape; loop and host (enqueue) time per call in µs; timed: "
                  "the row's own date."),
    "outliers": ("Every config whose ratio of reference to port device time lies outside parity ±{band:.0%} "
                 "(below {lo:g} or above {hi:g}) as each runtime launches its kernel (as launched) or with both "
                 "sides compiled under the port's launch facts (matched; blank where the config has no matched "
                 "reading), farthest from parity first, with the cause perf_diagnose named (launcher "
                 "specialisation: the matched reading is within the band; IR difference; launch count; "
                 "unexplained) or 'not diagnosed'. Config: operator / kernel / variant / shape."),
    "coverage": ("Coverage per operator family: kernels, kernels whose every variant passes the "
                 "Tile IR diff (IR PASS), kernels whose every variant passes the GPU test (GPU PASS)."),
    "provenance": "Provenance of the measurements and of this report.",
}


#: the caption's caveat where rows were re-timed selectively (details.retimed, loop_ratio_prev)
RETIMED_NOTE = (" Re-timed: configs timed again selectively (--configs, --configs-below-loop), their earlier "
                "loop ratio under 'before re-timing'; re-timing only the configs that measured low favours "
                "passing (regression to the mean): judge them by all their before/after pairs, not by the "
                "passes alone.")


def table(name: str, inputs: dict, out: dict, loop_threshold: float | None = None) -> None:
    """Write table ``name`` (:data:`TABLES`) as ``out["tex"]``, ``out["csv"]``, ``out["html"]``
    from ``inputs`` (``data``: its data CSV, absent for provenance; ``provenance``);
    ``loop_threshold``: config.yaml ``bench.loop_threshold`` (default
    :data:`tileport.gpu.bench.DEFAULTS`'), for the loop gate."""
    lthr = DEFAULTS["loop_threshold"] if loop_threshold is None else float(loop_threshold)
    prov = _prov(inputs["provenance"])
    tex_df, foot = None, ""
    if name == "operators":
        df, heads, fmt = tables.operators(pd.read_csv(inputs["data"], keep_default_na=False, na_values=[""]))
        loop = "loop_geomean" in df.columns
        cap = CAPTIONS[name] + (" Loop: the same for time per call of back-to-back calls." if loop else "")
        if "loop_below" in df.columns:
            cap += (f" Loop below / undec.: configs whose loop ratio is under {lthr:g} with its 95 % interval "
                    f"entirely under it / reaching it (the loop gate table).")
        tex_df = tables.operators_tex(df)
    elif name == "loop_gate":
        rows, counts = data.loop_gate(pd.read_csv(inputs["data"]), lthr)
        df, tex_df, heads, fmt, foot = tables.loop_gate(rows, counts, lthr)
        cap = CAPTIONS[name].format(thr=lthr) + (RETIMED_NOTE if counts["retimed"] else "")
    elif name == "outliers":
        rows, counts = data.outliers(pd.read_csv(inputs["data"]), data.OUTLIER_BAND)
        df, tex_df, heads, fmt, foot = tables.outliers(rows, counts, data.OUTLIER_BAND)
        b = data.OUTLIER_BAND
        cap = CAPTIONS[name].format(band=b, lo=round(1 - b, 6), hi=round(1 + b, 6))
    elif name == "coverage":
        df, heads, fmt = tables.coverage(data.coverage_families(pd.read_csv(inputs["data"], keep_default_na=False)))
        cap = CAPTIONS[name]
    else:
        df, heads, fmt = tables.provenance(prov["rows"])
        cap = CAPTIONS[name]
    tables.write(df, heads, out, f"{cap} {data.short_provenance(prov)}", f"tab:tileport-{name}",
            prov["rows"], column_format=fmt, html_title=name, tex_df=tex_df, tex_footer=foot)


def run_rule(rule: str, inp: dict, out: dict, params: dict, config: dict) -> None:
    """Dispatch one job of ``rules/report.smk`` by its rule name."""
    thr = float(params.get("threshold", (config.get("bench") or {}).get("threshold", 0.95)))
    lthr = params.get("loop_threshold", (config.get("bench") or {}).get("loop_threshold"))
    if rule == "report_configs":
        configs(params["results"], inp["summary"], out["csv"])
    elif rule == "report_operators":
        operators(inp["configs"], inp["summary_ops"], out["csv"], lthr)
    elif rule == "report_coverage":
        coverage(inp["summary"], thr, out["csv"])
    elif rule == "report_llm":
        llm(inp["summary"], inp["summary_ops"], out["csv"])
    elif rule == "report_provenance":
        provenance(params["results"], inp["summary"], config, thr, out["json"])
    elif rule.startswith("figure_"):
        figure(rule[len("figure_"):], inp, thr, out)
    elif rule.startswith("table_"):
        table(rule[len("table_"):], inp, out, lthr)
    else:
        raise ValueError(f"rules/report.smk: no report job named {rule!r}")
