"""bench without a GPU: fold (pure), write_csv, run's early exits."""
import csv
import math

import pytest

from tileport import bench as B
from tileport import harness as H
from tileport.verdict import read, write


def brow(ratio, kernel="k", variant="f16-T1", shape="64x128", port_us=10.0, vs_torch=1.0,
         ref_vs_torch=None, checked="ok", error="", **kw):
    """A row as bench.measure produces it (times in µs)."""
    ref_us = ratio * port_us
    torch_us = vs_torch * port_us
    r = {"op": "op", "kernel": kernel, "variant": variant, "shape": shape, "grid": "64x1x1", "reps": 20,
         "ref_us": ref_us, "port_us": port_us, "torch_us": torch_us,
         "ref_iqr_us": 0.1, "port_iqr_us": 0.2, "torch_iqr_us": 0.3,
         "ratio": ratio, "paired_ratio": ratio, "vs_torch": vs_torch,
         "ref_vs_torch": ref_vs_torch if ref_vs_torch is not None else torch_us / ref_us,
         "ref_launches": 1, "port_launches": 1, "torch_launches": 2,
         "ref_wall_us": ref_us + 5, "port_wall_us": port_us + 6,
         "port_host_overhead_us": 6.0, "ref_host_overhead_us": 5.0,
         "checked": checked, "error": error,
         "samples": {"ref": [ref_us], "port": [port_us], "torch": [torch_us]},
         "kernel_names": {"ref": ["a"], "port": ["b"], "torch": ["c"]}}
    r.update(kw)
    return r


def err_row(msg="RuntimeError: CUDA error: an illegal memory access", kernel="k", variant="f16-T1",
            shape="64x128"):
    return {"op": "op", "kernel": kernel, "variant": variant, "shape": shape, "error": msg}


def valid(v, tmp_path):
    p = tmp_path / "bench.json"
    doc = write(v, p)
    assert read(p) == doc
    return doc


# -- fold ----------------------------------------------------------------------------------------

def test_done_at_or_above_threshold(tmp_path):
    v = B.fold("op", [brow(1.0), brow(1.21, shape="128x128")], threshold=0.95, attempt=2, secs=3.0)
    assert v.verdict == "DONE"
    assert v.owner is None and v.fail_class is None and v.attempt == 2 and v.stage == "bench"
    assert v.details["geomean_ratio"] == pytest.approx(1.1)
    assert v.details["configs"] == 2 and v.details["threshold"] == 0.95 and v.details["seconds"] == 3.0
    assert v.summary.startswith("geomean ratio 1.100 over 2 config(s) (threshold 0.95)")
    valid(v, tmp_path)


def test_geomean_exactly_at_threshold_is_done():
    assert B.fold("op", [brow(0.95)], threshold=0.95).verdict == "DONE"


def test_below_threshold(tmp_path):
    v = B.fold("op", [brow(0.81), brow(1.0, shape="128x128")], threshold=0.95)
    assert v.verdict == "BELOW_THRESHOLD"
    assert v.details["geomean_ratio"] == pytest.approx(0.9, rel=1e-12)
    assert v.owner == "kernel"
    assert "geomean ratio 0.900 over 2 config(s)" in v.summary
    valid(v, tmp_path)


def test_threshold_decides_between_done_and_below():
    rows = [brow(0.81), brow(1.0, shape="128x128")]        # geomean 0.9
    assert B.fold("op", rows, threshold=0.89).verdict == "DONE"
    assert B.fold("op", rows, threshold=0.91).verdict == "BELOW_THRESHOLD"


def test_geomean_is_geometric_not_arithmetic():
    # arithmetic mean of 0.5 and 2.0 is 1.25 (DONE at 1.2); geometric is 1.0
    v = B.fold("op", [brow(0.5), brow(2.0, shape="b")], threshold=1.2)
    assert v.details["geomean_ratio"] == pytest.approx(1.0)
    assert v.verdict == "BELOW_THRESHOLD"


def test_torch_geomeans():
    rows = [brow(1.0, vs_torch=2.0, ref_vs_torch=0.5), brow(1.0, shape="b", vs_torch=8.0, ref_vs_torch=2.0)]
    v = B.fold("op", rows, threshold=0.95)
    assert v.details["geomean_vs_torch"] == pytest.approx(4.0)
    assert v.details["geomean_ref_vs_torch"] == pytest.approx(1.0)
    assert "vs torch 4.000" in v.summary


