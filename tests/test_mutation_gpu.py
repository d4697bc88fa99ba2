"""The mutation study's numeric-test column (issue 36) on the CPU: the unseen-shape derivation,
the runner's logic with a fake launcher, and the worker pool with a fake worker process (hangs,
deaths and lost CUDA contexts). The GPU run itself is not here: it needs the GPU."""
import json
import sys
import textwrap

import pytest

from tileport.gpu import harness
from tileport.gpu import mutation_test as mt
from tileport.model import manifest as tp_manifest


def _man(op):
    return tp_manifest.load(f"operators/{op}/manifest.yaml")


def test_unseen_shapes_leave_the_16_grid_and_keep_fits():
    man = _man("relu")
    v = tp_manifest.variants(man, "relu_kernel")[0]
    got = mt.unseen_shapes(man, "relu_kernel", v, 3)
    # one per base (test shapes first), base j starting at way j: every extent moved off the
    # 16-grid, halved, moved off again
    assert got == [(8,), (501,), (4104,)]
    assert mt.unseen_shapes(man, "relu_kernel", v, 3) == got        # deterministic
    manifest_shapes = {tuple(s) for s in man["test_shapes"] + man["perf_shapes"]}
    many = mt.unseen_shapes(man, "relu_kernel", v, 50)
    assert not manifest_shapes & set(many) and len(set(many)) == len(many)
    assert all(s[0] % 16 for s in many)


def test_unseen_shapes_respect_a_shape_tied_to_a_constexpr():
    man = _man("tg_softmax")
    k = "_softmax_kernel_multi_wave_full_row_reg_cached_ldg"
    v = next(v for v in tp_manifest.variants(man, k) if v.constexprs["N"] == 1000)
    # N is a constexpr: only M may move (37 -> 44); fits "M == N_ROWS ..." leaves no shape at all
    assert mt.unseen_shapes(man, k, v, 3) == [(44, 1000)]
    w = tp_manifest.variants(man, "_softmax_kernel")[0]
    assert mt.unseen_shapes(man, "_softmax_kernel", w, 3) == []


def test_unseen_shapes_of_a_matmul_span_the_bases_and_fit():
    man = _man("tg_matmul")
    v = tp_manifest.variants(man, "_matmul_kernel")[0]
    got = mt.unseen_shapes(man, "_matmul_kernel", v, 3)
    # base j starts at way j: all extents off the grid, then one axis each, so the square
    # bases give shapes with M != N and N != K (an extent read from the other axis shows)
    assert got == [(15, 15, 15), (1031, 1024, 1023), (4096, 4103, 4096)]
    assert got[1][0] != got[1][1] and got[2][1] != got[2][0]
    assert all(harness.fits(man, list(s), v.constexprs, kernel="_matmul_kernel") for s in got)


def _row(ok=True, matches=True, error=None, cuda=False, ref_error=None):
    port = {"ok": False, "error": error, "cuda_error": cuda} if error else {"ok": ok, "max_abs": 0.0}
    ref = {"ok": False, "error": ref_error} if ref_error else {"ok": True}
    row = {"ref": ref, "port": port}
    if not error and not ref_error:
        row["port_matches_ref"] = matches
    return row


def test_judge_names_flags_crashes_and_unusable_calls():
    assert mt.judge(_row()) == ("ok", "")
    assert mt.judge(_row(matches=False))[0] == "flag"
    assert mt.judge(_row(ok=False))[0] == "flag"          # misses reference.py where the reference meets it
    assert mt.judge(_row(error="FfiError: launch"))[1].startswith("launch error")
    assert mt.judge(_row(error="RuntimeError: CUDA error: illegal", cuda=True))[1].startswith("CUDA error")
    assert mt.judge({"timeout": 5})[0] == "crash" and "hang" in mt.judge({"timeout": 5})[1]
    assert mt.judge({"died": "exit status -11"})[0] == "crash"
    assert mt.judge(_row(ref_error="boom"))[0] == "unusable"
    assert mt.judge({"setup_error": "grid"})[0] == "unusable"


