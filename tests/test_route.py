"""The kernel writer's routing loop: decide() on every verdict class, check() on writer verdicts
that leave nothing to build, accept() publishing the attempt the routes led to."""
import json

import pytest

from tileport.core.verdict import Finding, Verdict, read, write
from tileport.flow import check as tp_check
from tileport.flow import gpu_round as tp_gpu_round
from tileport.flow import route as tp_route


def cv(verdict, fail_class=None, summary="s", findings=(), diagnoses=None):
    return {"verdict": verdict, "fail_class": fail_class, "summary": summary,
            "findings": [{"message": m} for m in findings], "details": {"diagnoses": diagnoses or {}}}


@pytest.mark.parametrize("check,backend,n,cap,nxt,route", [
    (cv("PASS"), "anthropic", 1, 2, "accept", "accept"),
    (cv("PASS"), "translator", 2, 2, "accept", "accept"),
    (cv("FAIL", "agent_output"), "anthropic", 1, 2, "retry", "agent_output -> kernel_writer"),
    (cv("FAIL", "agent_output"), "anthropic", 2, 2, "stop", "agent_output -> kernel_writer"),
    (cv("FAIL", "kernel"), "anthropic", 1, 3, "retry", "kernel -> ir_diagnose -> kernel_writer"),
    (cv("FAIL", "kernel"), "auto", 2, 3, "retry", "kernel -> ir_diagnose -> kernel_writer"),
    (cv("FAIL", "kernel"), "replay", 3, 3, "stop", "kernel -> ir_diagnose -> kernel_writer"),
    (cv("FAIL", "kernel"), "translator", 1, 5, "stop", "kernel -> ir_diagnose -> kernel_writer"),
    (cv("ERROR", "env"), "anthropic", 1, 5, "stop", "env -> stop"),
    (cv("FAIL", "env"), "anthropic", 1, 5, "stop", "env -> stop"),
    (cv("BLOCKED"), "anthropic", 1, 5, "stop", "blocked -> stop"),
])
def test_decide_routes(check, backend, n, cap, nxt, route):
    d = tp_route.decide(check, backend, n, cap)
    assert (d["next"], d["route"]) == (nxt, route)
    assert d["attempt"] == n
    if nxt == "stop" and route.startswith(("agent", "kernel")) and backend != "translator":
        assert f"cap reached: {n} of {cap}" in d["reason"] and d["cap"] == cap
    else:
        # only a stop at the cap depends on the cap: raising it rewrites the same route.json
        assert "cap" not in d and d == tp_route.decide(check, backend, n, cap + 3)


def test_never_retries_past_the_cap():
    for cap in range(1, 6):
        for n in range(cap, cap + 3):
            assert tp_route.decide(cv("FAIL", "kernel"), "anthropic", n, cap)["next"] == "stop"


def test_feedback_quotes_findings_and_diagnoses_once():
    d = tp_route.decide(cv("FAIL", "kernel", "2 of 6 variants differ", ["maxf missing", "maxf missing"],
                    {"f16-T": "add max_tile(t, zero) at relu_kernel.rs:17"}), "anthropic", 1, 2)
    fb = d["feedback"]
    assert fb.startswith("Attempt 1: FAIL (fail_class kernel): 2 of 6 variants differ")
    assert fb.count("maxf missing") == 1
    assert "IR diagnoser, variant f16-T: add max_tile(t, zero) at relu_kernel.rs:17" in fb


def test_decide_rejects_bad_numbers():
    with pytest.raises(ValueError):
        tp_route.decide(cv("PASS"), "anthropic", 0, 2)
    with pytest.raises(ValueError):
        tp_route.decide(cv("PASS"), "anthropic", 1, 0)


@pytest.mark.parametrize("word,fc,expect,expect_fc", [
    ("FAIL", "agent_output", "FAIL", "agent_output"),
    ("ERROR", "env", "ERROR", "env"),
    ("ERROR", None, "ERROR", "env"),
    ("BLOCKED", None, "BLOCKED", "kernel"),
])
def test_check_carries_a_writer_failure_without_building(tmp_path, word, fc, expect, expect_fc):
    adir = tmp_path / "relu" / "attempts" / "k" / "1"
    write(Verdict(stage="write_kernel", op="relu", kernel="k", verdict=word, owner="kernel",
                  fail_class=fc, summary="reply has 0 fenced rust blocks",
                  findings=[Finding("input", "critical", "kernel", "agent output: no rust block")]),
          adir / "write.json")
    d = tp_check.check(tmp_path, "relu", "k", 1, adir / "write.json", tmp_path / "ref", ["v"], adir / "check.json")
    assert (d["verdict"], d["fail_class"]) == (expect, expect_fc)
    assert "reply has 0 fenced rust blocks" in d["summary"]
    assert not (adir / "rust" / "Cargo.toml").exists()          # nothing was built


