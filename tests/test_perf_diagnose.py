"""perf_diagnose.diagnose over bench.json / ir_diff verdicts written by hand (no GPU)."""
import pytest

from tileport.core.verdict import Finding, Verdict, read, write
from tileport.gpu import bench
from tileport.gpu.fold import HARNESS  # noqa: E402
from tileport.gpu.perf_diagnose import diagnose, outliers


def brow(ratio, variant="f16-T1", shape="64x128", grid="64x1x1", port_us=10.0, ref_launches=1,
         port_launches=1, port_ho=6.0, ref_ho=5.0, error="", port_host=3.0, ref_host=3.0):
    ref_us = ratio * port_us
    return {"op": "op", "kernel": "k", "variant": variant, "shape": shape, "grid": grid, "reps": 20,
            "ref_us": ref_us, "port_us": port_us, "torch_us": port_us, "ref_iqr_us": 0.1,
            "port_iqr_us": 0.1, "torch_iqr_us": 0.1, "ratio": ratio, "paired_ratio": ratio * 1.01,
            "vs_torch": 1.0, "ref_vs_torch": port_us / ref_us, "ref_launches": ref_launches,
            "port_launches": port_launches, "torch_launches": 1, "ref_loop_us": ref_us + ref_ho,
            "port_loop_us": port_us + port_ho, "torch_loop_us": port_us + 1.0,
            "loop_ratio": (ref_us + ref_ho) / (port_us + port_ho), "loop_calls": 100,
            "ref_host_us": ref_host, "port_host_us": port_host, "torch_host_us": 2.0,
            "port_host_overhead_us": port_ho, "ref_host_overhead_us": ref_ho, "checked": "ok",
            "error": error, "harness": HARNESS}


def bench_json(path, rows, threshold=0.95, loop_threshold=0.97):
    """bench.json as bench.run writes it: fold's verdict plus details.rows."""
    v = bench.fold("op", [r for r in rows], threshold, loop_threshold=loop_threshold)
    v.details["rows"] = [{k: r.get(k) for k in bench.COLUMNS + bench.ROW_EXTRAS} for r in rows]
    write(v, path)
    return v


def ir_diff(path, variant, findings, verdict="PASS_WITH_NOTES"):
    write(Verdict(stage="ir_diff", op="op", kernel="k", variant=variant, verdict=verdict,
                  summary="diff", findings=findings), path)
    return path


SLOW = [brow(0.8, shape="a", grid="8x1x1"), brow(0.85, shape="b", grid="16x1x1"),
        brow(0.9, shape="c", grid="32x1x1"), brow(0.7, shape="d", grid="4x1x1"),
        brow(1.0, shape="e")]


def test_done_is_pass(tmp_path):
    bench_json(tmp_path / "bench.json", [brow(1.2, ref_ho=6.0)])
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json", attempt=2)
    assert d["verdict"] == "PASS" and d["stage"] == "perf_diagnose" and d["attempt"] == 2
    assert d["summary"].startswith("no slow port to diagnose: geomean ratio 1.200")
    assert d["summary"].endswith("1 config(s) outside +-3%: unexplained 1")
    assert d["details"]["outliers"][0]["evidence"] == "no matched reading; no run-time SASS verdict for this config"
    assert read(tmp_path / "perf.json") == d


def _case(variant, shape, launched, matched, delta=None, cause=None):
    """A runtime_ir case record: sm_90 SASS verdicts as launched and matched (``cause``: what
    runtime_ir found different, on a DIFFERENT verdict)."""
    sass = lambda v: {"sm_90": {"verdict": v, **({"delta": delta, "cause": cause} if v == "DIFFERENT" else {})}}  # noqa: E731
    return {"variant": variant, "shape": shape,
            "readings": {"launched": {"ir_diff": {"verdict": "PASS"}, "sass": sass(launched)},
                         "matched": {"ir_diff": {"verdict": "PASS"}, "sass": sass(matched)}}}


