"""Integration: the workflow with an LLM kernel writer (backend anthropic) against a local server
speaking the Messages API, then again with backend replay and the server stopped."""
import contextlib
import csv
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading

import pytest
from conftest import REPO, copy_workflow
from test_agents import FakeMessages, ok

KEY = "sk-ant-workflow-test-KEY-4242"


def translated_relu() -> str:
    from tileport import translate

    src, _, _ = translate.translate_entries(REPO / "operators" / "relu", "relu_kernel")
    return src


def reply_with(rust: str) -> str:
    return (f"```rust\n{rust}```\n\n```json\n{{\"checks\": [\"same loads and stores\"], "
            f"\"unsupported\": []}}\n```\n\nVERDICT: PASS\n")


def wrong_relu() -> str:
    """Compiles, but stores the loaded tile unchanged: the IR diff must catch the missing max."""
    src = translated_relu()
    assert "max_tile(t, zero)" in src
    return src.replace("max_tile(t, zero)", "t")


def run(wd, env_extra=None, check=True, target="results/summary.csv", *extra):
    exe = os.path.join(os.path.dirname(sys.executable), "snakemake")
    env = {**os.environ, **(env_extra or {})}
    p = subprocess.run([exe, "--cores", "2", *extra, target], cwd=wd, capture_output=True,
                       text=True, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"snakemake failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def configure(wd, backend, base_url="", cap=3, diagnoser="deterministic", host_builder="deterministic",
              analyser="deterministic"):
    cfg = (REPO / "config.yaml").read_text()
    assert "  analyser: deterministic\n" in cfg
    cfg = cfg.replace("  analyser: deterministic\n", f"  analyser: {analyser}\n")
    assert "  host_builder: deterministic\n" in cfg
    cfg = cfg.replace("  host_builder: deterministic\n", f"  host_builder: {host_builder}\n")
    assert "  ir_diagnoser: deterministic\n" in cfg
    cfg = cfg.replace("  ir_diagnoser: deterministic\n", f"  ir_diagnoser: {diagnoser}\n")
    cfg = cfg.replace("operators: []", "operators: [relu]")
    cfg = cfg.replace("kernel_writer: translator", f"kernel_writer: {backend}")
    cfg = cfg.replace('base_url: ""', f'base_url: "{base_url}"')
    cfg = cfg.replace("api_key_env: ANTHROPIC_API_KEY", "api_key_env: TILEPORT_FAKE_KEY")
    cfg = cfg.replace("max_retries: 4 ", "max_retries: 1 ")
    assert "  write_kernel: 2\n" in cfg
    cfg = cfg.replace("  write_kernel: 2\n", f"  write_kernel: {cap}\n")
    (wd / "config.yaml").write_text(cfg)


@contextlib.contextmanager
def messages_api(script):
    """A local Messages API answering ``script`` for the duration of the block (yields its URL)."""
    srv, url = serve(script)
    try:
        yield url
    finally:
        srv.shutdown()
        srv.server_close()


def serve(script):
    FakeMessages.script, FakeMessages.seen = list(script), []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


ATTEMPTS = "results/relu/attempts/relu_kernel"


@pytest.fixture(scope="module")
def llm_runs(tmp_path_factory):
    wd = tmp_path_factory.mktemp("wfllm")
    copy_workflow(wd, ["relu"])
    # attempt 1: a reply without a VERDICT line (agent_output) -> the writer again;
    # attempt 2: a kernel that compiles but fails the IR diff -> IR diagnoser -> the writer again;
    # attempt 3: the right kernel (the translator's own output, so the IR diff can pass)
    srv, url = serve([ok("Here is your kernel, I am sure it works."), ok(reply_with(wrong_relu())),
                      ok(reply_with(translated_relu()))])
    configure(wd, "anthropic", url, cap=3)
    env = {"TILEPORT_FAKE_KEY": KEY}
    # half-finished: stop after the first attempt's route; a dry run then shows the next attempt
    run(wd, env, True, f"{ATTEMPTS}/1/route.json")
    dry = run(wd, env, True, "results/summary.csv", "-n")
    live = run(wd, env)
    seen = list(FakeMessages.seen)
    srv.shutdown()
    srv.server_close()
    snap = {p.relative_to(wd).as_posix(): p.read_bytes() for p in (wd / "results").rglob("*")
            if p.is_file()}
    yield wd, live, seen, snap, dry


def rows(wd):
    return list(csv.DictReader(open(wd / "results" / "summary.csv")))


def route_of(wd, n):
    return json.loads((wd / ATTEMPTS / str(n) / "route.json").read_text())


