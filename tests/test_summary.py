import csv

from tileport.core.verdict import Verdict, write
from tileport.report import summary as tp_summary


def test_rows_report_first_failing_stage(tmp_path):
    r = tmp_path / "results" / "op"
    w = lambda stage, path, verdict="PASS", **kw: write(
        Verdict(stage=stage, op="op", verdict=verdict, summary=kw.pop("summary", stage), **kw), r / path)
    w("analyze", "analysis.json")
    w("write_kernel", "write_kernel/k.json", attempt=2)
    w("rust_build", "rust/build.json")
    for v in ("f16-T1", "f32-T1"):
        w("reference_ir", f"ref/k/{v}.json")
        w("rust_ir", f"rust_ir/k/{v}.json")
    w("ir_diff", "ir_diff/k/f16-T1.json")
    w("ir_diff", "ir_diff/k/f32-T1.json", "FAIL", owner="kernel", summary="reduce combiner differs")
    out = tmp_path / "results" / "summary.csv"
    tp_summary.write_summary(tmp_path / "results", ["op", "bad"], {"op": [("k", "f16-T1"), ("k", "f32-T1")], "bad": []},
                    {"bad": "operators/bad/manifest.yaml:3: key 'dtypes': 'f16' is not of type 'array'"}, out)
    rows = list(csv.DictReader(open(out)))
    assert [r["ir_diff"] for r in rows] == ["PASS", "FAIL", "not_run"]
    assert rows[1]["note"] == "ir_diff: reduce combiner differs" and rows[1]["owner"] == "kernel"
    assert rows[0]["attempts"] == "2" and rows[0]["test"] == "missing"
    assert rows[2]["kernel"] == "-" and rows[2]["analyze"] == "missing" and "manifest.yaml:3" in rows[2]["note"]


def test_missing_verdict_is_marked(tmp_path):
    (tmp_path / "results" / "op").mkdir(parents=True)
    rows = tp_summary.rows_for(tmp_path / "results", "op", [("k", "f16-T1")], None)
    assert rows[0]["analyze"] == "missing" and rows[0]["note"] == "a verdict file is missing"


def test_every_operator_folder_is_in_both_summaries_with_its_verdict(tmp_path):
    """Issue 17 item 1: an operator whose manifest is malformed (or a folder that cannot be an
    operator) has its row in summary_ops.csv as well, and the ALL row counts it."""
    res = tmp_path / "results"
    write(Verdict(stage="analyze", op="good", verdict="PASS", summary="ok"), res / "good" / "analysis.json")
    write(Verdict(stage="bench", op="good", verdict="NOT_RUN", summary="not_run (no GPU: torch is not installed)"),
          res / "good" / "bench.json")
    errs = {"bad1": "operators/bad1/manifest.yaml:3: key 'dtypes': the variant dtypes lists f16 twice; list each once",
            "bad2": "operators/bad2: operator folder lacks manifest.yaml"}
    skipped = {"Bad-Name": "operators/Bad-Name: folder name is not an operator name: not run"}
    tp_summary.write_summary(res, ["bad1", "good", "bad2"], {"good": [("k", "f16-T1")]}, errs, res / "summary.csv",
                    skipped=skipped, ops_csv=res / "summary_ops.csv")
    rows = list(csv.DictReader(open(res / "summary.csv")))
    ops = {r["op"]: r for r in csv.DictReader(open(res / "summary_ops.csv"))}
    assert {r["op"] for r in rows} | {"ALL"} == set(ops) == {"bad1", "good", "bad2", "Bad-Name", "ALL"}
    assert ops["bad1"]["verdict"] == ("ERROR (manifest: operators/bad1/manifest.yaml:3: key 'dtypes': the variant "
                                      "dtypes lists f16 twice; list each once)")
    assert ops["bad2"]["verdict"].startswith("ERROR (manifest: operators/bad2: operator folder lacks")
    assert ops["Bad-Name"]["verdict"].startswith("not_run (operators/Bad-Name: folder name")
    assert ops["good"]["verdict"] == "not_run (no GPU: torch is not installed)"
    assert ops["ALL"]["verdict"] == "not_run (no config measured); 4 operator(s): ERROR 2, not_run 2"
    assert next(r for r in rows if r["op"] == "bad1")["owner"] == "manifest"


