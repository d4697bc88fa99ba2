"""The report for a paper: bootstrap intervals, number format, LaTeX tables (and their compile),
provenance with and without a GPU, the report's data read from the published H200 verdicts."""
import json
import math
import os
import shutil
import stat
import subprocess

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from scipy import stats

from tileport.core import provenance
from tileport.core.verdict import Verdict, write
from tileport.gpu.fold import HARNESS
from tileport.report import build, tables
from tileport.report import data as report_data
from tileport.report.interval import SEED, geomean_interval

# the 2026-11-29 publication, frozen (docs/results/h200 moves on with each publication)
H200 = REPO / "tests" / "data" / "h200-2026-11-29"
OPS = ["bmm", "gelu", "layer_norm", "matmul", "relu", "rms_norm", "silu_and_mul", "softmax"]


def need(tool: str):
    """A Debian tool the test needs (make test-deps installs it): missing in CI is a failure,
    elsewhere a skip."""
    if shutil.which(tool) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} missing: make test-deps installs it")
        pytest.skip(f"{tool} not installed (make test-deps)")


# --- bootstrap interval ---------------------------------------------------------------------

def test_percentile_interval_of_two_configs_is_their_range():
    # resamples of (1, 4): geomeans 1, 2, 4 with probabilities 1/4, 1/2, 1/4: the 2.5 % and
    # 97.5 % percentiles are 1 and 4, the geomean 2
    g, lo, hi = geomean_interval([1.0, 4.0], method="percentile")
    assert (g, lo, hi) == pytest.approx((2.0, 1.0, 4.0))


def test_bca_interval_is_exp_of_the_log_mean_interval_and_reproducible():
    ratios = [0.91, 0.95, 1.02, 0.99, 0.97, 1.04, 0.93, 1.0]
    g, lo, hi = geomean_interval(ratios)
    assert g == pytest.approx(math.exp(np.mean(np.log(ratios))))
    ref = stats.bootstrap((np.log(ratios),), np.mean, method="BCa", n_resamples=9999,
                          rng=np.random.default_rng(SEED)).confidence_interval
    assert (lo, hi) == pytest.approx((math.exp(ref.low), math.exp(ref.high)))
    assert lo < g < hi and geomean_interval(ratios) == (g, lo, hi)
    # a wider spread gives a wider interval
    _, lo2, hi2 = geomean_interval([r ** 3 for r in ratios])
    assert lo2 < lo and hi2 > hi


def test_interval_edge_cases():
    assert geomean_interval([1.2]) is None                     # one config: no sample
    assert geomean_interval([0.9, 0.9, 0.9]) == pytest.approx((0.9, 0.9, 0.9))
    with pytest.raises(ValueError, match="finite positive"):
        geomean_interval([1.0, 0.0])


# --- number format and LaTeX ----------------------------------------------------------------

@pytest.mark.parametrize("x, text", [
    (0.94271, "0.943"), (1, "1.00"), (1.0004, "1.00"), (251.61, "252"), (1234.5, "1230"),
    (0.000123456, "0.000123"), (999.6, "1000"), (0.9996, "1.00"), (99.95, "100"), (12.345, "12.3"),
    (-0.0123456, "-0.0123"), (0, "0"), (None, ""), (float("nan"), ""), ("not_run (no GPU)", ""),
    ("18.304", "18.3")])
def test_three_significant_digits(x, text):
    assert tables.sig3(x) == text


def test_tex_escape():
    assert tables.tex_escape("layer_norm 5% & µs ×2 {x} > 1") == \
        r"layer\_norm 5\% \& \textmu{}s $\times$2 \{x\} \textgreater{} 1"
    assert tables.tex_escape("--configs, 0.9–1.0") == "-{}-configs, 0.9--1.0"      # two hyphens, an en dash


def test_operators_table(tmp_path):
    ops = pd.DataFrame([
        {"op": "layer_norm", "configs": 6, "geomean_ratio": 0.94312, "ci_low": 0.9163, "ci_high": 0.97335,
         "verdict": "BELOW_THRESHOLD", "vs_torch": 1.1877, "ref_vs_torch": 1.2593},
        {"op": "ALL", "configs": 74, "geomean_ratio": 0.98967, "ci_low": 0.98158, "ci_high": 0.99483,
         "verdict": float("nan"), "vs_torch": 1.0115, "ref_vs_torch": 1.0221}])
    df, heads, fmt = tables.operators(ops)
    assert df.iloc[0].tolist() == ["layer_norm", "6", "0.943", "0.916", "0.973", "BELOW_THRESHOLD", "1.19", "1.26"]
    assert df.iloc[1]["verdict"] == ""
    prov = [{"field": "GPU", "value": "NVIDIA H200 (sm_90)"}, {"field": "driver", "value": "580.159.04"}]
    out = {e: tmp_path / f"operators.{e}" for e in ("tex", "csv", "html")}
    tables.write(df, heads, out, "Caption with sm_90 (> 1: faster).", "tab:x", prov, column_format=fmt,
            tex_df=tables.operators_tex(df))
    tex = out["tex"].read_text()
    assert "% provenance:\n%   GPU: NVIDIA H200 (sm_90)\n%   driver: 580.159.04" in tex
    for needle in (r"\toprule", r"\midrule", r"\bottomrule",
                   r"layer\_norm & 6 & 0.943 & 0.916--0.973 & BELOW\_THRESHOLD",
                   r"ALL & 74 & 0.990 & 0.982--0.995 &  & 1.01 & 1.02",
                   r"\caption{Caption with sm\_90 (\textgreater{} 1: faster).}", r"\label{tab:x}",
                   r"\begin{tabular}{lrrclrr}", "\\centering\n\\small\n"):
        assert needle in tex
    assert pd.read_csv(out["csv"], dtype=str).iloc[0]["geomean_ratio"] == "0.943"
    assert "<table" in out["html"].read_text() and "580.159.04" in out["html"].read_text()