def test_dry_run_of_a_half_finished_loop_shows_the_next_attempt(llm_runs):
    wd, _, _, _, dry = llm_runs
    out = dry.stdout + dry.stderr
    assert route_of(wd, 1)["next"] == "retry"
    jobs = re.findall(r"^(?:rule|checkpoint) (\w+):\n(?:    .*\n)*?    wildcards: (.*)$", out, re.M)
    nexts = {(rule, wc) for rule, wc in jobs if "kernel=relu_kernel" in wc and "n=" in wc}
    assert ("write_kernel", "op=relu, kernel=relu_kernel, n=2") in nexts, out[-3000:]
    assert ("check_kernel", "op=relu, kernel=relu_kernel, n=2") in nexts
    assert not [j for j in nexts if "n=1" in j[1] or "n=3" in j[1]]   # done / not yet known


def test_routes_agent_output_then_ir_fail_then_fixed(llm_runs):
    wd, live, seen, _, _ = llm_runs
    assert len(seen) == 3
    r1, r2, r3 = (route_of(wd, n) for n in (1, 2, 3))
    assert (r1["next"], r1["route"], r1["fail_class"]) == ("retry", "agent_output -> kernel_writer", "agent_output")
    assert (r2["next"], r2["route"], r2["fail_class"]) == ("retry", "kernel -> ir_diagnose -> kernel_writer", "kernel")
    assert r3["next"] == "accept"
    # each prompt quotes the previous attempt's failure: the unusable reply, then the IR diff
    # and the IR diagnoser's advice
    prompts = [s["body"]["messages"][0]["content"] for s in seen]
    assert "Attempt 1: FAIL (fail_class agent_output)" in prompts[1] and "agent output" in prompts[1]
    assert "Attempt 2: FAIL (fail_class kernel)" in prompts[2] and "IR diagnoser, variant" in prompts[2]
    # every attempt kept its own files; the failed ones were never overwritten
    for n, word in ((1, "FAIL"), (2, "PASS"), (3, "PASS")):
        assert json.loads((wd / ATTEMPTS / str(n) / "write.json").read_text())["verdict"] == word
    check2 = json.loads((wd / ATTEMPTS / "2" / "check.json").read_text())
    assert check2["verdict"] == "FAIL" and set(check2["details"]["variants"].values()) == {"FAIL"}
    assert (wd / ATTEMPTS / "2" / "rust" / "src" / "relu_kernel.rs").read_text() == wrong_relu()
    final = json.loads((wd / "results" / "relu" / "write_kernel" / "relu_kernel.json").read_text())
    assert final["verdict"] == "PASS" and final["attempt"] == 3
    assert [r["next"] for r in final["details"]["routes"]] == ["retry", "retry", "accept"]
    assert final["details"]["usage"] == {"input_tokens": 120, "output_tokens": 45}
    assert final["details"]["cost_usd"] is None          # model claude-test has no price
    tdir = wd / "results" / "relu" / "transcripts" / "write_kernel" / "relu_kernel"
    assert sorted(p.name for p in tdir.iterdir()) == ["attempt-1.json", "attempt-2.json", "attempt-3.json"]
    # tileport's own stages judged the LLM's file: all six variants compile and match
    rs = rows(wd)
    assert {r["ir_diff"] for r in rs} == {"PASS"} and {r["attempts"] for r in rs} == {"3"}
    # all three calls are counted in summary.csv (three replies of 120 + 45 tokens)
    assert {(r["llm_calls"], r["tokens_in"], r["tokens_out"]) for r in rs} == {("3", "360", "135")}
    assert (wd / "results" / "relu" / "rust" / "src" / "relu_kernel.rs").read_text() == translated_relu()
    # the loop is bounded and done: nothing left to run
    assert "Nothing to be done" in (
        (p := run(wd, {"TILEPORT_FAKE_KEY": KEY}, True, "results/summary.csv", "-n")).stdout + p.stderr)


def test_cap_reached_ends_the_operator_with_its_last_diagnosis(tmp_path):
    wd = copy_workflow(tmp_path / "wf", ["relu"])
    srv, url = serve([ok(reply_with(wrong_relu())), ok(reply_with(wrong_relu()))])
    configure(wd, "anthropic", url, cap=2)
    try:
        run(wd, {"TILEPORT_FAKE_KEY": KEY})
    finally:
        srv.shutdown()
        srv.server_close()
    assert len(FakeMessages.seen) == 2
    r2 = route_of(wd, 2)
    assert r2["next"] == "stop" and "cap reached: 2 of 2" in r2["reason"]
    assert not (wd / ATTEMPTS / "3").exists()
    final = json.loads((wd / "results" / "relu" / "write_kernel" / "relu_kernel.json").read_text())
    assert final["attempt"] == 2 and "cap reached" in final["details"]["stopped"]
    rs = rows(wd)
    assert {r["ir_diff"] for r in rs} == {"FAIL"} and {r["attempts"] for r in rs} == {"2"}
    assert all(r["diagnosis"] and r["owner"] == "kernel" for r in rs), rs[0]
    assert "Nothing to be done" in (
        (p := run(wd, {"TILEPORT_FAKE_KEY": KEY}, True, "results/summary.csv", "-n")).stdout + p.stderr)