def test_outliers_either_way_get_a_cause(tmp_path):
    """Issue 31 item 6: a port faster than its reference beyond +-3 % is explained too; the
    matched reading and the run-time SASS name the cause."""
    rows = [brow(1.3, shape="37x1000"), brow(1.41, shape="4096"), brow(0.75, shape="64"), brow(1.01, shape="128"),
            brow(1.2, shape="256", ref_launches=1, port_launches=2), brow(1.0, shape="512")]
    rows[0].update(ratio_matched=1.004, matched_gain=1.295)
    rows[1].update(ratio_matched=1.40, matched_gain=1.0)
    rows[2].update(ratio_matched=0.81)
    rows[5].update(ratio_matched=0.9, matched_gain=1.11)        # inside as launched, outside matched
    # the matched reading just outside the band, its interval inside it, the facts worth nothing
    rows.append({**brow(0.968, shape="1024"), "ratio_matched": 0.969, "matched_gain": 0.999,
                 "samples": {"ref_matched": [9.6, 9.7, 9.69, 9.71, 9.68, 9.7, 9.8, 10.0],
                             "port": [10.0] * 8}})
    bench_json(tmp_path / "bench.json", rows)
    write(Verdict(stage="runtime_ir", op="op", kernel="k", verdict="PASS", summary="rt",
                  details={"cases": [_case("f16-T1", [37, 1000], "DIFFERENT", "IDENTICAL", {"LDG.E.U16": -32}),
                                     _case("f16-T1", [4096], "DIFFERENT", "DIFFERENT", {"FFMA": -64, "FMUL": 64},
                                           "2 op(s) run inside more loops on the port side"),
                                     _case("f16-T1", [64], "IDENTICAL", "IDENTICAL")]}),
          tmp_path / "rt.json")
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json", runtime=[tmp_path / "rt.json"])
    got = {o["shape"]: o for o in d["details"]["outliers"]}
    assert list(got) == ["4096", "37x1000", "64", "256", "1024", "512"]         # farthest from 1 first
    assert got["37x1000"]["cause"] == "launcher specialisation"
    assert "SASS as launched DIFFERENT (LDG.E.U16 -32), matched IDENTICAL" in got["37x1000"]["evidence"]
    assert got["4096"]["cause"] == "IR difference" and "FFMA -64" in got["4096"]["evidence"]
    assert got["4096"]["evidence"].endswith("what differs (runtime_ir): 2 op(s) run inside more loops on the port side")
    assert got["256"]["cause"] == "launch count"
    assert got["64"]["cause"] == "unexplained" and "matched IDENTICAL" in got["64"]["evidence"]
    assert got["512"]["cause"] == "unexplained" and "no run-time SASS verdict" in got["512"]["evidence"]
    assert got["1024"]["cause"] == "within noise" and "0.969 [0.960, 1.000] reaches the band" in got["1024"]["evidence"]
    assert (got["1024"]["ratio_matched_lo"], got["1024"]["ratio_matched_hi"]) == pytest.approx((0.96, 1.0))
    assert "6 config(s) outside +-3%: launcher specialisation 1, IR difference 1, launch count 1, within noise 1, " \
        "unexplained 2" \
        in [f["message"] for f in d["findings"]]
    # an unreadable run-time verdict is no evidence, not an error
    (tmp_path / "rt.json").write_text("{")
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json", runtime=[tmp_path / "rt.json"])
    assert {o["shape"]: o["cause"] for o in d["details"]["outliers"]}["4096"] == "unexplained"


def test_a_matched_reading_that_kept_launch_facts_is_no_port_difference(tmp_path):
    """lg_rope _rope_5d_ct f16 (docs/results/h100-2026-12-07f): the bench's matched reference
    kept ct.launch's extent-1 constants (another symbol than runtime_ir's matched reference), and
    runtime_ir's matched pair, compiled with the port's facts alone, has IDENTICAL SASS: the
    0.955 is the launch facts. Under the same symbol the identical SASS stays unexplained."""
    (tmp_path / "matched.ref.tileir").write_text("cuda_tile.module @m {\n  entry @k_Kt1_A4f16_7v16(%arg0: i32) {\n")
    notes = "COS: an extent of 1 stays ct.launch's constant (cutile hints no constant)"
    rows = [{**brow(0.955, shape="4x28"), "ratio_matched": 0.955, "matched_gain": 1.0,
             "matched_symbol": "k_Kt2_A4f16_5s1_7v16", "matched_notes": notes},
            {**brow(0.95, shape="4x32"), "ratio_matched": 0.95, "matched_gain": 1.0,
             "matched_symbol": "k_Kt1_A4f16_7v16", "matched_notes": ""}]
    case = lambda shape: {"variant": "f16-T1", "shape": shape, "readings": {  # noqa: E731
        "launched": {"ir_diff": {"verdict": "FAIL"}, "sass": {"sm_90": {"verdict": "DIFFERENT", "delta": {}}}},
        "matched": {"ir_diff": {"verdict": "PASS"}, "sass": {"sm_90": {"verdict": "IDENTICAL"}},
                    "ref_ir": str(tmp_path / "matched.ref.tileir")}}}
    runtime = [{"kernel": "k", "details": {"cases": [case([4, 28]), case([4, 32])]}}]
    got = {o["shape"]: o for o in outliers(rows, runtime)}
    assert got["4x28"]["cause"] == "launcher specialisation"
    assert notes in got["4x28"]["evidence"] and "SASS is IDENTICAL to the port's" in got["4x28"]["evidence"]
    assert got["4x32"]["cause"] == "unexplained"
    # the matched Tile IR gone: no evidence, so no cause is claimed
    (tmp_path / "matched.ref.tileir").unlink()
    assert outliers(rows[:1], [{"kernel": "k", "details": {"cases": [case([4, 28])]}}])[0]["cause"] == "unexplained"


