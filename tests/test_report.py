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
from scipy import stats

from conftest import REPO
from tileport import provenance as P
from tileport.report import build, data as D, tables as T
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
    assert T.sig3(x) == text


def test_tex_escape():
    assert T.tex_escape("layer_norm 5% & µs ×2 {x} > 1") == \
        r"layer\_norm 5\% \& \textmu{}s $\times$2 \{x\} \textgreater{} 1"


def test_operators_table(tmp_path):
    ops = pd.DataFrame([
        {"op": "layer_norm", "configs": 6, "geomean_ratio": 0.94312, "ci_low": 0.9163, "ci_high": 0.97335,
         "verdict": "BELOW_THRESHOLD", "vs_torch": 1.1877, "ref_vs_torch": 1.2593},
        {"op": "ALL", "configs": 74, "geomean_ratio": 0.98967, "ci_low": 0.98158, "ci_high": 0.99483,
         "verdict": float("nan"), "vs_torch": 1.0115, "ref_vs_torch": 1.0221}])
    df, heads, fmt = T.operators(ops)
    assert df.iloc[0].tolist() == ["layer_norm", "6", "0.943", "0.916", "0.973", "BELOW_THRESHOLD", "1.19", "1.26"]
    assert df.iloc[1]["verdict"] == ""
    prov = [{"field": "GPU", "value": "NVIDIA H200 (sm_90)"}, {"field": "driver", "value": "580.159.04"}]
    out = {e: tmp_path / f"operators.{e}" for e in ("tex", "csv", "html")}
    T.write(df, heads, out, "Caption with sm_90 (> 1: faster).", "tab:x", prov, column_format=fmt,
            tex_df=T.operators_tex(df))
    tex = out["tex"].read_text()
    assert "% provenance:\n%   GPU: NVIDIA H200 (sm_90)\n%   driver: 580.159.04" in tex
    for needle in (r"\toprule", r"\midrule", r"\bottomrule", r"layer\_norm & 6 & 0.943 & 0.916--0.973 & BELOW\_THRESHOLD",
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
    p = P.collect(bench={"warmup_ms": 20, "seed": 0}, smi=str(fake_smi(tmp_path)))
    g = p["gpu"]
    assert (g["name"], g["driver"], g["cuda_driver"], g["pstate"]) == ("NVIDIA H200", "580.159.04", "13.0", "P0")
    assert (g["sm_clock_mhz"], g["mem_clock_mhz"], g["sm_clock_max_mhz"]) == (1980, 3201, 1980)
    assert g["power_w"] == "unknown" and g["source"] == "nvidia-smi"      # [N/A]
    # the device this process computes on: the first of CUDA_VISIBLE_DEVICES
    assert all(line.startswith("-i 3") for line in (tmp_path / "smi.log").read_text().splitlines())
    assert p["bench"] == {"warmup_ms": 20, "seed": 0} and p["schema"] == P.SCHEMA
    assert p["versions"]["cuda_tile"] == "1.7.0" and p["versions"]["cutile"] == "0.5.0"
    assert len(p["config_sha256"]) == 64 and p["date"].endswith("+00:00")
    json.dumps(p)                                             # storable in a verdict


def test_provenance_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    p = P.collect(smi=str(tmp_path / "no-such-nvidia-smi"))
    assert p["gpu"]["source"].endswith("not found")
    assert {v for k, v in p["gpu"].items() if k != "source"} == {"unknown"}
    failing = fake_smi(tmp_path, "#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    g = P.nvidia_smi(str(failing))
    assert g["source"].endswith("failed") and g["sm_clock_mhz"] == "unknown"
    # the CPU side of the report never asks nvidia-smi
    assert P.collect(gpu=False)["gpu"]["source"] == "not read (CPU side)"


def test_git_state_and_commit_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.delenv("TILEPORT_COMMIT", raising=False)
    assert P.git_state(tmp_path)["commit"] == "unknown"
    monkeypatch.setenv("TILEPORT_COMMIT", "0b39313+dirty")
    assert P.git_state(tmp_path) == {"commit": "0b39313", "dirty": True, "describe": "0b39313+dirty (TILEPORT_COMMIT)"}
    monkeypatch.delenv("TILEPORT_COMMIT")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (tmp_path / "a.txt").write_text("a\n")
    subprocess.run(git + ["add", "a.txt"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "a"], check=True)
    clean = P.git_state(tmp_path)
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    (tmp_path / "a.txt").write_text("b\n")
    assert P.git_state(tmp_path)["dirty"] is True and P.git_state(tmp_path)["describe"].endswith("+dirty")
    # a copy packed for a GPU node over another commit's repository: the packer's word wins
    monkeypatch.setenv("TILEPORT_COMMIT", "f95e0a5")
    assert P.git_state(tmp_path)["commit"] == "f95e0a5"


def test_tilegym_wheel_hash_from_its_pin(tmp_path):
    sha = "ab" * 32
    (tmp_path / "requirements.lock").write_text(f"pyyaml==6.0.4\ntilegym==1.5.1 \\\n    --hash=sha256:{sha}\nzz==1\n")
    t = P.tilegym(tmp_path)
    assert t["wheel_sha256"] == sha and t["pin"] == "requirements.lock: tilegym==1.5.1"
    assert P.tilegym(tmp_path / "nowhere")["wheel_sha256"] == "unknown"


def test_config_hash_ignores_layout():
    a = P.config_sha256({"bench": {"seed": 0, "rep_ms": 150}, "gpu": "auto"})
    b = P.config_sha256({"gpu": "auto", "bench": {"rep_ms": 150, "seed": 0}})
    assert a == b != P.config_sha256({"gpu": "off", "bench": {"rep_ms": 150, "seed": 0}})


def test_provenance_of_verdicts_written_before_it_existed():
    """The published H200 verdicts carry details.env only: the report still names the GPU."""
    d = json.loads((H200 / "ops" / "relu" / "bench.json").read_text())["details"]
    f = D.flat_provenance(d)
    assert f["gpu"] == "NVIDIA H200 (sm_90)" and f["driver"] == "580.159.04"
    assert (f["torch"], f["cuda_runtime"], f["tileiras"]) == ("2.11.0+cu130", "13.0", "13.4.92")
    assert f["sm_clock_mhz"] == "unknown" and f["commit"] == "unknown"
    # a verdict with provenance: its values win
    d2 = {**d, "provenance": P.collect(bench={"seed": 0}, gpu=False) | {
        "gpu": {"name": "NVIDIA H100", "driver": "570.1", "sm_clock_mhz": 1755}}}
    f2 = D.flat_provenance(d2)
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
    relu = D.configs(tmp_path, tmp_path / "summary.csv")
    assert len(relu) == 12 and set(relu["loop_ratio"]) == {0.97} and set(relu["port_loop_us"]) == {20.5}
    cfg = pd.read_csv(data / "configs.csv")
    cfg["loop_ratio"] = cfg["ratio"] * 0.98
    ops = D.operators(cfg, res / "summary_ops.csv").set_index("op")
    assert ops.loc["relu", "loop_geomean"] == pytest.approx(ops.loc["relu", "geomean_ratio"] * 0.98)
    df, _, _ = T.operators(ops.reset_index())
    assert {"loop_geomean", "loop_ci_low", "loop_ci_high"} <= set(df.columns)


def test_coverage_and_families(h200, tmp_path):
    res, data = h200
    cov = pd.read_csv(data / "coverage.csv")
    assert len(cov) == 8 * 7 and set(cov["stage"]) == set(D.STAGES.values())
    bench = cov[cov["stage"] == "bench"].set_index("op")
    assert bench.loc["layer_norm", "verdict"] == "below" and bench.loc["layer_norm", "passed"] == 2
    fam = D.coverage_families(cov).set_index("family")
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
    cov2 = D.coverage(tmp_path / "summary.csv", 0.95)
    relu = cov2[cov2["op"] == "relu"].set_index("stage")
    assert relu.loc["ir_diff", "verdict"] == "fail" and relu.loc["gpu_test", "verdict"] == "not_run"
    assert relu.loc["ir_diff", "source"].startswith("tilegym.ops.cutile.x:")
    fam2 = D.coverage_families(cov2).set_index("family")
    assert fam2.loc["relu"].tolist()[1:] == [1, 0, 0] and fam2.loc["zz"].tolist()[1:] == [0, 0, 0]
    assert fam2.loc["ALL"].tolist()[1:] == [8, 7, 7]
    df, _, _ = T.coverage(fam2.reset_index())
    assert "source" in df.columns


def test_provenance_table_from_the_verdicts(h200):
    _, data = h200
    prov = json.loads((data / "provenance.json").read_text())
    rows = {r["field"]: r["value"] for r in prov["rows"]}
    assert rows["GPU"] == "NVIDIA H200 (sm_90)" and rows["driver"] == "580.159.04"
    assert rows["SM clock at benchmark time (MHz)"] == "unknown"
    assert rows["TileGym"].startswith("not the input")
    assert rows["operators measured"].startswith("8: bmm")
    assert "NVIDIA H200 (sm_90), driver 580.159.04" in D.short_provenance(prov)
    # clocks that differ between operators read as a range, other values with their operators
    assert D._merge([("a", 1755), ("b", 1980)]) == "1755-1980"
    assert D._merge([("a", "x"), ("b", "y"), ("c", "x")]) == "x (a, c); y (b)"


def test_latex_tables_compile(h200, tmp_path):
    """The three tables, as the report rules write them, in a minimal pdfLaTeX document."""
    need("pdflatex")
    _, data = h200
    for name in ("operators", "coverage", "provenance"):
        inp = {"provenance": data / "provenance.json"} | ({"data": data / f"{name}.csv"} if name != "provenance" else {})
        build.table(name, inp, {e: tmp_path / f"{name}.{e}" for e in ("tex", "csv", "html")})
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
        "\\input{operators.tex}\n\\input{coverage.tex}\n\\input{provenance.tex}\n\\end{document}\n")
    p = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:]
    assert (tmp_path / "paper.pdf").read_bytes()[:5] == b"%PDF-"
    assert "Undefined control sequence" not in p.stdout and "Missing $" not in p.stdout


