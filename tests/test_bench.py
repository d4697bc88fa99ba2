"""bench without a GPU: fold (pure), write_csv, run's early exits."""
import csv
import math

import pytest

from tileport.core import stats
from tileport.core.verdict import read, write
from tileport.gpu import bench, harness


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
         "ref_loop_us": ref_us + 5, "port_loop_us": port_us + 6, "torch_loop_us": torch_us + 5,
         "loop_ratio": (ref_us + 5) / (port_us + 6), "loop_calls": 100,
         "ref_host_us": 5.0, "port_host_us": 6.0, "torch_host_us": 7.0,
         "port_host_overhead_us": 6.0, "ref_host_overhead_us": 5.0,
         "checked": checked, "error": error, "harness": bench.HARNESS,
         "samples": {"ref": [ref_us], "port": [port_us], "torch": [torch_us]},
         "kernel_names": {"ref": ["a"], "port": ["b"], "torch": ["c"]}}
    r.update(kw)
    for k, f in (("loop_ratio_lo", 0.995), ("loop_ratio_hi", 1.005)):     # a 95 % interval of +-0.5 %
        r.setdefault(k, r["loop_ratio"] * f)
    r.setdefault("loop_cycles", 3)
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
    v = bench.fold("op", [brow(1.0), brow(1.21, shape="128x128")], threshold=0.95, attempt=2, secs=3.0)
    assert v.verdict == "DONE"
    assert v.owner is None and v.fail_class is None and v.attempt == 2 and v.stage == "bench"
    assert v.details["geomean_ratio"] == pytest.approx(1.1)
    assert v.details["configs"] == 2 and v.details["threshold"] == 0.95 and v.details["seconds"] == 3.0
    assert v.summary.startswith("geomean ratio 1.100 over 2 config(s) (threshold 0.95)")
    valid(v, tmp_path)


def test_geomean_exactly_at_threshold_is_done():
    assert bench.fold("op", [brow(0.95)], threshold=0.95).verdict == "DONE"


def test_below_threshold(tmp_path):
    v = bench.fold("op", [brow(0.81), brow(1.0, shape="128x128")], threshold=0.95)
    assert v.verdict == "BELOW_THRESHOLD"
    assert v.details["geomean_ratio"] == pytest.approx(0.9, rel=1e-12)
    assert v.owner == "kernel"
    assert "geomean ratio 0.900 over 2 config(s)" in v.summary
    valid(v, tmp_path)


def test_threshold_decides_between_done_and_below():
    rows = [brow(0.81), brow(1.0, shape="128x128")]        # geomean 0.9
    assert bench.fold("op", rows, threshold=0.89).verdict == "DONE"
    assert bench.fold("op", rows, threshold=0.91).verdict == "BELOW_THRESHOLD"


def test_geomean_is_geometric_not_arithmetic():
    # arithmetic mean of 0.5 and 2.0 is 1.25 (DONE at 1.2); geometric is 1.0
    v = bench.fold("op", [brow(0.5), brow(2.0, shape="b")], threshold=1.2)
    assert v.details["geomean_ratio"] == pytest.approx(1.0)
    assert v.verdict == "BELOW_THRESHOLD"


def test_torch_geomeans():
    rows = [brow(1.0, vs_torch=2.0, ref_vs_torch=0.5), brow(1.0, shape="b", vs_torch=8.0, ref_vs_torch=2.0)]
    v = bench.fold("op", rows, threshold=0.95)
    assert v.details["geomean_vs_torch"] == pytest.approx(4.0)
    assert v.details["geomean_ref_vs_torch"] == pytest.approx(1.0)
    assert "vs torch 4.000" in v.summary


def test_per_variant_geomeans():
    rows = [brow(0.5, variant="f16-T1", port_us=4.0, vs_torch=1.0),
            brow(2.0, variant="f16-T1", shape="b", port_us=16.0, vs_torch=4.0),
            brow(0.9, variant="f32-T1", port_us=10.0, vs_torch=3.0),
            brow(1.0, kernel="k2", variant="f16-T1", port_us=1.0, vs_torch=1.0)]
    v = bench.fold("op", rows, threshold=0.95)
    var = v.details["variants"]
    assert set(var) == {"k/f16-T1", "k/f32-T1", "k2/f16-T1"}
    a = var["k/f16-T1"]
    assert a["configs"] == 2
    assert a["ratio"] == pytest.approx(1.0)                     # sqrt(0.5 * 2)
    assert a["port_us"] == pytest.approx(8.0)                   # sqrt(4 * 16)
    assert a["ref_us"] == pytest.approx(math.sqrt(2.0 * 32.0))  # 0.5*4, 2*16
    assert a["torch_us"] == pytest.approx(math.sqrt(4.0 * 64.0))
    assert a["vs_torch"] == pytest.approx(2.0)
    f32 = rows[2]
    assert var["k/f32-T1"] == pytest.approx({"configs": 1, "ratio": 0.9, "vs_torch": 3.0, "ref_us": 9.0,
                                             "port_us": 10.0, "torch_us": 30.0, "ref_vs_torch": 30.0 / 9.0,
                                             "loop_ratio": f32["loop_ratio"]})
    assert var["k2/f16-T1"]["configs"] == 1
    # the operator geomean runs over configs, not over variant geomeans
    assert v.details["geomean_ratio"] == pytest.approx((0.5 * 2.0 * 0.9 * 1.0) ** 0.25)


def test_worst_configs_lowest_ratio_first_at_most_three():
    rows = [brow(1.2, shape="a"), brow(0.7, shape="b"), brow(1.0, shape="c"), brow(0.9, shape="d"),
            brow(1.5, shape="e")]
    v = bench.fold("op", rows, threshold=0.95)
    w = v.details["worst_configs"]
    assert [c["shape"] for c in w] == ["b", "d", "c"]
    assert [c["ratio"] for c in w] == [0.7, 0.9, 1.0]
    assert set(w[0]) == {"kernel", "variant", "shape", "ratio", "ref_us", "port_us"}
    assert w[0]["port_us"] == 10.0 and w[0]["ref_us"] == pytest.approx(7.0)


def test_worst_configs_fewer_than_three():
    v = bench.fold("op", [brow(1.0)], threshold=0.95)
    assert len(v.details["worst_configs"]) == 1


def test_error_row_fails_kernel(tmp_path):
    rows = [brow(1.3), err_row("RuntimeError: CUDA error: illegal", shape="256x256")]
    v = bench.fold("op", rows, threshold=0.95)
    assert v.verdict == "FAIL" and v.fail_class == "kernel" and v.owner == "kernel"
    assert v.summary == "k/f16-T1 256x256: RuntimeError: CUDA error: illegal"
    assert [f.category for f in v.findings] == ["launch"]
    # the configs that ran are still folded (the error row is not)
    assert v.details["configs"] == 1
    assert v.details["geomean_ratio"] == pytest.approx(1.3)
    assert v.details["variants"]["k/f16-T1"]["configs"] == 1
    valid(v, tmp_path)


def test_only_error_rows_fail_not_blocked():
    v = bench.fold("op", [err_row()], threshold=0.95)
    assert v.verdict == "FAIL"
    assert "geomean_ratio" not in v.details and v.details["configs"] == 0


