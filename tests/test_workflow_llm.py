"""Integration: the workflow with an LLM kernel writer (backend anthropic) against a local server
speaking the Messages API, then again with backend replay and the server stopped."""
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
    from tileport import write_kernel

    src, _, _ = write_kernel.translate_entries(REPO / "operators" / "relu", "relu_kernel")
    return src


def reply_with(rust: str) -> str:
    return (f"```rust\n{rust}```\n\n```json\n{{\"checks\": [\"same loads and stores\"], "
            f"\"unsupported\": []}}\n```\n\nVERDICT: PASS\n")


def run(wd, env_extra=None, check=True):
    exe = os.path.join(os.path.dirname(sys.executable), "snakemake")
    env = {**os.environ, **(env_extra or {})}
    p = subprocess.run([exe, "--cores", "2", "results/summary.csv"], cwd=wd, capture_output=True,
                       text=True, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"snakemake failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def configure(wd, backend, base_url=""):
    cfg = (REPO / "config.yaml").read_text()
    cfg = cfg.replace("operators: []", "operators: [relu]")
    cfg = cfg.replace("kernel_writer: translator", f"kernel_writer: {backend}")
    cfg = cfg.replace('base_url: ""', f'base_url: "{base_url}"')
    cfg = cfg.replace("api_key_env: ANTHROPIC_API_KEY", "api_key_env: TILEPORT_FAKE_KEY")
    cfg = cfg.replace("max_retries: 4 ", "max_retries: 1 ")
    (wd / "config.yaml").write_text(cfg)


@pytest.fixture(scope="module")
def llm_runs(tmp_path_factory):
    wd = tmp_path_factory.mktemp("wfllm")
    copy_workflow(wd, ["relu"])
    FakeMessages.script, FakeMessages.seen = [], []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    # attempt 1: a reply without a VERDICT line (agent_output) -> Snakemake retries;
    # attempt 2: the kernel (the translator's own output, so the IR diff can pass)
    FakeMessages.script = [ok("Here is your kernel, I am sure it works."), ok(reply_with(translated_relu()))]
    configure(wd, "anthropic", url)
    live = run(wd, {"TILEPORT_FAKE_KEY": KEY})
    seen = list(FakeMessages.seen)
    srv.shutdown()
    srv.server_close()
    snap = {p.relative_to(wd).as_posix(): p.read_bytes() for p in (wd / "results").rglob("*")
            if p.is_file()}
    yield wd, live, seen, snap


def rows(wd):
    return list(csv.DictReader(open(wd / "results" / "summary.csv")))


def test_agent_output_failure_then_fixed_attempt(llm_runs):
    wd, live, seen, _ = llm_runs
    assert len(seen) == 2
    # the second prompt quotes the first attempt's failure
    assert "agent output: reply" in seen[1]["body"]["messages"][0]["content"]
    wk = wd / "results" / "relu" / "write_kernel"
    first = json.loads((wk / "relu_kernel.attempt-1.json").read_text())
    assert first["verdict"] == "FAIL" and first["fail_class"] == "agent_output"
    final = json.loads((wk / "relu_kernel.json").read_text())
    assert final["verdict"] == "PASS" and final["attempt"] == 2
    assert final["details"]["usage"] == {"input_tokens": 120, "output_tokens": 45}
    assert final["details"]["cost_usd"] is None          # model claude-test has no price
    tdir = wd / "results" / "relu" / "transcripts" / "write_kernel" / "relu_kernel"
    assert sorted(p.name for p in tdir.iterdir()) == ["attempt-1.json", "attempt-2.json"]
    # tileport's own stages judged the LLM's file: all six variants compile and match
    rs = rows(wd)
    assert {r["ir_diff"] for r in rs} == {"PASS"} and {r["attempts"] for r in rs} == {"2"}
    # both calls are counted in summary.csv (two replies of 120 + 45 tokens)
    assert {(r["llm_calls"], r["tokens_in"], r["tokens_out"]) for r in rs} == {("2", "240", "90")}
    assert (wd / "results" / "relu" / "rust" / "src" / "relu_kernel.rs").read_text() == translated_relu()


def test_key_is_in_no_artefact(llm_runs):
    wd, _, seen, _ = llm_runs
    assert seen[0]["key"] == KEY                        # it was sent ...
    for p in list((wd / "results").rglob("*")) + list((wd / ".snakemake").rglob("*")):
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p  # ... and written nowhere


def test_replay_without_network_reproduces_the_artefacts(llm_runs):
    wd, _, _, snap = llm_runs
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
            r for r in snap if re.match(r"results/relu/(ir_diff|rust_ir)/.*\.tileir$", r)):
        assert again[rel] == snap[rel], rel
    for rel in (r for r in snap if r.startswith("results/relu/ir_diff/")):
        assert json.loads(again[rel])["verdict"] == json.loads(snap[rel])["verdict"] == "PASS"
    final = json.loads(again["results/relu/write_kernel/relu_kernel.json"])
    assert final["verdict"] == "PASS" and final["details"]["backend"] == "replay"
    # replay wrote no transcripts of its own
    assert sorted(r for r in again if "/transcripts/" in r) == sorted(r for r in snap if "/transcripts/" in r)


def test_a_new_run_shelves_the_previous_transcripts(tmp_path):
    """A later run of an LLM writer (Snakemake attempt 1) must be able to record again: the
    previous run's transcripts and attempt verdicts move aside, kept, and are not counted."""
    from tileport.summary import llm_usage
    from tileport.write_kernel import _shelve_previous_run

    results = tmp_path / "results"
    tdir = results / "op" / "transcripts" / "write_kernel" / "k"
    tdir.mkdir(parents=True)
    (tdir / "attempt-1.json").write_text(json.dumps({"usage": {"input_tokens": 5, "output_tokens": 1}}))
    wk = results / "op" / "write_kernel"
    wk.mkdir(parents=True)
    (wk / "k.attempt-1.json").write_text("{}")
    assert llm_usage(results, "op")["llm_calls"] == 1
    _shelve_previous_run(tdir, wk / "k.json")
    assert not (tdir / "attempt-1.json").exists() and not (wk / "k.attempt-1.json").exists()
    (kept,) = (tdir / "previous").iterdir()
    assert sorted(p.name for p in kept.iterdir()) == ["attempt-1.json", "k.attempt-1.json"]
    assert llm_usage(results, "op")["llm_calls"] == 0


def test_prompts_hold_no_checkout_path(llm_runs):
    _, _, seen, _ = llm_runs
    for s in seen:
        text = json.dumps(s["body"])
        assert str(REPO) not in text and "/tmp/" not in text and "<repo>" in text