def test_an_ir_difference_names_the_occupancy_it_costs(tmp_path):
    """_ce_online_kernel f16 4096x32768 (docs/results/h100-matched-2026-12-05): the matched pair's
    SASS differs and tileiras gave the reference 142 registers per thread, the port 128: 3 and 4
    resident CTAs per SM; the evidence says so. Equal resources add nothing."""
    rows = [brow(1.25, shape="4096x32768"), brow(1.1, shape="256x2048")]
    rows[0].update(ratio_matched=1.249, matched_gain=1.0)
    rows[1].update(ratio_matched=1.1, matched_gain=1.0)
    slow = _case("f16-T1", [4096, 32768], "DIFFERENT", "DIFFERENT", {"MOV": -93})
    slow["readings"]["matched"]["sass"]["sm_90"]["resources"] = {
        "ref": {"registers": 142, "threads": 128, "local": 0, "shared": 1040, "ctas_per_sm": 3},
        "port": {"registers": 128, "threads": 128, "local": 0, "shared": 1040, "ctas_per_sm": 4}}
    same = _case("f16-T1", [256, 2048], "DIFFERENT", "DIFFERENT", {"MOV": -3})
    same["readings"]["matched"]["sass"]["sm_90"]["resources"] = {
        "ref": {"registers": 110, "threads": 128, "local": 0, "shared": 1040, "ctas_per_sm": 4},
        "port": {"registers": 110, "threads": 128, "local": 0, "shared": 1040, "ctas_per_sm": 4}}
    bench_json(tmp_path / "bench.json", rows)
    write(Verdict(stage="runtime_ir", op="op", kernel="k", verdict="PASS", summary="rt",
                  details={"cases": [slow, same]}), tmp_path / "rt.json")
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json", runtime=[tmp_path / "rt.json"])
    got = {o["shape"]: o for o in d["details"]["outliers"]}
    assert got["4096x32768"]["cause"] == "IR difference"
    assert got["4096x32768"]["evidence"].endswith(
        "occupancy: ref 3, port 4 resident CTAs per SM (142 / 128 registers per thread, 128 / 128 threads per CTA)")
    assert got["256x2048"]["cause"] == "IR difference" and "occupancy" not in got["256x2048"]["evidence"]
    assert "resources" not in got["256x2048"]["evidence"]


def test_not_run_passes_the_reason_through(tmp_path):
    write(Verdict(stage="bench", op="op", verdict="NOT_RUN", summary="not_run (gpu: off)"),
          tmp_path / "bench.json")
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert d["verdict"] == "NOT_RUN" and d["summary"] == "not_run (gpu: off)"


@pytest.mark.parametrize("content", [None, "not json", '{"verdict": "DONE"}'])
def test_unreadable_bench_is_blocked(tmp_path, content):
    b = tmp_path / "bench.json"
    if content is not None:
        b.write_text(content)
    d = diagnose("op", b, [], tmp_path / "perf.json")
    assert d["verdict"] == "BLOCKED" and d["owner"] == "tool"
    assert str(b) in d["summary"]


def test_failed_bench_is_blocked_with_its_owner(tmp_path):
    write(Verdict(stage="bench", op="op", verdict="FAIL", owner="kernel", fail_class="kernel",
                  summary="k/f16-T1 a: boom"), tmp_path / "bench.json")
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert d["verdict"] == "BLOCKED" and d["owner"] == "kernel"
    assert d["summary"] == "no timing to diagnose: bench FAIL: k/f16-T1 a: boom"


