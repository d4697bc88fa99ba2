import csv

from tileport import summary as S
from tileport.verdict import Verdict, write


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
    S.write_summary(tmp_path / "results", ["op", "bad"], {"op": [("k", "f16-T1"), ("k", "f32-T1")], "bad": []},
                    {"bad": "operators/bad/manifest.yaml:3: key 'dtypes': 'f16' is not of type 'array'"}, out)
    rows = list(csv.DictReader(open(out)))
    assert [r["ir_diff"] for r in rows] == ["PASS", "FAIL", "not_run"]
    assert rows[1]["note"] == "ir_diff: reduce combiner differs" and rows[1]["owner"] == "kernel"
    assert rows[0]["attempts"] == "2" and rows[0]["test"] == "missing"
    assert rows[2]["kernel"] == "-" and rows[2]["analyze"] == "missing" and "manifest.yaml:3" in rows[2]["note"]


def test_missing_verdict_is_marked(tmp_path):
    (tmp_path / "results" / "op").mkdir(parents=True)
    rows = S.rows_for(tmp_path / "results", "op", [("k", "f16-T1")], None)
    assert rows[0]["analyze"] == "missing" and rows[0]["note"] == "a verdict file is missing"