def _plans():
    t = [{"variant": "v", "shape": [1000], "on": "test"}, {"variant": "v", "shape": [4097], "on": "test"}]
    u = [{"variant": "v", "shape": [1007], "on": "unseen"}]
    bad = [{"variant": "v", "shape": [1], "on": "test"}]
    ids = ["m001", "m002", "m003", "m004", "m006", "m007", "m008"]
    out = [{"id": i, "kind": "mask", "variants": ["v"], "cases": bad + t + u} for i in ids]
    out.insert(4, {"id": "m005", "kind": "mask", "variants": [], "cases": [], "rejected": True})
    return out


def _launcher(calls):
    """m000 fails shape 1 (a false positive: that case judges nothing) and passes the others;
    m001 differs on the first test shape, m002 only on the unseen one, m003 hangs, m004 never
    differs, m006 faults with a CUDA error, m007 only fails where the reference fails."""
    def launch(mid, case):
        calls.append((mid, case["shape"][0]))
        n = case["shape"][0]
        if mid == "m000":
            return _row(matches=n != 1)
        return {"m001": _row(matches=False), "m002": _row(matches=n != 1007), "m003": {"timeout": 9},
                "m004": _row(), "m006": _row(error="CUDA error: an illegal memory access", cuda=True),
                "m007": _row(ref_error="ref failed") if n == 4097 else _row(),
                "m008": _row()}[mid]
    return launch


def test_evaluate_classifies_each_mutant_and_skips_what_the_baseline_fails():
    calls = []
    recs, base, stopped = mt.evaluate(_plans(), _launcher(calls), budget_s=1e9)
    out = {r["id"]: r["outcome"] for r in recs}
    assert out == {"m001": "test", "m002": "unseen", "m003": "crashed", "m004": "missed", "m005": "rejected",
                   "m006": "crashed", "m007": "missed", "m008": "missed"}
    by = {r["id"]: r for r in recs}
    assert "hang" in by["m003"]["why"] and by["m003"]["on"] == "test"
    assert by["m006"]["why"].startswith("CUDA error")
    assert base["v 1"]["status"] == "flag" and base["v 1000"]["status"] == "ok" and not stopped
    assert by["m004"]["judged"] == {"test": 2, "unseen": 1} and by["m001"]["judged"] == {"test": 1, "unseen": 0}
    # the baseline runs once per case; no mutant runs where it fails; a caught mutant stops
    assert calls.count(("m000", 1000)) == 1 and ("m001", 1) not in calls
    assert [c for c in calls if c[0] == "m001"] == [("m001", 1000)]
    assert {mt.column(o) for o in out.values()} == {"CAUGHT", "MISSED"}
    assert mt.column("rejected") == "MISSED" and mt.column("not_run") == "NOT_RUN"


def test_evaluate_leaves_what_the_budget_does_not_reach_not_run():
    t = iter(range(100))
    recs, _, _ = mt.evaluate(_plans(), _launcher([]), budget_s=5, clock=lambda: next(t))
    out = [r["outcome"] for r in recs]
    assert out[0] == "test" and out[-1] == "not_run" and "budget" in recs[-1]["why"]
    assert "missed" not in out[out.index("not_run"):]


def test_evaluate_stops_when_no_worker_starts():
    def launch(mid, case):
        raise RuntimeError("the mutant worker did not start: ImportError: torch")
    recs, base, stopped = mt.evaluate(_plans(), launch, budget_s=1e9)
    assert "torch" in stopped and all(r["outcome"] in ("not_run", "rejected") for r in recs)


FAKE_WORKER = textwrap.dedent("""
    import json, sys, time
    print("a line before the reply", flush=True)
    if sys.argv[1] == "broken":
        sys.stdout.write("TPMW " + json.dumps({"fatal": "no library"}) + "\\n")
        sys.exit(2)
    sys.stdout.write("TPMW " + json.dumps({"ready": True}) + "\\n")
    sys.stdout.flush()
    for line in sys.stdin:
        job = json.loads(line)
        m = job["mutant"]
        if job["shape"] == [9]:             # a slow case: m000 and "slow" take long, not forever
            time.sleep({"m000": 0.8, "slow": 1.5}.get(m, 0))
        if m == "hang":
            time.sleep(120)
        if m == "die":
            sys.exit(7)
        row = {"ref": {"ok": True}, "port": {"ok": True}, "port_matches_ref": m == "m000"}
        # a library's print and the reply in one write: both reach the parent in one read
        sys.stdout.write("cutile says hi\\nTPMW " + json.dumps({"row": row, "restart": m == "cuda"}) + "\\n")
        sys.stdout.flush()
        if m == "cuda":
            sys.exit(3)
""")