def test_launch_count_difference_blames_host(tmp_path):
    rows = [brow(0.5, shape="a", ref_launches=1, port_launches=2), brow(0.9, shape="b")]
    bench_json(tmp_path / "bench.json", rows)
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert d["verdict"] == "FAIL"
    assert d["owner"] == "host" and d["fail_class"] == "host"
    crit = [f for f in d["findings"] if f["severity"] == "critical"]
    assert len(crit) == 1 and crit[0]["category"] == "launch" and crit[0]["owner"] == "host"
    assert "1 config(s) launch a different number of kernels" in crit[0]["message"]
    assert "f16-T1 a: port 2 vs reference 1" in crit[0]["message"]
    assert d["summary"].startswith("below threshold (")
    assert "launch a different number of kernels" in d["summary"]


def test_mixed_launch_counts_string_compared(tmp_path):
    # measure() writes "1/2" when a side's count varies between rounds
    bench_json(tmp_path / "bench.json", [brow(0.5, port_launches="1/2")])
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert d["owner"] == "host"


def test_ir_hint_blames_kernel_and_is_evidence(tmp_path):
    bench_json(tmp_path / "bench.json", SLOW)
    hint = "entry optimization hints differ: ref 'sm_90 = {occupancy = 2}' vs port 'none'"
    diffs = [ir_diff(tmp_path / "d1.json", "f16-T1", [Finding("hint", "warn", "kernel", hint)]),
             ir_diff(tmp_path / "d2.json", "f32-T1", [], verdict="PASS")]
    d = diagnose("op", tmp_path / "bench.json", diffs, tmp_path / "perf.json")
    assert d["verdict"] == "FAIL" and d["owner"] == "kernel" and d["fail_class"] == "kernel"
    ev = d["details"]["evidence"]
    assert ev["ir_hints"] == [f"f16-T1: {hint}"]
    assert ev["ir_inserted"] == []
    crit = [f for f in d["findings"] if f["severity"] == "critical"]
    assert [f["category"] for f in crit] == ["hint"]
    assert hint in crit[0]["message"] and "1 IR hint difference(s)" in crit[0]["message"]
    assert hint in d["summary"]


def test_launch_counts_override_hints_for_owner(tmp_path):
    bench_json(tmp_path / "bench.json", [brow(0.5, port_launches=3)])
    diffs = [ir_diff(tmp_path / "d.json", "f16-T1", [Finding("hint", "warn", "kernel", "latency differs")])]
    d = diagnose("op", tmp_path / "bench.json", diffs, tmp_path / "perf.json")
    assert d["owner"] == "host"
    assert d["details"]["evidence"]["ir_hints"] == ["f16-T1: latency differs"]


def test_inserted_asserts_listed_and_in_summary(tmp_path):
    bench_json(tmp_path / "bench.json", SLOW)
    note = "removed assert ops (bounds checks, no value computed): ref 0, port 2"
    diffs = [ir_diff(tmp_path / "d.json", "f16-T1", [Finding("control_flow", "info", "compiler", note)])]
    d = diagnose("op", tmp_path / "bench.json", diffs, tmp_path / "perf.json")
    assert d["verdict"] == "FAIL" and d["owner"] == "kernel"
    ev = d["details"]["evidence"]
    assert ev["ir_inserted"] == [f"f16-T1: {note}"]
    assert ev["ir_hints"] == []
    assert note in d["summary"]
    assert "same IR hints, launch grid, constexprs and launch counts" in d["summary"]
    w = [f for f in d["findings"] if f["category"] == "performance" and f["severity"] == "warn"
         and "operations the reference lacks" in f["message"]]
    assert len(w) == 1 and note in w[0]["message"]


def test_unreadable_ir_diff_is_skipped(tmp_path):
    bench_json(tmp_path / "bench.json", SLOW)
    (tmp_path / "bad.json").write_text("# ERROR: see x\n")
    d = diagnose("op", tmp_path / "bench.json", [tmp_path / "bad.json", tmp_path / "missing.json"],
                 tmp_path / "perf.json")
    assert d["verdict"] == "FAIL"
    assert d["details"]["evidence"]["ir_hints"] == [] and d["details"]["evidence"]["ir_inserted"] == []