def test_check_blocks_on_a_missing_reference(tmp_path):
    adir = tmp_path / "attempts" / "1"
    write(Verdict(stage="write_kernel", op="relu", kernel="k", verdict="PASS", summary="wrote k"),
          adir / "write.json")
    d = tp_check.check(tmp_path, "relu", "k", 1, adir / "write.json", tmp_path / "ref", ["f16"], adir / "check.json")
    assert d["verdict"] == "BLOCKED" and "reference Tile IR of k f16" in d["summary"]


def test_check_of_an_unreadable_writer_verdict_is_env(tmp_path):
    (tmp_path / "write.json").write_text("{not json")
    d = tp_check.check(tmp_path, "relu", "k", 1, tmp_path / "write.json", tmp_path, ["v"], tmp_path / "check.json")
    assert (d["verdict"], d["fail_class"]) == ("ERROR", "env")
    assert read(tmp_path / "check.json")["stage"] == "check_kernel"


def _attempt(results, n, rust, word, nxt, reason="r"):
    adir = tp_route.attempt_dir(results, "op", "k", n)
    (adir / "rust" / "src").mkdir(parents=True)
    (adir / "rust" / "src" / "k.rs").write_text(rust)
    write(Verdict(stage="write_kernel", op="op", kernel="k", verdict=word, summary=f"attempt {n}",
                  attempt=n, details={"backend": "anthropic"}), adir / "write.json")
    (adir / "route.json").write_text(json.dumps({"attempt": n, "next": nxt, "route": "x", "reason": reason,
                                                 "fail_class": None}))
    return adir


def test_accept_publishes_the_routed_attempt_with_its_history(tmp_path):
    _attempt(tmp_path, 1, "bad\n", "PASS", "retry")
    a2 = _attempt(tmp_path, 2, "good\n", "PASS", "accept")
    out = tmp_path / "op" / "rust" / "src" / "k.rs"
    d = tp_route.accept(tmp_path, "op", "k", a2 / "route.json", out, str(out) + ".map.json",
                 tmp_path / "op" / "write_kernel" / "k.json")
    assert out.read_text() == "good\n" and d["attempt"] == 2 and d["verdict"] == "PASS"
    assert [r["next"] for r in d["details"]["routes"]] == ["retry", "accept"]
    assert "stopped" not in d["details"] and d["artifacts"]["attempt_dir"] == str(a2)
    # the attempts themselves are untouched
    assert (tp_route.attempt_dir(tmp_path, "op", "k", 1) / "rust" / "src" / "k.rs").read_text() == "bad\n"


def test_accept_after_a_stop_names_the_reason(tmp_path):
    _attempt(tmp_path, 1, "bad\n", "PASS", "retry")
    a2 = _attempt(tmp_path, 2, "still bad\n", "PASS", "stop", "cap reached: 2 of 2 kernel-writer attempts")
    out = tmp_path / "k.rs"
    d = tp_route.accept(tmp_path, "op", "k", a2 / "route.json", out, tmp_path / "k.map.json", tmp_path / "k.json")
    assert d["details"]["stopped"].startswith("cap reached: 2 of 2")
    assert any("routing stopped: cap reached" in f["message"] for f in d["findings"])
    assert out.read_text() == "still bad\n"


