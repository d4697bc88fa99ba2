"""Integration: the workflow's GPU rounds and the LLM analyser with an LLM role (a local server
speaking the Messages API, as in test_workflow_llm.py, whose helpers these tests use): a GPU
verdict brought back sends the kernel or the shim to a second round, a GPU verdict survives a
config change, the analyser's notes reach the writer and replay offline. A file of its own so
that make test's pytest-xdist workers (one test file each at a time) run these workflow copies
beside test_workflow_llm.py's."""
import csv
import json
import re
import shutil

from conftest import REPO, copy_workflow
from test_agents import ok
from test_workflow_llm import (
    ATTEMPTS,
    KEY,
    FakeMessages,
    configure,
    messages_api,
    reply_with,
    rows,
    run,
    serve,
    translated_relu,
)


def test_gpu_failure_sends_the_kernel_back_to_the_writer_in_a_round_of_its_own(tmp_path):
    """Round 1's GPU test fails on numerics (the verdict a GPU node's gpu_test writes, brought
    back here): checkpoint gpu_route asks the writer for attempt 2 with the failure, and round 2
    rebuilds, re-diffs and retests that attempt in results/relu/rounds/2/ without touching
    round 1's files; summary.csv reports round 2."""
    from test_gpu_test import mismatch, row

    from tileport.core.verdict import write
    from tileport.gpu import test as gpu_test
    from tileport.model import manifest

    wd = tmp_path / "wf"
    copy_workflow(wd, ["relu"])
    srv, url = serve([ok(reply_with(translated_relu())), ok(reply_with(translated_relu()))])
    configure(wd, "anthropic", url, cap=2)
    env = {"TILEPORT_FAKE_KEY": KEY}
    try:
        run(wd, env)
        r1 = json.loads((wd / "results/relu/rounds/1/route.json").read_text())
        assert (r1["next"], r1["route"]) == ("stop", "not_run -> stop")
        v = [x.id for x in manifest.variants(manifest.load(wd / "operators/relu/manifest.yaml"))]
        failed = gpu_test.verdict_of("relu", [row("relu_kernel", v[0]), row("relu_kernel", v[1], port=mismatch())])
        write(failed, wd / "results/relu/test.json")
        # up to the checkpoint; then a dry run lists the next attempt and round 2's jobs
        run(wd, env, True, "results/relu/rounds/1/route.json")
        r1 = json.loads((wd / "results/relu/rounds/1/route.json").read_text())
        assert (r1["next"], r1["route"]) == ("retry", "kernel -> ir_diagnose -> kernel_writer")
        assert r1["request"] == {"role": "kernel_writer", "kernel": "relu_kernel", "attempt": 2}
        dry = run(wd, env, True, "results/summary.csv", "-n")
        jobs = set(re.findall(r"^(?:rule|checkpoint) (\w+):\n(?:    .*\n)*?    wildcards: (.*)$",
                              dry.stdout + dry.stderr, re.M))
        assert ("write_kernel", "op=relu, kernel=relu_kernel, n=2") in jobs, dry.stdout[-3000:]
        assert ("round_kernel", "op=relu, r=2, kernel=relu_kernel") in jobs
        assert ("host_build", "root=results/relu/rounds/2") in jobs
        assert ("gpu_test", "root=results/relu/rounds/2, op=relu") in jobs
        before = {p: p.read_bytes() for p in (wd / "results/relu").glob("*.json")}
        run(wd, env)
        seen = list(FakeMessages.seen)
    finally:
        srv.shutdown()
        srv.server_close()
    assert len(seen) == 2
    assert "GPU round 1: gpu_test FAIL (fail_class kernel)" in seen[1]["body"]["messages"][0]["content"]
    assert "port output mismatch" in seen[1]["body"]["messages"][0]["content"]
    r2 = wd / "results/relu/rounds/2"
    assert json.loads((r2 / "relu/write_kernel/relu_kernel.json").read_text())["attempt"] == 2
    assert json.loads((r2 / "host/build.json").read_text())["verdict"] == "PASS"
    assert set(json.loads((r2 / "host/build.json").read_text())["details"]["ops"]) == {"relu"}
    assert (r2 / "host/libtileport_host.so").is_file()
    for k, x in (("ir_diff", "PASS"), ("rust_ir", "PASS")):
        assert {json.loads(p.read_text())["verdict"] for p in (r2 / "relu" / k / "relu_kernel").glob("*.json")} == {x}
    fin = json.loads((wd / "results/relu/final.json").read_text())
    assert (fin["round"], fin["next"], fin["route"]) == (2, "stop", "not_run -> stop")
    assert [x["next"] for x in fin["rounds"]] == ["retry", "stop"]
    # round 1's verdicts were not rewritten by round 2
    assert {p: p.read_bytes() for p in (wd / "results/relu").glob("*.json") if p.name != "final.json"} == \
        {p: b for p, b in before.items() if p.name != "final.json"}
    rs = rows(wd)
    assert {(r["round"], r["attempts"], r["llm_calls"]) for r in rs} == {("2", "2", "2")}
    assert all(r["test"].startswith("not_run") and r["gpu_route"].startswith("stop (not_run") for r in rs)
    assert "Nothing to be done" in (lambda p: p.stdout + p.stderr)(run(wd, env, True, "results/summary.csv", "-n"))