def test_per_variant_geomeans():
    rows = [brow(0.5, variant="f16-T1", port_us=4.0, vs_torch=1.0),
            brow(2.0, variant="f16-T1", shape="b", port_us=16.0, vs_torch=4.0),
            brow(0.9, variant="f32-T1", port_us=10.0, vs_torch=3.0),
            brow(1.0, kernel="k2", variant="f16-T1", port_us=1.0, vs_torch=1.0)]
    v = B.fold("op", rows, threshold=0.95)
    var = v.details["variants"]
    assert set(var) == {"k/f16-T1", "k/f32-T1", "k2/f16-T1"}
    a = var["k/f16-T1"]
    assert a["configs"] == 2
    assert a["ratio"] == pytest.approx(1.0)                     # sqrt(0.5 * 2)
    assert a["port_us"] == pytest.approx(8.0)                   # sqrt(4 * 16)
    assert a["ref_us"] == pytest.approx(math.sqrt(2.0 * 32.0))  # 0.5*4, 2*16
    assert a["torch_us"] == pytest.approx(math.sqrt(4.0 * 64.0))
    assert a["vs_torch"] == pytest.approx(2.0)
    assert var["k/f32-T1"] == pytest.approx({"configs": 1, "ratio": 0.9, "vs_torch": 3.0, "ref_us": 9.0,
                                             "port_us": 10.0, "torch_us": 30.0})
    assert var["k2/f16-T1"]["configs"] == 1
    # the operator geomean runs over configs, not over variant geomeans
    assert v.details["geomean_ratio"] == pytest.approx((0.5 * 2.0 * 0.9 * 1.0) ** 0.25)


def test_worst_configs_lowest_ratio_first_at_most_three():
    rows = [brow(1.2, shape="a"), brow(0.7, shape="b"), brow(1.0, shape="c"), brow(0.9, shape="d"),
            brow(1.5, shape="e")]
    v = B.fold("op", rows, threshold=0.95)
    w = v.details["worst_configs"]
    assert [c["shape"] for c in w] == ["b", "d", "c"]
    assert [c["ratio"] for c in w] == [0.7, 0.9, 1.0]
    assert set(w[0]) == {"kernel", "variant", "shape", "ratio", "ref_us", "port_us"}
    assert w[0]["port_us"] == 10.0 and w[0]["ref_us"] == pytest.approx(7.0)


def test_worst_configs_fewer_than_three():
    v = B.fold("op", [brow(1.0)], threshold=0.95)
    assert len(v.details["worst_configs"]) == 1


def test_error_row_fails_kernel(tmp_path):
    rows = [brow(1.3), err_row("RuntimeError: CUDA error: illegal", shape="256x256")]
    v = B.fold("op", rows, threshold=0.95)
    assert v.verdict == "FAIL" and v.fail_class == "kernel" and v.owner == "kernel"
    assert v.summary == "k/f16-T1 256x256: RuntimeError: CUDA error: illegal"
    assert [f.category for f in v.findings] == ["launch"]
    # the configs that ran are still folded (the error row is not)
    assert v.details["configs"] == 1
    assert v.details["geomean_ratio"] == pytest.approx(1.3)
    assert v.details["variants"]["k/f16-T1"]["configs"] == 1
    valid(v, tmp_path)


def test_only_error_rows_fail_not_blocked():
    v = B.fold("op", [err_row()], threshold=0.95)
    assert v.verdict == "FAIL"
    assert "geomean_ratio" not in v.details and v.details["configs"] == 0


def test_mismatch_fails_even_when_fast(tmp_path):
    v = B.fold("op", [brow(3.0, checked="MISMATCH", variant="f32-T1"), brow(3.0, shape="b")], threshold=0.95)
    assert v.verdict == "FAIL" and v.fail_class == "kernel"
    assert [f.category for f in v.findings] == ["numerics"]
    assert "k/f32-T1 64x128: timed output outside tolerance" == v.summary
    valid(v, tmp_path)


def test_errors_listed_before_mismatches():
    v = B.fold("op", [brow(1.0, checked="MISMATCH"), err_row("boom", shape="z")], threshold=0.95)
    assert [f.category for f in v.findings] == ["launch", "numerics"]
    assert v.summary.endswith("z: boom")


