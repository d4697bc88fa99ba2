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

from tileport.core.verdict import atomic_write_text


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
        "µ": r"\textmu{}", "×": r"$\times$", "≥": r"$\geq$", "≤": r"$\leq$", "±": r"$\pm$", "–": "--", "…": r"\dots{}"}


def tex_escape(text) -> str:
    """``text`` as LaTeX source for a pdfLaTeX document with only ``booktabs`` loaded: the ten
    special characters and ``<``, ``>``, ``|`` (not in the default OT1 font encoding) escaped,
    µ, ×, ≥, ≤, ±, – and … spelled as commands, ``--`` kept two hyphens; other non-ASCII
    characters are replaced by ``?`` (they would not compile without inputenc tables)."""
    out = []
    text = str(text)
    for i, ch in enumerate(text):
        if ch == "-" and text[i + 1:i + 2] == "-":         # not TeX's en dash: ``--configs``
            out.append("-{}")
        elif ch in _TEX:
            out.append(_TEX[ch])
        elif ord(ch) < 128:
            out.append(ch)
        else:
            out.append("?")
    return "".join(out)


def write(df: pd.DataFrame, tex_headers: dict[str, str], out: dict[str, str | Path], caption: str,
          label: str, provenance_rows: list[dict], column_format: str | None = None,
          html_title: str = "", tex_df: pd.DataFrame | None = None, tex_footer: str = "") -> None:
    """Write one table three ways. ``df``: the formatted rows (every cell already text, as
    :func:`sig3` made it) for the CSV and HTML; ``tex_df``: the same rows as the LaTeX table
    shows them (e.g. an interval in one column; default ``df``); ``out``: paths for ``tex``,
    ``csv`` and ``html``; ``tex_headers``: LaTeX source of each column's header (columns not
    named keep their escaped name); ``caption``: plain text (escaped here);
    ``provenance_rows``: [{"field", "value"}] written as ``%`` comments at the top of the
    ``.tex`` and under the HTML table; ``tex_footer``: plain text of a last LaTeX row spanning
    every column (after a rule when rows precede it). The LaTeX table is set in ``\\small``."""
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
    if tex_footer:
        foot = f"\\multicolumn{{{len(cols)}}}{{l}}{{{tex_escape(tex_footer)}}} \\\\\n"
        body = body.replace("\\bottomrule", ("\\midrule\n" if len(tex) else "") + foot + "\\bottomrule", 1)
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
    the frame has them (with the loop gate's ``loop_below`` / ``loop_undecided`` counts where the
    frame has those); ``configs`` reads ``12 (+6 pending)`` where perf configs are not timed yet."""
    loop = "loop_geomean" in ops.columns
    counts = "loop_below" in ops.columns
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
            if counts:
                row.update({c: _count(r.get(c)) for c in ("loop_below", "loop_undecided")})
        rows.append(row)
    df = pd.DataFrame(rows)
    heads = {"op": "operator", "configs": "configs", "geomean_ratio": r"ref/port",
             "ci": r"95\,\% CI", "verdict": "verdict", "vs_torch": r"torch/port",
             "ref_vs_torch": r"torch/ref", "loop_geomean": r"loop ref/port", "loop_ci": r"loop 95\,\% CI",
             "loop_below": "loop below", "loop_undecided": "loop undec."}
    fmt = "lrrcl" + "rr" + ("rc" if loop else "") + ("rr" if loop and counts else "")
    return df, heads, fmt


def _count(x) -> str:
    """An integer count as text; ``""`` where there is none (None, NaN, text)."""
    v = sig3(x)
    return str(int(float(x))) if v else ""


def operators_tex(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`operators`' rows as the LaTeX table shows them: each interval in one column
    (``0.916–0.973``, empty without one)."""
    def span(lo, hi):
        return f"{lo}–{hi}" if lo and hi else ""

    out = df.drop(columns=["ci_low", "ci_high"])
    out.insert(3, "ci", [span(a, b) for a, b in zip(df["ci_low"], df["ci_high"])])
    if "loop_geomean" in df.columns:
        out = out.drop(columns=["loop_ci_low", "loop_ci_high"])
        out.insert(out.columns.get_loc("loop_geomean") + 1, "loop_ci",
                   [span(a, b) for a, b in zip(df["loop_ci_low"], df["loop_ci_high"])])
    return out


