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

from tileport.flow import route_files


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


def test_every_folder_is_a_row_of_summary_ops_too(workdir):
    """Issue 17 item 1: the malformed manifest and the broken folders are in summary_ops.csv as
    well, with their verdict, and the ALL row counts them."""
    wd, _, _ = workdir
    ops = {r["op"]: r for r in csv.DictReader(open(wd / "results" / "summary_ops.csv"))}
    assert set(ops) == {r["op"] for r in rows(wd)} | {"ALL"}
    assert ops["rms_norm"]["verdict"].startswith("ERROR (manifest: ") and "manifest.yaml:" in ops["rms_norm"]["verdict"]
    assert (ops["lonely"]["verdict"].startswith("ERROR (manifest: ")
            and "lacks manifest.yaml" in ops["lonely"]["verdict"])
    assert ops["relu.bak"]["verdict"].startswith("not_run (") and ops["type"]["verdict"].startswith("not_run (")
    assert ops["ALL"]["verdict"].endswith(f"{len(ops) - 1} operator(s): not_run 5, ERROR 2"), ops["ALL"]


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


def test_the_writer_cap_reruns_only_the_check_at_the_cap(workdir):
    """check_kernel writes each attempt's route; the route depends on the cap only at the attempt
    the cap ends and only for a writer that may be retried (parameter at_cap): for the
    deterministic translator no cap change reruns a check (the GPU routes, which carry the cap,
    are re-judged)."""
    wd, _, _ = workdir
    cfg = wd / "config.yaml"
    text = cfg.read_text()
    assert "  write_kernel: 2\n" in text
    kernels = len(list((wd / "results").glob("*/attempts/*/1/route.json")))
    try:
        cfg.write_text(text.replace("  write_kernel: 2\n", "  write_kernel: 3\n"))
        jobs = planned(wd)
        assert not {"write_kernel", "check_kernel", "accept_kernel"} & set(jobs), jobs
        cfg.write_text(text.replace("  write_kernel: 2\n", "  write_kernel: 1\n"))
        jobs = planned(wd)
        assert kernels > 0 and not {"write_kernel", "check_kernel", "accept_kernel"} & set(jobs), jobs
    finally:
        cfg.write_text(text)
    log = next((wd / "results").glob("*/logs/check_kernel/*/1.log")).read_text()
    assert re.search(r"^route: attempt 1/2: \w+ -> (accept|stop) ", log, re.M), log[-2000:]


def test_noop_rerun_plans_zero_jobs(workdir):
    wd, _, _ = workdir
    assert planned(wd) == {}


def test_config_spelling_the_same_meaning_plans_nothing(workdir):
    """Issue 16: tools.cargo_target_dir set to the path it defaults to replanned every job (GPU
    stages included). Paths compare by where they resolve, numbers and key order by value."""
    from tileport.core import toolchain

    wd, _, _ = workdir
    cfg = wd / "config.yaml"
    text = cfg.read_text()
    tools = 'tools:\n  tileirdisasm: ""\n  cuda_root: ""\n  cargo_target_dir: ""\n'
    assert text.endswith(tools)
    spelled = (f"tools:\n  cargo_target_dir: {toolchain.default_target_dir()}\n"
               f"  tileirdisasm: {toolchain.tool('tileirdisasm')}\n  cuda_root: \"\"\n")
    try:
        cfg.write_text(text.replace(tools, spelled).replace("warmup_ms: 20 ", "warmup_ms: 20.0 "))
        assert "warmup_ms: 20.0" in cfg.read_text()
        assert planned(wd) == {}
    finally:
        cfg.write_text(text)