def test_no_rows_blocked(tmp_path):
    v = B.fold("op", [], threshold=0.95)
    assert v.verdict == "BLOCKED" and v.fail_class == "kernel"
    assert v.summary == "no perf shape fits any variant"
    assert v.details["variants"] == {} and v.details["configs"] == 0
    assert "worst_configs" not in v.details
    valid(v, tmp_path)


def test_env_recorded():
    assert B.fold("op", [brow(1.0)], 0.95, env={"device": "H200"}).details["env"] == {"device": "H200"}
    assert B.fold("op", [brow(1.0)], 0.95).details["env"] == {}


# -- write_csv -----------------------------------------------------------------------------------

def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def test_csv_header_and_float_format(tmp_path):
    p = tmp_path / "sub" / "bench.csv"
    B.write_csv([brow(1.0 / 3.0, port_us=12.0), err_row("boom", shape="9x9")], p)
    lines = read_csv(p)
    assert lines[0] == B.COLUMNS
    rows = [dict(zip(lines[0], r)) for r in lines[1:]]
    assert len(rows) == 2
    a = rows[0]
    assert a["ratio"] == "0.3333" and a["port_us"] == "12.0000" and a["ref_us"] == "4.0000"
    assert a["paired_ratio"] == "0.3333"
    assert a["reps"] == "20" and a["ref_launches"] == "1"      # ints stay ints
    assert a["shape"] == "64x128" and a["checked"] == "ok" and a["error"] == ""
    # extra keys (samples, kernel_names) are not columns
    assert "samples" not in lines[0] and "{" not in ",".join(lines[1])
    b = rows[1]
    assert b["error"] == "boom" and b["shape"] == "9x9" and b["ratio"] == "" and b["port_us"] == ""


def test_csv_mixed_launch_counts_written_verbatim(tmp_path):
    p = tmp_path / "bench.csv"
    B.write_csv([brow(1.0, port_launches="1/2")], p)
    row = dict(zip(*read_csv(p)))
    assert row["port_launches"] == "1/2"


def test_csv_empty(tmp_path):
    p = tmp_path / "bench.csv"
    B.write_csv([], p)
    assert p.read_text() == ",".join(B.COLUMNS) + "\n"


# -- run: early exits ----------------------------------------------------------------------------

def test_run_off_writes_not_run_and_empty_csv(tmp_path):
    out_csv, out_json = tmp_path / "r" / "bench.csv", tmp_path / "r" / "bench.json"
    d = B.run("op", tmp_path / "nowhere", tmp_path / "results", out_csv, out_json, gpu="off")
    assert d["verdict"] == "NOT_RUN" and d["summary"] == "not_run (gpu: off)" and d["stage"] == "bench"
    assert read(out_json) == d
    assert read_csv(out_csv) == [B.COLUMNS]


def test_run_auto_without_gpu(tmp_path, monkeypatch):
    def no():
        raise H.NoGpu("torch is not installed")
    monkeypatch.setattr(H, "probe_gpu", no)
    out_csv, out_json = tmp_path / "bench.csv", tmp_path / "bench.json"
    d = B.run("op", tmp_path / "nowhere", tmp_path / "nowhere", out_csv, out_json, gpu="auto")
    assert d["summary"] == "not_run (no GPU: torch is not installed)"
    assert read_csv(out_csv) == [B.COLUMNS]


def test_run_with_gpu_but_no_library_blocked_with_empty_csv(tmp_path, monkeypatch):
    monkeypatch.setattr(H, "probe_gpu", lambda: "NVIDIA H200")
    out_csv, out_json = tmp_path / "bench.csv", tmp_path / "bench.json"
    d = B.run("op", tmp_path / "op", tmp_path / "results", out_csv, out_json, gpu="auto")
    assert d["verdict"] == "BLOCKED" and d["fail_class"] == "host"
    assert read_csv(out_csv) == [B.COLUMNS]


def test_nothing_timed_because_every_variant_failed_its_test_says_so():
    failed = {"verdict": "FAIL", "fail_class": "host", "summary": "port launches 2 kernel(s) per call"}
    v = B.fold("op", [], 0.95, failed_test=failed)
    assert (v.verdict, v.owner, v.fail_class) == ("BLOCKED", "host", "host")
    assert v.summary.startswith("nothing to time: no variant passed the functional test") and "launches 2" in v.summary
    # without a failed test, an empty benchmark is still the manifest's (no perf shape fits)
    assert B.fold("op", [], 0.95).summary == "no perf shape fits any variant"