def test_mismatch_fails_even_when_fast(tmp_path):
    v = bench.fold("op", [brow(3.0, checked="MISMATCH", variant="f32-T1"), brow(3.0, shape="b")], threshold=0.95)
    assert v.verdict == "FAIL" and v.fail_class == "kernel"
    assert [f.category for f in v.findings] == ["numerics"]
    assert v.summary.startswith("k/f32-T1 64x128: the port's timed output is outside tolerance")
    valid(v, tmp_path)


def test_reference_mismatch_alone_warns(tmp_path):
    """The cuTile Python reference outside tolerance at a perf shape (the port within) is a
    warning that names it, not a failure of the port."""
    v = bench.fold("op", [brow(1.0, ref_checked="MISMATCH", ref_mismatch="3 of 9 elements, worst at (1,)"),
                      brow(1.0, shape="b")], threshold=0.95)
    assert v.verdict == "DONE"
    assert [(f.category, f.severity) for f in v.findings] == [("numerics", "warn")]
    assert "reference itself fails the check: 3 of 9 elements" in v.findings[0].message
    valid(v, tmp_path)


def test_errors_listed_before_mismatches():
    v = bench.fold("op", [brow(1.0, checked="MISMATCH"), err_row("boom", shape="z")], threshold=0.95)
    assert [f.category for f in v.findings] == ["launch", "numerics"]
    assert v.summary.endswith("z: boom")


def test_no_rows_blocked(tmp_path):
    v = bench.fold("op", [], threshold=0.95)        # the manifest's perf_shapes / fits
    assert (v.verdict, v.owner, v.fail_class) == ("BLOCKED", "manifest", None)
    assert v.summary == "no perf shape fits any variant"
    assert v.details["variants"] == {} and v.details["configs"] == 0
    assert "worst_configs" not in v.details
    valid(v, tmp_path)


def test_env_recorded():
    assert bench.fold("op", [brow(1.0)], 0.95, env={"device": "H200"}).details["env"] == {"device": "H200"}
    assert bench.fold("op", [brow(1.0)], 0.95).details["env"] == {}


# -- write_csv -----------------------------------------------------------------------------------

def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def test_csv_header_and_float_format(tmp_path):
    p = tmp_path / "sub" / "bench.csv"
    bench.write_csv([brow(1.0 / 3.0, port_us=12.0), err_row("boom", shape="9x9")], p)
    lines = read_csv(p)
    assert lines[0] == bench.COLUMNS
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
    bench.write_csv([brow(1.0, port_launches="1/2")], p)
    row = dict(zip(*read_csv(p)))
    assert row["port_launches"] == "1/2"


def test_csv_empty(tmp_path):
    p = tmp_path / "bench.csv"
    bench.write_csv([], p)
    assert p.read_text() == ",".join(bench.COLUMNS) + "\n"


# -- run: early exits ----------------------------------------------------------------------------

def test_run_off_writes_not_run_and_empty_csv(tmp_path):
    out_csv, out_json = tmp_path / "r" / "bench.csv", tmp_path / "r" / "bench.json"
    d = bench.run("op", tmp_path / "nowhere", tmp_path / "results", out_csv, out_json, gpu="off")
    assert d["verdict"] == "NOT_RUN" and d["summary"] == "not_run (gpu: off)" and d["stage"] == "bench"
    assert read(out_json) == d
    assert read_csv(out_csv) == [bench.COLUMNS]


def test_run_auto_without_gpu(tmp_path, monkeypatch):
    def no():
        raise harness.NoGpu("torch is not installed")
    monkeypatch.setattr(harness, "probe_gpu", no)
    out_csv, out_json = tmp_path / "bench.csv", tmp_path / "bench.json"
    d = bench.run("op", tmp_path / "nowhere", tmp_path / "nowhere", out_csv, out_json, gpu="auto")
    assert d["summary"] == "not_run (no GPU: torch is not installed)"
    assert read_csv(out_csv) == [bench.COLUMNS]


def test_run_with_gpu_but_no_library_blocked_with_empty_csv(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "probe_gpu", lambda: "NVIDIA H200")
    out_csv, out_json = tmp_path / "bench.csv", tmp_path / "bench.json"
    d = bench.run("op", tmp_path / "op", tmp_path / "results", out_csv, out_json, gpu="auto")
    assert d["verdict"] == "BLOCKED" and d["fail_class"] == "host"
    assert read_csv(out_csv) == [bench.COLUMNS]


def test_nothing_timed_because_every_variant_failed_its_test_says_so():
    failed = {"verdict": "FAIL", "fail_class": "host", "summary": "port launches 2 kernel(s) per call"}
    v = bench.fold("op", [], 0.95, failed_test=failed)
    assert (v.verdict, v.owner, v.fail_class) == ("BLOCKED", "host", "host")
    assert v.summary.startswith("nothing to time: no variant passed the functional test") and "launches 2" in v.summary
    # without a failed test, an empty benchmark is still the manifest's (no perf shape fits)
    assert bench.fold("op", [], 0.95).summary == "no perf shape fits any variant"


# -- loop timing -------------------------------------------------------------------------------

def test_rotation_puts_every_side_in_every_position():
    sides = ["ref", "port", "torch"]
    orders = [bench.rotation(sides, r) for r in range(3)]
    assert orders == [["ref", "port", "torch"], ["port", "torch", "ref"], ["torch", "ref", "port"]]
    for pos in range(3):
        assert sorted(o[pos] for o in orders) == sorted(sides)
    assert bench.rotation(sides, 4) == orders[1]


class FakeDevice:
    """A clock (seconds) advanced by enqueues and by syncs that drain the queued device work.
    ``slow(dev, label)``: a factor on the device time of a call (clocks, heat), may read
    ``dev.t`` (s), ``dev.prev`` (the side whose loop ran before this one) and ``dev.loops``."""

    def __init__(self, host_us, device_us, slow=None):
        self.t, self.busy_until, self.log = 0.0, 0.0, []
        self.host_us, self.device_us, self.slow = host_us, device_us, slow
        self.current = self.prev = None
        self.loops = 0

    def side(self, label):
        def call():
            if self.log and self.log[-1] == "sync":       # a new loop starts
                self.prev, self.current, self.loops = self.current, label, self.loops + 1
            self.log.append(label)
            self.t += self.host_us[label] * 1e-6
            f = self.slow(self, label) if self.slow else 1.0
            # the kernel starts when the host enqueued it and the device is free
            self.busy_until = max(self.busy_until, self.t) + self.device_us[label] * f * 1e-6
        return call

    def sync(self):
        self.log.append("sync")
        self.t = max(self.t, self.busy_until)

    def clock(self):
        return self.t


SIDES = ("ref", "port", "torch")


def loops_of(dev, n=50, sides=SIDES, **kw):
    return bench.loop_times([(s, dev.side(s)) for s in sides], n, sync=dev.sync, clock=dev.clock, **kw)


