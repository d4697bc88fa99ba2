"""Integration: the real workflow on two operators (+ one broken) in a temp copy of the repo."""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import REPO, copy_workflow


def snakemake(wd, *args, check=True):
    exe = os.path.join(os.path.dirname(sys.executable), "snakemake")
    p = subprocess.run([exe, "--cores", "2", *args], cwd=wd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"snakemake {args} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def planned(wd, *extra) -> dict:
    """Jobs a dry run would execute, by rule (Snakemake's 'Job stats' table)."""
    p = snakemake(wd, "-n", "results/summary.csv", *extra)
    out = p.stdout + p.stderr
    if "Nothing to be done" in out:
        return {}
    stats = out.split("Job stats:", 1)[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M) if m[1] != "total"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    wd = tmp_path_factory.mktemp("wf")
    copy_workflow(wd, ["relu", "softmax"])
    # a third operator with a syntax error in its kernel: must not stop the others
    shutil.copytree(REPO / "operators" / "gelu", wd / "operators" / "gelu")
    k = wd / "operators" / "gelu" / "kernel.py"
    k.write_text(k.read_text().replace("bid = ct.bid(0)", "bid = ct.bid(0", 1))
    # a fourth with a malformed manifest: reported in summary.csv, others unaffected
    shutil.copytree(REPO / "operators" / "rms_norm", wd / "operators" / "rms_norm")
    m = wd / "operators" / "rms_norm" / "manifest.yaml"
    m.write_text(m.read_text().replace("dtypes: [f16, bf16, f32]", "dtypes: f16"))
    # folders that cannot be operators: an invalid name, a folder with only a kernel.py
    shutil.copytree(REPO / "operators" / "relu", wd / "operators" / "relu.bak")
    # an operator named like a Rust keyword would break the shared host library's module names
    shutil.copytree(REPO / "operators" / "relu", wd / "operators" / "type")
    (wd / "operators" / "lonely").mkdir()
    shutil.copy2(REPO / "operators" / "relu" / "kernel.py", wd / "operators" / "lonely" / "kernel.py")
    t0 = time.monotonic()
    p = snakemake(wd, "results/summary.csv", check=False)
    return wd, p, time.monotonic() - t0


def rows(wd):
    with open(wd / "results" / "summary.csv") as fh:
        return list(csv.DictReader(fh))


def test_full_run_reaches_ir_pass(workdir):
    wd, p, secs = workdir
    assert p.returncode == 0, p.stderr[-3000:]
    rs = rows(wd)
    cols = "op,kernel,variant,analyze,reference_ir,write_kernel,rust_ir,ir_diff,attempts,test,ratio".split(",")
    assert list(rs[0])[:len(cols)] == cols
    good = [r for r in rs if r["op"] in ("relu", "softmax")]
    assert len(good) == 12
    for r in good:
        assert (r["analyze"], r["reference_ir"], r["write_kernel"], r["rust_ir"]) == ("PASS",) * 4, r
        assert r["ir_diff"] == "PASS", r
        # gpu: auto on a machine without a CUDA device (CI): GPU rows say why, the run succeeds
        assert r["test"].startswith("not_run (no GPU") and r["ratio"].startswith("not_run (no GPU"), r
    # softmax's persistent loop reads and writes through raw view ops: no bounds assert that the
    # reference lacks (cutile's checked partition load/store would leave one in the loop)
    diffs = list((wd / "results" / "softmax" / "ir_diff" / "softmax_kernel").glob("*.json"))
    assert len(diffs) == 6
    for f in diffs:
        assert json.loads(f.read_text())["details"]["stats"]["asserts_removed"] == {"ref": 0, "port": 0}
    # the host library was still built (CPU) with both good operators' shims
    hb = json.loads((wd / "results" / "host" / "build.json").read_text())
    assert hb["verdict"] in ("PASS", "PASS_WITH_NOTES")
    assert hb["details"]["ops"]["relu"]["in_library"] and hb["details"]["ops"]["softmax"]["in_library"]
    assert not hb["details"]["ops"]["gelu"]["in_library"]        # its kernel.py has a syntax error
    assert (wd / "results" / "host" / "libtileport_host.so").stat().st_size > 0
    ops = {r["op"]: r for r in csv.DictReader(open(wd / "results" / "summary_ops.csv"))}
    assert ops["ALL"]["configs"] == "0" and ops["relu"]["verdict"].startswith("not_run (no GPU")


def test_broken_operator_is_reported_not_fatal(workdir):
    wd, p, _ = workdir
    bad = [r for r in rows(wd) if r["op"] == "gelu"]
    assert bad and all(r["analyze"] == "BLOCKED" for r in bad)
    assert all(r["ir_diff"] == "BLOCKED" for r in bad)
    assert "kernel.py:" in bad[0]["note"] and "syntax error" in bad[0]["note"]
    # the deterministic translator is not retried on identical input; its attempt log stays
    assert {r["attempts"] for r in bad} == {"1"}
    logs = wd / "results" / "gelu" / "logs" / "write_kernel" / "gelu_tanh_kernel"
    assert "syntax error" in (logs / "1.log.attempt-1").read_text()
    # the routing loop stopped after one attempt: the translator would only repeat itself
    route = json.loads((wd / "results" / "gelu" / "attempts" / "gelu_tanh_kernel" / "1" / "route.json").read_text())
    assert route["next"] == "stop" and "blocked" in route["route"]
    assert not (wd / "results" / "gelu" / "attempts" / "gelu_tanh_kernel" / "2").exists()


def test_malformed_manifest_is_one_marked_row(workdir):
    wd, _, _ = workdir
    bad = [r for r in rows(wd) if r["op"] == "rms_norm"]
    assert len(bad) == 1 and bad[0]["kernel"] == "-" and bad[0]["analyze"] == "ERROR"
    assert "manifest.yaml:" in bad[0]["note"] and "dtypes" in bad[0]["note"]


def test_broken_folders_are_rows_not_crashes(workdir):
    wd, _, _ = workdir
    rs = {r["op"]: r for r in rows(wd)}
    assert rs["relu.bak"]["analyze"] == "not_run" and "not an operator name" in rs["relu.bak"]["note"]
    assert rs["lonely"]["analyze"] == "ERROR" and "lacks manifest.yaml" in rs["lonely"]["note"]
    assert rs["type"]["analyze"] == "not_run" and "is a Rust keyword" in rs["type"]["note"]


def test_gpu_required_without_gpu_fails_before_any_job(workdir):
    wd, _, _ = workdir
    p = snakemake(wd, "-n", "results/summary.csv", "--config", "gpu=required", check=False)
    assert p.returncode != 0
    assert "gpu: required, but there is no usable GPU here" in p.stdout + p.stderr


def test_switching_gpu_mode_does_not_rerun_gpu_stages(workdir):
    # the mode is read from the config, not a param: switching it must not wipe measurements
    wd, _, _ = workdir
    assert planned(wd, "--config", "gpu=off") == {}
    # a new threshold re-judges (perf diagnosis, summary) but does not re-measure (bench)
    cfg = wd / "config.yaml"
    text = cfg.read_text()
    try:
        cfg.write_text(text.replace("threshold: 0.95", "threshold: 0.5"))
        # relu, softmax, gelu (each operator's GPU route reads its perf diagnosis)
        assert planned(wd) == {"perf_diagnose": 3, "gpu_route": 3, "final_round": 3, "summary": 1}
    finally:
        cfg.write_text(text)


def test_noop_rerun_plans_zero_jobs(workdir):
    wd, _, _ = workdir
    assert planned(wd) == {}


def test_touching_one_operator_reruns_only_its_chain(workdir):
    wd, _, _ = workdir
    k = wd / "operators" / "softmax" / "kernel.py"
    # an edit (Snakemake 9 compares checksums, so a bare mtime touch with the same bytes
    # is correctly not a change)
    k.write_text(k.read_text() + "# edited\n")
    jobs = planned(wd)
    # softmax: 1 analysis, 6 reference + 6 rust IR + 6 diffs, 1 kernel (written, checked,
    # routed, accepted), 1 build, its shim, the
    # shared host library, its GPU test/bench/perf diagnosis; + the summary. relu's GPU stages
    # do not rerun although the library they load is rebuilt.
    assert jobs == {"analyze": 1, "reference_ir": 6, "write_kernel": 1, "check_kernel": 1, "route": 1,
                    "accept_kernel": 1, "rust_build": 1,
                    "rust_ir": 6, "ir_diff": 6, "ir_diagnose": 6, "host_shim": 1, "host_build": 1,
                    "gpu_test": 1, "bench": 1, "perf_diagnose": 1, "gpu_route": 1, "final_round": 1,
                    "summary": 1}
    p = snakemake(wd, "-n", "results/summary.csv")
    assert "results/relu/" not in re.sub(r"input: .*", "", p.stdout)
    snakemake(wd, "results/summary.csv")
    assert planned(wd) == {}


def test_manifest_edit_reruns_its_operator(workdir):
    wd, _, _ = workdir
    m = wd / "operators" / "relu" / "manifest.yaml"
    m.write_text(m.read_text() + "\n")
    jobs = planned(wd)
    assert jobs.get("analyze") == 1 and jobs.get("rust_ir") == 6
    snakemake(wd, "results/summary.csv")
