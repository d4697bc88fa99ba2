"""Cluster integration: the workflow on two operators through ``--profile profiles/slurm`` on a real
one-node Slurm cluster (Debian's slurm-wlm, started by ``.ci/slurm-cluster up``; one GRES ``gpu``
with nothing behind it). Run by ``make test-slurm`` (``pytest --slurm``); ``make test`` deselects it.

What it checks:
- summary.csv of the Slurm run equals the one of a local run of the same two operators;
- every job of the DAG except the local rules ran as a Slurm job, the local rules never did;
- the GPU rules asked the scheduler for a GPU (``gres:gpu:1``), no CPU rule did;
- a job killed by the scheduler (``scancel``) is retried within its stage's attempt cap, and the
  rules downstream of it start only after the retry finished (the killed attempt's outputs never
  reach them);
- after an interrupted run (SIGINT to Snakemake, which cancels its running jobs) the next run
  (``rerun-incomplete`` is in the profile) finishes the work and redoes nothing of the operator
  that was complete.
Job states, rules (the executor's ``--comment``), GRES and times come from ``scontrol show job``:
the test cluster keeps finished jobs for an hour (MinJobAge) and has no accounting daemon.
"""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import copy_workflow

pytestmark = pytest.mark.slurm

OPS = ["relu", "softmax"]
LOCAL_RULES = {"all", "summary", "accept_kernel", "ir_diagnose", "perf_diagnose", "gpu_route",
               "round_start", "round_kernel", "final_round"}
GPU_RULES = {"gpu_test", "bench"}
# the scheduler kills the first running job of this rule (attempt cap 2 in config.yaml): the
# shared host library, which every GPU job depends on
# the executor names a job rule_<rule>_wildcards_<values joined by _> (root=results comes first)
KILL = "rule_host_build_wildcards_results"
SNAKEMAKE = os.path.join(os.path.dirname(sys.executable), "snakemake")
# status via squeue (no accounting daemon); poll every 2 s, not every 40 s
SLURM_ARGS = ["--profile", "profiles/slurm", "--slurm-status-command", "squeue",
              "--slurm-init-seconds-before-status-checks", "2"]
RUN_TIMEOUT_S = 1200


def sh(*cmd, timeout=30):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def jobs(wd) -> list[dict]:
    """Every Slurm job the controller still knows whose working directory is ``wd``, oldest first:
    dicts of scontrol's fields plus ``rule`` (from the executor's comment ``rule_<name>_wildcards_...``)."""
    out = sh("scontrol", "show", "job", "-o").stdout
    found = []
    for line in out.splitlines():
        f = dict(m.groups() for m in re.finditer(r"(\w+)=(\S*)", line))
        if f.get("WorkDir") != str(wd) or not f.get("Comment", "").startswith("rule_"):
            continue
        f["rule"] = re.match(r"rule_(\w+?)(_wildcards_|$)", f["Comment"])[1]
        f["JobId"] = int(f["JobId"])
        found.append(f)
    return sorted(found, key=lambda j: j["JobId"])


def summary(wd):
    with open(wd / "results" / "summary.csv") as fh:
        return list(csv.DictReader(fh))


def planned(wd) -> dict:
    """Jobs a dry run would execute, by rule (Snakemake's 'Job stats' table)."""
    p = subprocess.run([SNAKEMAKE, "--cores", "2", "-n", "results/summary.csv"], cwd=wd,
                       capture_output=True, text=True)
    stats = (p.stdout + p.stderr).split("Job stats:", 1)[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M) if m[1] != "total"}


def relu_reasons(log: str) -> list[str]:
    """The ``reason:`` Snakemake gave for each relu job it planned, from a run's output."""
    blocks = re.split(r"\n(?=\S)", log)
    return [b.strip() for b in blocks if re.search(r"wildcards:.*\bop=relu\b", b)]


def verdict_mtimes(wd, op) -> dict:
    root = wd / "results" / op
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*.json") if "logs" not in p.parts}