def test_loop_times_arithmetic_host_and_device_bound():
    # ref: host 5 µs, device 20 µs (device-bound); port: host 30 µs, device 20 µs (host-bound)
    dev = FakeDevice({"ref": 5.0, "port": 30.0, "torch": 1.0}, {"ref": 20.0, "port": 20.0, "torch": 10.0})
    out = loops_of(dev, n={"ref": 50, "port": 50, "torch": 100})
    assert out["cycles"] == 3 and out["stop"] == "width" and out["per_cycle"] == 2
    assert out["ref"]["host_us"] == pytest.approx([5.0] * 6)
    # device-bound: the first launch waits 5 µs of host time, then 50 kernels back to back
    assert out["ref"]["loop_us"] == pytest.approx([(5.0 + 50 * 20.0) / 50] * 6)
    assert out["port"]["host_us"] == pytest.approx([30.0] * 6)
    # host-bound: 50 enqueues, then the last kernel drains
    assert out["port"]["loop_us"] == pytest.approx([(50 * 30.0 + 20.0) / 50] * 6)
    assert out["torch"]["loop_us"] == pytest.approx([(1.0 + 100 * 10.0) / 100] * 6)     # its own n
    assert out["interval"]["ratio"] == pytest.approx(20.1 / 30.4)
    assert out["n"] == {"ref": 50, "port": 50, "torch": 100}


def test_loop_times_balanced_order_warmup_and_syncs_around_every_loop():
    dev = FakeDevice(dict.fromkeys(SIDES, 1.0), dict.fromkeys(SIDES, 1.0))
    out = loops_of(dev, n=2)
    assert out["order"] == stats.balanced_rounds(list(SIDES)) * 3 and out["warmup"] == "torch"
    expect = ["sync", "torch", "torch", "sync"]          # the untimed loop: the cycle's last side
    for order in out["order"]:
        for s in order:
            expect += ["sync", s, s, "sync"]
    assert dev.log == expect
    assert all(len(out[s]["loop_us"]) == 6 for s in SIDES)
    for bad in ({"n": 0}, {"min_cycles": 4, "max_cycles": 3}, {"max_cycles": 32}, {"pair": ("ref", "nv")}):
        with pytest.raises(ValueError):
            loops_of(dev, **{"n": 2, **bad})


def test_loop_ratio_carry_over_balanced():
    """A heavy side slows whatever runs right after it by 10 % (the 8192^3 f32 GEMM in published
    rows): with the old rotation the port always followed the reference; balanced, equal sides
    come out equal."""
    dev = FakeDevice(dict.fromkeys(SIDES, 1.0), {"ref": 4000.0, "port": 4000.0, "torch": 4000.0},
                     slow=lambda d, s: 1.1 if d.prev in ("ref", "port") else 1.0)
    out = loops_of(dev, n=10)
    iv = out["interval"]
    assert iv["ratio"] == pytest.approx(1.0, abs=1e-6) and iv["lo"] <= 1.0 <= iv["hi"]
    # the old design's ratio of medians on the same device: the port pays for the reference
    rot = [SIDES[r:] + SIDES[:r] for r in range(6)]
    dev2 = FakeDevice(dict.fromkeys(SIDES, 1.0), dict.fromkeys(SIDES, 4000.0),
                      slow=lambda d, s: 1.1 if d.prev in ("ref", "port") else 1.0)
    times = {s: [] for s in SIDES}
    for order in rot:
        for s in order:
            dev2.sync()
            t0 = dev2.clock()
            for _ in range(10):
                dev2.side(s)()
            dev2.sync()
            times[s].append(dev2.clock() - t0)
    assert stats.median(times["ref"]) / stats.median(times["port"]) < 0.95


def test_loop_ratio_drifting_clocks_and_one_slow_round():
    """Clocks fall 0.5 % per loop (power), one round runs 30 % slow on every side: the drift
    cancels in the ratio of equal sides; a port 3 % slower is found below 0.99."""
    def slow(d, s):
        return 1.005 ** d.loops * (1.3 if 8 <= d.loops <= 10 else 1.0)

    dev = FakeDevice(dict.fromkeys(SIDES, 1.0), dict.fromkeys(SIDES, 100.0), slow=slow)
    assert loops_of(dev, n=10, max_s=60)["interval"]["ratio"] == pytest.approx(1.0, abs=1e-3)
    dev = FakeDevice(dict.fromkeys(SIDES, 1.0), {"ref": 100.0, "port": 103.0, "torch": 100.0}, slow=slow)
    iv = loops_of(dev, n=10, max_s=60)["interval"]
    assert iv["hi"] < 0.99 and iv["ratio"] == pytest.approx(1 / 1.03, abs=0.003)


def test_loop_ratio_interval_covers_equal_sides():
    """Seeded noise (2 % per loop), drift and a random slow round: over 200 runs the 95 % interval
    of equal sides holds 1 in at least 90 %, and a port 3 % slower is judged below 0.99 in 90 %."""
    import random

    def run(seed, port_us):
        rng = random.Random(seed)
        bad = rng.randrange(2, 20)

        def slow(d, s):
            return rng.lognormvariate(0, 0.02) * 1.002 ** d.loops * (1.2 if d.loops == bad else 1.0)

        dev = FakeDevice(dict.fromkeys(SIDES, 1.0), {"ref": 100.0, "port": port_us, "torch": 50.0}, slow=slow)
        return loops_of(dev, n=3, max_s=60)["interval"]

    assert sum(iv["lo"] <= 1.0 <= iv["hi"] for iv in map(lambda i: run(i, 100.0), range(200))) >= 180
    assert sum(iv["hi"] < 0.99 for iv in map(lambda i: run(i, 103.0), range(200))) >= 180


def test_loop_times_adaptive_stop():
    """Noise that alternates cycle by cycle: more cycles until the interval is narrow enough,
    else the caps."""
    def noisy(d, s):               # ±2 % on the port, flipping every cycle (6 loops)
        return 1.0 + (0.02 if (d.loops // 6) % 2 else -0.02) * (s == "port")

    dev = FakeDevice(dict.fromkeys(SIDES, 1.0), dict.fromkeys(SIDES, 100.0), slow=noisy)
    out = loops_of(dev, n=10, width=0.01, max_s=60)
    assert out["stop"] == "width" and out["cycles"] > 3
    iv = out["interval"]
    assert math.sqrt(iv["hi"] / iv["lo"]) - 1 <= 0.01
    dev = FakeDevice(dict.fromkeys(SIDES, 1.0), dict.fromkeys(SIDES, 100.0), slow=noisy)
    capped = loops_of(dev, n=10, width=1e-6, max_cycles=5, max_s=60)
    assert capped["stop"] == "max_cycles" and capped["cycles"] == 5
    dev = FakeDevice(dict.fromkeys(SIDES, 1.0), dict.fromkeys(SIDES, 100.0), slow=noisy)
    timed = loops_of(dev, n=10, width=1e-6, max_s=0.05)     # a cycle: 6 loops of 1 ms
    assert timed["stop"] == "max_s" and timed["cycles"] == 8   # the 9th would end past 50 ms
    assert dev.clock() < 0.05 + 0.002


def test_measure_fills_the_loop_columns_from_the_balanced_cycles(monkeypatch):
    """bench.measure's glue on a fake device (no torch here): calls per loop per side, the
    interval columns, geomean loop times whose quotient is loop_ratio, the design kept in the row."""
    import sys
    import types

    dev = FakeDevice({"ref": 5.0, "port": 8.0, "torch": 1.0}, {"ref": 100.0, "port": 100.0, "torch": 2000.0})
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=dev.sync), uint8="u8",
                                       empty=lambda *a, **k: types.SimpleNamespace(zero_=lambda: None))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    from tileport.gpu import cupti

    us = {"ref": 100.0, "port": 100.0, "torch": 2000.0}
    monkeypatch.setattr(cupti, "profile", lambda sides, reps, flush=None: {
        "device_us": {s: [us[s]] * reps for s, _ in sides}, "launches": {s: [1] * reps for s, _ in sides},
        "kernels": {s: [[("k", us[s])]] for s, _ in sides}})
    monkeypatch.setattr(bench.time, "perf_counter", dev.clock)          # warm-up
    loop_times = bench.loop_times
    monkeypatch.setattr(bench, "loop_times", lambda *a, **k: loop_times(*a, clock=dev.clock, **k))
    c = types.SimpleNamespace(ref=dev.side("ref"), port=dev.side("port"), torch=dev.side("torch"), nv=None,
                              nv_note="", op="op", kernel="k", variant=types.SimpleNamespace(id="f16"),
                              shape=(64,), grid=(1, 1, 1), in_place=False, outputs={"ref": [], "port": []},
                              expected=lambda: harness.Expected.plain([]))
    row = bench.measure(c, {**bench.DEFAULTS}, {"rtol": 0.0, "atol": 0.0})
    d = row["loop_design"]
    assert row["loop_calls"] == 200 and d["calls"] == {"ref": 200, "port": 200, "torch": 10}   # 20 ms each
    assert d["order"][:2] == stats.balanced_rounds(["ref", "port", "torch"]) and d["warmup"] == "torch"
    assert row["loop_cycles"] == len(d["order"]) // 2 >= 3 and d["stop"] == "width"
    assert row["loop_ratio"] == pytest.approx(row["ref_loop_us"] / row["port_loop_us"])
    assert row["loop_ratio_lo"] <= row["loop_ratio"] <= row["loop_ratio_hi"]
    assert row["loop_ratio"] == pytest.approx((5.0 + 200 * 100.0) / (8.0 + 200 * 100.0))
    assert len(row["loop_samples"]["ref"]) == 2 * row["loop_cycles"] and row["checked"] == "ok"


