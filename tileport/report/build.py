"""The jobs of ``rules/report.smk``: each function reads its inputs (paths), writes its outputs
and returns nothing; :func:`run_rule` maps a rule name to its function for ``scripts/report.py``.

Data files (``results/report/data/``): ``configs.csv``, ``operators.csv``, ``coverage.csv``,
``llm.csv`` (floats with 10 significant digits, the tables round them) and ``provenance.json``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..verdict import atomic_write_text
from . import data as D
from . import tables as T

FIGURES = ("ratio", "times", "host_overhead", "coverage_matrix", "llm_roles")
TABLES = ("operators", "coverage", "provenance")


def _csv(df: pd.DataFrame, path) -> None:
    atomic_write_text(path, df.to_csv(index=False, lineterminator="\n", float_format="%.10g"))


def configs(results, summary_csv, out_csv) -> None:
    _csv(D.configs(results, summary_csv), out_csv)


def operators(configs_csv, summary_ops_csv, out_csv) -> None:
    _csv(D.operators(pd.read_csv(configs_csv), summary_ops_csv), out_csv)


def coverage(summary_csv, threshold: float, out_csv) -> None:
    _csv(D.coverage(summary_csv, threshold), out_csv)


def llm(summary_csv, summary_ops_csv, out_csv) -> None:
    _csv(D.llm_use(summary_csv, summary_ops_csv), out_csv)


def provenance(results, summary_csv, config: dict, threshold: float, out_json) -> None:
    """``provenance.json``: :func:`tileport.report.data.provenance`, with the CPU side's
    :func:`tileport.provenance.collect` of now."""
    from .. import provenance as P

    side = P.collect(bench=(config or {}).get("bench"), config=config, gpu=False)
    prov = D.provenance(results, summary_csv, side, threshold)
    atomic_write_text(out_json, json.dumps(prov, indent=1, default=str) + "\n")


def _prov(path) -> dict:
    return json.loads(Path(path).read_text())


TITLES = {"ratio": "Port vs reference: geomean ratio per operator",
          "times": "Device time per perf config",
          "host_overhead": "Host overhead per call",
          "coverage_matrix": "Coverage: kernels x stages",
          "llm_roles": "Where the LLM roles ran"}


def figure(name: str, inputs: dict, threshold: float, out: dict) -> None:
    """Draw figure ``name`` (:data:`FIGURES`) from ``inputs`` (``data``: its data CSV,
    ``provenance``: provenance.json) into ``out`` (``pdf``, ``svg``, ``png``)."""
    from . import figures as F
    from .figures import coverage as fc, host as fh, llm as fl, ratio as fr, times as ft

    df = pd.read_csv(inputs["data"])
    fig = {"ratio": lambda: fr.draw(df, threshold), "times": lambda: ft.draw(df),
           "host_overhead": lambda: fh.draw(df), "coverage_matrix": lambda: fc.draw(df),
           "llm_roles": lambda: fl.draw(df)}[name]()
    F.save(fig, out, TITLES[name], D.short_provenance(_prov(inputs["provenance"])))


CAPTIONS = {
    "operators": ("Device time of the cuTile Rust port against the cuTile Python reference, per "
                  "operator: geomean over its perf configs of reference time / port time (above 1: "
                  "the port is faster) with a 95 % BCa bootstrap interval over the configs; "
                  "torch/port and torch/ref: geomean of PyTorch time over port and reference time."),
    "coverage": ("Coverage per operator family: kernels, kernels whose every variant passes the "
                 "Tile IR diff (IR PASS), kernels whose every variant passes the GPU test (GPU PASS)."),
    "provenance": "Provenance of the measurements and of this report.",
}


def table(name: str, inputs: dict, out: dict) -> None:
    """Write table ``name`` (:data:`TABLES`) as ``out["tex"]``, ``out["csv"]``, ``out["html"]``
    from ``inputs`` (``data``: its data CSV, absent for provenance; ``provenance``)."""
    prov = _prov(inputs["provenance"])
    tex_df = None
    if name == "operators":
        df, heads, fmt = T.operators(pd.read_csv(inputs["data"], keep_default_na=False, na_values=[""]))
        loop = "loop_geomean" in df.columns
        cap = CAPTIONS[name] + (" Loop: the same for time per call of back-to-back calls." if loop else "")
        tex_df = T.operators_tex(df)
    elif name == "coverage":
        df, heads, fmt = T.coverage(D.coverage_families(pd.read_csv(inputs["data"], keep_default_na=False)))
        cap = CAPTIONS[name]
    else:
        df, heads, fmt = T.provenance(prov["rows"])
        cap = CAPTIONS[name]
    T.write(df, heads, out, f"{cap} {D.short_provenance(prov)}", f"tab:tileport-{name}",
            prov["rows"], column_format=fmt, html_title=name, tex_df=tex_df)


def run_rule(rule: str, inp: dict, out: dict, params: dict, config: dict) -> None:
    """Dispatch one job of ``rules/report.smk`` by its rule name."""
    thr = float(params.get("threshold", (config.get("bench") or {}).get("threshold", 0.95)))
    if rule == "report_configs":
        configs(params["results"], inp["summary"], out["csv"])
    elif rule == "report_operators":
        operators(inp["configs"], inp["summary_ops"], out["csv"])
    elif rule == "report_coverage":
        coverage(inp["summary"], thr, out["csv"])
    elif rule == "report_llm":
        llm(inp["summary"], inp["summary_ops"], out["csv"])
    elif rule == "report_provenance":
        provenance(params["results"], inp["summary"], config, thr, out["json"])
    elif rule.startswith("figure_"):
        figure(rule[len("figure_"):], inp, thr, out)
    elif rule.startswith("table_"):
        table(rule[len("table_"):], inp, out)
    else:
        raise ValueError(f"rules/report.smk: no report job named {rule!r}")