def test_deleted_routes_are_named_and_rebuilt_alone(workdir):
    """Issue 16: after deleting a checkpoint output (a GPU round's or a writer attempt's
    route.json) the dry run said "Nothing to be done" and summary.csv's gpu_route came out empty.
    Now the run stops naming each file and the command; rebuilding them reruns nothing else."""
    wd, _, _ = workdir
    gone = ["results/relu/rounds/1/route.json", "results/softmax/attempts/softmax_kernel/1/route.json"]
    for g in gone:
        (wd / g).unlink()
    p = snakemake(wd, "-n", "results/summary.csv", check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out[-3000:]
    assert "results/relu/rounds/1/route.json (needed by results/relu/final.json)" in out, out[-3000:]
    assert "results/softmax/attempts/softmax_kernel/1/route.json (needed by" in out
    # the command the message gives (make run runs it): only the two routes run
    rebuild = next(ln.split("--cores all ", 1)[1] for ln in out.splitlines() if ".venv/bin/snakemake --cores all" in ln)
    # the translator's routing rules are no checkpoints: every rule allowed but those that
    # publish or follow a route (Snakemake 9 then plans from the allowed rules alone)
    args = rebuild.split()
    assert args[:3] == [*gone, "--allowed-rules"] and {"check_kernel", "gpu_route", "write_kernel"} <= set(args)
    assert not set(route_files.ROUTE_FOLLOWERS) & set(args)
    p = snakemake(wd, *rebuild.split())
    ran = re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", p.stdout + p.stderr)
    # a writer attempt's route is written by its check (checkpoint check_kernel)
    assert sorted(ran) == ["check_kernel", "gpu_route"], (p.stdout + p.stderr)[-3000:]
    assert all((wd / g).is_file() for g in gone)
    assert planned(wd) == {}


def test_a_route_deleted_with_its_attempt_is_rebuilt(workdir):
    """A writer attempt's folder deleted whole (route.json with the write.json and kernel it is
    made from): the rebuild command the run gives (make run's first step) writes the attempt again
    and its route, where an --allowed-rules run of the routing rules alone stopped on the missing
    inputs (MissingInputException) once they were no checkpoints; then one run finishes the rest."""
    wd, _, _ = workdir
    shutil.rmtree(wd / "results" / "relu" / "attempts" / "relu_kernel" / "1")
    p = snakemake(wd, "-n", "results/summary.csv", check=False)
    out = p.stdout + p.stderr
    rebuild = next(ln.split("--cores all ", 1)[1] for ln in out.splitlines() if ".venv/bin/snakemake --cores all" in ln)
    assert rebuild.split()[:2] == ["results/relu/attempts/relu_kernel/1/route.json", "--allowed-rules"], out[-3000:]
    p = snakemake(wd, *rebuild.split())
    ran = sorted(re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", p.stdout + p.stderr))
    assert ran == ["check_kernel", "write_kernel"], (p.stdout + p.stderr)[-3000:]
    snakemake(wd, "results/summary.csv")
    assert planned(wd) == {}


def test_an_operator_whose_results_were_deleted_is_built_again(workdir):
    """An operator's results folder deleted after a summary was written: every way from the
    summary to it passes a checkpoint whose output is gone too, and Snakemake 9 plans nothing
    (snakemake/snakemake#3879). The run says so and names the targets; make run builds them
    first (route_files --operators), after which nothing is left to do."""
    wd, _, _ = workdir
    shutil.rmtree(wd / "results" / "relu")
    p = snakemake(wd, "-n", "results/summary.csv")
    assert "results/relu/final.json" in p.stderr and "snakemake/snakemake#3879" in p.stderr
    gone = subprocess.run([sys.executable, "-m", "tileport.flow.route_files", "--operators", "results"], cwd=wd,
                          capture_output=True, text=True, check=True, env={**os.environ, "PYTHONPATH": str(wd)})
    assert gone.stdout.split() == ["results/relu/final.json"]
    snakemake(wd, *gone.stdout.split())
    snakemake(wd, "results/summary.csv")
    assert (wd / "results/relu/runtime/relu_kernel.json").is_file()
    assert planned(wd) == {}
    assert {r["op"] for r in rows(wd)} >= {"relu", "softmax"}


def test_touching_one_operator_reruns_only_its_chain(workdir):
    wd, _, _ = workdir
    k = wd / "operators" / "softmax" / "kernel.py"
    # an edit (Snakemake 9 compares checksums, so a bare mtime touch with the same bytes
    # is correctly not a change)
    k.write_text(k.read_text() + "# edited\n")
    jobs = planned(wd)
    # softmax: 1 analysis, its kernel's reference Tile IR (one job, 6 variants), 1 kernel
    # (written, checked: its 6 variants' Tile IR, diffs and diagnoses, and routed; accepted:
    # published), 1 build, its run-time IR / SASS job, its shim, the shared host library, its GPU test/bench/perf
    # diagnosis; + the summary. relu's GPU stages do not rerun although the library they load
    # is rebuilt.
    assert jobs == {"analyze": 1, "reference_ir": 1, "write_kernel": 1, "check_kernel": 1,
                    "accept_kernel": 1, "rust_build": 1, "runtime_ir": 1, "host_shim": 1, "host_build": 1,
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
    assert jobs.get("analyze") == 1 and jobs.get("reference_ir") == jobs.get("check_kernel") == 1
    snakemake(wd, "results/summary.csv")


def test_editing_a_module_reruns_exactly_the_rules_that_import_it(workdir):
    """A rule's code inputs are the import closure of its script (tileport.core.closure): an edited
    module reruns the rules whose jobs import it, and nothing that does not depend on them."""
    from tileport.core.closure import code_inputs

    wd, _, _ = workdir
    f = wd / "tileport" / "report" / "summary.py"          # imported by the summary job alone
    f.write_text(f.read_text() + "# edited\n")
    assert planned(wd) == {"summary": 1}
    snakemake(wd, "results/summary.csv")
    # a module two stages import, both only through another module (flow.check, flow.gpu_round);
    # the light accept job (flow.route) does not import it
    f = wd / "tileport" / "cpu" / "ir_diagnose.py"
    users = {s.stem for s in (wd / "scripts").glob("*.py")
             if str(f) in code_inputs(s, wd / "tileport")}
    assert {"gpu_route", "check_kernel"} <= users and not {"analyze", "accept_kernel"} & users
    f.write_text(f.read_text() + "# edited\n")
    jobs = planned(wd)
    assert {"gpu_route", "check_kernel"} <= set(jobs)
    # stages upstream of every user stay (those downstream of an accepted kernel are planned: a
    # dry run cannot know the rerun writes the same bytes)
    assert not {"analyze", "reference_ir", "import_source"} & set(jobs), jobs
    snakemake(wd, "results/summary.csv")
    assert planned(wd) == {}


def test_a_content_change_brought_in_with_an_older_mtime_reruns_its_chain(workdir):
    """Issue 33: max -> min in relu's kernel.py, the file then given an older mtime (as rsync -a,
    cp -p, tar and unzip do): its chain reruns, because each rule's parameters carry the content
    hash of the operator's files it reads; the IR diff then fails on the new kernel's IR."""
    wd, _, _ = workdir
    k = wd / "operators" / "relu" / "kernel.py"
    text, st = k.read_text(), k.stat()
    try:
        k.write_text(text.replace("tile=ct.maximum(t, zero)", "tile=ct.minimum(t, zero)"))
        os.utime(k, ns=(st.st_atime_ns, st.st_mtime_ns - 3600 * 10**9))
        jobs = planned(wd)
        assert {"analyze", "reference_ir", "write_kernel", "check_kernel", "accept_kernel", "gpu_test",
                "bench"} <= set(jobs), jobs
        assert jobs["reference_ir"] == jobs["check_kernel"] == jobs["accept_kernel"]
    finally:
        k.write_text(text)
        os.utime(k, ns=(st.st_atime_ns, st.st_mtime_ns))
    # the original content at its original mtime: the recorded parameters hold again
    assert planned(wd) == {}


def test_report_from_copied_measurements(workdir):
    """make report's steps on this copy: the published H200 verdicts of relu and softmax copied
    back as from a GPU node (their source hashes set to this tree's, as a node running this
    checkout writes them), the report rules, Snakemake's report page read in headless Chromium
    (screenshot kept in the checkout's results/report/), and a rerun that plans nothing."""
    from tileport.gpu import harness
    from tileport.host import shim as host
    from tileport.report import browser

    wd, _, _ = workdir
    pub = REPO / "tests" / "data" / "h200-2026-11-29" / "ops"     # frozen: see its README.md
    for op in ("relu", "softmax"):
        for name in ("test.json", "bench.json"):          # bench after test: not older than its input
            d = json.loads((pub / op / name).read_text())
            d["details"]["sources_sha"] = host.sources_sha(wd / "results", op)
            d["details"]["inputs_sha"] = harness.inputs_sha(wd / "operators" / op)
            (wd / "results" / op / name).write_text(json.dumps(d))
        shutil.copy(pub / op / "bench.csv", wd / "results" / op / "bench.csv")    # a new mtime, as cp gives
    t0 = time.monotonic()
    snakemake(wd, "paper")
    secs = time.monotonic() - t0
    ops = {r["op"]: r for r in csv.DictReader(open(wd / "results" / "paper" / "operators.csv"))}
    assert (ops["relu"]["configs"], ops["relu"]["geomean_ratio"]) == ("12", "1.00")
    assert (ops["softmax"]["geomean_ratio"], ops["ALL"]["configs"]) == ("0.951", "18")
    assert float(ops["softmax"]["ci_low"]) < 0.951 < float(ops["softmax"]["ci_high"])
    assert "NVIDIA H200" in (wd / "results" / "paper" / "operators.tex").read_text()
    # verdicts timed before the loop timing existed: the loop gate table's one row says so
    assert "no config has loop timing" in (wd / "results" / "paper" / "loop_gate.csv").read_text()
    for fig in ("ratio", "times", "host_overhead", "coverage_matrix", "llm_roles"):
        assert (wd / "results" / "paper" / "figures" / f"{fig}.pdf").read_bytes()[:5] == b"%PDF-"
    p = snakemake(wd, "-n", "paper")
    assert "Nothing to be done" in p.stdout + p.stderr, f"a rerun plans jobs ({secs:.0f} s run):\n{p.stdout[-2000:]}"
    # Snakemake's report, read as a person would
    exe = os.path.join(os.path.dirname(sys.executable), "snakemake")
    p = subprocess.run([exe, "--report", "results/report.html", "paper"], cwd=wd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    if shutil.which("chromium") is None and not os.environ.get("CI"):
        pytest.skip("chromium not installed (make test-deps)")
    shot = REPO / "results" / "report" / "browser-check.png"
    seen = browser.check(wd / "results" / "report.html", shot, show="results/paper/figures/ratio.svg")
    assert seen["title"] == "Snakemake Report" and seen["results"] == 10
    assert {"GPU stages (gpu_test, bench)", "Coverage (analyze ... bench)", "Provenance"} <= set(seen["categories"])
    assert "GPU stages" in seen["app_text"]                      # the page rendered its menu
    assert len(seen["images"]) == 5
    for path, img in seen["images"].items():
        assert img["width"] > 100 and img["height"] > 100 and "error" not in img, (path, img)
    assert len(seen["tables"]) == 5 and all(t["rows"] > 2 for t in seen["tables"].values())
    assert shot.stat().st_size > 10_000
    # each figure is its own rule: editing one figure's code redraws that figure only
    f = wd / "tileport" / "report" / "figures" / "llm.py"
    f.write_text(f.read_text() + "# edited\n")
    p = snakemake(wd, "-n", "paper")
    stats = (p.stdout + p.stderr).split("Job stats:", 1)[1]
    assert {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M)} == \
        {"figure_llm_roles": 1, "paper": 1, "total": 2}