@pytest.fixture(scope="module")
def cluster():
    p = sh("timeout", "5", "sinfo", "-h", "-N", "-o", "%T %G")
    if p.returncode != 0 or not re.search(r"^(idle|mixed|allocated)\S* .*gpu", p.stdout, re.M):
        pytest.fail(f"no Slurm cluster with an idle node and a GRES gpu here (run .ci/slurm-cluster up): "
                    f"sinfo rc {p.returncode}: {p.stdout.strip()} {p.stderr.strip()}")
    return p.stdout


@pytest.fixture(scope="module")
def local_started(cluster, tmp_path_factory):
    """The local run of the same two operators, started and not waited for: it runs beside the
    Slurm run (whose wall time is mostly the scheduler's and the executor's polling), so the
    module costs the longer of the two rather than their sum. Output goes to a file (a pipe
    nobody reads would fill and stall Snakemake)."""
    wd = copy_workflow(tmp_path_factory.mktemp("local"), OPS)
    expected = planned(wd)
    log = wd.parent / "local-run.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([SNAKEMAKE, "results/summary.csv"], cwd=wd, stdout=fh,
                                stderr=subprocess.STDOUT, text=True)
    yield wd, expected, proc, log
    if proc.poll() is None:             # a test failed before waiting for it
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def local_run(local_started):
    """The local run, finished: (workflow copy, jobs its dry run planned by rule)."""
    wd, expected, proc, log = local_started
    try:
        rc = proc.wait(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"the local run did not end within {RUN_TIMEOUT_S} s: {log.read_text()[-3000:]}")
    assert rc == 0, log.read_text()[-3000:]
    return wd, expected


def _kill_first(wd, comment, done: dict, stop: threading.Event):
    """scancel the first RUNNING job with this comment (the scheduler's kill, as on a time limit)."""
    while not stop.is_set():
        for j in jobs(wd):
            if j["Comment"] == comment and j["JobState"] == "RUNNING":
                sh("scancel", str(j["JobId"]))
                done["killed"] = j["JobId"]
                return
        time.sleep(0.3)


@pytest.fixture(scope="module")
def slurm_run(cluster, local_started, tmp_path_factory):
    wd = copy_workflow(tmp_path_factory.mktemp("slurm"), OPS)
    killed, stop = {}, threading.Event()
    watcher = threading.Thread(target=_kill_first, args=(wd, KILL, killed, stop), daemon=True)
    watcher.start()
    t0 = time.monotonic()
    p = subprocess.run([SNAKEMAKE, *SLURM_ARGS, "results/summary.csv"], cwd=wd, capture_output=True,
                       text=True, timeout=RUN_TIMEOUT_S)
    secs = time.monotonic() - t0
    stop.set()
    print(f"slurm run: {secs:.0f} s, {len(jobs(wd))} Slurm jobs")
    return wd, p, killed


def test_slurm_summary_matches_local(slurm_run, local_run):
    lwd, _ = local_run
    wd, p, _ = slurm_run
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Job stats" in p.stdout + p.stderr
    local, remote = summary(lwd), summary(wd)
    assert len(local) == 12 and {r["op"] for r in local} == set(OPS)
    assert remote == local
    assert all(r["ir_diff"] == "PASS" for r in remote)
    # the GPU stages ran on the node with its (fake) GPU allocated and said why nothing was measured
    assert all(r["test"].startswith("not_run (no GPU") for r in remote)


def test_every_cpu_rule_ran_as_a_slurm_job(slurm_run, local_run):
    _, expected = local_run
    wd, _, _ = slurm_run
    done = [j for j in jobs(wd) if j["JobState"] == "COMPLETED"]
    ran = {}
    for j in done:
        ran[j["rule"]] = ran.get(j["rule"], 0) + 1
    assert not LOCAL_RULES & set(ran), f"local rules submitted to Slurm: {LOCAL_RULES & set(ran)}"
    want = {rule: n for rule, n in expected.items() if rule not in LOCAL_RULES}
    assert ran == want
    assert {"analyze", "reference_ir", "check_kernel", "rust_build", "host_build"} <= set(ran)