# --- provenance ------------------------------------------------------------------------------

FAKE_SMI = """#!/bin/sh
echo "$@" >> "{log}"
case "$*" in
  *--query-gpu=*) echo "NVIDIA H200, GPU-1234, 580.159.04, P0, 1980, 3201, 1980, 3201, 41, [N/A]" ;;
  *) printf '| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |\\n' ;;
esac
"""


def fake_smi(tmp_path, body=FAKE_SMI):
    exe = tmp_path / "nvidia-smi"
    exe.write_text(body.format(log=tmp_path / "smi.log"))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_provenance_with_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    p = provenance.collect(bench={"warmup_ms": 20, "seed": 0}, smi=str(fake_smi(tmp_path)))
    g = p["gpu"]
    assert (g["name"], g["driver"], g["cuda_driver"], g["pstate"]) == ("NVIDIA H200", "580.159.04", "13.0", "P0")
    assert (g["sm_clock_mhz"], g["mem_clock_mhz"], g["sm_clock_max_mhz"]) == (1980, 3201, 1980)
    assert g["power_w"] == "unknown" and g["source"] == "nvidia-smi"      # [N/A]
    # the device this process computes on: the first of CUDA_VISIBLE_DEVICES
    assert all(line.startswith("-i 3") for line in (tmp_path / "smi.log").read_text().splitlines())
    assert p["bench"] == {"warmup_ms": 20, "seed": 0} and p["schema"] == provenance.SCHEMA
    assert p["versions"]["cuda_tile"] == "1.7.0" and p["versions"]["cutile"] == "0.5.0"
    assert len(p["config_sha256"]) == 64 and p["date"].endswith("+00:00")
    json.dumps(p)                                             # storable in a verdict


