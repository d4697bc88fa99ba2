"""The GPU columns of summary.csv (test, ratio, times, vs_torch) and summary_ops.csv."""
import csv
import json

from test_bench import brow

from tileport.core.verdict import Verdict, write
from tileport.gpu import bench
from tileport.gpu import test as gpu_test
from tileport.report import summary as tp_summary

VARIANTS = [("k", "f16-T1"), ("k", "f32-T1")]


def cpu_stages(results, op, variants=VARIANTS):
    """Every CPU stage PASS for ``op``."""
    r = results / op
    w = lambda stage, path: write(Verdict(stage=stage, op=op, verdict="PASS", summary=stage), r / path)
    w("analyze", "analysis.json")
    w("rust_build", "rust/build.json")
    for k in {k for k, _ in variants}:
        w("write_kernel", f"write_kernel/{k}.json")
    for k, v in variants:
        w("reference_ir", f"ref/k/{v}.json")
        w("rust_ir", f"rust_ir/k/{v}.json")
        w("ir_diff", f"ir_diff/k/{v}.json")


def write_test_json(results, op, verdict="ALL_PASS", variants=None, summary="all within tolerance", **kw):
    write(Verdict(stage="gpu_test", op=op, verdict=verdict, summary=summary,
                  details={"variants": variants or {}, "cases": []}, **kw), results / op / "test.json")


def bench_row(ratio, vs_torch, ref_vs_torch, kernel="k", variant="f16-T1", shape="1x1", error=""):
    return {"op": "op", "kernel": kernel, "variant": variant, "shape": shape, "ratio": ratio,
            "vs_torch": vs_torch, "ref_vs_torch": ref_vs_torch, "error": error}


def bench_json(results, op, variants, rows, verdict="DONE", geo=(1.0, 1.0, 1.0), summary="bench"):
    write(Verdict(stage="bench", op=op, verdict=verdict, summary=summary,
                  owner=None if verdict == "DONE" else "kernel",
                  details={"variants": variants, "rows": rows, "threshold": 0.95,
                           "configs": len([r for r in rows if not r.get("error")]),
                           "geomean_ratio": geo[0], "geomean_vs_torch": geo[1],
                           "geomean_ref_vs_torch": geo[2]}),
          results / op / "bench.json")


def summarize(tmp_path, ops, variants=None):
    results = tmp_path / "results"
    out, ops_csv = results / "summary.csv", results / "summary_ops.csv"
    tp_summary.write_summary(results, ops, variants or {op: VARIANTS for op in ops}, {}, out, ops_csv=ops_csv)
    # the LLM usage columns are checked in test_llm_usage_columns, the loop gate's in
    # test_loop_columns, NVIDIA's vs_nv in test_nv_port; here: the device-time ones
    llm = ("llm_calls", "tokens_in", "tokens_out", "cost_usd", "loop_ratio", "loop_verdict", "ref_host_us",
           "port_host_us", "vs_nv", "configs_pending", "loop_below", "loop_undecided", "vs_nv_configs",
           "geomean_ratio_matched", "matched_configs")
    ops_rows = [{k: v for k, v in r.items() if k not in llm} for r in csv.DictReader(open(ops_csv))]
    return list(csv.DictReader(open(out))), ops_rows


def test_gpu_columns_of_a_passing_op(tmp_path):
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS", "k/f32-T1": "PASS"})
    bench_json(results, "op",
               {"k/f16-T1": {"ratio": 1.23456, "vs_torch": 2.5, "ref_us": 12.3456, "port_us": 10.0,
                             "torch_us": 25.004, "configs": 2},
                "k/f32-T1": {"ratio": 0.9, "vs_torch": 1.0, "ref_us": 9.0, "port_us": 10.0,
                             "torch_us": 10.0, "configs": 1}},
               [bench_row(1.2, 2.5, 2.0), bench_row(1.27, 2.5, 2.0, shape="2x2"),
                bench_row(0.9, 1.0, 1.1, variant="f32-T1")],
               geo=(1.118, 1.842, 1.6))
    rows, ops = summarize(tmp_path, ["op"])
    a, b = rows
    assert (a["variant"], a["test"], a["ratio"], a["ref_us"], a["port_us"], a["torch_us"], a["vs_torch"]) \
        == ("f16-T1", "PASS", "1.235", "12.35", "10.00", "25.00", "2.500")
    assert (b["variant"], b["test"], b["ratio"], b["vs_torch"]) == ("f32-T1", "PASS", "0.900", "1.000")
    assert a["note"] == "" and a["owner"] == "" and a["diagnosis"] == ""
    assert list(rows[0]) == tp_summary.COLUMNS
    assert ops == [{"op": "op", "configs": "3", "geomean_ratio": "1.118", "verdict": "DONE",
                    "vs_torch": "1.842", "ref_vs_torch": "1.600"},
                   {"op": "ALL", "configs": "3", "geomean_ratio": f"{(1.2 * 1.27 * 0.9) ** (1 / 3):.3f}",
                    "verdict": "1 operator(s): DONE 1", "vs_torch": f"{(2.5 * 2.5 * 1.0) ** (1 / 3):.3f}",
                    "ref_vs_torch": f"{(2.0 * 2.0 * 1.1) ** (1 / 3):.3f}"}]