def test_llm_diagnosis_falls_back_on_an_unusable_reply(tmp_path, monkeypatch):
    from tileport.core import agents

    class Stub:
        def __init__(self, settings):
            pass

        def complete(self, req):
            assert req.role == "ir_diagnoser" and "You are the IR diagnoser" in req.system
            return agents.Reply(text="the store is wrong, I think", model="m", input_tokens=3,
                                output_tokens=2, seconds=0.1, backend="anthropic")

    monkeypatch.setattr(agents, "AnthropicBackend", Stub)
    from conftest import REPO
    rs = tmp_path / "k.rs"
    rs.write_text("fn k() {}\n")
    diff = {"summary": "1 divergence", "findings": [{"severity": "critical", "message": "maxf missing",
                                                     "ref": {"file": "/x/kernel.py", "line": 9, "text": "ct.maximum"}}]}
    d = tp_check.llm_diagnosis(REPO / "operators" / "relu", "relu", "relu_kernel", 1, "f16", diff,
                        {"summary": "add a max"}, rs,
                        {"backend": "anthropic", "settings": agents.LlmSettings(), "results": tmp_path})
    assert d["fail_class"] == "agent_output" and "unusable reply" in d["error"]
    # the exchange itself was kept
    t = json.loads((tmp_path / "relu/transcripts/ir_diagnose/relu_kernel/attempt-1.json").read_text())
    assert "kernel.py:9 `ct.maximum`" in t["prompt"] and "add a max" in t["prompt"]


def test_accept_names_an_unreadable_route(tmp_path):
    a1 = _attempt(tmp_path, 1, "k\n", "PASS", "accept")
    (a1 / "route.json").write_text("garbage{")
    d = tp_route.accept(tmp_path, "op", "k", a1 / "route.json", tmp_path / "k.rs", tmp_path / "k.map.json",
                 tmp_path / "k.json")
    assert d["verdict"] == "ERROR" and d["attempt"] == 1
    assert str(a1 / "route.json") in d["summary"] and "delete it and rerun" in d["summary"]


# -- GPU rounds: decide_gpu / gpu_route / final over verdicts the real stage functions write -----

from test_agents import server  # noqa: E402,F401  (a fixture: the local Messages API)
from test_gpu_test import mismatch, row  # noqa: E402
from test_perf_diagnose import SLOW, bench_json, brow  # noqa: E402

from tileport.gpu import test as gpu_test  # noqa: E402
from tileport.gpu.perf_diagnose import diagnose as perf_diagnose  # noqa: E402