def test_other_ir_findings_are_not_hints_or_insertions(tmp_path):
    bench_json(tmp_path / "bench.json", SLOW)
    diffs = [ir_diff(tmp_path / "d.json", "f16-T1", [
        Finding("math", "warn", "kernel", "fma contraction differs: ref has 2 fma, port 0"),
        Finding("memory", "info", "compiler", "stride notes differ")])]
    d = diagnose("op", tmp_path / "bench.json", diffs, tmp_path / "perf.json")
    ev = d["details"]["evidence"]
    assert ev["ir_hints"] == [] and ev["ir_inserted"] == []


def test_worst_configs_with_grid(tmp_path):
    bench_json(tmp_path / "bench.json", SLOW)
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    ev = d["details"]["evidence"]
    w = ev["worst_configs"]
    assert [(c["shape"], c["grid"], c["ratio"]) for c in w] == [("d", "4x1x1", 0.7), ("a", "8x1x1", 0.8),
                                                                ("b", "16x1x1", 0.85)]
    assert set(w[0]) == {"kernel", "variant", "shape", "grid", "ratio", "ref_us", "port_us", "paired_ratio"}
    assert ev["geomean_without_worst"] == pytest.approx((0.9 * 1.0) ** 0.5)
    assert ev["threshold"] == 0.95
    assert ev["geomean_ratio"] == pytest.approx((0.8 * 0.85 * 0.9 * 0.7 * 1.0) ** 0.2)
    slow = [f for f in d["findings"] if f["message"].startswith("slowest config")]
    assert len(slow) == 1
    assert "f16-T1 d ratio 0.700" in slow[0]["message"] and "grid 4x1x1" in slow[0]["message"]
    # without a hint or a launch difference the slowest config is the stated cause
    assert "slower: slowest config: f16-T1 d ratio 0.700" in d["summary"]
    assert d["summary"].startswith(f"below threshold ({ev['geomean_ratio']:.3f} < 0.95)")


def test_host_overhead_reported_but_never_decides(tmp_path):
    rows = [brow(0.8, shape="a", port_ho=50.0, ref_ho=5.0), brow(0.9, shape="b", port_ho=30.0, ref_ho=3.0),
            brow(0.85, shape="c", port_ho=40.0, ref_ho=4.0)]
    bench_json(tmp_path / "bench.json", rows)
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert d["details"]["evidence"]["host_overhead_us"] == {"port_median": 40.0, "ref_median": 4.0}
    assert d["owner"] == "kernel"
    ho = [f for f in d["findings"] if f["message"].startswith("host overhead")]
    assert len(ho) == 1 and ho[0]["severity"] == "info"
    assert "port 40.0 µs vs reference 4.0 µs" in ho[0]["message"]


def test_error_rows_are_ignored(tmp_path):
    rows = [brow(0.8, shape="a"), {**brow(0.1, shape="z", port_launches=9), "error": "boom"}]
    v = bench.fold("op", [rows[0]], 0.95)                     # BELOW_THRESHOLD, then add both rows
    v.details["rows"] = [{k: r.get(k) for k in bench.COLUMNS + bench.ROW_EXTRAS} for r in rows]
    write(v, tmp_path / "bench.json")
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert d["owner"] == "kernel"                         # the error row's launch count is not used
    assert [c["shape"] for c in d["details"]["evidence"]["worst_configs"]] == ["a"]


@pytest.mark.parametrize("counts", ["ref 2, port 2", "ref 3, port 0"])
def test_asserts_not_in_excess_on_the_port_are_not_inserted(tmp_path, counts):
    bench_json(tmp_path / "bench.json", SLOW)
    note = f"removed assert ops (bounds checks, no value computed): {counts}"
    diffs = [ir_diff(tmp_path / "d.json", "f16-T1", [Finding("control_flow", "info", "compiler", note)])]
    d = diagnose("op", tmp_path / "bench.json", diffs, tmp_path / "perf.json")
    assert d["details"]["evidence"]["ir_inserted"] == []


def test_extra_assumes_are_not_hint_differences(tmp_path):
    # ir_diff files the port's extra assume ops (optimizer facts) as an info note of category
    # hint; they are not a dropped latency/TMA/occupancy hint and must not be blamed as one
    bench_json(tmp_path / "bench.json", SLOW)
    note = "assume ops are transparent (optimizer facts only): 0 only in ref, 6 only in port (ref 8, port 14 in all)"
    diffs = [ir_diff(tmp_path / "d.json", "f16-T1", [Finding("hint", "info", "compiler", note)])]
    d = diagnose("op", tmp_path / "bench.json", diffs, tmp_path / "perf.json")
    assert d["details"]["evidence"]["ir_hints"] == []
    assert "IR hint difference" not in d["summary"] and "same IR hints" in d["summary"]