def test_gpu_only_where_requested(slurm_run):
    wd, _, _ = slurm_run
    js = jobs(wd)
    gpu = [j for j in js if j["rule"] in GPU_RULES]
    cpu = [j for j in js if j["rule"] not in GPU_RULES]
    assert len(gpu) == 2 * len(OPS)
    assert all(j.get("TresPerJob") == "gres:gpu:1" for j in gpu), [(j["rule"], j.get("TresPerJob")) for j in gpu]
    assert not [j for j in cpu if "gpu" in j.get("TresPerJob", "") + j.get("TresPerNode", "")]
    # the GPU verdicts were written inside those jobs (the node's GPU hidden from nothing: Slurm set
    # CUDA_VISIBLE_DEVICES; there is no CUDA here, so the stage reports not_run)
    for op in OPS:
        v = json.loads((wd / "results" / op / "test.json").read_text())
        assert v["verdict"] == "NOT_RUN" and "no GPU" in v["summary"]


def test_scancel_is_retried_within_the_cap(slurm_run):
    wd, p, killed = slurm_run
    assert "killed" in killed, "the watcher never saw the job to kill running"
    js = jobs(wd)
    same = [j for j in js if j["Comment"] == KILL]
    assert [j["JobState"] for j in same] == ["CANCELLED", "COMPLETED"], same
    assert same[0]["JobId"] == killed["killed"]
    retry = same[1]
    v = json.loads((wd / "results" / "host" / "build.json").read_text())
    assert v["verdict"] == "PASS" and v["attempt"] == 2
    # downstream of the killed job: nothing started before the retry had finished
    down = [j for j in js if j["rule"] in GPU_RULES]
    assert down and all(j["StartTime"] >= retry["EndTime"] for j in down), (retry["EndTime"], down)
    assert "SLURM status is: 'CANCELLED'" in p.stdout + p.stderr


def test_interrupted_run_resumes_without_redoing_finished_operators(slurm_run, local_run):
    wd, first, _ = slurm_run
    assert first.returncode == 0
    before_relu = verdict_mtimes(wd, "relu")
    seen = {j["JobId"] for j in jobs(wd)}
    # a change to softmax only, then Ctrl-C while its crate is being built
    k = wd / "operators" / "softmax" / "kernel.py"
    k.write_text(k.read_text() + "\n# edited by the cluster test\n")
    # SIGINT at its default action in Snakemake, however the suite was started (under nohup or
    # in a non-interactive shell's background it is ignored, and that survives exec)
    run = subprocess.Popen([SNAKEMAKE, *SLURM_ARGS, "results/summary.csv"], cwd=wd,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    target = "rule_rust_build_wildcards_results_softmax"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and run.poll() is None:
        if any(j["Comment"] == target and j["JobState"] == "RUNNING" and j["JobId"] not in seen
               for j in jobs(wd)):
            break
        time.sleep(0.3)
    assert run.poll() is None, "the run ended before the job to interrupt was running"
    run.send_signal(signal.SIGINT)
    out, _ = run.communicate(timeout=300)
    assert run.returncode != 0 and "Terminating processes on user request" in out, out[-2000:]
    states = {j["Comment"]: j["JobState"] for j in jobs(wd) if j["JobId"] not in seen}
    assert states[target] == "CANCELLED", states
    assert any((wd / ".snakemake" / "incomplete").iterdir()), "no job was left marked incomplete"
    # the next run (rerun-incomplete in the profile) finishes the work
    seen = {j["JobId"] for j in jobs(wd)}
    again = subprocess.run([SNAKEMAKE, *SLURM_ARGS, "results/summary.csv"], cwd=wd, capture_output=True,
                           text=True, timeout=RUN_TIMEOUT_S)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    new = [j for j in jobs(wd) if j["JobId"] not in seen]
    assert any(j["Comment"] == target and j["JobState"] == "COMPLETED" for j in new)
    # nothing of relu was redone: no relu job submitted, its verdicts untouched
    redone = [j["Comment"] for j in new if re.search(r"_wildcards_(?:.*_)?relu(?:_|$)", j["Comment"])]
    assert not redone, (redone, relu_reasons(out), relu_reasons(again.stdout + again.stderr))
    assert verdict_mtimes(wd, "relu") == before_relu
    lwd, _ = local_run
    assert [r["ir_diff"] for r in summary(wd)] == [r["ir_diff"] for r in summary(lwd)]
    assert not list((wd / ".snakemake" / "incomplete").iterdir())
