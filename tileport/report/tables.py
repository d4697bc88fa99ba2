"""Tables for the paper: LaTeX (booktabs, through pandas' ``Styler.to_latex``), the same rows as
CSV, and an HTML copy that Snakemake's report shows inline.

One number format everywhere (:func:`sig3`): three significant digits, no exponent; times in µs
(the column names say so), ratios dimensionless, counts as integers. Every ``.tex`` starts with
``%`` comment lines holding the whole provenance table and its caption ends with the provenance
sentence (:func:`tileport.report.data.short_provenance`).
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..verdict import atomic_write_text


def sig3(x, digits: int = 3) -> str:
    """``x`` rounded to ``digits`` significant digits and printed without an exponent:
    0.94271 -> ``0.943``, 1 -> ``1.00``, 251.61 -> ``252``, 1234.5 -> ``1230``,
    0.000123456 -> ``0.000123``, 999.6 -> ``1000``; ``""`` for None, NaN, an empty string or
    text that is not a number (e.g. ``not_run (...)``, kept by callers as text).
    Rounding is Python's correctly rounded ``format`` of the binary value."""
    if x is None or (isinstance(x, str) and not x.strip()):
        return ""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return ""
    if not math.isfinite(v):
        return ""
    if v == 0:
        return "0"

    def fmt(e: int) -> str:
        dec = digits - 1 - e
        return f"{v:.{dec}f}" if dec >= 0 else f"{round(v, dec):.0f}"

    e = math.floor(math.log10(abs(v)))
    s = fmt(e)
    if abs(float(s)) >= 10 ** (e + 1):          # rounding reached the next power of ten
        s = fmt(e + 1)
    return s


def interval(lo, hi) -> str:
    """A confidence interval as ``[lo, hi]`` with :func:`sig3` bounds; ``""`` when absent."""
    a, b = sig3(lo), sig3(hi)
    return f"[{a}, {b}]" if a and b else ""


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
        "µ": r"\textmu{}", "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$", "–": "--", "…": r"\dots{}"}


def tex_escape(text) -> str:
    """``text`` as LaTeX source for a pdfLaTeX document with only ``booktabs`` loaded: the ten
    special characters and ``<``, ``>``, ``|`` (not in the default OT1 font encoding) escaped,
    µ, ×, ≥, ≤, – and … spelled as commands; other non-ASCII
    characters are replaced by ``?`` (they would not compile without inputenc tables)."""
    out = []
    for ch in str(text):
        if ch in _TEX:
            out.append(_TEX[ch])
        elif ord(ch) < 128:
            out.append(ch)
        else:
            out.append("?")
    return "".join(out)


def write(df: pd.DataFrame, tex_headers: dict[str, str], out: dict[str, str | Path], caption: str,
          label: str, provenance_rows: list[dict], column_format: str | None = None,
          html_title: str = "", tex_df: pd.DataFrame | None = None) -> None:
    """Write one table three ways. ``df``: the formatted rows (every cell already text, as
    :func:`sig3` made it) for the CSV and HTML; ``tex_df``: the same rows as the LaTeX table
    shows them (e.g. an interval in one column; default ``df``); ``out``: paths for ``tex``,
    ``csv`` and ``html``; ``tex_headers``: LaTeX source of each column's header (columns not
    named keep their escaped name); ``caption``: plain text (escaped here);
    ``provenance_rows``: [{"field", "value"}] written as ``%`` comments at the top of the
    ``.tex`` and under the HTML table. The LaTeX table is set in ``\\small``."""
    df = df.astype(str)
    atomic_write_text(out["csv"], df.to_csv(index=False, lineterminator="\n"))

    tex = (df if tex_df is None else tex_df).astype(str)
    cols = list(tex.columns)
    tex.columns = [tex_headers.get(c, tex_escape(c)) for c in cols]
    body = (tex.style.hide(axis="index").format(tex_escape)
            .to_latex(caption=tex_escape(caption), label=label, hrules=True, position="htbp",
                      position_float="centering",
                      column_format=column_format or "l" * len(cols)))
    body = body.replace("\\centering\n", "\\centering\n\\small\n", 1)
    head = [f"% {Path(out['tex']).name}: written by tileport (rules/report.smk) from the workflow's verdicts",
            "% provenance:"] + [f"%   {r['field']}: {r['value']}" for r in provenance_rows]
    atomic_write_text(out["tex"], "\n".join(head) + "\n" + body)

    css = [{"selector": "", "props": "border-collapse: collapse; font: 13px sans-serif;"},
           {"selector": "th, td", "props": "padding: 2px 8px; border-bottom: 1px solid #ddd; text-align: left;"},
           {"selector": "caption", "props": "caption-side: top; text-align: left; padding: 4px 0;"}]
    table = (df.style.hide(axis="index").format(escape="html").set_caption(caption)
             .set_table_styles(css).to_html())
    prov = "".join(f"<tr><td>{_html(r['field'])}</td><td>{_html(r['value'])}</td></tr>"
                   for r in provenance_rows)
    html = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{_html(html_title or label)}</title>"
            f"</head><body>\n{table}\n<details><summary>provenance</summary><table style=\"font: 12px "
            f"sans-serif\">{prov}</table></details>\n</body></html>\n")
    atomic_write_text(out["html"], html)