PERF_REPLY = ("```markdown\nrelu f16 d: port 10.0 µs vs 7.0 µs, same grid; the port's load keeps a "
              "bounds-check assert.\n```\n\n```json\n{\"owner\": \"kernel\", \"cause\": \"an extra "
              "assert in the loop\"}\n```\n\nVERDICT: FAIL\n")


@pytest.fixture
def fake_api(monkeypatch):
    import http.server
    import threading

    from test_agents import FakeMessages

    FakeMessages.script, FakeMessages.seen = [], []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setenv("TILEPORT_FAKE_KEY", "sk-ant-perf-test")
    yield FakeMessages, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def role(tmp_path, backend, url):
    from tileport.core import agents

    rs = tmp_path / "k.rs"
    rs.write_text("pub mod port {}\n")
    return {"backend": backend, "results": tmp_path / "results", "kernels": [str(rs)],
            "settings": agents.LlmSettings(model="claude-test", base_url=url, api_key_env="TILEPORT_FAKE_KEY",
                                           max_retries=0, timeout_s=10)}


def test_llm_perf_diagnoser_cause_and_owner_without_critical_evidence(tmp_path, fake_api):
    from test_agents import ok

    fake, url = fake_api
    fake.script = [ok(PERF_REPLY)]
    bench_json(tmp_path / "b.json", SLOW)
    d = diagnose("op", tmp_path / "b.json", [], tmp_path / "p.json", role=role(tmp_path, "auto", url))
    assert d["verdict"] == "FAIL" and d["owner"] == "kernel"
    assert "LLM perf diagnoser (kernel): an extra assert in the loop" in d["summary"]
    assert d["details"]["llm"]["agent_claim"]["validation"]["owner"] == "kernel"
    prompt = fake.seen[0]["body"]["messages"][0]["content"]
    assert "worst_configs" in prompt and "pub mod port {}" in prompt
    assert (tmp_path / "results/op/transcripts/perf_diagnose/attempt-1.json").is_file()


def test_auto_perf_diagnoser_skips_the_llm_with_critical_evidence(tmp_path, fake_api):
    fake, url = fake_api
    rows = [brow(0.5, port_launches=2), brow(0.6, shape="b", port_launches=2)]
    bench_json(tmp_path / "b.json", rows)
    d = diagnose("op", tmp_path / "b.json", [], tmp_path / "p.json", role=role(tmp_path, "auto", url))
    assert d["owner"] == "host" and "llm" not in d["details"] and fake.seen == []


def test_llm_perf_diagnoser_garbage_keeps_the_deterministic_verdict(tmp_path, fake_api):
    from test_agents import ok

    fake, url = fake_api
    fake.script = [ok("it is slow because GPUs are hard")]
    bench_json(tmp_path / "b.json", SLOW)
    plain = diagnose("op", tmp_path / "b.json", [], tmp_path / "plain.json")
    d = diagnose("op", tmp_path / "b.json", [], tmp_path / "p.json", role=role(tmp_path, "anthropic", url))
    assert (d["verdict"], d["owner"], d["summary"]) == (plain["verdict"], plain["owner"], plain["summary"])
    assert d["details"]["llm"]["fail_class"] == "agent_output"


def test_llm_perf_diagnoser_without_key_is_recorded_not_fatal(tmp_path, fake_api, monkeypatch):
    fake, url = fake_api
    monkeypatch.delenv("TILEPORT_FAKE_KEY")
    bench_json(tmp_path / "b.json", SLOW)
    d = diagnose("op", tmp_path / "b.json", [], tmp_path / "p.json", role=role(tmp_path, "anthropic", url))
    assert d["verdict"] == "FAIL" and d["details"]["llm"]["fail_class"] == "env" and fake.seen == []


# -- the loop gate -------------------------------------------------------------------------------