def test_all_row_is_geomean_over_every_config_of_every_op(tmp_path):
    results = tmp_path / "results"
    for op in ("a", "b"):
        cpu_stages(results, op)
        write_test_json(results, op, variants={"k/f16-T1": "PASS"})
    v = {"k/f16-T1": {"ratio": 1.0, "vs_torch": 1.0, "ref_us": 1.0, "port_us": 1.0, "torch_us": 1.0,
                      "configs": 1}}
    # op a: ratios 0.5 and 2.0 (geomean 1.0); op b: 4.0. Over configs: 4 ** (1/3); over ops it would be 2.
    bench_json(results, "a", v, [bench_row(0.5, 1.0, 2.0), bench_row(2.0, 4.0, 2.0, shape="2")],
               geo=(1.0, 2.0, 2.0))
    bench_json(results, "b", v, [bench_row(4.0, 8.0, 2.0),
                                 bench_row(0.01, 0.01, 0.01, shape="9", error="boom")],   # not counted
               verdict="FAIL", geo=(4.0, 8.0, 2.0))
    _, ops = summarize(tmp_path, ["a", "b"], {"a": [("k", "f16-T1")], "b": [("k", "f16-T1")]})
    assert [o["op"] for o in ops] == ["a", "b", "ALL"]
    assert ops[0]["geomean_ratio"] == "1.000" and ops[0]["verdict"] == "DONE"
    assert ops[1]["verdict"] == "FAIL" and ops[1]["configs"] == "1"
    all_ = ops[2]
    assert all_["configs"] == "3"
    assert all_["geomean_ratio"] == f"{4 ** (1 / 3):.3f}" == "1.587"
    assert all_["vs_torch"] == f"{32 ** (1 / 3):.3f}"
    assert all_["ref_vs_torch"] == "2.000"


def test_not_run_shows_its_reason(tmp_path):
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write(Verdict(stage="gpu_test", op="op", verdict="NOT_RUN", summary="not_run (gpu: off)"),
          results / "op" / "test.json")
    write(Verdict(stage="bench", op="op", verdict="NOT_RUN", summary="not_run (no GPU: torch is not installed)"),
          results / "op" / "bench.json")
    rows, ops = summarize(tmp_path, ["op"])
    for r in rows:
        assert r["test"] == "not_run (gpu: off)"
        assert r["ratio"] == "not_run (no GPU: torch is not installed)"
        assert r["ref_us"] == r["port_us"] == r["torch_us"] == r["vs_torch"] == ""
        assert r["note"] == ""            # NOT_RUN is not a failure
    assert ops[0] == {"op": "op", "configs": "0", "geomean_ratio": "",
                      "verdict": "not_run (no GPU: torch is not installed)", "vs_torch": "", "ref_vs_torch": ""}
    assert ops[1] == {"op": "ALL", "configs": "0", "geomean_ratio": "",
                      "verdict": "not_run (no config measured); 1 operator(s): not_run 1", "vs_torch": "",
                      "ref_vs_torch": ""}


def test_failing_variant_and_note_names_gpu_test(tmp_path):
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", verdict="FAIL", owner="host", fail_class="host",
              variants={"k/f16-T1": "PASS", "k/f32-T1": "FAIL"},
              summary="1 of 2 variant(s) fail: k/f32-T1 shape (4,): port failed: TP_ERR_BAD_RANK")
    rows, _ = summarize(tmp_path, ["op"])
    assert [r["test"] for r in rows] == ["PASS", "FAIL"]
    # the operator's FAIL is the failing variant's: the one that passed carries no failure
    assert (rows[0]["note"], rows[0]["owner"]) == ("", "")
    assert rows[1]["note"].startswith("gpu_test: 1 of 2 variant(s) fail") and rows[1]["owner"] == "host"
    assert [r["ratio"] for r in rows] == ["missing", "missing"]     # no bench.json
    assert [r["bench"] for r in rows] == ["", ""]