def test_summary_rows_are_the_variants_the_manifest_means(tmp_path):
    """Issue 17 item 4: configs paired with dtypes give rows for those pairs only."""
    from manifest_ops import make_op, pick_manifest

    from tileport.model import manifest as tp_manifest

    man = tp_manifest.load(make_op(tmp_path, manifest=pick_manifest()) / "manifest.yaml")
    res = tmp_path / "results"
    tp_summary.write_summary(res, ["pick"], {"pick": tp_manifest.kernel_variant_ids(man)}, {}, res / "summary.csv")
    rows = list(csv.DictReader(open(res / "summary.csv")))
    assert [(r["kernel"], r["variant"].split("-")[0]) for r in rows if r["kernel"] == "pick"] == \
        [("pick", "f16"), ("pick", "bf16"), ("pick", "f32")]           # not 3 dtypes x 2 configs
    assert len(rows) == 6


def test_a_blocked_kernel_row_names_its_own_first_construct(tmp_path):
    """Each kernel's rows name that kernel's first unsupported construct (the operator's first
    may be in another kernel); a kernel with none of its own is not blocked by its siblings'."""
    from tileport.core.verdict import Finding

    r = tmp_path / "results" / "op"
    items = [{"kernel": "fwd", "file": "k.py", "line": 3, "construct": "ct.arange", "reason": "no rule"},
             {"kernel": "bwd", "file": "k.py", "line": 9, "construct": "t.astype", "reason": "no rule"}]
    write(Verdict(stage="analyze", op="op", verdict="BLOCKED", owner="kernel",
                  summary="2 unsupported construct(s); first: k.py:3: ct.arange: no rule",
                  findings=[Finding("unsupported", "critical", "kernel", f"k.py:{u['line']}: {u['construct']}: no rule")
                            for u in items], details={"unsupported": items}), r / "analysis.json")
    rows = tp_summary.rows_for(tmp_path / "results", "op", [("fwd", "f16"), ("bwd", "f16"), ("other", "f16")], None)
    assert [x["analyze"] for x in rows] == ["BLOCKED", "BLOCKED", "PASS"]
    assert rows[0]["note"] == "analyze: 2 unsupported construct(s); first: k.py:3: ct.arange: no rule"
    assert rows[1]["note"] == "analyze: 2 finding(s) in the operator, 1 in bwd; first in bwd: k.py:9: t.astype: no rule"
    assert not rows[2]["note"].startswith("analyze")        # its own stages' verdicts tell its story
    assert rows[1]["owner"] == "kernel"


def test_notes_name_files_from_the_checkout_root_not_a_machine_s_directories(tmp_path):
    """A verdict written on this machine or on a GPU node names absolute paths; summary.csv (and
    the README table made from it) names them from the checkout's root; other paths stay."""
    assert tp_summary.from_checkout("the translator lacks a rule: /work/wt/pub/results/tg_g/src/kernel.py:24 "
                           "[tilegym/ops/cutile/group_gemm.py:40]: x") == (
        "the translator lacks a rule: results/tg_g/src/kernel.py:24 [tilegym/ops/cutile/group_gemm.py:40]: x")
    assert tp_summary.from_checkout("declared in known_defects[0] (/tmp/w/operators/tg_v/manifest.yaml:54): y") == (
        "declared in known_defects[0] (operators/tg_v/manifest.yaml:54): y")
    for kept in ("/usr/lib/x.so: missing", "see operators/op/manifest.yaml:3", "a/results/op/b",
                 "/tmp/results.txt", "/work/results/"):
        assert tp_summary.from_checkout(kept) == kept
    r = tmp_path / "results" / "op"
    write(Verdict(stage="analyze", op="op", verdict="BLOCKED", owner="tool",
                  summary=f"the translator lacks a rule: {r / 'src' / 'kernel.py'}:24: a list of arrays"),
          r / "analysis.json")
    tp_summary.write_summary(tmp_path / "results", ["op"], {"op": [("k", "f16-T1")]}, {}, tmp_path / "s.csv")
    note = next(csv.DictReader(open(tmp_path / "s.csv")))["note"]
    assert "results/op/src/kernel.py:24" in note and str(tmp_path) not in note, note


def test_coverage_takes_a_variant_no_test_shape_fits_to_the_bench():
    """tg_fp8_quantization_matmul's s4096x7168x2048 variants and tg_attention's SEQ_LEN4096
    backward variants have perf shapes only: the bench checks their timed outputs, so the
    coverage table showed their kernels stopped at gpu_test (not_run) while their benchmark was
    DONE. A variant without a test of any other kind still stops at gpu_test."""
    from tileport.report import coverage
    from tileport.report import summary as SM

    cpu = {st: "PASS" for st in coverage.CPU_STAGES}
    assert coverage._stop({**cpu, "test": SM.NO_TEST_SHAPE, "ratio": "1.001"})[1:] == ("bench", "DONE")
    assert coverage._stop({**cpu, "test": SM.NO_TEST_SHAPE,
                    "ratio": "pending (1 config(s) not timed yet)"})[1:] == ("bench", "pending")
    assert coverage._stop({**cpu, "test": "not_run (no GPU)", "ratio": "1.0"})[1:] == ("gpu_test", "not_run")
    assert coverage._stop({**cpu, "test": "FAIL", "ratio": "1.0"})[1:] == ("gpu_test", "FAIL")