def test_provenance_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    p = provenance.collect(smi=str(tmp_path / "no-such-nvidia-smi"))
    assert p["gpu"]["source"].endswith("not found")
    assert {v for k, v in p["gpu"].items() if k != "source"} == {"unknown"}
    failing = fake_smi(tmp_path, "#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    g = provenance.nvidia_smi(str(failing))
    assert g["source"].endswith("failed") and g["sm_clock_mhz"] == "unknown"
    # the CPU side of the report never asks nvidia-smi
    assert provenance.collect(gpu=False)["gpu"]["source"] == "not read (CPU side)"


def test_git_state_and_commit_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.delenv("TILEPORT_COMMIT", raising=False)
    assert provenance.git_state(tmp_path)["commit"] == "unknown"
    monkeypatch.setenv("TILEPORT_COMMIT", "0b39313+dirty")
    assert provenance.git_state(tmp_path) == {"commit": "0b39313", "dirty": True,
                                              "describe": "0b39313+dirty (TILEPORT_COMMIT)"}
    monkeypatch.delenv("TILEPORT_COMMIT")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (tmp_path / "a.txt").write_text("a\n")
    subprocess.run(git + ["add", "a.txt"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "a"], check=True)
    clean = provenance.git_state(tmp_path)
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    (tmp_path / "a.txt").write_text("b\n")
    assert provenance.git_state(tmp_path)["dirty"] is True
    assert provenance.git_state(tmp_path)["describe"].endswith("+dirty")
    # a copy packed for a GPU node over another commit's repository: the packer's word wins
    monkeypatch.setenv("TILEPORT_COMMIT", "f95e0a5")
    assert provenance.git_state(tmp_path)["commit"] == "f95e0a5"


def test_tilegym_wheel_hash_from_its_pin(tmp_path):
    sha = "ab" * 32
    (tmp_path / "requirements.lock").write_text(f"pyyaml==6.0.4\ntilegym==1.5.1 \\\n    --hash=sha256:{sha}\nzz==1\n")
    t = provenance.tilegym(tmp_path)
    assert t["wheel_sha256"] == sha and t["pin"] == "requirements.lock: tilegym==1.5.1"
    assert provenance.tilegym(tmp_path / "nowhere")["wheel_sha256"] == "unknown"


def test_config_hash_ignores_layout():
    a = provenance.config_sha256({"bench": {"seed": 0, "rep_ms": 150}, "gpu": "auto"})
    b = provenance.config_sha256({"gpu": "auto", "bench": {"rep_ms": 150, "seed": 0}})
    assert a == b != provenance.config_sha256({"gpu": "off", "bench": {"rep_ms": 150, "seed": 0}})


def test_provenance_of_verdicts_written_before_it_existed():
    """The published H200 verdicts carry details.env only: the report still names the GPU."""
    d = json.loads((H200 / "ops" / "relu" / "bench.json").read_text())["details"]
    f = report_data.flat_provenance(d)
    assert f["gpu"] == "NVIDIA H200 (sm_90)" and f["driver"] == "580.159.04"
    assert (f["torch"], f["cuda_runtime"], f["tileiras"]) == ("2.11.0+cu130", "13.0", "13.4.92")
    assert f["sm_clock_mhz"] == "unknown" and f["commit"] == "unknown"
    # a verdict with provenance: its values win
    d2 = {**d, "provenance": provenance.collect(bench={"seed": 0}, gpu=False) | {
        "gpu": {"name": "NVIDIA H100", "driver": "570.1", "sm_clock_mhz": 1755}}}
    f2 = report_data.flat_provenance(d2)
    assert (f2["gpu"], f2["driver"], f2["sm_clock_mhz"], f2["bench"]) == \
        ("NVIDIA H100 (sm_90)", "570.1", 1755, "seed 0")


# --- the report's data from the published H200 measurements ---------------------------------

@pytest.fixture(scope="module")
def h200(tmp_path_factory):
    """A results/ tree holding the published H200 verdicts and summaries, and its report data."""
    res = tmp_path_factory.mktemp("h200")
    for f in ("summary.csv", "summary_ops.csv"):
        shutil.copy2(H200 / f, res / f)
    for op in OPS:
        shutil.copytree(H200 / "ops" / op, res / op)
    data = res / "report" / "data"
    data.mkdir(parents=True)
    build.configs(res, res / "summary.csv", data / "configs.csv")
    build.operators(data / "configs.csv", res / "summary_ops.csv", data / "operators.csv")
    build.coverage(res / "summary.csv", 0.95, data / "coverage.csv")
    build.provenance(res, res / "summary.csv", {"bench": {"seed": 0}}, 0.95, data / "provenance.json")
    return res, data


def test_operator_geomeans_match_summary_ops(h200):
    res, data = h200
    ops = pd.read_csv(data / "operators.csv").set_index("op")
    published = pd.read_csv(res / "summary_ops.csv").set_index("op")
    assert list(ops.index) == OPS + ["ALL"] and ops.loc["ALL", "configs"] == 74
    for op in ops.index:
        assert ops.loc[op, "geomean_ratio"] == pytest.approx(published.loc[op, "geomean_ratio"], abs=5e-4)
        assert ops.loc[op, "ci_low"] < ops.loc[op, "geomean_ratio"] < ops.loc[op, "ci_high"]
    assert ops.loc["layer_norm", "verdict"] == "BELOW_THRESHOLD"
    assert "loop_geomean" not in ops.columns            # those verdicts have no loop timing


def test_loop_timing_is_carried_when_present(h200, tmp_path):
    res, data = h200
    # bench.csv with the loop columns (the benchmark writes them there)
    shutil.copytree(res / "relu", tmp_path / "relu")
    b = pd.read_csv(tmp_path / "relu" / "bench.csv", dtype=str, keep_default_na=False)
    b["port_loop_us"], b["loop_ratio"] = "20.5", "0.9700"
    b.to_csv(tmp_path / "relu" / "bench.csv", index=False)
    s = pd.read_csv(res / "summary.csv", dtype=str, keep_default_na=False)
    s[s["op"] == "relu"].to_csv(tmp_path / "summary.csv", index=False)
    relu = report_data.configs(tmp_path, tmp_path / "summary.csv")
    assert len(relu) == 12 and set(relu["loop_ratio"]) == {0.97} and set(relu["port_loop_us"]) == {20.5}
    cfg = pd.read_csv(data / "configs.csv")
    cfg["loop_ratio"], cfg["harness"] = cfg["ratio"] * 0.98, HARNESS
    ops = report_data.operators(cfg, res / "summary_ops.csv").set_index("op")
    assert ops.loc["relu", "loop_geomean"] == pytest.approx(ops.loc["relu", "geomean_ratio"] * 0.98)
    df, _, _ = tables.operators(ops.reset_index())
    assert {"loop_geomean", "loop_ci_low", "loop_ci_high"} <= set(df.columns)


def test_coverage_and_families(h200, tmp_path):
    res, data = h200
    cov = pd.read_csv(data / "coverage.csv")
    assert len(cov) == 8 * 7 and set(cov["stage"]) == set(report_data.STAGES.values())
    bench = cov[cov["stage"] == "bench"].set_index("op")
    assert bench.loc["layer_norm", "verdict"] == "below" and bench.loc["layer_norm", "passed"] == 2
    fam = report_data.coverage_families(cov).set_index("family")
    assert fam.loc["ALL"].tolist() == ["", 8, 8, 8]
    # a summary with a source column, a kernel that fails its IR diff and a broken operator
    s = pd.read_csv(res / "summary.csv", dtype=str, keep_default_na=False)
    s.insert(3, "source", "tilegym.ops.cutile.x:" + s["kernel"])
    s.loc[s["op"] == "relu", "ir_diff"] = "FAIL"
    s.loc[s["op"] == "relu", "test"] = "not_run (no GPU)"
    broken = {c: "not_run" for c in s.columns} | {"op": "zz", "kernel": "-", "variant": "-", "analyze": "ERROR",
                                                  "source": ""}
    s = pd.concat([s, pd.DataFrame([broken])])
    s.to_csv(tmp_path / "summary.csv", index=False)
    cov2 = report_data.coverage(tmp_path / "summary.csv", 0.95)
    relu = cov2[cov2["op"] == "relu"].set_index("stage")
    assert relu.loc["ir_diff", "verdict"] == "fail" and relu.loc["gpu_test", "verdict"] == "not_run"
    assert relu.loc["ir_diff", "source"].startswith("tilegym.ops.cutile.x:")
    fam2 = report_data.coverage_families(cov2).set_index("family")
    assert fam2.loc["relu"].tolist()[1:] == [1, 0, 0] and fam2.loc["zz"].tolist()[1:] == [0, 0, 0]
    assert fam2.loc["ALL"].tolist()[1:] == [8, 7, 7]
    df, _, _ = tables.coverage(fam2.reset_index())
    assert "source" in df.columns
    # a timed variant whose timed output missed: a number in ratio, FAIL in the bench column
    s["bench"] = ""
    s.loc[s["op"] == "gelu", "bench"] = "FAIL"
    s.to_csv(tmp_path / "summary.csv", index=False)
    cov3 = report_data.coverage(tmp_path / "summary.csv", 0.95)
    gelu = cov3[(cov3["op"] == "gelu") & (cov3["stage"] == "bench")].iloc[0]
    assert (gelu["verdict"], gelu["passed"]) == ("fail", 0)
    assert cov3[(cov3["op"] == "bmm") & (cov3["stage"] == "bench")].iloc[0]["verdict"] == "pass"


def test_provenance_table_from_the_verdicts(h200):
    _, data = h200
    prov = json.loads((data / "provenance.json").read_text())
    rows = {r["field"]: r["value"] for r in prov["rows"]}
    assert rows["GPU"] == "NVIDIA H200 (sm_90)" and rows["driver"] == "580.159.04"
    assert rows["SM clock at benchmark time (MHz)"] == "unknown"
    assert rows["TileGym"].startswith("not the input")
    assert rows["operators measured"].startswith("8: bmm")
    assert "NVIDIA H200 (sm_90), driver 580.159.04" in report_data.short_provenance(prov)
    # clocks that differ between operators read as a range, other values with their operators
    assert report_data._merge([("a", 1755), ("b", 1980)]) == "1755-1980"
    assert report_data._merge([("a", "x"), ("b", "y"), ("c", "x")]) == "x (a, c); y (b)"


def test_latex_tables_compile(h200, tmp_path):
    """The tables, as the report rules write them, in a minimal pdfLaTeX document: those of the
    published verdicts (no loop timing: the loop gate table's one row says so) and the loop gate
    table of synthetic rows (below, undecided, no interval, re-timed: the counts line spans it), the
    outlier table of both (the published rows have no matched reading and no named cause)."""
    need("pdflatex")
    _, data = h200
    cfg = pd.DataFrame(LOOP_ROWS)
    cfg.loc[4, ["loop_ratio", "loop_ratio_lo", "loop_ratio_hi"]] = [0.955, 0.945, 0.965]
    cfg.to_csv(tmp_path / "loop_configs.csv", index=False)
    src = {"loop_gate": data / "configs.csv", "loop_rows": tmp_path / "loop_configs.csv"}
    pd.DataFrame(OUTLIER_ROWS).to_csv(tmp_path / "outlier_configs.csv", index=False)
    src |= {"outliers": data / "configs.csv", "outlier_rows": tmp_path / "outlier_configs.csv"}
    names = ("operators", "loop_gate", "loop_rows", "outliers", "outlier_rows", "coverage", "provenance")
    for name in names:
        inp = {"provenance": data / "provenance.json"} | (
            {"data": src.get(name, data / f"{name}.csv")} if name != "provenance" else {})
        build.table({"loop_rows": "loop_gate", "outlier_rows": "outliers"}.get(name, name), inp,
                    {e: tmp_path / f"{name}.{e}" for e in ("tex", "csv", "html")})
    assert "no config has loop timing" in (tmp_path / "loop_gate.tex").read_text()
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        + "".join(f"\\input{{{n}.tex}}\n" for n in names) + "\\end{document}\n")
    p = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:]
    assert (tmp_path / "paper.pdf").read_bytes()[:5] == b"%PDF-"
    assert "Undefined control sequence" not in p.stdout and "Missing $" not in p.stdout