def test_a_bench_fail_shows_on_the_variant_whose_timed_output_missed(tmp_path):
    """tg_attention (2026-12-02): one timed output of one variant missed; summary.csv gave every
    variant its timed ratio and no sign of the FAIL where the IR diff had notes (the notes
    outranked the failure), and the coverage table read DONE. Now the ``bench`` column says FAIL
    on the variant bench.json names (``details.failed_variants``), DONE on the others, and a
    failure outranks notes in ``note``/``owner``."""
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write(Verdict(stage="ir_diff", op="op", verdict="PASS_WITH_NOTES", owner="tool",
                  summary="PASS_WITH_NOTES: 12 op signature(s) match (1 warning(s): math)"),
          results / "op" / "ir_diff" / "k" / "f32-T1.json")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS", "k/f32-T1": "PASS"})
    both = dict(checked="MISMATCH", ref_checked="MISMATCH", port_matches_ref=True,
                port_mismatch="1 of 9", ref_mismatch="1 of 9")
    v = bench.fold("op", [brow(1.01), brow(0.99, variant="f32-T1", **both)], threshold=0.95,
               writers={"k": "translator"})
    assert v.verdict == "FAIL" and v.details["failed_variants"] == ["k/f32-T1"]
    write(v, results / "op" / "bench.json")
    rows, _ = summarize(tmp_path, ["op"])
    ok, bad = rows
    assert (ok["ratio"], ok["bench"], ok["note"], ok["owner"]) == ("1.010", "DONE", "", "")
    assert (bad["ratio"], bad["bench"], bad["owner"]) == ("0.990", "FAIL", "manifest")
    assert bad["note"].startswith("bench: ") and "agrees with the cuTile Python reference" in bad["note"]
    # a bench.json written before failed_variants existed: the FAIL is every variant's
    doc = v.to_dict()
    del doc["details"]["failed_variants"]
    (results / "op" / "bench.json").write_text(json.dumps(doc))
    rows, _ = summarize(tmp_path, ["op"])
    assert [r["bench"] for r in rows] == ["FAIL", "FAIL"]
    assert all(r["note"].startswith("bench: ") for r in rows)


def test_missing_gpu_verdicts(tmp_path):
    results = tmp_path / "results"
    cpu_stages(results, "op")
    rows, ops = summarize(tmp_path, ["op"])
    assert all(r["test"] == "missing" and r["ratio"] == "missing" for r in rows)
    assert ops[0]["verdict"] == "missing" and ops[-1]["op"] == "ALL"


def test_variant_without_shapes(tmp_path):
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS"})
    bench_json(results, "op", {"k/f16-T1": {"ratio": 1.0, "vs_torch": 1.0, "ref_us": 1.0, "port_us": 1.0,
                                            "torch_us": 1.0, "configs": 1}}, [bench_row(1.0, 1.0, 1.0)])
    rows, _ = summarize(tmp_path, ["op"])
    assert rows[1]["test"] == "not_run (no test shape fits)"
    assert rows[1]["ratio"] == "not_run (no perf shape fits)" and rows[1]["ref_us"] == ""


def test_variant_whose_only_config_is_blocked_says_so(tmp_path):
    """us_cross_entropy_loss's f32 vocab-151936 variants (H100, 2026-12-07): their one perf config
    was refused (cutile 0.5's i32 byte count, owner tool), yet summary.csv read "not_run (no perf
    shape fits)" and the coverage table "not_run": now BLOCKED with the owner and the evidence."""
    from test_bench import MOE_LIMIT, err_row
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS", "k/f32-T1": "PASS"})
    refused = {**err_row(MOE_LIMIT, variant="f32-T1", shape="4096x151936"), "error_class": "host",
               "blocked": "cutile 0.5.0 keeps ... src/tensor.rs checked_num_bytes_i32"}
    write(bench.fold("op", [brow(1.01), refused], threshold=0.95, writers={"k": "translator"}),
          results / "op" / "bench.json")
    rows, _ = summarize(tmp_path, ["op"])
    assert rows[0]["ratio"] == "1.010"
    assert rows[1]["ratio"].startswith("BLOCKED (1 config(s), owner tool: cutile 0.5.0 keeps")
    assert rows[1]["ref_us"] == ""
    # whose fault: the row names the refusal's owner and why, the timed variant stays clean
    assert (rows[1]["owner"], rows[1]["note"]) == ("tool", f"bench: {rows[1]['ratio']}")
    assert (rows[0]["owner"], rows[0]["note"]) == ("", "")
    # a bench.json from elsewhere whose refusal lacks its owner and evidence (only the error): the
    # row says so instead of the summary crashing
    doc = json.loads((results / "op" / "bench.json").read_text())
    for b in doc["details"]["blocked_configs"]:
        del b["owner"], b["evidence"]
    (results / "op" / "bench.json").write_text(json.dumps(doc))
    rows, _ = summarize(tmp_path, ["op"])
    assert rows[1]["ratio"].startswith(f"BLOCKED (1 config(s), owner ?: {MOE_LIMIT[:40]}")
    assert (rows[1]["owner"], rows[1]["note"]) == ("?", f"bench: {rows[1]['ratio']}")