def test_loop_calls_clamped():
    assert bench.loop_calls(100.0, 20) == 200            # 20 ms / 100 µs
    assert bench.loop_calls(1.0, 20) == bench.LOOP_MAX_CALLS
    assert bench.loop_calls(10_000.0, 20) == bench.LOOP_MIN_CALLS == 3
    assert bench.loop_calls(0.0, 20) == bench.LOOP_MAX_CALLS


def test_loop_gate_geomean_and_configs_below():
    rows = [brow(1.0, shape="a", loop_ratio=0.5, port_host_us=40.0, port_us=10.0),
            brow(1.0, shape="b", loop_ratio=1.8), brow(1.0, shape="c", loop_ratio=0.96)]
    v = bench.fold("op", rows, threshold=0.95, loop_threshold=0.97)
    loop = v.details["loop"]
    g = (0.5 * 1.8 * 0.96) ** (1 / 3)
    assert loop["geomean"] == pytest.approx(g)
    assert loop["verdict"] == "BELOW_THRESHOLD" and loop["threshold"] == 0.97 and loop["configs"] == 3
    assert [r["shape"] for r in loop["below"]] == ["a", "c"]
    assert loop["below"][0]["port_host_us"] == 40.0
    assert loop["port_host_us"] == 6.0 and loop["ref_host_us"] == 5.0        # medians
    assert v.verdict == "DONE"               # the device-time verdict is its own
    assert f"loop ratio {g:.3f} (BELOW_THRESHOLD at 0.97, 2 config(s) below" in v.summary
    assert v.details["variants"]["k/f16-T1"]["loop_ratio"] == pytest.approx(loop["geomean"])
    done = bench.fold("op", rows, threshold=0.95, loop_threshold=0.9).details["loop"]
    assert done["verdict"] == "DONE" and [r["shape"] for r in done["below"]] == ["a"]


def test_loop_gate_says_below_only_where_the_interval_does():
    rows = [brow(1.0, shape="a", loop_ratio=0.95, loop_ratio_lo=0.94, loop_ratio_hi=0.96),     # below
            brow(1.0, shape="b", loop_ratio=0.965, loop_ratio_lo=0.95, loop_ratio_hi=0.98),    # undecided
            brow(1.0, shape="c", loop_ratio=0.96, loop_ratio_lo=None, loop_ratio_hi=None),     # old row
            brow(1.0, shape="d", loop_ratio=1.2)]
    v = bench.fold("op", rows, threshold=0.95, loop_threshold=0.97)
    loop = v.details["loop"]
    assert [r["shape"] for r in loop["below"]] == ["a", "c"] and [r["shape"] for r in loop["undecided"]] == ["b"]
    assert loop["undecided"][0]["loop_ratio_hi"] == 0.98
    assert "2 config(s) below, 1 within noise of it" in v.summary


def test_a_published_bench_json_without_intervals_still_reads(tmp_path):
    """bench.json rows timed before the loop interval (no loop_ratio_lo/hi, loop_cycles,
    loop_ratio_prev, timed_at) and before the symmetric harness (no ``harness``): re-folded as
    they are, device figures kept, never loop-gated; given the current harness their loop ratio is
    judged alone; the CSV gets the new columns empty."""
    import json

    from conftest import REPO

    doc = json.loads((REPO / "docs" / "results" / "h200" / "ops" / "tg_matmul" / "bench.json").read_text())
    new = bench.COLUMNS[bench.COLUMNS.index("loop_ratio_lo"):] + ["loop_design"]
    rows = [{k: v for k, v in r.items() if k not in new} for r in doc["details"]["rows"] if not r.get("error")]
    assert rows
    old = bench.fold("tg_matmul", rows, 0.95, loop_threshold=0.97).details
    assert "loop" not in old and old["geomean_ratio"] == pytest.approx(stats.geomean([r["ratio"] for r in rows]))
    rows = [{**r, "harness": bench.HARNESS} for r in rows]
    loop = bench.fold("tg_matmul", rows, 0.95, loop_threshold=0.97).details["loop"]
    assert loop["geomean"] == pytest.approx(stats.geomean([r["loop_ratio"] for r in rows]))
    assert [(r["variant"], r["shape"]) for r in loop["below"]] == [
        (r["variant"], r["shape"]) for r in sorted(rows, key=lambda r: r["loop_ratio"]) if r["loop_ratio"] < 0.97]
    assert loop["undecided"] == [] and loop["other_harness"] == 0
    bench.write_csv(rows[:1], tmp_path / "b.csv")
    head, row = read_csv(tmp_path / "b.csv")[:2]
    i, j = head.index("loop_ratio_lo"), head.index("timed_at")
    assert head[i:j + 1] == ["loop_ratio_lo", "loop_ratio_hi", "loop_cycles", "loop_ratio_prev", "timed_at"]
    assert row[i:j + 1] == [""] * 5 and head[:i] == bench.COLUMNS[:i]


def test_loop_gate_counts_rows_of_the_current_harness_only():
    """A row of an older harness (the reference looked its stream up per call; ``harness`` absent
    or another number) keeps its device figures but is never gated: counted in other_harness."""
    rows = [brow(1.0, shape="a", loop_ratio=0.5), brow(1.0, shape="b", loop_ratio=1.2),
            {**brow(1.0, shape="c", loop_ratio=0.4), "harness": None},
            {**brow(1.0, shape="d", loop_ratio=0.4), "harness": "1"}]
    v = bench.fold("op", rows, threshold=0.95, loop_threshold=0.97)
    loop = v.details["loop"]
    assert loop["configs"] == 2 and loop["other_harness"] == 2 and [r["shape"] for r in loop["below"]] == ["a"]
    assert loop["geomean"] == pytest.approx((0.5 * 1.2) ** 0.5) and v.details["configs"] == 4
    assert bench.loop_class({**rows[0], "harness": "2.0"}, 0.97) == "below"
    assert bench.fold("op", rows[2:], 0.95, loop_threshold=0.97).details.get("loop") is None