def test_gpu_host_failure_sends_the_shim_to_the_llm_host_builder(tmp_path):
    """Round 1's GPU test blames the host (the port launched two kernels per call): with
    roles.host_builder auto, round 2's shim is the LLM's, cargo builds it into round 2's own
    library; the translator's kernel is reused, not rewritten."""
    from test_gpu_test import row

    from tileport.core.verdict import write
    from tileport.gpu import test as gpu_test
    from tileport.model import manifest

    wd = tmp_path / "wf"
    copy_workflow(wd, ["relu"])
    configure(wd, "translator", "", cap=2, host_builder="auto")
    run(wd)
    det = (wd / "results/relu/host/ffi.rs").read_text()
    v = [x.id for x in manifest.variants(manifest.load(wd / "operators/relu/manifest.yaml"))]
    write(gpu_test.verdict_of("relu", [row("relu_kernel", v[0], launches=(1, 2, 1))]), wd / "results/relu/test.json")
    with messages_api([ok(f"```rust\n{det}```\n"
                          "```json\n{\"symbols\": [], \"changes\": \"one launch\"}\n```\nVERDICT: PASS\n")]) as url:
        configure(wd, "translator", url, cap=2, host_builder="auto")
        run(wd, {"TILEPORT_FAKE_KEY": KEY})
        seen = list(FakeMessages.seen)
    assert len(seen) == 1 and "port launches 2 kernel(s) per call" in seen[0]["body"]["messages"][0]["content"]
    fin = json.loads((wd / "results/relu/final.json").read_text())
    assert [(x["route"], x["next"]) for x in fin["rounds"]] == [("host -> host_builder", "retry"),
                                                                ("not_run -> stop", "stop")]
    assert fin["rounds"][0]["request"] == {"role": "host_builder", "attempt": 2}
    r2 = wd / "results/relu/rounds/2"
    shim = json.loads((r2 / "relu/host/shim.json").read_text())
    assert shim["verdict"] == "PASS" and shim["details"]["backend"] == "anthropic"
    assert json.loads((r2 / "host/build.json").read_text())["verdict"] == "PASS"
    assert json.loads((r2 / "relu/write_kernel/relu_kernel.json").read_text())["attempt"] == 1
    assert not (wd / ATTEMPTS / "2").exists()
    assert {r["round"] for r in rows(wd)} == {"2"}
    assert {r["llm_calls"] for r in list(csv.DictReader(open(wd / "results/summary_ops.csv")))[:1]} == {"1"}
    assert not [p for p in (wd / "results").rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


def test_llm_analyser_notes_reach_the_writer_and_replay_offline(tmp_path):
    from tileport.cpu import analyze

    wd = copy_workflow(tmp_path / "wf", ["relu"])
    params = [p["name"] for p in analyze.analyse(REPO / "operators" / "relu")["kernels"][0]["params"]]
    notes = ("```markdown\nrelu_kernel: y = max(x, 0) per element; keep the zero tile in x's dtype.\n```\n"
             "```json\n" + json.dumps({"kernels": {"relu_kernel": params}, "constructs": []})
             + "\n```\nVERDICT: PASS\n")
    with messages_api([ok(notes), ok(reply_with(translated_relu()))]) as url:
        configure(wd, "anthropic", url, cap=2, analyser="anthropic")
        run(wd, {"TILEPORT_FAKE_KEY": KEY})
        seen = list(FakeMessages.seen)
    assert len(seen) == 2
    an = json.loads((wd / "results/relu/analysis.json").read_text())
    assert an["verdict"] == "PASS" and an["details"]["llm"]["notes"].startswith("relu_kernel: y = max(x, 0)")
    assert "analyser_notes" in seen[1]["body"]["messages"][0]["content"]
    assert "keep the zero tile in x's dtype" in seen[1]["body"]["messages"][0]["content"]
    ops = list(csv.DictReader(open(wd / "results/summary_ops.csv")))
    assert ops[0]["op"] == "relu" and ops[0]["llm_calls"] == "2"
    assert not [p for p in (wd / "results").rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    kernel = (wd / "results/relu/rust/src/relu_kernel.rs").read_bytes()
    # replay, server gone: the same notes, the same kernel, from the transcripts alone
    for p in list((wd / "results" / "relu").iterdir()):
        if p.name != "transcripts":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    configure(wd, "replay", "http://127.0.0.1:9", cap=2, analyser="replay")
    run(wd, {"TILEPORT_FAKE_KEY": ""})
    again = json.loads((wd / "results/relu/analysis.json").read_text())
    assert again["details"]["llm"]["notes"] == an["details"]["llm"]["notes"]
    assert again["details"]["llm"]["backend"] == "replay"
    assert (wd / "results/relu/rust/src/relu_kernel.rs").read_bytes() == kernel


def test_gpu_verdicts_brought_back_survive_a_config_change_here(tmp_path):
    """GPU verdicts copied back from a GPU node, then a change of attempts.write_kernel here: the
    GPU route is judged again and no measurement is touched; gpu_test and bench run again without
    a GPU (forced) restore the kept measurement (same sources, same inputs) instead of writing
    NOT_RUN."""
    from test_gpu_test import row

    from tileport.core.verdict import write
    from tileport.gpu import harness
    from tileport.gpu import test as gpu_test
    from tileport.host import shim as host_shim

    wd = copy_workflow(tmp_path / "wf", ["relu"])
    configure(wd, "translator", "", cap=2)
    run(wd)
    r, op_dir = wd / "results" / "relu", wd / "operators" / "relu"
    hashes = {"sources_sha": host_shim.sources_sha(wd / "results", "relu"), "inputs_sha": harness.inputs_sha(op_dir)}
    t = gpu_test.verdict_of("relu", [row("relu_kernel", "f16-TILE1024")])
    t.details.update(hashes)
    write(t, r / "test.json")
    from test_bench import brow

    from tileport.gpu import bench
    from tileport.model import manifest

    # one timed row per perf config of the manifest: a bench verdict is valid per config
    rows = [brow(1.0, kernel=k, variant=v.id, shape="x".join(map(str, s)))
            for k, v, s in harness.cases(manifest.load(op_dir / "manifest.yaml"), "perf")]
    b = bench.fold("relu", rows, 0.95)
    b.details.update(hashes, rows=rows)
    write(b, r / "bench.json")
    (r / "bench.csv").write_text("op,kernel\nrelu,relu_kernel\n")
    run(wd)
    assert json.loads((r / "final.json").read_text())["next"] == "accept"
    planted = (r / "test.json").read_bytes(), (r / "bench.json").read_bytes()
    configure(wd, "translator", "", cap=3)
    p = run(wd)
    # the translator's routes do not depend on the cap: no check, no GPU stage reruns; the
    # round's route reruns (its params hold the cap), a plain local rule since no route of the
    # translator and the deterministic host builder can retry (a checkpoint prints "checkpoint")
    assert not re.search(r"(rule|checkpoint) (check_kernel|gpu_test|bench):", p.stdout + p.stderr)
    assert re.search(r"localrule gpu_route:", p.stdout + p.stderr), (p.stdout + p.stderr)[-4000:]
    assert "checkpoint" not in p.stdout + p.stderr
    assert ((r / "test.json").read_bytes(), (r / "bench.json").read_bytes()) == planted
    p = run(wd, None, True, "results/summary.csv", "--forcerun", "gpu_test", "bench")
    assert re.search(r"rule gpu_test:", p.stdout + p.stderr)   # it did rerun ...
    assert ((r / "test.json").read_bytes(), (r / "bench.json").read_bytes()) == planted   # ... and kept them
    assert json.loads((r / "final.json").read_text())["next"] == "accept"
    assert "Nothing to be done" in (lambda q: q.stdout + q.stderr)(run(wd, None, True, "results/summary.csv", "-n"))