def test_blocked_gpu_stages_show_the_word_and_the_note(tmp_path):
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write(Verdict(stage="gpu_test", op="op", verdict="BLOCKED", owner="host", fail_class="host",
                  summary="host library not built"), results / "op" / "test.json")
    write(Verdict(stage="bench", op="op", verdict="BLOCKED", owner="host", fail_class="host",
                  summary="host library not built"), results / "op" / "bench.json")
    rows, ops = summarize(tmp_path, ["op"])
    assert rows[0]["test"] == "BLOCKED" and rows[0]["ratio"] == "BLOCKED"
    assert rows[0]["note"] == "gpu_test: host library not built" and rows[0]["owner"] == "host"
    assert ops[0]["verdict"] == "BLOCKED" and ops[0]["configs"] == "0"


def test_below_threshold_note_and_perf_diagnosis(tmp_path):
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS", "k/f32-T1": "PASS"})
    v = {"ratio": 0.8, "vs_torch": 1.0, "ref_us": 8.0, "port_us": 10.0, "torch_us": 10.0, "configs": 1}
    bench_json(results, "op", {"k/f16-T1": v, "k/f32-T1": v},
               [bench_row(0.8, 1.0, 1.25), bench_row(0.8, 1.0, 1.25, variant="f32-T1")],
               verdict="BELOW_THRESHOLD", geo=(0.8, 1.0, 1.25), summary="geomean ratio 0.800")
    write(Verdict(stage="perf_diagnose", op="op", verdict="FAIL", owner="kernel", fail_class="kernel",
                  summary="below threshold (0.800 < 0.95): slow"), results / "op" / "perf_diagnosis.json")
    rows, ops = summarize(tmp_path, ["op"])
    assert rows[0]["ratio"] == "0.800"
    assert rows[0]["note"] == "bench: geomean ratio 0.800" and rows[0]["owner"] == "kernel"
    assert rows[0]["diagnosis"] == "perf (kernel): below threshold (0.800 < 0.95): slow"
    assert ops[0]["verdict"] == "BELOW_THRESHOLD" and ops[0]["geomean_ratio"] == "0.800"


def test_cpu_stage_note_takes_precedence_over_gpu(tmp_path):
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write(Verdict(stage="ir_diff", op="op", verdict="FAIL", owner="kernel", summary="reduce differs"),
          results / "op" / "ir_diff" / "k" / "f16-T1.json")
    write_test_json(results, "op", verdict="FAIL", fail_class="kernel", owner="kernel",
              variants={"k/f16-T1": "FAIL", "k/f32-T1": "PASS"}, summary="1 of 2 variant(s) fail")
    rows, _ = summarize(tmp_path, ["op"])
    assert rows[0]["note"] == "ir_diff: reduce differs" and rows[0]["test"] == "FAIL"
    assert (rows[1]["test"], rows[1]["note"]) == ("PASS", "")     # the operator's FAIL is the other variant's


def test_reads_what_the_stages_write(tmp_path):
    """The columns come out of verdicts made by gpu_test.verdict_of and bench.fold themselves."""
    results = tmp_path / "results"
    cpu_stages(results, "op")
    ok = {"ok": True, "max_abs": 0.0, "mismatches": 0, "numel": 4, "worst": None}
    bad = {"ok": False, "max_abs": 1.0, "mismatches": 1, "numel": 4,
           "worst": {"index": [0], "actual": 2.0, "expected": 1.0, "allowed": 0.1}}
    trows = [{"kernel": "k", "variant": "f16-T1", "shape": [4], "grid": [1], "ref": ok, "port": ok},
             {"kernel": "k", "variant": "f32-T1", "shape": [4], "grid": [1], "ref": ok, "port": bad}]
    write(gpu_test.verdict_of("op", trows), results / "op" / "test.json")
    brows = []
    for variant, ratio, shape in (("f16-T1", 0.81, "a"), ("f16-T1", 1.0, "b"), ("f32-T1", 1.21, "a")):
        brows.append({"op": "op", "kernel": "k", "variant": variant, "shape": shape, "ratio": ratio,
                      "ref_us": 10.0 * ratio, "port_us": 10.0, "torch_us": 20.0, "vs_torch": 2.0,
                      "ref_vs_torch": 2.0 / ratio, "checked": "ok", "error": ""})
    v = bench.fold("op", brows, 0.95)
    v.details["rows"] = [{k: r.get(k) for k in bench.COLUMNS} for r in brows]
    write(v, results / "op" / "bench.json")
    rows, ops = summarize(tmp_path, ["op"])
    assert [r["test"] for r in rows] == ["PASS", "FAIL"]
    assert [r["ratio"] for r in rows] == ["0.900", "1.210"]
    assert rows[0]["port_us"] == "10.00" and rows[0]["ref_us"] == "9.00" and rows[0]["vs_torch"] == "2.000"
    assert ops[0]["verdict"] == "DONE" and ops[0]["configs"] == "3"
    assert ops[0]["geomean_ratio"] == f"{(0.81 * 1.21) ** (1 / 3):.3f}"
    assert ops[1]["geomean_ratio"] == ops[0]["geomean_ratio"]