def test_matched_reading_geomeans_and_a_wrong_matched_output():
    rows = [brow(1.2, shape="a", ratio_matched=1.0, matched_checked="ok"),
            brow(1.1, shape="b", ratio_matched=1.02, matched_checked="ok"),
            brow(1.0, shape="c", ratio_matched=0.5, matched_checked="MISMATCH", matched_mismatch="x: 3 of 9"),
            brow(1.0, shape="d", matched_error="CompileError: boom")]
    v = bench.fold("op", rows, threshold=0.95)
    assert v.details["matched_configs"] == 2
    assert v.details["geomean_ratio_matched"] == pytest.approx((1.0 * 1.02) ** 0.5)
    assert v.details["variants"]["k/f16-T1"]["ratio_matched"] == pytest.approx((1.0 * 1.02) ** 0.5)
    warn = [f for f in v.findings if "matched reference" in f.message]
    assert [(f.owner, f.severity) for f in warn] == [("tool", "warn")] * 2 and v.verdict == "DONE"
    assert "is outside tolerance: x: 3 of 9" in warn[0].message and "failed: CompileError: boom" in warn[1].message


def test_rows_without_loop_times_have_no_loop_gate():
    rows = [brow(1.0)]
    for k in ("loop_ratio", "ref_loop_us", "port_loop_us"):
        rows[0].pop(k)
    v = bench.fold("op", rows, threshold=0.95)
    assert "loop" not in v.details and "loop ratio" not in v.summary
    assert "loop_ratio" not in v.details["variants"]["k/f16-T1"]


def test_references_slower_than_torch_listed():
    rows = [brow(1.0, shape="a", ref_vs_torch=0.55), brow(1.0, shape="b", ref_vs_torch=1.3),
            brow(1.0, shape="c", ref_vs_torch=0.85)]
    v = bench.fold("op", rows, threshold=0.95)
    assert [(r["shape"], r["ref_vs_torch"]) for r in v.details["ref_behind_torch"]] == [("a", 0.55), ("c", 0.85)]
    assert "reference slower than torch in 2 of 3 config(s) (lowest 0.55x: f16-T1 a)" in v.summary
    assert v.details["variants"]["k/f16-T1"]["ref_vs_torch"] == pytest.approx((0.55 * 1.3 * 0.85) ** (1 / 3))


def test_csv_has_the_loop_columns(tmp_path):
    p = tmp_path / "bench.csv"
    bench.write_csv([brow(1.0, port_us=10.0)], p)
    head, row = read_csv(p)[:2]
    r = dict(zip(head, row))
    for c in ("ref_loop_us", "port_loop_us", "torch_loop_us", "loop_ratio", "loop_calls", "ref_host_us",
              "port_host_us", "torch_host_us"):
        assert c in head
    assert r["port_loop_us"] == "16.0000" and r["loop_ratio"] == f"{15 / 16:.4f}" and r["loop_calls"] == "100"


# -- whose fault -----------------------------------------------------------------------------------

MOE_LIMIT = ("FfiError: _moe_actgrad_bwd_kernel (tp_x): TP_ERR_BAD_SHAPE: tp_x: array 'w2_trans_ptr': "
             "7516192768 bytes exceed cutile 0.5's i32 byte count of a borrowed tensor")


def test_a_config_cutile_cannot_launch_is_blocked_per_config_and_the_rest_timed(tmp_path):
    """tg_moe_actgrad_bwd on the H200: one config past cutile's i32 tensor metadata made the whole
    bench FAIL, owner kernel, 0 configs; it is a BLOCKED config (owner tool, evidence named) and
    the other configs are folded as usual; only blocked configs: BLOCKED, owner tool."""
    blocked = {**err_row(MOE_LIMIT, shape="4096x8x256x7168x2048"), "error_class": "host",
               "blocked": "cutile 0.5.0 keeps ... src/tensor.rs checked_num_bytes_i32"}
    v = bench.fold("op", [brow(1.02), blocked], threshold=0.95, writers={"k": "translator"})
    assert (v.verdict, v.owner) == ("DONE", None) and v.details["configs"] == 1
    assert v.details["blocked_configs"][0]["owner"] == "tool"
    assert "checked_num_bytes_i32" in v.details["blocked_configs"][0]["evidence"]
    assert [(f.severity, f.owner) for f in v.findings] == [("warn", "tool")]
    assert "1 config(s) BLOCKED" in v.summary
    valid(v, tmp_path)
    v = bench.fold("op", [blocked], threshold=0.95)
    assert (v.verdict, v.owner, v.fail_class) == ("BLOCKED", "tool", None)
    valid(v, tmp_path)


def test_cutile_limit_recognises_only_the_shims_limit_refusals():
    from tileport.host.ffi import FfiError, cutile_limit

    e = FfiError("k", "tp_x", 4,
                 "tp_x: array 'w': 7516192768 bytes exceed cutile 0.5's i32 byte count of a borrowed tensor")
    assert "checked_num_bytes_i32" in cutile_limit(e)
    assert cutile_limit(FfiError("k", "tp_x", 4, "array 'w': extent 4294967296 of dim 0 is outside 0..=i32::MAX"))
    assert cutile_limit(FfiError("k", "tp_x", 4, "array 'a': extents [4], strides [2]: ...")) is None
    assert cutile_limit(FfiError("k", "tp_x", 1, "array 'w': data pointer is null")) is None
    assert cutile_limit(RuntimeError("bytes exceed cutile 0.5's i32 byte count")) is None


def test_owners_name_who_must_act(tmp_path):
    """A shim's refusal is the host's (tg_moe's null a_scale_ptr was FAIL owner kernel); a wrong
    or slow port the translator wrote is the tool's; an LLM writer's stays kernel."""
    ffi_err = {**err_row("FfiError: k (tp_x): TP_ERR_NULL_POINTER: array 'a': data pointer is null"),
               "error_class": "host"}
    v = bench.fold("op", [brow(1.1), ffi_err], threshold=0.95, writers={"k": "translator"})
    assert (v.verdict, v.owner, v.fail_class) == ("FAIL", "host", "host")
    v = bench.fold("op", [brow(1.1), {**err_row(), "error_class": "kernel"}], threshold=0.95,
               writers={"k": "translator"})
    assert (v.owner, v.fail_class) == ("tool", "kernel")
    v = bench.fold("op", [brow(0.5)], threshold=0.95, writers={"k": "translator"})
    assert (v.verdict, v.owner) == ("BELOW_THRESHOLD", "tool")
    v = bench.fold("op", [brow(0.5)], threshold=0.95, writers={"k": "anthropic"})
    assert (v.verdict, v.owner) == ("BELOW_THRESHOLD", "kernel")
    valid(v, tmp_path)