def gpu_verdicts(tmp_path, test_rows=None, bench_rows=None, not_run=False):
    """test / bench / perf verdicts of one round as gpu_test, bench and perf_diagnose write them."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    if not_run:
        t = gpu_test.not_run("gpu_test", "op", "no GPU: torch is not installed", tmp_path / "test.json")
        b = gpu_test.not_run("bench", "op", "no GPU: torch is not installed", tmp_path / "bench.json")
    else:
        t = write(gpu_test.verdict_of("op", test_rows or [row()]), tmp_path / "test.json")
        b = read(tmp_path / "bench.json") if bench_rows is None and (tmp_path / "bench.json").exists() else None
        if bench_rows is not None:
            bench_json(tmp_path / "bench.json", bench_rows)
            b = read(tmp_path / "bench.json")
        elif b is None:
            b = gpu_test.not_run("bench", "op", "not benchmarked", tmp_path / "bench.json")
    p = perf_diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf_diagnosis.json")
    return t, b, p


FAST = [brow(1.0, shape="a"), brow(1.02, shape="b")]


@pytest.mark.parametrize("case,writer,n,cap,nxt,route", [
    ("not_run", "anthropic", 1, 2, "stop", "not_run -> stop"),
    ("pass_fast", "anthropic", 1, 2, "accept", "accept"),
    ("pass_unbenched", "translator", 1, 2, "accept", "accept"),
    ("numerics", "anthropic", 1, 2, "retry", "kernel -> ir_diagnose -> kernel_writer"),
    ("numerics", "anthropic", 2, 2, "stop", "kernel -> ir_diagnose -> kernel_writer"),
    ("numerics", "translator", 1, 2, "stop", "kernel -> ir_diagnose -> kernel_writer"),
    ("launch_count", "anthropic", 1, 2, "stop", "host -> host_builder"),
    ("slow", "anthropic", 1, 3, "retry", "below_threshold -> perf_diagnose -> kernel -> kernel_writer"),
    ("slow", "replay", 3, 3, "stop", "below_threshold -> perf_diagnose -> kernel -> kernel_writer"),
    ("slow_launches", "anthropic", 1, 3, "stop", "below_threshold -> perf_diagnose -> host -> host_builder"),
    ("lost_context", "anthropic", 1, 3, "stop", "env -> stop"),
])
def test_decide_gpu_routes(tmp_path, case, writer, n, cap, nxt, route):
    rows, brows, nr = [row()], None, False
    if case == "not_run":
        nr = True
    elif case == "pass_fast":
        brows = FAST
    elif case == "numerics":
        rows = [row(), row(variant="f16-T2", port=mismatch())]
    elif case == "launch_count":
        rows = [row(launches=(1, 2, 1))]
    elif case == "slow":
        brows = SLOW
    elif case == "slow_launches":
        brows = [brow(0.8, port_launches=2), brow(0.85, shape="b", port_launches=2)]
    elif case == "lost_context":
        rows = [row(not_run="CUDA context lost earlier: illegal address")]
    t, b, p = gpu_verdicts(tmp_path, rows, brows, nr)
    d = tp_gpu_round.decide_gpu(t, b, p, {"k": n}, 1, writer=writer, writer_cap=cap,
                     ir_notes={"k": {"f16-T2": ["assume ops are transparent"], "f16-T9": ["other note"]}})
    assert (d["next"], d["route"]) == (nxt, route), d
    assert d["round"] == 1 and d["attempts"] == {"k": n}
    if nxt == "retry":
        assert d["request"] == {"role": "kernel_writer", "kernel": "k", "attempt": n + 1}
        # the writer's next prompt carries the failure and the IR diagnoser's view
        assert d["feedback"].startswith("GPU round 1: ")
        assert "IR diagnoser: assume ops are transparent (variant f16-T2)" in d["feedback"]
        # a failing variant's notes only; the slowest config's variant has none here: all of them
        assert ("other note" in d["feedback"]) == (case == "slow")
        if case == "numerics":
            assert "port output mismatch" in d["feedback"] and "f16-T2" in d["feedback"]
        else:
            assert "below threshold" in d["feedback"]
    else:
        assert "request" not in d
    if nxt == "stop" and writer != "translator" and route.endswith("kernel_writer"):
        assert d["reason"].startswith(f"cap reached: {n} of {cap}") and d["cap"] == cap
    if writer == "translator" and nxt == "stop":
        assert "deterministic" in d["reason"]
    if route.endswith("host_builder"):
        assert "host builder is deterministic" in d["reason"]


def test_decide_gpu_retries_the_failing_kernel_of_several(tmp_path):
    t, b, p = gpu_verdicts(tmp_path, [row(kernel="a"), row(kernel="b", port=mismatch())])
    d = tp_gpu_round.decide_gpu(t, b, p, {"a": 1, "b": 1}, 2, writer="anthropic", writer_cap=2)
    assert d["request"] == {"role": "kernel_writer", "kernel": "b", "attempt": 2}
    assert d["reason"] == "attempt 2 of b follows (round 3)"


def test_decide_gpu_rejects_nonsense():
    with pytest.raises(ValueError):
        tp_gpu_round.decide_gpu({}, {}, {}, {}, 1, writer="anthropic", writer_cap=2)
    with pytest.raises(ValueError):
        tp_gpu_round.decide_gpu({}, {}, {}, {"k": 1}, 0, writer="anthropic", writer_cap=2)


def published(root, op="op", kernel="k", attempt=1):
    write(Verdict(stage="write_kernel", op=op, kernel=kernel, verdict="PASS", summary="ok", attempt=attempt),
          root / op / "write_kernel" / f"{kernel}.json")


def test_gpu_route_and_final_follow_the_rounds(tmp_path):
    res = tmp_path / "results"
    published(res)
    gpu_verdicts(res / "op", [row(port=mismatch())])
    d1 = tp_gpu_round.gpu_route(res, "op", 1, ["k"], res / "op" / "rounds" / "1" / "route.json",
                     writer="anthropic", writer_cap=2)
    assert d1["next"] == "retry" and d1["request"]["attempt"] == 2
    # round 2 is its own results tree: attempt 2 passes there
    r2 = res / "op" / "rounds" / "2"
    published(r2, attempt=2)
    gpu_verdicts(r2 / "op", [row()], FAST)
    d2 = tp_gpu_round.gpu_route(res, "op", 2, ["k"], r2 / "route.json", writer="anthropic", writer_cap=2)
    assert (d2["next"], d2["attempts"]) == ("accept", {"k": 2})
    assert [x["next"] for x in tp_route.gpu_history(res, "op")] == ["retry", "accept"]
    f = tp_route.final(res, "op", res / "op" / "final.json")
    assert (f["round"], f["root"], f["next"]) == (2, str(r2), "accept")
    # the round-1 files were left as they were
    assert read(res / "op" / "test.json")["verdict"] == "FAIL"


def test_gpu_route_with_unreadable_verdicts_stops_naming_them(tmp_path):
    res = tmp_path / "results"
    published(res)
    gpu_verdicts(res / "op", [row()])
    (res / "op" / "bench.json").write_text("{not json")
    d = tp_gpu_round.gpu_route(res, "op", 1, ["k"], res / "op" / "rounds" / "1" / "route.json",
                    writer="anthropic", writer_cap=2)
    assert d["next"] == "stop" and d["route"] == "unreadable -> stop"
    assert "bench.json" in d["reason"]


def test_final_without_any_route_is_round_1(tmp_path):
    f = tp_route.final(tmp_path, "op", tmp_path / "op" / "final.json")
    assert (f["round"], f["next"], f["rounds"]) == (1, "stop", [])


@pytest.mark.parametrize("builder,h,cap,nxt", [("auto", 1, 2, "retry"), ("anthropic", 2, 3, "retry"),
                                               ("replay", 2, 2, "stop"), ("deterministic", 1, 5, "stop")])
def test_host_failures_go_to_the_host_builder_within_its_cap(tmp_path, builder, h, cap, nxt):
    t, b, p = gpu_verdicts(tmp_path, [row(launches=(1, 2, 1))])
    d = tp_gpu_round.decide_gpu(t, b, p, {"k": 1}, 1, writer="anthropic", writer_cap=2, host_builder=builder,
                     host_attempt=h, host_cap=cap)
    assert (d["next"], d["route"]) == (nxt, "host -> host_builder")
    if nxt == "retry":
        assert d["request"] == {"role": "host_builder", "attempt": h + 1}
        assert "port launches 2 kernel(s) per call, reference 1" in d["feedback"]
    elif builder == "deterministic":
        assert "host builder is deterministic" in d["reason"]
    else:
        assert d["reason"].startswith(f"cap reached: {h} of {cap} host-builder attempts") and d["cap"] == cap


def test_gpu_route_counts_host_builder_attempts_over_rounds(tmp_path):
    res = tmp_path / "results"
    published(res)
    gpu_verdicts(res / "op", [row(launches=(1, 2, 1))])
    kw = dict(writer="anthropic", writer_cap=2, host_builder="auto", host_cap=2)
    d1 = tp_gpu_round.gpu_route(res, "op", 1, ["k"], res / "op" / "rounds" / "1" / "route.json", **kw)
    assert d1["request"] == {"role": "host_builder", "attempt": 2}
    r2 = res / "op" / "rounds" / "2"
    published(r2)
    gpu_verdicts(r2 / "op", [row(launches=(1, 2, 1))])
    d2 = tp_gpu_round.gpu_route(res, "op", 2, ["k"], r2 / "route.json", **kw)
    assert (d2["next"], d2["cap"]) == ("stop", 2) and "2 of 2 host-builder attempts" in d2["reason"]


def test_llm_ir_diagnoser_on_a_gpu_numerics_failure_joins_the_feedback(tmp_path, server, monkeypatch):
    from conftest import REPO
    from test_agents import FakeMessages, ok

    from tileport.core import agents as tp_agents

    res = tmp_path / "results"
    published(res, kernel="relu_kernel")
    gpu_verdicts(res / "op", [row("relu_kernel", "f16-T1"), row("relu_kernel", "f16-T2", port=mismatch())])
    write(Verdict(stage="ir_diff", op="op", kernel="relu_kernel", variant="f16-T2", verdict="PASS_WITH_NOTES",
                  summary="same dataflow", findings=[Finding("hint", "warn", "kernel", "assume ops differ")]),
          res / "op" / "ir_diff" / "relu_kernel" / "f16-T2.json")
    (res / "op" / "rust" / "src").mkdir(parents=True)
    (res / "op" / "rust" / "src" / "relu_kernel.rs").write_text("// the port\n")
    monkeypatch.setenv("TILEPORT_DIAG_KEY", "sk-ant-diag")
    s = tp_agents.LlmSettings(model="claude-test", max_tokens=256, temperature=0.0, timeout_s=5.0, max_retries=0,
                      base_url=server[1], api_key_env="TILEPORT_DIAG_KEY")
    FakeMessages.script = [ok("```markdown\nThe zero tile is f32 where the input is f16.\n```\n"
                              "```json\n{\"owner\": \"kernel\", \"lines\": []}\n```\nVERDICT: FAIL\n")]
    diag = {"backend": "anthropic", "settings": s, "results": res, "replay_dir": res}
    d = tp_gpu_round.gpu_route(res, "op", 1, ["relu_kernel"], res / "op" / "rounds" / "1" / "route.json",
                    writer="anthropic", writer_cap=2, diagnoser=diag, op_dir=REPO / "operators" / "relu")
    assert d["next"] == "retry" and d["llm_diagnoser"]["advice"].startswith("The zero tile is f32")
    assert "- LLM IR diagnoser, variant f16-T2: The zero tile is f32" in d["feedback"]
    sent = FakeMessages.seen[0]["body"]["messages"][0]["content"]
    assert "port output mismatch" in sent and "// the port" in sent
    assert (res / "op" / "transcripts" / "ir_diagnose" / "relu_kernel" / "attempt-1.json").is_file()
    # an LLM failure (here: no key) leaves the deterministic feedback as it was
    monkeypatch.delenv("TILEPORT_DIAG_KEY")
    d2 = tp_gpu_round.gpu_route(res, "op", 1, ["relu_kernel"], res / "op" / "rounds" / "1" / "route.json",
                     writer="anthropic", writer_cap=2, diagnoser=diag, op_dir=REPO / "operators" / "relu")
    assert d2["next"] == "retry" and "error" in d2["llm_diagnoser"] and "LLM IR diagnoser" not in d2["feedback"]


def test_decide_gpu_never_pays_for_a_verdict_it_does_not_know(tmp_path):
    t, b, p = gpu_verdicts(tmp_path, [row()], FAST)
    d = tp_gpu_round.decide_gpu({**t, "verdict": "PASS"}, b, p, {"k": 1}, 1, writer="anthropic", writer_cap=3)
    assert (d["next"], d["route"]) == ("stop", "unknown -> stop") and "'PASS'" in d["reason"]
    d = tp_gpu_round.decide_gpu(t, {**b, "verdict": "GREAT"}, p, {"k": 1}, 1, writer="anthropic", writer_cap=3)
    assert (d["next"], d["route"]) == ("stop", "unknown -> stop")


def test_decide_gpu_survives_malformed_details(tmp_path):
    t, b, p = gpu_verdicts(tmp_path, [row(port=mismatch())], SLOW)
    t = {**t, "details": {"variants": ["k/f16-T1"]}, "findings": t["findings"]}
    p2 = {**p, "verdict": "FAIL", "owner": "kernel", "details": {"evidence": {"worst_configs": ["k f16-T1"]}}}
    d = tp_gpu_round.decide_gpu(t, b, p2, {"k": 1}, 1, writer="anthropic", writer_cap=2, ir_notes={"k": {"x": ["n"]}})
    assert d["next"] == "retry" and d["request"]["kernel"] == "k"
    d = tp_gpu_round.decide_gpu({**t, "verdict": "ALL_PASS"}, {**b, "verdict": "BELOW_THRESHOLD", "details": "?"}, p2,
                     {"k": 1}, 1, writer="anthropic", writer_cap=2)
    assert d["next"] == "retry" and d["route"].startswith("below_threshold")


def test_auto_writer_does_not_retry_a_kernel_the_translator_ported(tmp_path):
    t, b, p = gpu_verdicts(tmp_path, [row(port=mismatch())])
    d = tp_gpu_round.decide_gpu(t, b, p, {"k": 1}, 1, writer="auto", writer_cap=3, writers={"k": "translator"})
    assert d["next"] == "stop" and d["reason"].startswith("the translator is deterministic")
    d = tp_gpu_round.decide_gpu(t, b, p, {"k": 1}, 1, writer="auto", writer_cap=3, writers={"k": "anthropic"})
    assert d["next"] == "retry"


@pytest.mark.parametrize("route", [
    {"next": "retry", "request": "garbage"}, {"next": "retry", "request": {"attempt": True}},
    {"next": "retry", "round": "x"}, ["not", "a", "dict"],
])
def test_damaged_round_routes_end_the_history_there(tmp_path, route):
    res = tmp_path / "results"
    (res / "op" / "rounds" / "1").mkdir(parents=True)
    (res / "op" / "rounds" / "1" / "route.json").write_text(json.dumps(route))
    f = tp_route.final(res, "op", res / "op" / "final.json")
    assert f["round"] == 1 and len(f["rounds"]) == (0 if isinstance(route, list) else 1)


def test_a_check_that_stops_early_leaves_no_earlier_pass_to_publish(tmp_path):
    """A rerun of an attempt's check that ends before the dumps (here: its writer verdict is
    unreadable) empties the per-variant folders first: accept_kernel then publishes an ERROR
    per variant naming the check, never the PASS verdicts an earlier pass of the check left."""
    adir = tmp_path / "results" / "op" / "attempts" / "k" / "1"
    for s in tp_route.VARIANT_STAGES:
        (adir / s).mkdir(parents=True)
        write(Verdict(stage=s, op="op", kernel="k", variant="v", verdict="PASS", summary="stale"),
              adir / s / "v.json")
    (adir / "write.json").write_text("{not json")
    d = tp_check.check(tmp_path, "op", "k", 1, adir / "write.json", tmp_path / "ref", ["v"], adir / "check.json")
    assert d["verdict"] == "ERROR"
    assert all(not any((adir / s).iterdir()) for s in tp_route.VARIANT_STAGES)
    out = {s: tmp_path / "pub" / s for s in tp_route.VARIANT_STAGES}
    tp_route.publish_variants(adir, out, ["v"], adir / "check.json")
    for s in tp_route.VARIANT_STAGES:
        v = read(out[s] / "v.json")
        assert v["verdict"] == "ERROR" and "check_kernel ERROR" in v["summary"], v


@pytest.mark.parametrize("backend", ["translator", "anthropic"])
def test_the_cap_is_in_a_route_exactly_where_cap_decides_says(backend):
    """The workflow reruns a check when route.cap_decides changes (check_kernel's param at_cap):
    so a failing attempt's route names the cap exactly there, and nowhere else."""
    fail = {"verdict": "FAIL", "fail_class": "kernel", "summary": "diff FAIL", "findings": []}
    for cap in (1, 2, 3):
        for n in range(1, cap + 1):
            d = tp_route.decide(fail, backend, n, cap)
            assert ("cap" in d) == tp_route.cap_decides(backend, n, cap), (backend, n, cap, d)
            # a cap raised past n: the translator still stops (deterministic), an LLM retries
            bigger = tp_route.decide(fail, backend, n, cap + 5)
            assert "cap" not in bigger and bigger["next"] == ("stop" if backend == "translator" else "retry")
    assert not tp_route.cap_decides("translator", 3, 3) and tp_route.cap_decides("anthropic", 3, 3)


@pytest.mark.parametrize("writer", ["translator", "anthropic", "replay", "auto"])
@pytest.mark.parametrize("writer_cap", [1, 2, 3])
@pytest.mark.parametrize("builder,host_cap", [("deterministic", 3), ("auto", 1), ("auto", 2), ("anthropic", 3)])
def test_may_retry_is_exactly_whether_some_route_retries(tmp_path, writer, writer_cap, builder, host_cap):
    # the workflow makes check_kernel / gpu_route checkpoints only where may_retry says a route
    # can retry: a False must hold for every route the deciders can write, a True be reachable
    may = tp_route.may_retry(writer, writer_cap, builder, host_cap)
    cpu = any(tp_route.decide(c, writer, n, writer_cap)["next"] == "retry"
              for c in (cv("FAIL", "kernel"), cv("FAIL", "agent_output"), cv("PASS"), cv("BLOCKED"))
              for n in range(1, writer_cap + 2))
    assert may["cpu"] == cpu
    cases = {"numerics": ([row(), row(variant="f16-T2", port=mismatch())], None),
             "host": ([row(launches=(1, 2, 1))], None), "slow": ([row()], SLOW),
             "slow_launches": ([row()], [brow(0.8, port_launches=2), brow(0.85, shape="b", port_launches=2)])}
    gpu = False
    for name, (rows, brows) in cases.items():
        t, b, p = gpu_verdicts(tmp_path / name, rows, brows)
        for n in range(1, writer_cap + 2):
            for h in range(1, host_cap + 2):
                d = tp_gpu_round.decide_gpu(t, b, p, {"k": n}, 1, writer=writer, writer_cap=writer_cap,
                                            host_builder=builder, host_attempt=h, host_cap=host_cap)
                gpu = gpu or d["next"] == "retry"
    assert may["gpu"] == gpu