def summarised(results, brows, loop_threshold=0.97):
    """Fold ``brows`` into op's bench.json (details.rows as the benchmark writes them) and write
    summary.csv / summary_ops.csv; returns the verdict and both files' rows."""
    v = bench.fold("op", brows, 0.95, loop_threshold=loop_threshold)
    v.details["rows"] = [{k: r.get(k) for k in bench.COLUMNS} for r in brows]
    write(v, results / "op" / "bench.json")
    out, ops_csv = results / "summary.csv", results / "summary_ops.csv"
    tp_summary.write_summary(results, ["op"], {"op": VARIANTS}, {}, out, ops_csv=ops_csv)
    return v, list(csv.DictReader(open(out))), list(csv.DictReader(open(ops_csv)))


def test_loop_columns(tmp_path):
    """loop_ratio / ref_vs_torch per variant, the loop gate per operator (re-judged under the
    configured loop_threshold), the loop geomean over every config in ALL."""
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS", "k/f32-T1": "PASS"})
    brows = []
    for variant, loop, shape in (("f16-T1", 0.5, "a"), ("f16-T1", 1.0, "b"), ("f32-T1", 1.5, "a")):
        brows.append({"op": "op", "kernel": "k", "variant": variant, "shape": shape, "ratio": 1.0,
                      "ref_us": 10.0, "port_us": 10.0, "torch_us": 5.0, "vs_torch": 0.5,
                      "ref_vs_torch": 0.5, "loop_ratio": loop, "ref_loop_us": 10.0, "port_loop_us": 10.0 / loop,
                      "ref_host_us": 4.0, "port_host_us": {"a": 20.0, "b": 6.0}[shape], "checked": "ok",
                      "error": "", "harness": bench.HARNESS})
    v, rows, ops = summarised(results, brows)
    out, ops_csv = results / "summary.csv", results / "summary_ops.csv"
    assert [(r["variant"], r["loop_ratio"], r["ref_vs_torch"]) for r in rows] == [
        ("f16-T1", f"{0.5 ** 0.5:.3f}", "0.500"), ("f32-T1", "1.500", "0.500")]
    g = f"{0.75 ** (1 / 3):.3f}"
    assert (ops[0]["loop_ratio"], ops[0]["loop_verdict"], ops[0]["ref_host_us"], ops[0]["port_host_us"]) == \
        (g, "BELOW_THRESHOLD", "4.00", "20.00")
    assert ops[0]["verdict"] == "DONE"
    assert (ops[1]["op"], ops[1]["loop_ratio"], ops[1]["loop_verdict"]) == ("ALL", g, "")
    # rows without an interval (timed before it): below by their loop ratio alone
    assert (ops[0]["loop_below"], ops[0]["loop_undecided"], ops[1]["loop_below"]) == ("1", "0", "1")
    tp_summary.write_summary(results, ["op"], {"op": VARIANTS}, {}, out, ops_csv=ops_csv, loop_threshold=0.9)
    assert list(csv.DictReader(open(ops_csv)))[0]["loop_verdict"] == "DONE"
    # an interval that reaches the threshold: undecided, not below
    v.details["rows"][0].update(loop_ratio_lo=0.4, loop_ratio_hi=0.99)
    write(v, results / "op" / "bench.json")
    tp_summary.write_summary(results, ["op"], {"op": VARIANTS}, {}, out, ops_csv=ops_csv, loop_threshold=0.98)
    ops = list(csv.DictReader(open(ops_csv)))
    assert (ops[0]["loop_below"], ops[0]["loop_undecided"]) == ("0", "1")
    assert list(rows[0]) == tp_summary.COLUMNS


def test_stale_gpu_results_and_library_exclusion_are_shown(tmp_path):
    """GPU verdicts of sources the library no longer holds are not shown as current; an
    operator left out of the host library gets a host_build note."""
    import json as _json

    results = tmp_path / "results"
    r = results / "op"
    cpu_stages(results, "op", [("k", "f16-T1")])
    write(Verdict(stage="gpu_test", op="op", verdict="ALL_PASS", summary="ok",
                  details={"variants": {"k/f16-T1": "PASS"}, "sources_sha": "old"}), r / "test.json")
    write(Verdict(stage="host_build", op="*", verdict="PASS_WITH_NOTES", summary="built",
                  details={"ops": {"op": {"in_library": False, "reason": "breaks the combined build: x.rs:3"}}}),
          results / "host" / "build.json")
    out = results / "summary.csv"
    tp_summary.write_summary(results, ["op"], {"op": [("k", "f16-T1")]}, {}, out)
    row = list(csv.DictReader(open(out)))[0]
    assert row["test"] == "PASS"           # no sha recorded for the op in the library: shown
    assert row["owner"] == "host" and row["note"].startswith("host_build: left out of the host library")
    hb = _json.loads((results / "host" / "build.json").read_text())
    hb["details"]["ops"]["op"] = {"in_library": True, "reason": "", "sources_sha": "new"}
    (results / "host" / "build.json").write_text(_json.dumps(hb))
    tp_summary.write_summary(results, ["op"], {"op": [("k", "f16-T1")]}, {}, out)
    row = list(csv.DictReader(open(out)))[0]
    assert row["test"].startswith("stale (tested sources differ")