def test_coverage_reads_a_timed_variants_bench_fail_from_the_bench_column():
    """A variant whose timed output missed has a number in ``ratio``: the coverage table and the
    report's coverage matrix read it as DONE / pass until summary.csv said the bench's verdict
    per variant (``bench``); an older summary.csv without the column reads as before."""
    from tileport.report import coverage

    cpu = {st: "PASS" for st in coverage.CPU_STAGES}
    assert coverage._stop({**cpu, "test": "PASS", "ratio": "0.99", "bench": "FAIL"})[1:] == ("bench", "FAIL")
    assert coverage._stop({**cpu, "test": "PASS", "ratio": "0.99", "bench": "DONE"})[1:] == ("bench", "DONE")
    assert coverage._stop({**cpu, "test": "PASS", "ratio": "0.99"})[1:] == ("bench", "DONE")
    ok = coverage._stop({**cpu, "test": "PASS", "ratio": "0.99", "bench": "DONE"})[0]
    assert coverage._stop({**cpu, "test": "PASS", "ratio": "0.99", "bench": "FAIL"})[0] < ok


def test_the_bench_column_has_one_reading_for_coverage_and_the_report(tmp_path):
    """summary.csv's ``bench`` word is read by :func:`tileport.report.summary.bench_failure` for both
    readers: FAIL and ERROR fail the variant, every other word and an empty cell do not; the
    report's coverage matrix then agrees with ``tileport.report.coverage`` on the same rows."""
    from tileport.report import coverage
    from tileport.report import data as report_data

    assert [tp_summary.bench_failure(w) for w in ("FAIL", "ERROR", "DONE", "BELOW_THRESHOLD", "", None)] == [
        "FAIL", "ERROR", None, None, None, None]
    cpu = {st: "PASS" for st in coverage.CPU_STAGES}
    assert coverage._stop({**cpu, "test": "PASS", "ratio": "1.01", "bench": "ERROR"})[1:] == ("bench", "ERROR")
    cols = ["op", "kernel", "variant", *coverage.CPU_STAGES, "test", "ratio", "bench"]
    rows = [["op", "k", "a", *["PASS"] * len(coverage.CPU_STAGES), "PASS", "1.010", "ERROR"],
            ["op", "k", "b", *["PASS"] * len(coverage.CPU_STAGES), "PASS", "1.000", "DONE"],
            ["op", "j", "a", *["PASS"] * len(coverage.CPU_STAGES), "PASS", "1.000", "FAIL"],
            ["op", "i", "a", *["PASS"] * len(coverage.CPU_STAGES), "PASS", "1.000", ""]]
    path = tmp_path / "summary.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([cols, *rows])
    cov = report_data.coverage(path, 0.95)
    bench = dict(cov[cov["stage"] == "bench"][["kernel", "verdict"]].itertuples(index=False))
    assert bench == {"k": "error", "j": "fail", "i": "pass"}


def test_coverage_refuses_a_csv_that_is_not_a_summary_and_keeps_the_readme(tmp_path, capsys):
    """A file without summary.csv's columns is a clear error naming file, line and the missing
    columns; the README's coverage block is not rewritten with a table of zeros."""
    from tileport.report import coverage

    bad = tmp_path / "bad.csv"
    bad.write_text("op,kernel\nx,k\n")
    readme = tmp_path / "README.md"
    readme.write_text(f"a\n{coverage.BEGIN}\nold table\n{coverage.END}\n")
    assert coverage.main([str(bad), "--readme", str(readme)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:1:" in err and "variant, source, analyze" in err
    assert readme.read_text() == f"a\n{coverage.BEGIN}\nold table\n{coverage.END}\n"


def test_a_manifest_row_takes_the_owner_the_analysis_gave(tmp_path):
    """A valid manifest tileport cannot carry (a non-ASCII kernel name: manifest.ToolLimitError)
    is analysed BLOCKED with owner tool; its summary row says tool, not manifest."""
    from tileport.core.verdict import Verdict, write
    from tileport.report import summary

    results = tmp_path / "results"
    for op, owner, word in (("wide", "tool", "BLOCKED"), ("bad", "manifest", "ERROR")):
        write(Verdict(stage="analyze", op=op, verdict=word, owner=owner, summary=f"{op}: why"),
              results / op / "analysis.json")
        (row,) = summary.rows_for(results, op, [], f"operators/{op}/manifest.yaml:3: why")
        assert row["owner"] == owner and row["analyze"] == word