def test_report_before_any_gpu_measurement(h200, tmp_path):
    """A run without a GPU: the tables say not_run, the figures say why they are empty."""
    from tileport.report import figures
    from tileport.report.figures import ratio, times

    res, _ = h200
    s = pd.read_csv(res / "summary.csv", dtype=str, keep_default_na=False)
    s["test"] = s["ratio"] = "not_run (no GPU: torch is not installed)"
    s.to_csv(tmp_path / "summary.csv", index=False)
    o = pd.read_csv(res / "summary_ops.csv", dtype=str, keep_default_na=False)
    o["configs"], o["geomean_ratio"], o["verdict"] = "0", "", "not_run (no GPU: torch is not installed)"
    o.to_csv(tmp_path / "summary_ops.csv", index=False)
    cfg = report_data.configs(res, tmp_path / "summary.csv")
    assert cfg.empty
    ops = report_data.operators(cfg, tmp_path / "summary_ops.csv")
    df, _, _ = tables.operators(ops)
    assert set(df["configs"]) == {"0"} and set(df["geomean_ratio"]) == {""}
    assert df.iloc[0]["verdict"].startswith("not_run (no GPU")
    assert report_data.measured_ops(tmp_path / "summary.csv") == []
    for fig in (ratio.draw(cfg), times.draw(cfg)):
        assert "not_run" in fig.axes[0].texts[0].get_text()
        figures.save(fig, {e: tmp_path / f"f.{e}" for e in ("pdf", "svg", "png")}, "t", "d")