def test_a_benchmark_of_an_earlier_port_is_stale_beside_a_current_test(tmp_path):
    """The test redone on the current port, the timing not: the bench verdict of the earlier
    port's sources is not shown as current (its ratio stays out of the summaries)."""
    import json as _json

    results = tmp_path / "results"
    r = results / "op"
    cpu_stages(results, "op", [("k", "f16-T1")])
    write(Verdict(stage="gpu_test", op="op", verdict="ALL_PASS", summary="ok",
                  details={"variants": {"k/f16-T1": "PASS"}, "sources_sha": "new"}), r / "test.json")
    row = {"op": "op", "kernel": "k", "variant": "f16-T1", "shape": "a", "ratio": 1.2,
           "ref_us": 12.0, "port_us": 10.0, "torch_us": 5.0, "vs_torch": 0.5, "ref_vs_torch": 0.4,
           "checked": "ok", "error": ""}
    v = bench.fold("op", [row], 0.95)
    v.details["rows"] = [{k: row.get(k) for k in bench.COLUMNS}]
    v.details["sources_sha"] = "old"
    write(v, r / "bench.json")
    write(Verdict(stage="host_build", op="*", verdict="PASS", summary="built",
                  details={"ops": {"op": {"in_library": True, "reason": "", "sources_sha": "new"}}}),
          results / "host" / "build.json")
    out, ops_csv = results / "summary.csv", results / "summary_ops.csv"
    tp_summary.write_summary(results, ["op"], {"op": [("k", "f16-T1")]}, {}, out, ops_csv=ops_csv)
    got = list(csv.DictReader(open(out)))[0]
    assert got["test"] == "PASS"
    assert got["ratio"].startswith("stale (benchmarked sources differ")
    assert list(csv.DictReader(open(ops_csv)))[0]["configs"] in ("0", "")
    assert _json.loads((r / "bench.json").read_text())["verdict"] == "DONE"   # the file is kept


def test_gpu_results_of_changed_operator_files_are_stale(tmp_path):
    """A run that rebuilds the shared library does not replan another operator's GPU test
    (Snakemake masks jobs downstream of an ancient() input); the summary must not present that
    operator's old result as current once its kernel.py/reference.py/manifest changed."""
    from tileport.gpu.harness import inputs_sha

    results, ops_dir = tmp_path / "results", tmp_path / "operators" / "op"
    ops_dir.mkdir(parents=True)
    (ops_dir / "reference.py").write_text("def reference(x): return x\n")
    r = results / "op"
    cpu_stages(results, "op", [("k", "f16-T1")])
    write(Verdict(stage="gpu_test", op="op", verdict="ALL_PASS", summary="ok",
                  details={"variants": {"k/f16-T1": "PASS"}, "inputs_sha": inputs_sha(ops_dir)}),
          r / "test.json")
    out = results / "summary.csv"
    tp_summary.write_summary(results, ["op"], {"op": [("k", "f16-T1")]}, {}, out)
    assert list(csv.DictReader(open(out)))[0]["test"] == "PASS"
    (ops_dir / "reference.py").write_text("def reference(x): return 2 * x\n")
    tp_summary.write_summary(results, ["op"], {"op": [("k", "f16-T1")]}, {}, out)
    assert list(csv.DictReader(open(out)))[0]["test"].startswith("stale (operators/op changed")


def test_llm_usage_columns(tmp_path):
    """Kernel-writer transcripts become per-row and per-operator calls/tokens/cost."""
    import json as _json

    results = tmp_path / "results"
    cpu_stages(results, "op")
    tdir = results / "op" / "transcripts" / "write_kernel" / "k"
    tdir.mkdir(parents=True)
    (tdir / "attempt-1.json").write_text(_json.dumps({"usage": {"input_tokens": 100, "output_tokens": 10},
                                                      "cost_usd": 0.0005}))
    (tdir / "attempt-2.json").write_text(_json.dumps({"usage": {"input_tokens": 200, "output_tokens": 20},
                                                      "cost_usd": None}))
    # attempt 3 of an earlier run: not behind the published attempt 2, not counted
    (tdir / "attempt-3.json").write_text(_json.dumps({"usage": {"input_tokens": 999, "output_tokens": 9},
                                                      "cost_usd": 1.0}))
    write(Verdict(stage="write_kernel", op="op", verdict="PASS", summary="w", attempt=2),
          results / "op" / "write_kernel" / "k.json")
    out, ops_csv = results / "summary.csv", results / "summary_ops.csv"
    tp_summary.write_summary(results, ["op"], {"op": VARIANTS}, {}, out, ops_csv=ops_csv)
    r = list(csv.DictReader(open(out)))[0]
    assert (r["llm_calls"], r["tokens_in"], r["tokens_out"], r["cost_usd"]) == ("2", "300", "30", "0.000500")
    ops = {o["op"]: o for o in csv.DictReader(open(ops_csv))}
    assert ops["op"]["llm_calls"] == "2" and ops["ALL"]["tokens_in"] == "300"
    assert ops["ALL"]["cost_usd"] == "0.000500"