def test_report_before_any_gpu_measurement(h200, tmp_path):
    """A run without a GPU: the tables say not_run, the figures say why they are empty."""
    from tileport.report import figures as F
    from tileport.report.figures import ratio, times

    res, _ = h200
    s = pd.read_csv(res / "summary.csv", dtype=str, keep_default_na=False)
    s["test"] = s["ratio"] = "not_run (no GPU: torch is not installed)"
    s.to_csv(tmp_path / "summary.csv", index=False)
    o = pd.read_csv(res / "summary_ops.csv", dtype=str, keep_default_na=False)
    o["configs"], o["geomean_ratio"], o["verdict"] = "0", "", "not_run (no GPU: torch is not installed)"
    o.to_csv(tmp_path / "summary_ops.csv", index=False)
    cfg = D.configs(res, tmp_path / "summary.csv")
    assert cfg.empty
    ops = D.operators(cfg, tmp_path / "summary_ops.csv")
    df, _, _ = T.operators(ops)
    assert set(df["configs"]) == {"0"} and set(df["geomean_ratio"]) == {""}
    assert df.iloc[0]["verdict"].startswith("not_run (no GPU")
    assert D.measured_ops(tmp_path / "summary.csv") == []
    for fig in (ratio.draw(ops, 0.95), times.draw(cfg)):
        assert "not_run" in fig.axes[0].texts[0].get_text()
        F.save(fig, {e: tmp_path / f"f.{e}" for e in ("pdf", "svg", "png")}, "t", "d")


def test_figures_are_reproducible(h200, tmp_path):
    """The same data draws the same bytes (no dates in the files, a fixed SVG id salt)."""
    from tileport.report import figures as F
    from tileport.report.figures import coverage

    _, data = h200
    cov = pd.read_csv(data / "coverage.csv")
    outs = []
    for k in range(2):
        out = {e: tmp_path / f"c{k}.{e}" for e in ("pdf", "svg", "png")}
        F.save(coverage.draw(cov), out, "coverage", "Measured on NVIDIA H200")
        outs.append({e: p.read_bytes() for e, p in out.items()})
    assert outs[0] == outs[1]
    assert outs[0]["pdf"][:5] == b"%PDF-" and b"Measured on NVIDIA H200" in outs[0]["svg"]
    assert outs[0]["png"][:8] == b"\x89PNG\r\n\x1a\n"