DIAGNOSIS = ("```markdown\nrelu_kernel.rs:18 stores the loaded tile `t`: store `max_tile(t, zero)` "
             "as kernel.py does (the reference IR has a maxf before the store).\n```\n\n"
             "```json\n{\"owner\": \"kernel\", \"lines\": [18]}\n```\n\nVERDICT: FAIL\n")


def test_llm_ir_diagnoser_advice_reaches_the_next_attempt(tmp_path):
    wd = copy_workflow(tmp_path / "wf", ["relu"])
    srv, url = serve([ok(reply_with(wrong_relu())), ok(DIAGNOSIS), ok(reply_with(translated_relu()))])
    configure(wd, "anthropic", url, cap=2, diagnoser="anthropic")
    try:
        run(wd, {"TILEPORT_FAKE_KEY": KEY})
    finally:
        srv.shutdown()
        srv.server_close()
    seen = FakeMessages.seen
    assert len(seen) == 3
    # call 2 is the IR diagnoser, shown the port, the reference and the IR diff
    diag_prompt = seen[1]["body"]["messages"][0]["content"]
    assert seen[1]["body"]["system"].startswith("You are the IR diagnoser")
    assert "let __t4: Tile<E, {[TILE]}> = t;" in diag_prompt and "kernel.py" in diag_prompt
    # its advice is in the writer's second prompt, next to the deterministic diagnosis
    assert "LLM IR diagnoser: relu_kernel.rs:18 stores the loaded tile" in seen[2]["body"]["messages"][0]["content"]
    check1 = json.loads((wd / ATTEMPTS / "1" / "check.json").read_text())
    assert check1["details"]["llm_diagnoser"]["agent_claim"]["validation"] == {"owner": "kernel", "lines": [18]}
    assert (wd / "results/relu/transcripts/ir_diagnose/relu_kernel/attempt-1.json").is_file()
    assert route_of(wd, 2)["next"] == "accept"
    rs = rows(wd)
    assert {r["ir_diff"] for r in rs} == {"PASS"} and {r["llm_calls"] for r in rs} == {"3"}


def test_raising_the_cap_keeps_finished_attempts_and_no_attempt_beyond_it(tmp_path):
    wd = copy_workflow(tmp_path / "wf", ["relu"])
    srv, url = serve([ok("no kernel here"), ok(reply_with(translated_relu()))])
    env = {"TILEPORT_FAKE_KEY": KEY}
    try:
        configure(wd, "anthropic", url, cap=2)
        run(wd, env)
        assert len(FakeMessages.seen) == 2 and route_of(wd, 2)["next"] == "accept"
        before = (wd / ATTEMPTS / "2" / "write.json").read_bytes()
        # a higher cap re-decides route 1 (same words) and redoes nothing: no call, same attempt 2
        configure(wd, "anthropic", url, cap=4)
        run(wd, env)
        assert len(FakeMessages.seen) == 2
        assert (wd / ATTEMPTS / "2" / "write.json").read_bytes() == before
        final = json.loads((wd / "results/relu/write_kernel/relu_kernel.json").read_text())
        assert (final["verdict"], final["attempt"]) == ("PASS", 2)
        # an attempt asked for by hand beyond the loop is refused before any call
        p = run(wd, env, False, f"{ATTEMPTS}/3/route.json")
        assert p.returncode != 0 and "says 'accept', not 'retry'" in p.stdout + p.stderr
        p = run(wd, env, False, f"{ATTEMPTS}/5/route.json")
        assert p.returncode != 0 and len(FakeMessages.seen) == 2
        assert not (wd / ATTEMPTS / "3" / "write.json").exists()
    finally:
        srv.shutdown()
        srv.server_close()