def test_figures_are_reproducible(h200, tmp_path):
    """The same data draws the same bytes (no dates in the files, a fixed SVG id salt)."""
    from tileport.report import figures
    from tileport.report.figures import coverage

    _, data = h200
    cov = pd.read_csv(data / "coverage.csv")
    outs = []
    for k in range(2):
        out = {e: tmp_path / f"c{k}.{e}" for e in ("pdf", "svg", "png")}
        figures.save(coverage.draw(cov), out, "coverage", "Measured on NVIDIA H200")
        outs.append({e: p.read_bytes() for e, p in out.items()})
    assert outs[0] == outs[1]
    assert outs[0]["pdf"][:5] == b"%PDF-" and b"Measured on NVIDIA H200" in outs[0]["svg"]
    assert outs[0]["png"][:8] == b"\x89PNG\r\n\x1a\n"


# --- the loop gate per config -----------------------------------------------------------------

def loop_row(variant, ratio, lo=None, hi=None, prev=None, timed_at=None, op="tg_x"):
    """A configs.csv row with loop timing (µs per call): ref 10 µs, port 10 / ratio."""
    nan = float("nan")
    return {"op": op, "kernel": "_k", "variant": variant, "shape": "4096", "ratio": 1.0, "vs_torch": 1.2,
            "ref_vs_torch": 1.2,
            "ref_loop_us": 10.0, "port_loop_us": 10.0 / ratio, "torch_loop_us": 12.0, "loop_ratio": ratio,
            "loop_ratio_lo": nan if lo is None else lo, "loop_ratio_hi": nan if hi is None else hi,
            "ref_host_us": 6.5, "port_host_us": 8.25, "loop_ratio_prev": nan if prev is None else prev,
            "timed_at": nan if timed_at is None else timed_at, "harness": HARNESS}


LOOP_ROWS = [loop_row("below", 0.90, 0.88, 0.92, timed_at="2026-12-01T10:11:12+00:00"),
             loop_row("undecided", 0.965, 0.95, 0.98, timed_at="2026-12-01T10:12:00+00:00"),
             loop_row("pass", 1.01, 0.99, 1.03, timed_at="2026-12-01T10:13:00+00:00", op="tg_y"),
             loop_row("old", 0.95, op="tg_y"),                          # timed before the interval
             loop_row("retimed", 0.975, 0.96, 0.99, prev=0.94, timed_at="2026-12-02T08:00:00+00:00", op="tg_y")]