def loop_gate(rows: pd.DataFrame, counts: dict,
              loop_threshold: float) -> tuple[pd.DataFrame, pd.DataFrame, dict, str, str]:
    """The loop gate table from :func:`tileport.report.data.loop_gate`'s (configs whose gate is
    not passed, counts): (rows for CSV / HTML, rows for LaTeX, LaTeX headers, column format, the
    counts line). Loop and host times in µs per call; in LaTeX, op / kernel / variant / shape in
    one wrapping column and the loop ratio's 95 % interval in one column; ``timed_at`` (UTC; to
    the minute in LaTeX) and ``loop_ratio_prev`` (the loop ratio before a selective re-timing:
    the row was re-timed) only where a row has them. The
    counts line (configs with loop timing, passed, below, undecided, re-timed) is the CSV's last
    row (op ``ALL``, the text under ``gate``) and the LaTeX table's last line; when no config
    misses the gate it is the table's one row and says so. ``loop_threshold``: config.yaml
    ``bench.loop_threshold``."""
    c = counts
    line = (f"{c['timed']} config(s) with loop timing: {c['pass']} passed, {c['below']} below, "
            f"{c['undecided']} undecided" + (f"; {c['retimed']} re-timed, {c['retimed_pass']} of them passing now"
                                           if c["retimed"] else ""))
    if not c["timed"]:
        line = "no config has loop timing"
    elif not len(rows):
        line = f"every config passes the loop gate (loop ratio ≥ {loop_threshold:g}); {line}"
    cols = ["op", "kernel", "variant", "shape", "ref_loop_us", "port_loop_us", "loop_ratio", "loop_ci_low",
            "loop_ci_high", "gate", "ref_host_us", "port_host_us"]
    opt = [k for k in ("timed_at", "loop_ratio_prev") if k in rows.columns and rows[k].notna().any()]
    text = lambda x: "" if x is None or x != x else str(x)        # noqa: E731 (NaN -> "")
    df = pd.DataFrame([{**{k: text(r[k]) for k in ("op", "kernel", "variant", "shape", "gate")},
                        **{k: sig3(r.get(k)) for k in ("ref_loop_us", "port_loop_us", "loop_ratio",
                                                         "ref_host_us", "port_host_us", "loop_ratio_prev")},
                        "loop_ci_low": sig3(r.get("loop_ratio_lo")), "loop_ci_high": sig3(r.get("loop_ratio_hi")),
                        "timed_at": text(r.get("timed_at"))} for r in rows.to_dict("records")],
                      columns=cols + opt)
    # LaTeX: op, kernel, variant and shape in one column that wraps (variant ids run to 100
    # characters), two-line headers, the interval in one column
    tex = df.drop(columns=["op", "kernel", "variant", "shape", "loop_ci_low", "loop_ci_high"])
    tex.insert(0, "config", [" / ".join(r) for r in df[["op", "kernel", "variant", "shape"]].values.tolist()])
    tex.insert(tex.columns.get_loc("loop_ratio") + 1, "loop_ci",
               [f"{a}–{b}" if a and b else "" for a, b in zip(df["loop_ci_low"], df["loop_ci_high"])])
    if "timed_at" in tex.columns:
        tex["timed_at"] = tex["timed_at"].str[:16].str.replace("T", " ")
    df = pd.concat([df, pd.DataFrame([{c: "" for c in df.columns} | {"op": "ALL", "gate": line}])],
                   ignore_index=True)
    two = lambda a, b: rf"\shortstack{{{a}\\{b}}}"        # noqa: E731
    heads = {"config": "config", "ref_loop_us": two("ref loop", r"\textmu{}s"),
             "port_loop_us": two("port loop", r"\textmu{}s"), "loop_ratio": two("loop", "ref/port"),
             "loop_ci": r"95\,\% CI", "gate": "gate", "ref_host_us": two("ref host", r"\textmu{}s"),
             "port_host_us": two("port host", r"\textmu{}s"), "timed_at": two("timed", "(UTC)"),
             "loop_ratio_prev": two("before", "re-timing")}
    fmt = r"p{0.3\linewidth}" + "rrrcl" + "rr" + "".join("l" if k == "timed_at" else "r" for k in opt)
    return df, tex, heads, fmt, line


def outliers(rows: pd.DataFrame, counts: dict, band: float) -> tuple[pd.DataFrame, pd.DataFrame, dict, str, str]:
    """The outlier table from :func:`tileport.report.data.outliers`' (configs outside ``1 +- band``
    on either reading, counts): (rows for CSV / HTML, rows for LaTeX, LaTeX headers, column
    format, the counts line). Columns ``op, kernel, variant, shape, ratio, ratio_matched, cause``
    (ratios reference / port device time, :func:`sig3`; ``ratio_matched`` blank where the row has
    no matched reading; ``cause`` as perf_diagnose named it, or ``not diagnosed``). In LaTeX, op /
    kernel / variant / shape share one wrapping column. The counts line (configs, outside on each
    reading, configs with a matched reading, causes) is the CSV's last row (op ``ALL``, the text
    under ``cause``) and the LaTeX table's last line; with no config outside it is the one row."""
    c = counts
    causes = ", ".join(f"{k} {n}" for k, n in sorted(c["causes"].items(), key=lambda kv: (-kv[1], kv[0])))
    line = (f"{c['outside']} of {c['configs']} config(s) outside ±{band:.0%}: {c['outside_ratio']} as launched, "
            f"{c['outside_matched']} matched ({c['matched']} with a matched reading)"
            + (f"; causes: {causes}" if causes else ""))
    if not c["configs"]:
        line = "no config timed"
    elif not c["outside"]:
        line = (f"every config within ±{band:.0%} of parity: {c['configs']} as launched, "
                f"{c['matched']} with a matched reading")
    cols = ["op", "kernel", "variant", "shape", "ratio", "ratio_matched", "cause"]
    text = lambda x: "" if x is None or x != x else str(x)        # noqa: E731 (NaN -> "")
    df = pd.DataFrame([{**{k: text(r[k]) for k in ("op", "kernel", "variant", "shape", "cause")},
                        "ratio": sig3(r["ratio"]), "ratio_matched": sig3(r["ratio_matched"])}
                       for r in rows.to_dict("records")], columns=cols)
    tex = df.drop(columns=["op", "kernel", "variant", "shape"])
    tex.insert(0, "config", [" / ".join(r) for r in df[["op", "kernel", "variant", "shape"]].values.tolist()])
    df = pd.concat([df, pd.DataFrame([{k: "" for k in cols} | {"op": "ALL", "cause": line}])], ignore_index=True)
    two = lambda a, b: rf"\shortstack{{{a}\\{b}}}"        # noqa: E731
    heads = {"config": "config", "ratio": two("ref/port", "as launched"), "ratio_matched": two("ref/port", "matched"),
             "cause": "cause"}
    fmt = r"p{0.5\linewidth}" + "rr" + r"p{0.22\linewidth}"
    return df, tex, heads, fmt, line


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