def test_llm_ported_kernel_note_skips_the_analysers_blocked(tmp_path):
    results = tmp_path / "results"
    r = results / "op"
    write(Verdict(stage="analyze", op="op", verdict="BLOCKED", summary="1 unsupported construct(s)"),
          r / "analysis.json")
    write(Verdict(stage="write_kernel", op="op", verdict="PASS", summary="anthropic wrote k",
                  details={"backend": "anthropic"}), r / "write_kernel" / "k.json")
    for stage, path in [("rust_build", "rust/build.json"), ("reference_ir", "ref/k/f16-T1.json"),
                        ("rust_ir", "rust_ir/k/f16-T1.json")]:
        write(Verdict(stage=stage, op="op", verdict="PASS", summary=stage), r / path)
    write(Verdict(stage="ir_diff", op="op", verdict="FAIL", owner="kernel", summary="1 divergence (math)"),
          r / "ir_diff" / "k" / "f16-T1.json")
    out = results / "summary.csv"
    tp_summary.write_summary(results, ["op"], {"op": [("k", "f16-T1")]}, {}, out)
    row = list(csv.DictReader(open(out)))[0]
    assert row["note"] == "ir_diff: 1 divergence (math)" and row["analyze"] == "BLOCKED"


def test_a_ref_defect_variant_names_the_declaration_and_the_kernels_author(tmp_path):
    """gpu_test FAITHFUL_REF_DEFECT (tileport.model.defects): the covered variant reads REF_DEFECT,
    owner kernel and the declared defect in its note; the passing one has no note."""
    from tileport.model import defects as tp_defects

    results = tmp_path / "results"
    cpu_stages(results, "op")
    d = tp_defects.Defect(0, "operators/op/manifest.yaml", 42, "k", "tilegym/ops/cutile/x.py", 370, ("f16-T1",),
                 "keys >= 128 score 0", "emulation")
    miss = {"ok": False, "mismatches": 3, "numel": 9, "worst": {"index": [1], "actual": 0.0, "expected": 1.0}}
    rows = [{"kernel": "k", "variant": "f16-T1", "shape": [4], "ref": dict(miss), "port": dict(miss),
             "bitwise_equal": True, "port_matches_ref": True},
            {"kernel": "k", "variant": "f32-T1", "shape": [4], "ref": {"ok": True}, "port": {"ok": True}}]
    write(gpu_test.verdict_of("op", rows, defects=[d]), results / "op" / "test.json")
    got, _ = summarize(tmp_path, ["op"])
    assert [r["test"] for r in got] == ["REF_DEFECT", "PASS"]
    assert got[0]["owner"] == "kernel" and "manifest.yaml:42" in got[0]["note"] and "x.py:370" in got[0]["note"]
    assert got[1]["note"] == "" and got[1]["owner"] == ""


def test_a_corrupt_gpu_verdict_is_unreadable_not_missing(tmp_path):
    """A half-copied results/<op>/test.json (truncated JSON) showed as ``missing`` with owner and
    note blank. It is unreadable: the file and the parse error in the note, owner env (the copy),
    from the one owner of kept GPU verdicts (Kept.verdict); bench.json alike."""
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS", "k/f32-T1": "PASS"})
    t = results / "op" / "test.json"
    t.write_text(t.read_text()[:120])
    rows, ops = summarize(tmp_path, ["op"])
    for r in rows:
        assert (r["test"], r["owner"]) == ("unreadable", "env"), r
        assert r["note"].startswith("gpu_test: unreadable verdict file results/op/test.json:"), r["note"]
        assert "not JSON" in r["note"] and "damaged copy" in r["note"]
    write_test_json(results, "op", variants={"k/f16-T1": "PASS", "k/f32-T1": "PASS"})
    bench_json(results, "op", {"k/f16-T1": {"ratio": 1.0, "vs_torch": 1.0, "ref_us": 1.0, "port_us": 1.0,
                                            "torch_us": 1.0, "configs": 1}}, [bench_row(1.0, 1.0, 1.0)])
    b = results / "op" / "bench.json"
    b.write_text(b.read_text()[:-40])
    rows, ops = summarize(tmp_path, ["op"])
    for r in rows:
        assert (r["test"], r["ratio"], r["bench"], r["owner"]) == ("PASS", "unreadable", "ERROR", "env"), r
        assert r["note"].startswith("bench: unreadable verdict file results/op/bench.json:"), r["note"]
    assert ops[0]["verdict"].startswith("ERROR (env: unreadable verdict file ") and "bench.json" in ops[0]["verdict"]
    assert ops[1]["verdict"] == "not_run (no config measured); 1 operator(s): ERROR 1"