def test_pending_configs_are_counted_never_dropped(tmp_path):
    """Configs not timed yet (perf shapes added since, a session that did not reach them) are
    listed and counted; the verdict judges the timed ones; nothing timed yet is NOT_RUN."""
    pend = [{"kernel": "k", "variant": "f16-T1", "shape": s} for s in ("1x1", "2x2")]
    v = bench.fold("op", [brow(1.0), brow(1.2, shape="32x32")], threshold=0.95, pending=pend)
    assert (v.verdict, v.details["configs"], v.details["configs_pending"], v.details["configs_total"]) == \
        ("DONE", 2, 2, 4)
    assert v.details["pending_configs"] == pend and "over 2 of 4 config(s), 2 pending" in v.summary
    valid(v, tmp_path)
    v = bench.fold("op", [], threshold=0.95, pending=pend)
    assert v.verdict == "NOT_RUN" and "2 pending" in v.summary and "--pending-only" in v.summary
    valid(v, tmp_path)
    assert "pending" not in bench.fold("op", [brow(1.0)], threshold=0.95).summary


def test_pending_only_flag_reaches_the_run(monkeypatch):
    from conftest import REPO

    seen = {}
    monkeypatch.setattr(bench, "run", lambda *a, **k: seen.update(k) or {"verdict": "NOT_RUN", "summary": "x"})
    assert bench.main(["--op", "relu", "--operators", str(REPO / "operators"), "--gpu", "off", "--pending-only"]) == 0
    assert seen["pending_only"] is True
    bench.main(["--op", "relu", "--operators", str(REPO / "operators"), "--gpu", "off"])
    assert seen["pending_only"] is False


def test_a_port_missing_the_same_way_as_the_reference_at_a_perf_shape_is_the_manifests(tmp_path):
    """As in gpu_test (same_miss): the port within tolerance of the cuTile Python reference, both
    outside the PyTorch semantics at a perf shape (a tolerance that does not grow with K, an input
    range), is the manifest's (routes stop), not the translator's; a port that misses on its own
    stays the port writer's."""
    both = brow(1.0, checked="MISMATCH", ref_checked="MISMATCH", port_matches_ref=True,
                port_mismatch="3 of 9", ref_mismatch="3 of 9")
    v = bench.fold("op", [both, brow(1.0, shape="b")], threshold=0.95, writers={"k": "translator"})
    assert (v.verdict, v.owner, v.fail_class) == ("FAIL", "manifest", None)
    assert "agrees with the cuTile Python reference" in v.summary
    valid(v, tmp_path)
    own = {**both, "port_matches_ref": False}
    v = bench.fold("op", [own, both], threshold=0.95, writers={"k": "translator"})
    assert (v.owner, v.fail_class) == ("tool", "kernel")
    # the variants with a failed config, for summary.csv's per-variant bench column
    v = bench.fold("op", [{**both, "variant": "a"}, brow(1.0, variant="b"),
                      brow(1.0, variant="c", error="launch failed")], threshold=0.95)
    assert v.details["failed_variants"] == ["k/a", "k/c"]
    assert bench.fold("op", [brow(1.0)], threshold=0.95).details["failed_variants"] == []


def test_a_same_miss_summary_says_whose_fault_before_the_long_mismatch_text():
    """tg_attention on the H200 (2026-12-02): a 124-character config and the harness's full
    mismatch text put the manifest's conclusion past the summary's 300 characters, and the cut
    fell inside a number (``vs expected 0.`` for 0.00142...). Now the conclusion comes first and
    the cut is at a word boundary."""
    cfg = dict(kernel="_fmha_bwd_dq_kernel", shape="4x32x32x4096x128",
               variant="bf16-TILE_D128-H32-SEQ_LEN4096-TILE_M32-TILE_N16-QUERY_GROUP_SIZE1-CAUSALtrue-occupancy2")
    text = ("output mismatch: 1 of 67108864 elements outside tolerance, worst at index [1, 22, 3975, 12]: "
            "{} -0.078125 vs expected 0.00142669677734375 (allowed |diff| 0.030042800903320312); max |diff| 0.25")
    both = brow(1.0, **cfg, checked="MISMATCH", ref_checked="MISMATCH", port_matches_ref=True,
                port_mismatch="port " + text.format("port"), ref_mismatch="ref " + text.format("ref"))
    v = bench.fold("tg_attention", [both], threshold=0.95, writers={"_fmha_bwd_dq_kernel": "translator"})
    assert (v.verdict, v.owner) == ("FAIL", "manifest")
    assert "agrees with the cuTile Python reference" in v.summary and "not the port" in v.summary
    assert len(v.summary) <= 300 and v.summary.endswith(" …")
    assert "expected 0." not in v.summary.replace("expected 0.0014", "")


# -- a device time under what the hardware can do: a measurement error, never folded (issue 33 item 2) --

def test_one_implausible_timing_does_not_invert_the_verdict(tmp_path):
    """11 configs at ratio 0.900 and one whose port was timed at 0.002 µs folded to DONE 1.937
    ("nothing to diagnose"): that config is an error of the measurement, named with its evidence
    (time, floor, bound), and the verdict folds over the other 11."""
    rows = [brow(0.9, shape=f"{i}x64") for i in range(11)]
    odd = brow(20.0 / 0.002, shape="11x64", port_us=0.002)      # ref 20 µs, port 0.002 µs
    v = bench.fold("op", rows + [odd], threshold=0.95, env={"device": "NVIDIA H200"})
    assert (v.verdict, v.details["configs"]) == ("BELOW_THRESHOLD", 11)
    assert v.details["geomean_ratio"] == pytest.approx(0.9)
    assert v.summary.startswith("geomean ratio 0.900 over 11 config(s)")
    assert "1 config(s) excluded" in v.summary and "k/f16-T1 11x64" in v.summary
    (x,) = v.details["implausible_configs"]
    ev = x["evidence"]
    assert (x["shape"], x["owner"], ev["sides"], ev["port_us"], ev["bound"]) == ("11x64", "tool", ["port"], 0.002,
                                                                                 "launch")
    assert ev["floor_us"] == bench.LAUNCH_FLOOR_US == 0.25
    assert x["error"].startswith("implausible device time: port 0.002 µs (1 launch(es)) < floor 0.25 µs (launch")
    assert [(f.severity, f.owner) for f in v.findings] == [("warn", "tool")]
    assert "--configs 'k/f16-T1/11x64'" in v.findings[0].message
    assert [w["shape"] for w in v.details["worst_configs"]] == ["0x64", "1x64", "2x64"]
    valid(v, tmp_path)


def test_a_device_time_of_exactly_zero_is_excluded_not_a_crash(tmp_path):
    """ref_us 0 made the ratio 0 and the fold raise ValueError (geomean needs positive values)."""
    zero = {**brow(1.0, shape="z"), "ref_us": 0.0, "ratio": 0.0, "paired_ratio": 0.0, "ref_vs_torch": None}
    v = bench.fold("op", [brow(1.1), zero], threshold=0.95)
    assert (v.verdict, v.details["configs"]) == ("DONE", 1)
    assert v.details["implausible_configs"][0]["evidence"]["sides"] == ["ref"]
    valid(v, tmp_path)
    v = bench.fold("op", [zero], threshold=0.95)         # nothing left to fold
    assert (v.verdict, v.owner, v.fail_class) == ("ERROR", "tool", None)
    assert "implausible" in v.summary and "z" in v.summary
    valid(v, tmp_path)