def test_loop_gate_classes_are_the_benchmarks():
    """One definition: the report's per-config classes are tileport.gpu.bench.loop_class, whose
    below / undecided the bench verdict's details.loop lists (and summary_ops.csv counts)."""
    from tileport.gpu import bench

    cfg = pd.DataFrame(LOOP_ROWS)
    assert report_data.loop_classes(cfg, 0.97).tolist() == ["below", "undecided", "pass", "below", "pass"]
    gate = bench.loop_gate([{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                            for r in LOOP_ROWS], 0.97)
    assert [r["variant"] for r in gate["below"]] == ["below", "old"]
    assert [r["variant"] for r in gate["undecided"]] == ["undecided"]
    # another threshold re-judges: at 0.96 the undecided row passes, at 1.0 the re-timed row's
    # interval (0.96-0.99) lies under it
    assert report_data.loop_classes(cfg, 0.96).tolist() == ["below", "pass", "pass", "below", "pass"]
    assert report_data.loop_classes(cfg, 1.0).tolist()[4] == "below"
    assert report_data.loop_classes(pd.DataFrame([{"op": "a", "ratio": 1.0}]), 0.97).tolist() == [None]


def test_loop_gate_table(tmp_path):
    cfg = pd.DataFrame(LOOP_ROWS)
    rows, counts = report_data.loop_gate(cfg, 0.97)
    assert rows["variant"].tolist() == ["below", "old", "undecided"]          # below first, lowest first
    assert rows["gate"].tolist() == ["below", "below, no interval", "undecided"]
    assert counts == {"timed": 5, "pass": 2, "below": 2, "undecided": 1, "retimed": 1, "retimed_pass": 1}
    df, tex, heads, fmt, line = tables.loop_gate(rows, counts, 0.97)
    assert line == "5 config(s) with loop timing: 2 passed, 2 below, 1 undecided; 1 re-timed, 1 of them passing now"
    assert df.iloc[0].to_dict() == {
        "op": "tg_x", "kernel": "_k", "variant": "below", "shape": "4096", "ref_loop_us": "10.0",
        "port_loop_us": "11.1", "loop_ratio": "0.900", "loop_ci_low": "0.880", "loop_ci_high": "0.920",
        "gate": "below", "ref_host_us": "6.50", "port_host_us": "8.25", "timed_at": "2026-12-01T10:11:12+00:00"}
    assert (df.iloc[1]["loop_ci_low"], df.iloc[1]["timed_at"]) == ("", "")    # the old row
    assert df.iloc[-1].tolist() == ["ALL"] + [""] * 8 + [line] + [""] * 3     # the counts line
    assert "loop_ratio_prev" not in df.columns          # no re-timed row among those shown
    assert tex["loop_ci"].tolist() == ["0.880–0.920", "", "0.950–0.980"] and len(tex) == 3
    assert tex["timed_at"].tolist() == ["2026-12-01 10:11", "", "2026-12-01 10:12"]
    assert tex["config"].tolist()[0] == "tg_x / _k / below / 4096"        # one column, wraps
    assert fmt == r"p{0.3\linewidth}" + "rrrcl" + "rr" + "l" and len(tex.columns) == 9

    # through the report job: LaTeX with the counts line spanning the table, the caveat of a
    # selective re-timing in the caption
    cfg.to_csv(tmp_path / "configs.csv", index=False)
    (tmp_path / "prov.json").write_text(json.dumps({"rows": [{"field": "GPU", "value": "NVIDIA H200"}]}))
    out = {e: tmp_path / f"loop_gate.{e}" for e in ("tex", "csv", "html")}
    build.table("loop_gate", {"data": tmp_path / "configs.csv", "provenance": tmp_path / "prov.json"}, out, 0.97)
    t = out["tex"].read_text()
    for needle in (r"tg\_x / \_k / below / 4096 & 10.0 & 11.1 & 0.900 & 0.880--0.920 & below & 6.50 & 8.25 & "
                   r"2026-12-01 10:11",
                   r"& 0.950 &  & below, no interval &", r"\shortstack{ref loop\\\textmu{}s}",
                   "\\midrule\n\\multicolumn{9}{l}{5 config(s) with loop timing: 2 passed, 2 below, 1 undecided; "
                   "1 re-timed, 1 of them passing now} \\\\\n\\bottomrule",
                   "under the loop threshold 0.97", "regression to the mean", r"\label{tab:tileport-loop_gate}"):
        assert needle in t, needle
    csv_rows = pd.read_csv(out["csv"], dtype=str, keep_default_na=False)
    assert csv_rows["op"].tolist() == ["tg_x", "tg_y", "tg_x", "ALL"]

    # a re-timed row that is still under the threshold shows its loop ratio before
    cfg.loc[4, ["loop_ratio", "loop_ratio_lo", "loop_ratio_hi"]] = [0.955, 0.945, 0.965]
    rows, counts = report_data.loop_gate(cfg, 0.97)
    df, tex, _, fmt, line = tables.loop_gate(rows, counts, 0.97)
    assert df.set_index("variant").loc["retimed", ["gate", "loop_ratio_prev"]].tolist() == ["below", "0.940"]
    assert line.endswith("; 1 re-timed, 0 of them passing now") and fmt.endswith("lr") and len(tex.columns) == 10


def test_loop_gate_table_when_every_config_passes(tmp_path):
    cfg = pd.DataFrame([LOOP_ROWS[2], {**LOOP_ROWS[2], "variant": "pass2", "loop_ratio": 0.97}])
    rows, counts = report_data.loop_gate(cfg, 0.97)                       # at the threshold passes
    assert rows.empty and counts["pass"] == 2
    df, tex, _, _, line = tables.loop_gate(rows, counts, 0.97)
    assert len(df) == 1 and tex.empty
    assert df.iloc[0]["gate"] == line == ("every config passes the loop gate (loop ratio ≥ 0.97); "
                                          "2 config(s) with loop timing: 2 passed, 0 below, 0 undecided")
    cfg.to_csv(tmp_path / "configs.csv", index=False)
    (tmp_path / "prov.json").write_text(json.dumps({"rows": []}))
    out = {e: tmp_path / f"t.{e}" for e in ("tex", "csv", "html")}
    build.table("loop_gate", {"data": tmp_path / "configs.csv", "provenance": tmp_path / "prov.json"}, out, 0.97)
    t = out["tex"].read_text()
    assert "\\midrule\n\\multicolumn{8}{l}{every config passes the loop gate (loop ratio $\\geq$ 0.97); " in t
    assert t.count("\\midrule") == 1 and "regression to the mean" not in t
    # no loop timing at all (verdicts timed before it existed): one row says so
    _, counts = report_data.loop_gate(cfg.drop(columns=[c for c in cfg.columns if "loop" in c]), 0.97)
    assert counts["timed"] == 0
    assert tables.loop_gate(pd.DataFrame(), counts, 0.97)[4] == "no config has loop timing"


def test_operators_count_the_loop_gate_per_operator(tmp_path):
    cfg = pd.DataFrame(LOOP_ROWS + [{"op": "tg_z", "kernel": "_k", "variant": "v", "shape": "1", "ratio": 1.0,
                                     "vs_torch": 1.1, "ref_vs_torch": 1.1}])
    (tmp_path / "summary_ops.csv").write_text("op,configs,geomean_ratio,verdict\ntg_x,2,1.0,DONE\n"
                                              "tg_y,3,1.0,DONE\ntg_z,1,1.0,DONE\nALL,6,1.0,x\n")
    ops = report_data.operators(cfg, tmp_path / "summary_ops.csv", 0.97).set_index("op")
    assert ops.loc["tg_x", ["loop_below", "loop_undecided"]].tolist() == [1, 1]
    assert ops.loc["tg_y", ["loop_below", "loop_undecided"]].tolist() == [1, 0]
    assert ops.loc["ALL", ["loop_below", "loop_undecided"]].tolist() == [2, 1]
    assert ops.loc["tg_z", ["loop_below", "loop_undecided"]].isna().all()     # no loop timing
    ops.reset_index().to_csv(tmp_path / "operators.csv", index=False)
    df, heads, fmt = tables.operators(pd.read_csv(tmp_path / "operators.csv", keep_default_na=False, na_values=[""]))
    assert df["loop_below"].tolist() == ["1", "1", "", "2"] and df["loop_undecided"].tolist() == ["1", "0", "", "1"]
    tex = tables.operators_tex(df)
    assert list(tex.columns[-4:]) == ["loop_geomean", "loop_ci", "loop_below", "loop_undecided"]
    assert len(fmt) == len(tex.columns)


def test_configs_carry_the_loop_gate_fields(h200, tmp_path):
    """configs.csv takes the loop ratio's interval, host times, timed_at and a re-timed row's
    loop_ratio_prev from bench.json's rows."""
    res, _ = h200
    shutil.copytree(res / "relu", tmp_path / "relu")
    doc = json.loads((tmp_path / "relu" / "bench.json").read_text())
    for i, r in enumerate(doc["details"]["rows"]):
        r.update(loop_ratio=0.95 + 0.01 * i, loop_ratio_lo=0.94, loop_ratio_hi=0.96 + 0.01 * i,
                 ref_loop_us=10.0, port_loop_us=10.0, ref_host_us=6.0, port_host_us=7.0,
                 timed_at="2026-12-01T10:00:00+00:00", harness=HARNESS)
    doc["details"]["rows"][0]["loop_ratio_prev"] = 0.93
    (tmp_path / "relu" / "bench.json").write_text(json.dumps(doc))
    s = pd.read_csv(res / "summary.csv", dtype=str, keep_default_na=False)
    s[s["op"] == "relu"].to_csv(tmp_path / "summary.csv", index=False)
    cfg = report_data.configs(tmp_path, tmp_path / "summary.csv")
    assert {"loop_ratio_lo", "loop_ratio_hi", "ref_host_us", "port_host_us", "timed_at",
            "loop_ratio_prev"} <= set(cfg.columns)
    assert cfg["loop_ratio_prev"].notna().sum() == 1 and set(cfg["timed_at"]) == {"2026-12-01T10:00:00+00:00"}
    _, counts = report_data.loop_gate(cfg, 0.97)
    # ratios 0.95, 0.96, ...: the first (hi 0.96) below, the second (hi 0.97) reaches it
    assert (counts["below"], counts["undecided"], counts["pass"], counts["retimed"]) == (1, 1, 10, 1)


# --- the per-config ratio distribution and the outliers ---------------------------------------

def outlier_row(variant, ratio, matched=None, cause=None, op="tg_x", shape="4096"):
    """A configs.csv row: ratio (as launched), ratio_matched (NaN: none), the named cause."""
    nan = float("nan")
    return {"op": op, "kernel": "_k", "variant": variant, "shape": shape, "ratio": ratio,
            "vs_torch": 1.0, "ref_vs_torch": 1.0, "ratio_matched": nan if matched is None else matched,
            "cause": nan if cause is None else cause}


# far_launch: the launchers' facts (matched inside); far_ir: outside on both; slow: a slow port;
# matched_only: inside as launched, outside matched; edge: 0.97 exactly (inside); old: no matched
OUTLIER_ROWS = [outlier_row("inside", 1.004, 1.015), outlier_row("far_launch", 2.74, 1.002, "launcher specialisation"),
                outlier_row("far_ir", 1.41, 1.43, "IR difference", op="tg_y"), outlier_row("slow", 0.95, 0.949),
                outlier_row("matched_only", 1.015, 0.96, "unexplained"), outlier_row("edge", 0.97, 1.03),
                outlier_row("old", 1.121, shape="16384x1000")]


def test_outliers_are_every_config_outside_3_percent_on_either_reading():
    rows, counts = report_data.outliers(pd.DataFrame(OUTLIER_ROWS))
    assert rows["variant"].tolist() == ["far_launch", "far_ir", "old", "slow", "matched_only"]   # farthest first
    assert rows.set_index("variant")["cause"].to_dict() == {
        "far_launch": "launcher specialisation", "far_ir": "IR difference", "old": "not diagnosed",
        "slow": "not diagnosed", "matched_only": "unexplained"}
    assert pd.isna(rows.set_index("variant").loc["old", "ratio_matched"])
    assert counts == {"configs": 7, "matched": 6, "outside": 5, "outside_ratio": 4, "outside_matched": 3,
                      "causes": {"launcher specialisation": 1, "IR difference": 1, "not diagnosed": 2,
                                 "unexplained": 1}}
    df, tex, heads, fmt, line = tables.outliers(rows, counts, 0.03)
    assert list(df.columns) == ["op", "kernel", "variant", "shape", "ratio", "ratio_matched", "cause"]
    assert df.iloc[0].tolist() == ["tg_x", "_k", "far_launch", "4096", "2.74", "1.00", "launcher specialisation"]
    assert df.set_index("variant").loc["old", ["ratio", "ratio_matched"]].tolist() == ["1.12", ""]   # blank
    assert line == ("5 of 7 config(s) outside ±3%: 4 as launched, 3 matched (6 with a matched reading); "
                    "causes: not diagnosed 2, IR difference 1, launcher specialisation 1, unexplained 1")
    assert df.iloc[-1].tolist() == ["ALL"] + [""] * 5 + [line]
    assert tex["config"].tolist()[1] == "tg_y / _k / far_ir / 4096" and len(tex) == 5
    assert fmt == r"p{0.5\linewidth}rrp{0.22\linewidth}" and len(fmt.replace(r"\linewidth", "")) > 0


def test_outliers_without_a_matched_reading_or_causes():
    """Rows published before the matched reading and the causes existed: no such columns at all."""
    cfg = pd.DataFrame(OUTLIER_ROWS).drop(columns=["ratio_matched", "cause"])
    rows, counts = report_data.outliers(cfg)
    assert rows["variant"].tolist() == ["far_launch", "far_ir", "old", "slow"]
    assert set(rows["cause"]) == {"not diagnosed"} and rows["ratio_matched"].isna().all()
    assert (counts["matched"], counts["outside_matched"], counts["outside_ratio"]) == (0, 0, 4)
    df, _, _, _, line = tables.outliers(rows, counts, 0.03)
    assert set(df["ratio_matched"]) == {""}
    assert line.startswith("4 of 7 config(s) outside ±3%: 4 as launched, 0 matched")
    inside = pd.DataFrame([OUTLIER_ROWS[0]])
    r2, c2 = report_data.outliers(inside)
    assert r2.empty and tables.outliers(r2, c2, 0.03)[4] == ("every config within ±3% of parity: 1 as launched, "
                                                             "1 with a matched reading")
    assert tables.outliers(*report_data.outliers(inside.iloc[:0]), 0.03)[4] == "no config timed"


def test_configs_take_the_matched_reading_and_the_diagnosed_cause(h200, tmp_path):
    """configs.csv: ratio_matched from bench.json's rows, cause from the row or else from
    perf_diagnosis.json's details.outliers; neither column where no row has it."""
    res, data = h200
    assert not {"ratio_matched", "cause"} & set(pd.read_csv(data / "configs.csv").columns)
    shutil.copytree(res / "relu", tmp_path / "relu")
    doc = json.loads((tmp_path / "relu" / "bench.json").read_text())
    rows = doc["details"]["rows"]
    rows[0]["ratio_matched"], rows[1]["ratio_matched"], rows[1]["cause"] = 1.001, 0.9, "IR difference"
    (tmp_path / "relu" / "bench.json").write_text(json.dumps(doc))
    key = ("kernel", "variant", "shape")
    write(Verdict(stage="perf_diagnose", op="relu", verdict="PASS", summary="x", details={"outliers": [
        {k: rows[0][k] for k in key} | {"cause": "launcher specialisation"},
        {k: rows[1][k] for k in key} | {"cause": "unexplained"}]}), tmp_path / "relu" / "perf_diagnosis.json")
    s = pd.read_csv(res / "summary.csv", dtype=str, keep_default_na=False)
    s[s["op"] == "relu"].to_csv(tmp_path / "summary.csv", index=False)
    cfg = report_data.configs(tmp_path, tmp_path / "summary.csv")
    assert cfg["ratio_matched"].tolist()[:2] == [1.001, 0.9] and cfg["ratio_matched"].notna().sum() == 2
    # the row's own cause wins over the diagnosis; a config neither names has none
    assert cfg["cause"].tolist()[:2] == ["launcher specialisation", "IR difference"]
    assert cfg["cause"].notna().sum() == 2
    assert report_data.diagnosed_causes(tmp_path / "nowhere.json") == {}


def test_ratio_distribution_figure_with_and_without_the_matched_reading(tmp_path):
    """The ECDF: one step curve per reading present, the ±1 % and ±2 % bands shaded, the legend
    counting configs and the share inside each band; it draws from rows lacking ratio_matched."""
    from matplotlib.patches import Polygon, Rectangle

    from tileport.report import figures
    from tileport.report.figures import ratio

    cfg = pd.DataFrame(OUTLIER_ROWS)
    fig = ratio.draw(cfg)
    ax, zoom = fig.axes
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["parity ±1%", "parity ±2%"]
    assert labels[2] == "as launched: 7 configs, 14% within ±1%, 29% within ±2%"
    assert labels[3] == "matched specialisation: 6 configs, 17% within ±1%, 33% within ±2%"
    def span(p):              # axvspan: a Rectangle (matplotlib >= 3.9) or a Polygon, x in data units
        if isinstance(p, Rectangle):
            return round(p.get_x(), 6), round(p.get_x() + p.get_width(), 6)
        return round(float(p.get_xy()[:, 0].min()), 6), round(float(p.get_xy()[:, 0].max()), 6)

    bands = [span(p) for p in ax.patches if isinstance(p, (Polygon, Rectangle))]
    assert (0.99, 1.01) in bands and (0.98, 1.02) in bands
    launched = ax.get_lines()[0]
    assert launched.get_ydata()[-1] == 1.0 and launched.get_xdata()[-1] == pytest.approx(2.74)
    assert ax.get_xscale() == "log" and zoom.get_xlim() == pytest.approx((0.9, 1.1))
    out = {e: tmp_path / f"r.{e}" for e in ("pdf", "svg", "png")}
    figures.save(fig, out, "ratio", "d")
    old = cfg.drop(columns=["ratio_matched"])
    fig2 = ratio.draw(old)
    assert [t.get_text() for t in fig2.legends[0].get_texts()][2:] == [
        "as launched: 7 configs, 14% within ±1%, 29% within ±2%"]
    assert len(fig2.axes[0].get_lines()) == 2                  # one curve and the parity line
    assert len(ratio.draw(cfg.assign(ratio_matched=float("nan"))).legends[0].get_texts()) == 3
    assert ratio.within([0.99, 1.0, 1.01, 1.02, 1.5], 0.01) == 0.6          # the band's edges inside