def test_env_failure_stops_without_a_second_call(tmp_path):
    wd = copy_workflow(tmp_path / "wf", ["relu"])
    srv, url = serve([ok(reply_with(translated_relu()))])
    configure(wd, "anthropic", url, cap=3)
    try:
        run(wd, {"TILEPORT_FAKE_KEY": ""})             # the key is not set
    finally:
        srv.shutdown()
        srv.server_close()
    assert FakeMessages.seen == []
    r1 = route_of(wd, 1)
    assert (r1["next"], r1["route"]) == ("stop", "env -> stop")
    final = json.loads((wd / "results" / "relu" / "write_kernel" / "relu_kernel.json").read_text())
    assert final["verdict"] == "ERROR" and final["fail_class"] == "env"
    assert {r["write_kernel"] for r in rows(wd)} == {"ERROR"}


def test_key_is_in_no_artefact(llm_runs):
    wd, _, seen, _, _ = llm_runs
    assert seen[0]["key"] == KEY                        # it was sent ...
    for p in list((wd / "results").rglob("*")) + list((wd / ".snakemake").rglob("*")):
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p  # ... and written nowhere


def test_replay_without_network_reproduces_the_artefacts(llm_runs):
    wd, _, _, snap, _ = llm_runs
    # keep only the transcripts; everything else is produced again, from them alone
    for p in list((wd / "results").iterdir()):
        if p.name != "relu":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    for p in list((wd / "results" / "relu").iterdir()):
        if p.name != "transcripts":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    shutil.rmtree(wd / ".snakemake")
    configure(wd, "replay", "http://127.0.0.1:9")      # nothing listens there
    run(wd, {"TILEPORT_FAKE_KEY": ""})
    again = {p.relative_to(wd).as_posix(): p.read_bytes() for p in (wd / "results").rglob("*")
             if p.is_file()}
    for rel in ("results/relu/rust/src/relu_kernel.rs",) + tuple(
            r for r in snap if re.match(r"results/relu/(ir_diff|rust_ir|attempts)/.*\.(tileir|rs)$", r)):
        assert again[rel] == snap[rel], rel
    for rel in (r for r in snap if r.startswith("results/relu/ir_diff/") and r.endswith(".json")):
        assert json.loads(again[rel])["verdict"] == json.loads(snap[rel])["verdict"] == "PASS"
    final = json.loads(again["results/relu/write_kernel/relu_kernel.json"])
    assert final["verdict"] == "PASS" and final["details"]["backend"] == "replay"
    assert final["attempt"] == 3 and [r["next"] for r in final["details"]["routes"]] == ["retry", "retry", "accept"]
    # replay wrote no transcripts of its own
    assert sorted(r for r in again if "/transcripts/" in r) == sorted(r for r in snap if "/transcripts/" in r)


def test_a_rewritten_attempt_retires_only_its_own_transcripts(tmp_path):
    """Rewriting attempt n (a new run) must be able to record again: its own earlier exchanges
    (writer and IR diagnoser) move aside, kept; later attempts stay (Snakemake reuses them when
    attempt n's route comes out the same) and are counted only up to the published attempt."""
    from tileport.flow.route import retire
    from tileport.report.summary import llm_usage

    results = tmp_path / "results"
    for stage in ("write_kernel", "ir_diagnose"):
        for n in (1, 2, 3):
            t = results / "op" / "transcripts" / stage / "k" / f"attempt-{n}.json"
            t.parent.mkdir(parents=True, exist_ok=True)
            t.write_text(json.dumps({"usage": {"input_tokens": 5, "output_tokens": 1}}))
    assert llm_usage(results, "op")["llm_calls"] == 6
    assert llm_usage(results, "op", "write_kernel", "k", upto=2)["llm_calls"] == 2
    moved = retire(results, "op", "k", 2)
    assert len(moved) == 2
    for stage in ("write_kernel", "ir_diagnose"):
        tdir = results / "op" / "transcripts" / stage / "k"
        assert sorted(p.name for p in tdir.glob("attempt-*.json")) == ["attempt-1.json", "attempt-3.json"]
        (kept,) = (tdir / "previous").iterdir()
        assert [p.name for p in kept.iterdir()] == ["attempt-2.json"]
    # a second retirement of the same attempt in the same second is kept beside the first
    (results / "op/transcripts/write_kernel/k/attempt-2.json").write_text("{}")
    retire(results, "op", "k", 2)
    assert len(list((results / "op/transcripts/write_kernel/k/previous").rglob("attempt-2.json"))) == 2
    assert llm_usage(results, "op", "write_kernel", "k")["llm_calls"] == 2


def test_prompts_hold_no_checkout_path(llm_runs):
    _, _, seen, _, _ = llm_runs
    for s in seen:
        text = json.dumps(s["body"])
        # the reference Tile IR names kernel.py by its repository-relative path: no checkout in
        # its debug locations (an absolute one would be shown as <repo>)
        assert str(REPO) not in text and "/tmp/" not in text
        assert '\\"operators/relu/kernel.py\\"' in text