def test_the_floor_is_the_launch_floor_or_the_bytes_at_peak_bandwidth():
    """bytes / 4.8 TB/s on an H200 (NVIDIA's datasheet); an unknown device or unknown bytes: the
    launch floor alone."""
    fl = bench.time_floor(268435456, "NVIDIA H200")           # relu f16 2^27 elements: 268 MB written
    assert (fl["bound"], fl["peak_bps"]) == ("bytes", 4.8e12)
    assert fl["floor_us"] == pytest.approx(268435456 / 4.8e12 * 1e6) == pytest.approx(55.924, abs=1e-3)
    assert bench.time_floor(1000, "NVIDIA H200")["bound"] == "launch"     # 0.0002 µs < 0.25 µs
    for unknown in ((268435456, "NVIDIA H100 80GB HBM3"), (None, "NVIDIA H200"), (268435456, None)):
        assert bench.time_floor(*unknown)["floor_us"] == bench.LAUNCH_FLOOR_US
    fast = brow(1.0, port_us=40.0, out_bytes=268435456)       # 40 µs for 268 MB: 6.7 TB/s
    assert bench.implausible(fast, "NVIDIA H200")["sides"] == ["ref", "port"]
    assert bench.implausible(fast, "NVIDIA H100 80GB HBM3") is None
    v = bench.fold("op", [fast, brow(0.9, shape="b")], 0.95, env={"device": "NVIDIA H200"})
    assert v.details["configs"] == 1 and v.details["implausible_configs"][0]["evidence"]["bound"] == "bytes"
    assert "268435456 bytes written / 4.8 TB/s" in v.details["implausible_configs"][0]["error"]


def test_an_implausible_row_whose_output_missed_still_fails():
    """A port that launched nothing and wrote nothing: excluded from the geomean, but its timed
    output's mismatch is still the port's failure."""
    odd = {**brow(1.0, checked="MISMATCH", port_mismatch="64 of 64"), "port_us": 0.0, "ratio": None}
    v = bench.fold("op", [brow(1.0, shape="b"), odd], threshold=0.95, writers={"k": "translator"})
    assert (v.verdict, v.owner, v.fail_class) == ("FAIL", "tool", "kernel")


def fake_measure_env(monkeypatch, us, launches=None, second=None):
    """bench.measure on a fake device: per-side CUPTI medians ``us`` (µs; ``second``: those of a
    second profile), ``launches`` per side. Returns the list of profiles taken and the call."""
    import sys
    import types

    dev = FakeDevice({"ref": 5.0, "port": 8.0, "torch": 1.0}, {"ref": 100.0, "port": 100.0, "torch": 100.0})
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=dev.sync), uint8="u8",
                                       empty=lambda *a, **k: types.SimpleNamespace(zero_=lambda: None))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    from tileport.gpu import cupti

    profiles = []

    def profile(sides, reps, flush=None):
        t = second if profiles and second else us
        profiles.append(t)
        n = launches or {}
        return {"device_us": {s: [t[s]] * reps for s, _ in sides},
                "launches": {s: [n.get(s, 1)] * reps for s, _ in sides},
                "kernels": {s: [[("k", t[s])]] for s, _ in sides}}

    monkeypatch.setattr(cupti, "profile", profile)
    monkeypatch.setattr(bench.time, "perf_counter", dev.clock)
    monkeypatch.setattr(bench, "loop_times", lambda *a, **k: LOOP_TIMES(*a, clock=dev.clock, **k))
    c = types.SimpleNamespace(ref=dev.side("ref"), port=dev.side("port"), torch=dev.side("torch"), nv=None,
                              nv_note="", op="op", kernel="k", variant=types.SimpleNamespace(id="f16"),
                              shape=(64,), grid=(1, 1, 1), in_place=False, outputs={"ref": [], "port": []},
                              expected=lambda: harness.Expected.plain([]))
    return profiles, c


LOOP_TIMES = bench.loop_times       # the real one (fake_measure_env wraps it with a fake clock)


def test_measure_profiles_an_implausible_time_once_more_then_marks_the_row(monkeypatch):
    profiles, c = fake_measure_env(monkeypatch, {"ref": 100.0, "port": 0.0, "torch": 50.0})
    row = bench.measure(c, {**bench.DEFAULTS}, {"rtol": 0.0, "atol": 0.0}, out_bytes=1024, device="NVIDIA H200")
    assert len(profiles) == 2 and row["remeasured"] == {"ref_us": 100.0, "port_us": 0.0}
    assert row["port_us"] == 0.0 and row["ratio"] is None and row["paired_ratio"] is None
    assert row["implausible"]["sides"] == ["port"] and row["implausible"]["out_bytes"] == 1024
    assert row["error"].startswith("implausible device time: port 0.0 µs (1 launch(es)) < floor 0.25 µs")
    v = bench.fold("op", [row, brow(1.0, shape="b")], 0.95, env={"device": "NVIDIA H200"})
    assert (v.verdict, v.details["configs"]) == ("DONE", 1) and len(v.details["implausible_configs"]) == 1
    # the second profile is plausible: the row stands, the first medians on record
    profiles, c = fake_measure_env(monkeypatch, {"ref": 100.0, "port": 0.002, "torch": 50.0},
                                   second={"ref": 100.0, "port": 90.0, "torch": 50.0})
    row = bench.measure(c, {**bench.DEFAULTS}, {"rtol": 0.0, "atol": 0.0})
    assert len(profiles) == 2 and row["error"] == "" and "implausible" not in row
    assert row["ratio"] == pytest.approx(100.0 / 90.0) and row["remeasured"]["port_us"] == 0.002


# -- a torch side that launches no kernel: optional evidence, not a crash (issue 33 item 3) -------------

def test_a_torch_side_that_launched_no_kernel_keeps_the_ratio(monkeypatch, tmp_path):
    """``x.contiguous()`` on a contiguous tensor launches nothing: torch's device time was 0, and
    the fold crashed (geomean needs finite positive values, got [0.0]), losing the ref/port ratio.
    Now torch has no figures for that config, with a note, and its geomeans are over the rest."""
    profiles, c = fake_measure_env(monkeypatch, {"ref": 100.0, "port": 80.0, "torch": 0.0}, launches={"torch": 0})
    row = bench.measure(c, {**bench.DEFAULTS}, {"rtol": 0.0, "atol": 0.0})
    assert len(profiles) == 1 and row["error"] == "" and row["torch_launches"] == 0
    assert row["torch_us"] is None and row["vs_torch"] is None and row["ref_vs_torch"] is None
    assert row["torch_note"] == "torch launched no kernel"
    assert row["ratio"] == pytest.approx(1.25) and row["torch_loop_us"] > 0     # its loop (host) time stands
    v = bench.fold("op", [row, brow(1.0, shape="b", vs_torch=2.0)], 0.95)
    assert (v.verdict, v.details["configs"]) == ("DONE", 2)
    assert v.details["geomean_ratio"] == pytest.approx(1.25 ** 0.5)
    assert v.details["geomean_vs_torch"] == pytest.approx(2.0)           # over the config where torch ran
    var = v.details["variants"]["k/f16"]
    assert (var["configs"], var["torch_configs"], var["vs_torch"], var["torch_us"], var["ratio"]) == \
        (1, 0, None, None, pytest.approx(1.25))
    assert v.details["torch_not_timed"] == [{"kernel": "k", "variant": "f16", "shape": "64",
                                             "note": "torch launched no kernel"}]
    assert "torch not timed in 1 config(s)" in v.summary
    valid(v, tmp_path)