def test_vs_nv_names_the_configs_it_is_a_geomean_over(tmp_path):
    """vs_nv covers only the configs where NVIDIA's port ran: each row, and the ALL row beside its
    ``configs`` of every operator, says how many (issue 31: ALL's 1.237 stood beside 513 configs
    and covered 55)."""
    results = tmp_path / "results"
    nv = [{"nv_us": 20.0, "vs_nv": 2.0, "ref_vs_nv": 2.0}, {"nv_us": 80.0, "vs_nv": 8.0, "ref_vs_nv": 8.0},
          {"nv_error": "not ported"}]
    for op, extra in (("a", nv), ("b", [{}, {}, {}])):
        cpu_stages(results, op)
        write_test_json(results, op, variants={"k/f16-T1": "PASS"})
        rows = [{**bench_row(1.0, 1.0, 1.0, shape=str(i)), "ref_us": 10.0, "port_us": 10.0, "torch_us": 10.0,
                 "checked": "ok", **x} for i, x in enumerate(extra)]
        fold = bench.fold(op, rows, 0.95)
        assert ("nv_configs" in fold.details) == (op == "a")
        fold.details["rows"] = rows             # as the bench stage keeps them
        write(fold, results / op / "bench.json")
    _, ops = summarize(tmp_path, ["a", "b"], {"a": [("k", "f16-T1")], "b": [("k", "f16-T1")]})
    full = {r["op"]: r for r in csv.DictReader(open(results / "summary_ops.csv"))}
    assert [o["op"] for o in ops] == ["a", "b", "ALL"]
    assert (full["a"]["vs_nv"], full["a"]["vs_nv_configs"]) == ("4.000", "2")
    assert (full["b"]["vs_nv"], full["b"]["vs_nv_configs"]) == ("", "")
    assert (full["ALL"]["configs"], full["ALL"]["vs_nv"], full["ALL"]["vs_nv_configs"]) == ("6", "4.000", "2")
    assert tp_summary.OPS_COLUMNS[-3] == "vs_nv_configs"


def test_the_all_row_leaves_out_torch_less_and_implausible_configs(tmp_path):
    """A config whose torch launched no kernel (vs_torch None) crashed the ALL row's torch geomean;
    one timed under the hardware's floor (a port of 0.002 µs) weighed in its ratio."""
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS"})
    v = {"k/f16-T1": {"ratio": 1.0, "vs_torch": 2.0, "ref_us": 1.0, "port_us": 1.0, "torch_us": 1.0, "configs": 2}}
    rows = [bench_row(1.0, 2.0, 2.0), bench_row(2.0, None, None, shape="2"),
            {**bench_row(5000.0, 1.0, 1.0, shape="3"), "ref_us": 10.0, "port_us": 0.002}]
    bench_json(results, "op", v, rows, geo=(2 ** 0.5, 2.0, 2.0))
    _, ops = summarize(tmp_path, ["op"], {"op": [("k", "f16-T1")]})
    all_ = ops[-1]
    assert (all_["configs"], all_["geomean_ratio"], all_["vs_torch"], all_["ref_vs_torch"]) == \
        ("2", f"{2 ** 0.5:.3f}", "2.000", "2.000")


def test_matched_reading_columns(tmp_path):
    """ratio_matched per variant, geomean_ratio_matched over matched_configs per operator and in
    ALL; a config without a matched reading (or whose matched output missed) is left out."""
    results = tmp_path / "results"
    cpu_stages(results, "op")
    write_test_json(results, "op", variants={"k/f16-T1": "PASS", "k/f32-T1": "PASS"})
    brows = []
    for variant, shape, rm, chk in (("f16-T1", "a", 1.0, "ok"), ("f16-T1", "b", 0.98, "ok"),
                                    ("f32-T1", "a", None, None), ("f32-T1", "b", 0.5, "MISMATCH")):
        brows.append({"op": "op", "kernel": "k", "variant": variant, "shape": shape, "ratio": 1.3,
                      "ref_us": 13.0, "port_us": 10.0, "torch_us": 5.0, "vs_torch": 0.5, "ref_vs_torch": 0.4,
                      "checked": "ok", "error": "", "ratio_matched": rm, "matched_checked": chk})
    _, rows, ops = summarised(results, brows)
    assert [(r["variant"], r["ratio"], r["ratio_matched"]) for r in rows] == [
        ("f16-T1", "1.300", f"{0.98 ** 0.5:.3f}"), ("f32-T1", "1.300", "")]
    assert [(o["op"], o["geomean_ratio_matched"], o["matched_configs"]) for o in ops] == [
        ("op", f"{0.98 ** 0.5:.3f}", "2"), ("ALL", f"{0.98 ** 0.5:.3f}", "2")]