def test_device_done_but_host_bound_loop_blames_host(tmp_path):
    # device time equal; the port's host path costs 40 µs per call against a 10 µs kernel
    rows = [brow(1.0, shape="a", port_ho=30.0, ref_ho=0.5, port_host=40.0, ref_host=8.0),
            brow(1.0, shape="b", port_ho=0.5, ref_ho=0.5)]
    bench_json(tmp_path / "bench.json", rows)
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert d["verdict"] == "FAIL" and d["owner"] == "host" and d["fail_class"] == "host"
    assert d["summary"].startswith("device time met (geomean ratio 1.000 >= 0.95); below the loop gate: "
                                   "host overhead")
    assert "1 config(s) below, 1 of them host-bound" in d["summary"]
    assert ("port 40.0 µs per call (host 40.0 µs, device 10.0 µs) vs reference 10.5 µs (host 8.0 µs, "
            "device 10.0 µs)") in d["summary"]
    assert d["findings"][0]["owner"] == "host" and d["findings"][0]["severity"] == "critical"
    assert d["details"]["evidence"]["loop"]["below"][0]["shape"] == "a"


def test_device_bound_loop_below_blames_the_kernel(tmp_path):
    # device ratio 0.955 passes 0.95; the loop follows device time (host 3 µs << 10 µs kernels)
    bench_json(tmp_path / "bench.json", [brow(0.955, ref_ho=1.0, port_ho=1.0)])
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert d["verdict"] == "FAIL" and d["owner"] == "kernel"
    assert "below the loop gate: device time" in d["summary"] and "0 of them host-bound" in d["summary"]


def test_loop_threshold_is_rejudged(tmp_path):
    rows = [brow(1.0, port_ho=2.0, ref_ho=1.0)]            # loop ratio 11/12 = 0.917
    bench_json(tmp_path / "bench.json", rows, loop_threshold=0.97)
    assert diagnose("op", tmp_path / "bench.json", [], tmp_path / "p.json")["verdict"] == "FAIL"
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "p.json", loop_threshold=0.9)
    assert d["verdict"] == "PASS" and d["summary"].endswith(f"loop ratio {11 / 12:.3f} >= 0.9")


def test_below_threshold_carries_the_loop_evidence(tmp_path):
    bench_json(tmp_path / "bench.json", SLOW)
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    ho = [f for f in d["findings"] if f["message"].startswith("host overhead")][0]
    assert "host time per call port 3.0 µs vs reference 3.0 µs; loop ratio" in ho["message"]
    assert d["details"]["evidence"]["loop"]["configs"] == 5


def test_a_slow_port_the_translator_wrote_is_the_tools(tmp_path):
    """Owner names who must act: the translator wrote every kernel (write_kernel/*.json beside
    bench.json) -> tool; the route (fail_class kernel: the kernel writer) stays; an LLM writer's
    port stays kernel; a host diagnosis stays host."""
    bench_json(tmp_path / "bench.json", SLOW)
    wk = tmp_path / "write_kernel" / "k.json"
    wk.parent.mkdir()
    write(Verdict(stage="write_kernel", op="op", verdict="PASS", summary="s", details={"backend": "translator"}), wk)
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert (d["verdict"], d["owner"], d["fail_class"]) == ("FAIL", "tool", "kernel")
    write(Verdict(stage="write_kernel", op="op", verdict="PASS", summary="s", details={"backend": "anthropic"}), wk)
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert (d["owner"], d["fail_class"]) == ("kernel", "kernel")
    bench_json(tmp_path / "bench.json", [brow(0.8, port_launches=2)])
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert (d["owner"], d["fail_class"]) == ("host", "host")


def test_a_slow_port_is_owned_by_the_writer_of_its_slowest_kernel_when_writers_differ(tmp_path):
    """An operator whose kernels have different writers (the translator for one, an LLM for
    another): the slow port is the writer's of the kernel that is slow (as bench.fold says), not
    ``kernel`` for every mixed operator."""
    rows = [{**r, "kernel": "slow_k"} for r in SLOW[:4]] + [{**brow(1.0, shape="f"), "kernel": "fast_k"}]
    bench_json(tmp_path / "bench.json", rows)
    (tmp_path / "write_kernel").mkdir()
    for k, backend in (("slow_k", "translator"), ("fast_k", "anthropic")):
        write(Verdict(stage="write_kernel", op="op", verdict="PASS", summary="s", details={"backend": backend}),
              tmp_path / "write_kernel" / f"{k}.json")
    d = diagnose("op", tmp_path / "bench.json", [], tmp_path / "perf.json")
    assert (d["verdict"], d["owner"], d["fail_class"]) == ("FAIL", "tool", "kernel")