@pytest.fixture
def fake_worker(tmp_path):
    p = tmp_path / "worker.py"
    p.write_text(FAKE_WORKER)
    return p


def test_workers_kill_a_hang_restart_after_a_death_and_a_lost_context(fake_worker, tmp_path):
    case = {"variant": "v", "shape": [8], "on": "unseen"}
    with open(tmp_path / "w.log", "w") as log:
        w = mt.Workers([sys.executable, str(fake_worker), "ok"], timeout_s=3, log=log)
        assert mt.judge(w("m000", case)) == ("ok", "") and w.starts == 1
        assert w("hang", case) == {"timeout": 3} and w.proc is None
        assert mt.judge(w("m001", case))[0] == "flag" and w.starts == 2
        died = w("die", case)
        assert "exit status 7" in died["died"] and w.proc is None
        assert "port" in w("cuda", case) and w.proc is None and w.starts == 3     # its reply, then gone
        assert mt.judge(w("m000", case)) == ("ok", "") and w.starts == 4
        # a slow case: the mutant gets 3x what m000 took there, not only timeout_s
        w.timeout_s = 1.2
        slow = {"variant": "v", "shape": [9], "on": "test"}
        assert "port" in w("m000", slow) and "port" in w("slow", slow) and w.proc is not None
        hung = w("hang", slow)
        assert hung["timeout"] >= 2.4 and w.proc is None
        w.stop()
    assert "cutile says hi" in (tmp_path / "w.log").read_text()


def test_workers_that_cannot_start_raise(fake_worker, tmp_path):
    with open(tmp_path / "w.log", "w") as log:
        w = mt.Workers([sys.executable, str(fake_worker), "broken"], timeout_s=3, log=log)
        with pytest.raises(RuntimeError, match="no library"):
            w("m000", {"variant": "v", "shape": [8], "on": "test"})


def test_settings_take_the_gpu_keys_only():
    s = mt.settings_of({"seed": 3, "gpu_budget_s": 10})
    assert s["gpu_budget_s"] == 10 and "seed" not in s and s["gpu_max_shapes"] == mt.GPU_DEFAULTS["gpu_max_shapes"]
    assert json.loads(json.dumps(s)) == s


def test_main_runs_only_the_kernels_named(tmp_path, monkeypatch, capsys):
    """--kernels picks studies by kernel name (side-by-side processes on one GPU node); a name
    with no study is an error naming it, not a silent success."""
    study_dir = tmp_path / "results" / "mutation" / "op"
    study_dir.mkdir(parents=True)
    for k in ("k_a", "k_b"):
        (study_dir / f"{k}.json").write_text("{}")
    (study_dir / "k_a.gpu.json").write_text("{}")       # a column's own output is no study
    seen = []

    def fake_run(op, kernel, *a, **kw):
        seen.append((op, kernel))
        return {"verdict": "NOT_RUN", "summary": "no GPU"}

    monkeypatch.setattr(mt, "run", fake_run)
    cfg = tmp_path / "config.yaml"
    cfg.write_text("gpu: off\n")
    args = ["--ops", "op", "--results", str(tmp_path / "results"), "--config", str(cfg), "--gpu", "off"]
    assert mt.main(args + ["--kernels", "k_b"]) == 0
    assert seen == [("op", "k_b")]
    seen.clear()
    assert mt.main(args) == 0
    assert seen == [("op", "k_a"), ("op", "k_b")]
    seen.clear()
    assert mt.main(args + ["--kernels", "k_c"]) == 1
    assert seen == [] and "for kernels k_c" in capsys.readouterr().err