def _html(text) -> str:
    import html

    return html.escape(str(text))


def operators(ops: pd.DataFrame) -> tuple[pd.DataFrame, dict, str]:
    """The operators table from :func:`tileport.report.data.operators`' frame: (formatted rows,
    LaTeX headers, column format of :func:`operators_tex`'s columns). Loop columns appear when
    the frame has them; ``configs`` reads ``12 (+6 pending)`` where perf configs are not timed yet."""
    loop = "loop_geomean" in ops.columns
    rows = []
    for r in ops.to_dict("records"):
        pend = r.get("configs_pending")
        pend = int(pend) if isinstance(pend, (int, float)) and pend == pend and pend > 0 else 0
        row = {"op": r["op"], "configs": str(int(r["configs"])) + (f" (+{pend} pending)" if pend else ""),
               "geomean_ratio": sig3(r["geomean_ratio"]), "ci_low": sig3(r["ci_low"]),
               "ci_high": sig3(r["ci_high"]),
               "verdict": r["verdict"] if isinstance(r["verdict"], str) else "",
               "vs_torch": sig3(r["vs_torch"]), "ref_vs_torch": sig3(r["ref_vs_torch"])}
        if loop:
            row.update(loop_geomean=sig3(r["loop_geomean"]), loop_ci_low=sig3(r["loop_ci_low"]),
                       loop_ci_high=sig3(r["loop_ci_high"]))
        rows.append(row)
    df = pd.DataFrame(rows)
    heads = {"op": "operator", "configs": "configs", "geomean_ratio": r"ref/port",
             "ci": r"95\,\% CI", "verdict": "verdict", "vs_torch": r"torch/port",
             "ref_vs_torch": r"torch/ref", "loop_geomean": r"loop ref/port", "loop_ci": r"loop 95\,\% CI"}
    fmt = "lrrcl" + "rr" + ("rc" if loop else "")
    return df, heads, fmt


def operators_tex(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`operators`' rows as the LaTeX table shows them: each interval in one column
    (``0.916–0.973``, empty without one)."""
    def span(lo, hi):
        return f"{lo}–{hi}" if lo and hi else ""

    out = df.drop(columns=["ci_low", "ci_high"])
    out.insert(3, "ci", [span(a, b) for a, b in zip(df["ci_low"], df["ci_high"])])
    if "loop_geomean" in df.columns:
        out = out.drop(columns=["loop_ci_low", "loop_ci_high"])
        out["loop_ci"] = [span(a, b) for a, b in zip(df["loop_ci_low"], df["loop_ci_high"])]
    return out


def coverage(fam: pd.DataFrame) -> tuple[pd.DataFrame, dict, str]:
    """The coverage table from :func:`tileport.report.data.coverage_families`' frame; the
    ``source`` column only when some family's source is not its own operator folder."""
    df = fam.copy()
    own = df["source"].isin([f"operators/{f}" for f in df["family"]]) | (df["family"] == "ALL")
    if own.all():
        df = df.drop(columns=["source"])
    for c in ("kernels", "ir_pass", "gpu_pass"):
        df[c] = df[c].map(lambda x: str(int(x)))
    heads = {"family": "family", "source": "source", "kernels": "kernels",
             "ir_pass": "IR PASS", "gpu_pass": "GPU PASS"}
    fmt = "l" + ("l" if "source" in df.columns else "") + "rrr"
    return df, heads, fmt


def provenance(rows: list[dict]) -> tuple[pd.DataFrame, dict, str]:
    """The provenance table: one row per field (:func:`tileport.report.data.provenance`)."""
    df = pd.DataFrame(rows, columns=["field", "value"])
    return df, {"field": "", "value": ""}, r"lp{0.62\linewidth}"