def test_a_torch_time_of_zero_in_a_row_is_left_out_of_the_torch_geomeans(tmp_path):
    """A row as the benchmark wrote it before (torch_us 0.0, vs_torch 0.0) folds, and a
    torch-less operator says so instead of a vs-torch number."""
    row = brow(1.2)
    row.update(torch_us=0.0, vs_torch=0.0, ref_vs_torch=0.0)
    v = bench.fold("op", [row], 0.95)
    assert v.verdict == "DONE" and v.details["geomean_ratio"] == pytest.approx(1.2)
    assert v.details["geomean_vs_torch"] is None and v.details["variants"]["k/f16-T1"]["torch_us"] is None
    assert "vs torch: not timed" in v.summary and v.details["ref_behind_torch"] == []
    valid(v, tmp_path)


# -- a config the reference cannot run: that config's finding, as one the port cannot launch -------------

def test_a_config_the_reference_cannot_run_is_blocked_per_config_like_the_ports(tmp_path):
    """A config the reference could not launch failed the whole operator (FAIL, owner manifest)
    while one the port could not launch (cutile's i32 limit) is BLOCKED per config: both are now
    that config's finding, and the other configs are folded."""
    ref = {**err_row("the cuTile Python reference: RuntimeError: grid too large", shape="huge"),
           "error_class": "manifest", "blocked": "the cuTile Python reference's first (untimed) call ...",
           "blocked_side": "ref"}
    port = {**err_row(MOE_LIMIT, shape="big"), "error_class": "host", "blocked": "checked_num_bytes_i32"}
    v = bench.fold("op", [brow(1.02), ref, port], threshold=0.95, writers={"k": "translator"})
    assert (v.verdict, v.owner, v.details["configs"]) == ("DONE", None, 1)
    assert [(b["shape"], b["owner"]) for b in v.details["blocked_configs"]] == [("huge", "manifest"), ("big", "tool")]
    assert [(f.severity, f.owner) for f in v.findings] == [("warn", "manifest"), ("warn", "tool")]
    assert "the cuTile Python reference cannot run this config" in v.findings[0].message
    assert "2 config(s) BLOCKED" in v.summary and v.details["failed_variants"] == []
    valid(v, tmp_path)
    v = bench.fold("op", [ref], threshold=0.95)
    assert (v.verdict, v.owner, v.fail_class) == ("BLOCKED", "manifest", None)
    assert "cannot run this config" in v.summary
    valid(v, tmp_path)


def test_a_config_too_big_for_the_gpus_memory_is_blocked_owner_env_and_the_next_config_runs(tmp_path):
    """tg_mla's 4x32x32x8192x128x64 on an H100 (2026-12-06): torch could not allocate 32 GiB of
    its 80. The row read as a lost CUDA context (its message says "CUDA out of memory"), so the
    five configs after it stayed pending and the operator's verdict was FAIL. Now the config is
    BLOCKED, owner env (the GPU, not the port or the manifest), and the loop goes on."""

    class OutOfMemoryError(RuntimeError):       # torch.OutOfMemoryError's name, no torch needed
        pass

    oom = OutOfMemoryError("CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a total "
                           "capacity of 79.18 GiB of which 10.39 GiB is free.")
    assert bench.out_of_memory(oom)
    assert bench.out_of_memory(bench.SideFailed("port", RuntimeError("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY")).exc)
    assert not bench.out_of_memory(RuntimeError("CUDA error: an illegal memory access was encountered"))

    class Ctx:
        nv, man = {}, {}

        def call(self, *a, **k):
            raise oom

    variant = type("V", (), {"id": "bf16-T64"})()
    row, lost = bench._one_config(Ctx(), "tg_mla", "k", variant, (4, 32), {"seed": 0}, {}, set(),
                                  device="NVIDIA H100 80GB HBM3")
    assert lost is False and row["blocked_side"] == "device"
    assert row["blocked"].startswith("this GPU (NVIDIA H100 80GB HBM3) lacks the device memory")
    v = bench.fold("tg_mla", [row, brow(1.01, shape="4x8")], threshold=0.95, writers={"k": "translator"})
    assert (v.verdict, v.owner, v.details["configs"]) == ("DONE", None, 1)
    assert [(b["shape"], b["owner"]) for b in v.details["blocked_configs"]] == [("4x32", "env")]
    assert [(f.severity, f.owner) for f in v.findings] == [("warn", "env")]
    assert "lacks the device memory" in v.findings[0].message
    valid(v, tmp_path)
    v = bench.fold("tg_mla", [row], threshold=0.95)
    assert (v.verdict, v.owner) == ("BLOCKED", "env") and "lacks the device memory" in v.summary
    valid(v, tmp_path)


def test_compile_only_takes_a_shard_and_reaches_compile_ahead(monkeypatch, capsys):
    """--compile-only --shard K/N compiles one process's share of the configs and times nothing:
    run (which writes bench.json) is never called."""
    from conftest import REPO

    assert bench.shard_of("0/4") == (0, 4) and bench.shard_of("3/4") == (3, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "1/0"):
        with pytest.raises(ValueError, match="--shard"):
            bench.shard_of(bad)
    seen = {}
    monkeypatch.setattr(bench, "run", lambda *a, **k: pytest.fail("--compile-only timed something"))
    monkeypatch.setattr(bench, "compile_ahead", lambda *a, **k: seen.update(k) or
                        {"configs": 3, "failed": [], "seconds": 1.0, "jit_cache": None})
    args = ["--op", "relu", "--operators", str(REPO / "operators"), "--gpu", "off", "--compile-only"]
    assert bench.main(args + ["--shard", "1/3"]) == 0
    assert seen["shard"] == (1, 3) and "COMPILED 3 config(s) of relu" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(args + ["--shard", "3/3"])


def test_compile_only_refuses_an_operator_without_a_functional_test(tmp_path):
    """Nothing to compile without a host library and a passed gpu_test: the reason, as run's
    BLOCKED verdict would give it, and no file written."""
    from conftest import REPO

    with pytest.raises(RuntimeError, match="relu: host library not built"):
        bench.compile_ahead("relu", REPO / "operators" / "relu", tmp_path / "results")
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.json"))


def test_the_gpu_bench_all_script_plans_blocks_of_a_variants_configs():
    """benchmarks/gpu_bench_all.py: one compile-ahead process per block of at most --block perf
    configs of an operator, shards K/N numbered from 0."""
    import importlib.util

    from conftest import REPO

    spec = importlib.util.spec_from_file_location("gpu_bench_all", REPO / "benchmarks" / "gpu_bench_all.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert [mod.blocks(n, 6) for n in (0, 1, 6, 7, 12, 13)] == [0, 1, 1, 2, 2, 3]
    with pytest.raises(ValueError, match="--block 0"):
        mod.blocks(5, 0)
    n = len(harness.cases(bench.manifest.load(REPO / "operators" / "relu" / "manifest.yaml"), "perf"))
    tasks = mod.plan(["relu"], REPO / "operators", 5)
    assert tasks == [("relu", f"{k}/{mod.blocks(n, 5)}") for k in range(mod.blocks(n, 5))] and n > 5
