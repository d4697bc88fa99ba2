"""gpu_test without a GPU: verdict_of (pure), the gpu gate, run's early exits, library_for."""
import json

import pytest

from tileport.core.verdict import Verdict, read, write
from tileport.gpu import harness, kept
from tileport.gpu import test as gpu_test
from tileport.gpu.kept import Kept
from tileport.host import shim as host_shim


def has_gpu():
    try:
        harness.probe_gpu()
    except harness.NoGpu:
        return False
    return True


no_gpu_here = pytest.mark.skipif(has_gpu(), reason="this machine has a GPU")


# -- verdict_of ----------------------------------------------------------------------------------

def ok_side():
    return {"ok": True, "max_abs": 0.0, "mismatches": 0, "numel": 64, "worst": None}


def row(kernel="k", variant="f16-T1", shape=(4, 16), port=None, ref=None, launches=(1, 1, 1), **kw):
    """A row as check_call + run produce it."""
    r = {"kernel": kernel, "variant": variant, "shape": list(shape), "grid": [4, 1, 1],
         "ref": ref or ok_side(), "port": port or ok_side()}
    if launches is not None:
        r["launches"] = dict(zip(("ref", "port", "torch"), launches))
        r["kernel_names"] = {"ref": ["ref_k"] * launches[0], "port": ["port_k"] * launches[1]}
    r.update(kw)
    return r


def mismatch(index=(2, 7), actual=1.5, expected=1.25, allowed=0.01, mismatches=3, numel=64):
    return {"ok": False, "max_abs": abs(actual - expected), "mismatches": mismatches, "numel": numel,
            "worst": {"index": list(index), "actual": actual, "expected": expected, "allowed": allowed}}


def valid(v: Verdict, tmp_path) -> dict:
    """The verdict validates against the schema (write validates) and reads back equal."""
    p = tmp_path / "test.json"
    doc = write(v, p)
    assert read(p) == doc
    return doc


def test_all_pass(tmp_path):
    rows = [row(shape=(4, 16)), row(shape=(8, 16)), row(variant="f32-T1"), row(kernel="k2")]
    v = gpu_test.verdict_of("op", rows, attempt=2, secs=1.5, env={"device": "X"})
    assert v.verdict == "ALL_PASS"
    assert v.fail_class is None and v.owner is None
    assert v.attempt == 2 and v.stage == "gpu_test" and v.op == "op"
    assert v.details["variants"] == {"k/f16-T1": "PASS", "k/f32-T1": "PASS", "k2/f16-T1": "PASS"}
    assert v.details["cases"] == rows
    assert v.details["seconds"] == 1.5 and v.details["env"] == {"device": "X"}
    assert "3 variant(s) x 4 call(s)" in v.summary
    assert [f for f in v.findings if f.severity == "critical"] == []
    valid(v, tmp_path)


def test_rows_without_launch_counts_still_pass():
    # only the first call of each variant is profiled
    v = gpu_test.verdict_of("op", [row(), row(shape=(8, 16), launches=None)])
    assert v.verdict == "ALL_PASS"
    assert v.details["env"] == {}


def test_numeric_mismatch_fails_kernel_with_worst_element(tmp_path):
    rows = [row(), row(variant="f32-T1", shape=(8, 32),
                       port=mismatch(index=(2, 7), actual=1.5, expected=1.25, allowed=0.01))]
    v = gpu_test.verdict_of("op", rows)
    assert v.verdict == "FAIL"
    assert v.fail_class == "kernel" and v.owner == "kernel"
    assert v.details["variants"] == {"k/f16-T1": "PASS", "k/f32-T1": "FAIL"}
    assert v.summary.startswith("1 of 2 variant(s) fail: ")
    crit = [f for f in v.findings if f.severity == "critical"]
    assert len(crit) == 1
    f = crit[0]
    assert f.category == "numerics" and f.owner == "kernel"
    for part in ("k/f32-T1 shape (8, 32)", "3 of 64 elements", "index [2, 7]", "port 1.5",
                 "expected 1.25", "allowed |diff| 0.01", "max |diff| 0.25"):
        assert part in f.message, part
        assert part in v.summary, part
    valid(v, tmp_path)


def test_output_shape_mismatch_is_named():
    port = {"ok": False, "shape": [[4, 8], [4, 16]], "max_abs": None, "mismatches": None,
            "numel": 32, "worst": None}
    v = gpu_test.verdict_of("op", [row(port=port)])
    assert v.verdict == "FAIL" and v.fail_class == "kernel"
    assert "port output shape [4, 8] != expected [4, 16]" in v.summary


def test_port_error_with_host_class_fails_host(tmp_path):
    port = {"ok": False, "error": "FfiError: tp_op__k returned TP_ERR_BAD_RANK", "fail_class": "host",
            "cuda_error": False}
    v = gpu_test.verdict_of("op", [row(port=port), row(variant="f32-T1")])
    assert v.verdict == "FAIL"
    assert v.fail_class == "host" and v.owner == "host"
    assert v.details["variants"]["k/f16-T1"] == "FAIL"
    assert v.details["variants"]["k/f32-T1"] == "PASS"
    assert "port failed: FfiError: tp_op__k returned TP_ERR_BAD_RANK" in v.summary
    crit = [f for f in v.findings if f.severity == "critical"]
    assert [(f.category, f.owner) for f in crit] == [("launch", "host")]
    valid(v, tmp_path)


def test_port_error_without_class_defaults_to_host():
    # the row run() appends when building the call fails has fail_class; one without it is host too
    v = gpu_test.verdict_of("op", [row(port={"ok": False, "error": "boom"}, ref={"ok": None})])
    assert v.verdict == "FAIL" and v.fail_class == "host"


def test_kernel_class_wins_over_host_and_env():
    rows = [row(variant="a", port={"ok": False, "error": "x", "fail_class": "host"}),
            row(variant="b", port=mismatch()),
            row(variant="c", not_run="CUDA context lost earlier: illegal address")]
    v = gpu_test.verdict_of("op", rows)
    assert v.fail_class == "kernel" and v.owner == "kernel"
    # the summary leads with the first critical finding, not the not_run warning
    assert "k/a shape" in v.summary and "port failed: x" in v.summary


def test_a_port_equal_to_a_failing_reference_kernel_is_the_manifests(tmp_path):
    # tg_mhc on the H200: port and cuTile Python equal bit for bit, both 2958 of 3072 off
    # reference.py's values: no kernel writer can fix that (the routes stop)
    rows = [row(port=mismatch(), ref=mismatch(), bitwise_equal=True), row(variant="f32-T1")]
    v = gpu_test.verdict_of("op", rows)
    assert v.verdict == "FAIL" and v.owner == "manifest" and v.fail_class is None
    assert "bit for bit" in v.summary and v.details["variants"]["k/f16-T1"] == "FAIL"
    assert [(f.category, f.owner) for f in v.findings if f.severity == "critical"] == [("numerics", "manifest")]
    valid(v, tmp_path)
    # a port that differs from the failing reference kernel is still the port's
    v = gpu_test.verdict_of("op", [row(port=mismatch(), ref=mismatch(), bitwise_equal=False, port_matches_ref=False)])
    assert v.owner == "kernel" and v.fail_class == "kernel"
    v = gpu_test.verdict_of("op", [row(port=mismatch(actual=9.0), ref=mismatch(), bitwise_equal=False)])
    assert v.owner == "kernel" and v.fail_class == "kernel"
    # and the port's own fault wins over the manifest's
    v = gpu_test.verdict_of("op", rows + [row(variant="g", port=mismatch())])
    assert v.fail_class == "kernel"


def test_port_and_reference_missing_the_same_way_is_the_manifests(tmp_path):
    """tg_swa_attention on the H200: NaN in both sides at the same 1536 elements (not bit-equal
    elsewhere, port_vs_ref inf because NaN - NaN is NaN): the port agrees with the kernel, the
    expected values do not. Rows of before ``port_matches_ref``: same count and worst element."""
    nan = float("nan")
    for extra in ({"port_matches_ref": True}, {}):
        r = row(port=mismatch(actual=nan, mismatches=1536), ref=mismatch(actual=nan, mismatches=1536),
                bitwise_equal=False, port_vs_ref_max_abs=float("inf"), **extra)
        v = gpu_test.verdict_of("op", [r])
        assert (v.verdict, v.owner, v.fail_class) == ("FAIL", "manifest", None)
        assert "agrees with the cuTile Python reference" in v.summary
        assert {f.owner for f in v.findings} == {"manifest"}
        write(v, tmp_path / "test.json")           # schema-valid (NaN does not compare equal)


def test_a_same_miss_summary_names_the_manifest_within_its_300_characters():
    """A TileGym-length variant id (124 characters) and a long mismatch: the summary still says
    whose fault it is (the conclusion precedes the mismatch text) and is cut at a word boundary."""
    long_variant = "bf16-TILE_D128-H32-SEQ_LEN4096-TILE_M32-TILE_N16-QUERY_GROUP_SIZE1-CAUSALtrue-occupancy2"
    miss = mismatch(index=(1, 22, 3975, 12), actual=-0.078125, expected=0.00142669677734375,
                    allowed=0.030042800903320312, mismatches=1, numel=67108864)
    v = gpu_test.verdict_of("op", [row(kernel="_fmha_bwd_dq_kernel", variant=long_variant, shape=(4, 32, 32, 4096, 128),
                                port=miss, ref=dict(miss), bitwise_equal=True, port_matches_ref=True)])
    assert (v.verdict, v.owner) == ("FAIL", "manifest")
    assert "equals the cuTile Python reference bit for bit" in v.summary and "not the port" in v.summary
    assert "expected 0." not in v.summary.replace("expected 0.0014", "")


def test_a_wrong_port_the_translator_wrote_is_the_tools_and_routes_to_the_writer(tmp_path):
    """Owner names who must act (the translator lacks a rule), fail_class keeps the route."""
    v = gpu_test.verdict_of("op", [row(port=mismatch())], writers={"k": "translator"})
    assert (v.owner, v.fail_class) == ("tool", "kernel")
    assert [f.owner for f in v.findings] == ["tool"]
    v = gpu_test.verdict_of("op", [row(port=mismatch())], writers={"k": "anthropic"})
    assert (v.owner, v.fail_class) == ("kernel", "kernel")
    v = gpu_test.verdict_of("op", [row(port={"ok": False, "error": "FfiError: ...", "fail_class": "host"})],
                     writers={"k": "translator"})
    assert (v.owner, v.fail_class) == ("host", "host")
    valid(v, tmp_path)


def test_unequal_launch_counts_fail_host():
    v = gpu_test.verdict_of("op", [row(launches=(1, 2, 1))])
    assert v.verdict == "FAIL" and v.fail_class == "host"
    assert v.details["variants"] == {"k/f16-T1": "FAIL"}
    assert "port launches 2 kernel(s) per call, reference 1" in v.summary
    assert "port_k" in v.summary      # the kernels' names are named


def test_torch_launch_count_does_not_matter():
    v = gpu_test.verdict_of("op", [row(launches=(1, 1, 5))])
    assert v.verdict == "ALL_PASS"


def test_reference_only_failure_is_a_warning_not_a_fail(tmp_path):
    v = gpu_test.verdict_of("op", [row(ref=mismatch(actual=9.0, expected=1.0))])
    assert v.verdict == "ALL_PASS"
    assert v.details["variants"] == {"k/f16-T1": "PASS"}
    notes = [f for f in v.findings if "reference itself fails" in f.message]
    assert len(notes) == 1 and notes[0].severity == "warn" and notes[0].category == "numerics"
    valid(v, tmp_path)


def test_reference_error_is_a_warning_naming_the_error():
    v = gpu_test.verdict_of("op", [row(ref={"ok": False, "error": "TileCompileError: bad", "fail_class": "env"})])
    assert v.verdict == "ALL_PASS"
    assert any("TileCompileError: bad" in f.message and f.severity == "warn" for f in v.findings)


def test_reference_and_port_both_fail():
    v = gpu_test.verdict_of("op", [row(ref=mismatch(), port=mismatch(actual=9.0))])
    assert v.verdict == "FAIL" and v.fail_class == "kernel"
    assert sorted(f.severity for f in v.findings) == ["critical", "warn"]


def test_not_run_rows(tmp_path):
    rows = [row(variant="a", port={"ok": False, "error": "RuntimeError: CUDA error: illegal address",
                                   "fail_class": "kernel", "cuda_error": True}),
            {"kernel": "k", "variant": "b", "shape": [4, 16], "not_run": "CUDA context lost earlier: x"}]
    v = gpu_test.verdict_of("op", rows)
    assert v.details["variants"] == {"k/a": "FAIL", "k/b": "NOT_RUN"}
    assert v.verdict == "FAIL" and v.fail_class == "kernel"
    assert v.summary.startswith("2 of 2 variant(s) fail")
    nr = [f for f in v.findings if "not run" in f.message]
    assert len(nr) == 1 and nr[0].severity == "warn" and nr[0].owner == "env"
    assert "k/b shape (4, 16): not run: CUDA context lost earlier: x" == nr[0].message
    valid(v, tmp_path)


def test_only_not_run_rows_fail_env():
    rows = [{"kernel": "k", "variant": "b", "shape": [4], "not_run": "lost"}]
    v = gpu_test.verdict_of("op", rows)
    assert v.verdict == "FAIL" and v.fail_class == "env"
    assert v.details["variants"] == {"k/b": "NOT_RUN"}


def test_one_bad_shape_fails_the_whole_variant_in_any_order():
    for rows in ([row(port=mismatch()), row(shape=(8, 16))], [row(shape=(8, 16)), row(port=mismatch())]):
        v = gpu_test.verdict_of("op", rows)
        assert v.details["variants"] == {"k/f16-T1": "FAIL"}
        assert v.summary.startswith("1 of 1 variant(s) fail")


def test_variant_keys_are_kernel_slash_variant():
    v = gpu_test.verdict_of("op", [row(kernel="a", variant="f16-T1"), row(kernel="b", variant="f16-T1",
                                                                  port=mismatch())])
    assert v.details["variants"] == {"a/f16-T1": "PASS", "b/f16-T1": "FAIL"}


def test_no_rows_is_blocked(tmp_path):
    v = gpu_test.verdict_of("op", [])          # the manifest's test_shapes / fits: the routes stop
    assert (v.verdict, v.owner, v.fail_class) == ("BLOCKED", "manifest", None)
    assert v.summary == "no test shape fits any variant"
    assert v.details["variants"] == {} and v.details["cases"] == []
    valid(v, tmp_path)


# -- gpu_gate ------------------------------------------------------------------------------------

def test_gate_off_writes_not_run(tmp_path):
    out = tmp_path / "t.json"
    d = gpu_test.gpu_gate("gpu_test", "op", "off", out, attempt=3)
    assert d["verdict"] == "NOT_RUN" and d["summary"] == "not_run (gpu: off)"
    assert read(out) == d and d["attempt"] == 3 and d["stage"] == "gpu_test"


def test_gate_off_never_probes(tmp_path, monkeypatch):
    def boom():
        raise AssertionError("probed")
    monkeypatch.setattr(harness, "probe_gpu", boom)
    assert gpu_test.gpu_gate("bench", "op", "off", tmp_path / "b.json")["verdict"] == "NOT_RUN"


@no_gpu_here
def test_gate_auto_without_gpu_writes_not_run(tmp_path):
    out = tmp_path / "t.json"
    d = gpu_test.gpu_gate("gpu_test", "op", "auto", out)
    assert d["verdict"] == "NOT_RUN"
    assert d["summary"].startswith("not_run (no GPU")
    assert read(out)["summary"] == d["summary"]


@no_gpu_here
def test_gate_required_without_gpu_exits_1_and_leaves_error(tmp_path, capsys):
    out = tmp_path / "t.json"
    with pytest.raises(SystemExit) as ei:
        gpu_test.gpu_gate("gpu_test", "op", "required", out)
    assert ei.value.code == 1
    d = read(out)
    assert d["verdict"] == "ERROR" and d["fail_class"] == "env" and d["owner"] == "env"
    assert d["summary"].startswith("gpu: required, but there is no usable GPU here")
    assert d["findings"][0]["category"] == "environment"
    assert "gpu: required" in capsys.readouterr().err


def test_gate_carries_the_probe_reason(tmp_path, monkeypatch):
    def no():
        raise harness.NoGpu("driver too old")
    monkeypatch.setattr(harness, "probe_gpu", no)
    d = gpu_test.gpu_gate("bench", "op", "auto", tmp_path / "b.json")
    assert d["summary"] == "not_run (no GPU: driver too old)"
    with pytest.raises(SystemExit):
        gpu_test.gpu_gate("bench", "op", "required", tmp_path / "r.json")
    assert "driver too old" in read(tmp_path / "r.json")["summary"]


def test_gate_with_gpu_returns_none_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "probe_gpu", lambda: "NVIDIA H200")
    out = tmp_path / "t.json"
    for mode in ("auto", "required"):
        assert gpu_test.gpu_gate("gpu_test", "op", mode, out) is None
    assert not out.exists()


# -- run: early exits ----------------------------------------------------------------------------

@no_gpu_here
def test_run_auto_without_gpu_never_touches_the_library(tmp_path):
    missing = tmp_path / "nowhere"
    out = tmp_path / "out" / "test.json"
    d = gpu_test.run("op", missing / "operators" / "op", missing / "results", out, gpu="auto",
              host_build=missing / "host" / "build.json")
    assert d["verdict"] == "NOT_RUN" and d["summary"].startswith("not_run (no GPU")
    assert read(out) == d
    assert not missing.exists()


def test_run_off_is_not_run(tmp_path):
    d = gpu_test.run("op", tmp_path / "x", tmp_path / "y", tmp_path / "t.json", gpu="off")
    assert d["summary"] == "not_run (gpu: off)"


def test_run_with_gpu_but_no_library_is_blocked_host(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "probe_gpu", lambda: "NVIDIA H200")
    d = gpu_test.run("op", tmp_path / "operators" / "op", tmp_path / "results", tmp_path / "t.json", gpu="auto")
    assert d["verdict"] == "BLOCKED" and d["fail_class"] == "host" and d["owner"] == "host"
    assert d["summary"].startswith("host library not built")


# -- library_for ---------------------------------------------------------------------------------

def make_op(results, op, kernels=("k",)):
    """results/<op>/host/ffi.json + ffi.rs and results/<op>/rust/src/<k>.rs."""
    h = results / op / "host"
    h.mkdir(parents=True)
    (h / "ffi.json").write_text(json.dumps({"op": op, "functions": [
        {"symbol": f"tp_{op}__{k}", "kernel": k, "entry": k} for k in kernels]}))
    (h / "ffi.rs").write_text(f"// shim of {op}\n")
    src = results / op / "rust" / "src"
    src.mkdir(parents=True)
    for k in kernels:
        (src / f"{k}.rs").write_text(f"// port of {k}\n")


def host_build(results, ops: dict, verdict="PASS", summary="built", fail_class=None):
    p = results / "host" / "build.json"
    write(Verdict(stage="host_build", op="*", verdict=verdict, summary=summary, fail_class=fail_class,
                  owner=fail_class, details={"ops": ops, "library": str(results / "host" / host_shim.LIB_NAME)}), p)
    return p


def in_lib(results, op):
    return {"in_library": True, "reason": "", "kernels": ["k"], "sources_sha": host_shim.sources_sha(results, op)}


def test_library_good_case(tmp_path):
    results = tmp_path / "results"
    make_op(results, "op", kernels=("k", "k2"))
    hb = host_build(results, {"op": in_lib(results, "op")})
    lib, why = gpu_test.library_for("op", results, hb)
    assert why is None
    assert lib == str(results / "host" / host_shim.LIB_NAME)


def test_library_missing_build_verdict(tmp_path):
    lib, why = gpu_test.library_for("op", tmp_path, tmp_path / "host" / "build.json")
    assert lib is None
    assert why[0] == "host" and why[1].startswith("host library not built:")


def test_op_absent_from_library(tmp_path):
    results = tmp_path / "results"
    make_op(results, "other")
    hb = host_build(results, {"other": in_lib(results, "other")}, summary="built with 1 operator(s)")
    lib, why = gpu_test.library_for("op", results, hb)
    assert lib is None
    # the reason names the operators the library was built for (e.g. a config subset)
    assert why[0] == "host" and "op is not in the host library (built for ['other'])" in why[1]


def test_library_error_verdict_passes_its_fail_class(tmp_path):
    results = tmp_path / "results"
    hb = host_build(results, {}, verdict="ERROR", summary="cannot run cargo", fail_class="env")
    assert gpu_test.library_for("op", results, hb) == (None, ("env", "host library not built: cannot run cargo"))


@pytest.mark.parametrize("reason, upstream, owner", [
    ("port crate did not build: rustc error", None, "tool"),
    ("no shim: no translated kernel", None, "tool"),
    ("no shim: no translated kernel", ("write_kernel/k.json", "BLOCKED", "tool"), "tool"),
    ("no shim: no translated kernel", ("write_kernel/k.json", "BLOCKED", "kernel"), "kernel"),
    ("port crate did not build: rustc error", ("rust/build.json", "ERROR", "env"), "env"),
    ("breaks the combined build: ffi.rs:3: error", None, "host"),
])
def test_op_left_out_of_library(tmp_path, reason, upstream, owner):
    """No port in the library: the upstream verdict's owner must act (``tool`` where the
    translator lacks a rule or none says), never ``kernel`` unless the analysis found it invalid."""
    results = tmp_path / "results"
    hb = host_build(results, {"op": {"in_library": False, "reason": reason, "findings": []}},
                    verdict="PASS_WITH_NOTES")
    if upstream:
        f, word, who = upstream
        write(Verdict(stage="x", op="op", verdict=word, owner=who, summary="s"), results / "op" / f)
    lib, why = gpu_test.library_for("op", results, hb)
    assert lib is None
    assert why == (owner, f"not in the host library: {reason}")
    assert gpu_test.routed(owner) == (owner if owner in ("kernel", "host", "env") else None)


@pytest.mark.parametrize("edit", ["host/ffi.rs", "rust/src/k.rs"])
def test_stale_sources_ask_for_rebuild(tmp_path, edit):
    results = tmp_path / "results"
    make_op(results, "op")
    hb = host_build(results, {"op": in_lib(results, "op")})
    f = results / "op" / edit
    f.write_text(f.read_text() + "// edited after the build\n")
    lib, why = gpu_test.library_for("op", results, hb)
    assert lib is None
    assert why[0] == "host"
    assert "rebuild" in why[1] and "results/op" in why[1]


def test_files_outside_the_library_do_not_make_it_stale(tmp_path):
    results = tmp_path / "results"
    make_op(results, "op")
    hb = host_build(results, {"op": in_lib(results, "op")})
    (results / "op" / "rust" / "src" / "untranslated.rs").write_text("// not in ffi.json\n")
    (results / "op" / "host" / "shim.json").write_text("{}")
    assert gpu_test.library_for("op", results, hb)[1] is None


def test_wrong_recorded_sha_is_stale(tmp_path):
    results = tmp_path / "results"
    make_op(results, "op")
    hb = host_build(results, {"op": {**in_lib(results, "op"), "sources_sha": "0" * 64}})
    assert gpu_test.library_for("op", results, hb)[1][0] == "host"


@pytest.mark.parametrize("reason,owner", [
    ("host shim unusable (agent_output): host builder (anthropic): reply has 0 fenced ```rust blocks", "host"),
    ("host shim unusable (env): host builder (anthropic): no API key in TILEPORT_KEY", "env"),
    ("port crate did not build: rustc error", "tool"),
])
def test_a_library_holding_no_operator_blames_the_operators_own_reason(tmp_path, reason, owner):
    # a GPU round's one-operator library: its only shim failed, so host_build is an ERROR with
    # fail_class kernel ("no operator has a built port and a shim"); the operator's own reason decides
    results = tmp_path / "results"
    hb = host_build(results, {"op": {"in_library": False, "reason": reason, "findings": []}}, verdict="ERROR",
                    summary="no operator has a built port and a shim: no library", fail_class="kernel")
    assert gpu_test.library_for("op", results, hb) == (None, (owner, f"not in the host library: {reason}"))


# -- kept measurements: a GPU-less rerun restores what a GPU measured of the same sources --------

def measured_tree(tmp_path, legacy=False):
    """results/relu with shim + kernel files, and a measured test.json / bench.json of them
    (operators/relu beside results/, as the summary finds it). ``legacy``: the verdicts carry
    only the full ``inputs_sha``, as those written before ``test_inputs_sha`` existed."""
    from conftest import REPO

    from tileport.gpu import kept as tp_kept

    results, op_dir = tmp_path / "results", tmp_path / "operators" / "relu"
    import shutil
    shutil.copytree(REPO / "operators" / "relu", op_dir)
    make_op(results, "relu", kernels=("relu_kernel",))
    hashes = {"sources_sha": host_shim.sources_sha(results, "relu"), "inputs_sha": harness.inputs_sha(op_dir)}
    if not legacy:
        hashes["test_inputs_sha"] = tp_kept.tested_inputs_sha(op_dir)
    t = gpu_test.verdict_of("relu", [row("relu_kernel", f"{d}-TILE{t}") for d in ("f16", "bf16", "f32")
                              for t in (1024, 2048)])
    t.details.update(hashes)
    write(t, results / "relu" / "test.json")
    from test_bench import brow

    from tileport.gpu import bench
    from tileport.model import manifest

    # one timed row per perf config of the manifest (12: 3 dtypes x 2 tiles x 2 perf shapes)
    rows = [brow(1.0, kernel=k, variant=v.id, shape="x".join(map(str, s)))
            for k, v, s in harness.cases(manifest.load(op_dir / "manifest.yaml"), "perf")]
    b = bench.fold("relu", rows, 0.95)
    b.details.update(hashes, rows=rows)
    write(b, results / "relu" / "bench.json")
    (results / "relu" / "bench.csv").write_text("op,kernel\nrelu,relu_kernel\n")
    return results, op_dir


@no_gpu_here
def test_kept_measurements_come_back_only_for_the_same_sources(tmp_path):
    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path, legacy=True)    # an old verdict: the full hash only
    r = results / "relu"
    assert sorted(Kept(results, "relu", op_dir).snapshot()) == sorted(
        str(r / kept.KEEP / f) for f in ("test.json", "bench.json", "bench.csv"))
    before = {f: (r / f).read_bytes() for f in ("test.json", "bench.json", "bench.csv")}
    for f in before:
        (r / f).unlink()                      # what Snakemake does before it reruns a job
    assert gpu_test.run("relu", op_dir, results, r / "test.json", gpu="auto")["verdict"] == "ALL_PASS"
    assert bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", gpu="auto")["verdict"] == "DONE"
    assert {f: (r / f).read_bytes() for f in before} == before
    # the kernel.py changed: the kept measurement no longer describes the operator
    (op_dir / "kernel.py").write_text((op_dir / "kernel.py").read_text() + "# edited\n")
    (r / "test.json").unlink()
    assert gpu_test.run("relu", op_dir, results, r / "test.json", gpu="auto")["verdict"] == "NOT_RUN"
    # a NOT_RUN is never kept, and a kept file of other sources is not restored
    assert Kept(results, "relu", op_dir).snapshot() == []
    (op_dir / "kernel.py").write_text((op_dir / "kernel.py").read_text().replace("# edited\n", ""))
    (r / "host" / "ffi.rs").write_text("// another shim\n")
    (r / "test.json").unlink()
    assert gpu_test.run("relu", op_dir, results, r / "test.json", gpu="auto")["verdict"] == "NOT_RUN"


def test_a_manifest_fault_is_the_manifests_and_stops_the_route(tmp_path):
    """A bad manifest value found by a GPU stage (an expression, a generator's bounds, a tensor of
    another dtype than the kernel's array) is owned by the manifest: no writer can fix it."""
    from tileport.flow import gpu_round as tp_gpu_round
    from tileport.gpu import harness
    from tileport.gpu.test import input_error

    d = write(input_error("op", harness.ManifestValueError(
        "m.yaml: tensors/i/init: init randint: [4, 4) holds no value")), tmp_path / "t.json")
    assert (d["verdict"], d["owner"], d.get("fail_class")) == ("ERROR", "manifest", None)
    assert d["findings"][0]["category"] == "manifest"
    route = tp_gpu_round.decide_gpu(d, {}, {}, {"k": 1}, 1, writer="anthropic", writer_cap=3)
    assert route["next"] == "stop" and "manifest" in route["route"]
    d = input_error("op", harness.HarnessError("reference.py:3: import failed: NameError"))
    assert (d.owner, d.fail_class) == ("kernel", "kernel")


def _one_fake_case(monkeypatch):
    """gpu_test.run on a fake GPU and library: one call of kernel k, variant f16-T1, shape (4, 16)
    (check_call is the test's to replace)."""
    from types import SimpleNamespace

    monkeypatch.setattr(harness, "probe_gpu", lambda: "NVIDIA H200")
    monkeypatch.setattr(gpu_test, "library_for", lambda op, results, host_build, keeper=None: ("lib", None))
    variant = SimpleNamespace(id="f16-T1", dtype="f16")
    ctx = SimpleNamespace(man={"tolerance": {"f16": {"rtol": 0, "atol": 0}}}, nv={}, nv_note=None,
                          call=lambda kernel, variant, shape, seed: object())
    monkeypatch.setattr(gpu_test, "OpContext", lambda *a: ctx)
    monkeypatch.setattr(harness, "cases", lambda man, which: [("k", variant, (4, 16))])


def test_a_side_that_raised_is_not_profiled_again(tmp_path, monkeypatch):
    """A port whose call raises (an FfiError, a launch failure) is a FAIL row of test.json; the
    launch count after it would call it again and raise out of the stage (seen on the H200 with
    TileGym's LOAD_LATENCY=-1 before the shim took constexprs of any sign): it is skipped."""
    from tileport.gpu import cupti

    _one_fake_case(monkeypatch)
    failed = {"ok": False, "error": "FfiError: bad arguments", "fail_class": "host", "cuda_error": False}
    monkeypatch.setattr(gpu_test, "check_call", lambda c, tol: row(port=failed, launches=None))

    def profile(*a, **kw):
        raise AssertionError("profiled a side that raised")
    monkeypatch.setattr(cupti, "profile", profile)
    monkeypatch.setattr(harness, "env_versions", lambda: {})
    make_op(tmp_path / "results", "op")
    d = gpu_test.run("op", tmp_path / "op", tmp_path / "results", tmp_path / "t.json", gpu="auto")
    assert d["verdict"] == "FAIL" and "launches" not in d["details"]["cases"][0]


def test_input_error_owners(tmp_path):
    """An unreadable analysis.json is tileport's (tool, no route); a manifest fault the
    manifest's; a kernel.py that does not import the kernel's."""
    from tileport.core.verdict import VerdictError
    from tileport.model import manifest

    assert (gpu_test.input_error("op", VerdictError("results/op/analysis.json: bad JSON")).owner,
            gpu_test.input_error("op", VerdictError("x")).fail_class) == ("tool", None)
    assert gpu_test.input_error("op", manifest.ManifestError("m.yaml:3: bad")).owner == "manifest"
    v = gpu_test.input_error("op", harness.HarnessError("kernel.py:4: import failed"))
    assert (v.owner, v.fail_class) == ("kernel", "kernel")
    valid(v, tmp_path)


def test_restaging_copies_are_not_the_ports_launches():
    """An output restaged (ffi.restage_strides; tg_flash_decode's LSE_Out was, before issue 14):
    copied in and back, two device copies beside the port's one kernel; the row lists them, the
    launch counts still agree."""
    rs = {"LSE_Out": {"extents": [1, 8, 4, 1], "strides": [32, 4, 1, 1], "staged_strides": [64, 8, 2, 1],
                      "copies": 2, "why": "..."}}
    assert gpu_test.verdict_of("op", [row(launches=(1, 3, 1), restaged=rs)]).verdict == "ALL_PASS"
    v = gpu_test.verdict_of("op", [row(launches=(1, 4, 1), restaged=rs)])
    assert (v.verdict, v.owner) == ("FAIL", "host") and "2 of them the host's restaging copies" in v.summary


# -- validity per what was measured: perf shapes are the benchmark's only -----------------------------

PERF = "perf_shapes: [[16777216], [134217728]]"


def edit(op_dir, old, new):
    m = op_dir / "manifest.yaml"
    text = m.read_text()
    assert old in text
    m.write_text(text.replace(old, new))


@no_gpu_here
def test_adding_a_perf_shape_keeps_the_test_and_the_old_rows_and_the_new_configs_are_pending(tmp_path):
    from tileport.gpu import bench
    from tileport.report import summary as tp_summary

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    edit(op_dir, PERF, "perf_shapes: [[16777216], [67108864], [134217728]]")
    assert Kept(results, "relu", op_dir).holds(read(r / "test.json"))
    assert Kept(results, "relu", op_dir).holds(read(r / "bench.json"))
    doc, src = Kept(results, "relu", op_dir).bench(r / "bench.json")
    d = doc["details"]
    assert (doc["verdict"], d["configs"], d["configs_pending"], d["configs_total"]) == ("DONE", 12, 6, 18)
    assert {p["shape"] for p in d["pending_configs"]} == {"67108864"}
    assert "over 12 of 18 config(s), 6 pending" in doc["summary"]
    # summary_ops.csv: the timed configs and the pending ones
    ops = {x["op"]: x for x in tp_summary.ops_rows(results, ["relu"])}
    assert (ops["relu"]["configs"], ops["relu"]["configs_pending"]) == (12, 6)
    assert (ops["ALL"]["configs"], ops["ALL"]["configs_pending"]) == (12, 6)
    # a GPU-less rerun (Snakemake removed the outputs): test.json back as it was, bench.json reconciled
    Kept(results, "relu", op_dir).snapshot()
    before = (r / "test.json").read_bytes()
    for f in ("test.json", "bench.json", "bench.csv"):
        (r / f).unlink()
    assert gpu_test.run("relu", op_dir, results, r / "test.json", gpu="auto")["verdict"] == "ALL_PASS"
    assert (r / "test.json").read_bytes() == before
    b = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", gpu="auto")
    assert (b["verdict"], b["details"]["configs_pending"]) == ("DONE", 6)
    assert len((r / "bench.csv").read_text().splitlines()) == 1 + 12


@pytest.mark.parametrize("old,new,holds", [
    ("f16: {rtol: 0.0, atol: 0.0}", "f16: {rtol: 0.0, atol: 1.0e-3}", False),       # a tolerance
    ("test_shapes: [[1], [1000],", "test_shapes: [[1], [1001],", False),             # a test shape
    ("fits: \"True\"", "fits: \"numel > 0\"", False),                               # what a test runs
    (PERF, PERF + "\nperf_fits: \"numel >= TILE\"", True),                            # bench-only key
    ("description: Elementwise", "description: Element-wise", True),                 # prose
    ("# the tensors of one call", "# the tensors (edited comment) of one call", True),  # a comment
])
def test_what_a_test_reads_decides_its_validity(tmp_path, old, new, holds):
    results, op_dir = measured_tree(tmp_path)
    edit(op_dir, old, new)
    assert Kept(results, "relu", op_dir).holds(read(results / "relu" / "test.json")) is holds
    doc, _ = Kept(results, "relu", op_dir).bench(results / "relu" / "bench.json")
    assert (doc is not None) is holds


def test_a_row_of_a_config_no_longer_perf_or_of_another_tolerance_is_retired():
    from tileport.gpu import kept as tp_kept

    tol = {"rtol": 0.0, "atol": 0.0}
    perf = {("k", "f16-T1", "64x128"): tol, ("k", "f16-T1", "128x128"): {"rtol": 0.0, "atol": 1e-3},
            ("k", "f16-T1", "256x128"): tol}
    keep = {"kernel": "k", "variant": "f16-T1", "shape": "64x128", "rtol": 0.0, "atol": 0.0}
    gone = {"kernel": "k", "variant": "f16-T1", "shape": "32x128"}
    other_tol = {"kernel": "k", "variant": "f16-T1", "shape": "128x128", "rtol": 0.0, "atol": 0.0}
    erred = {**keep, "error": "RuntimeError: CUDA error"}
    blocked = {**keep, "shape": "256x128", "error": "FfiError: ...", "blocked": "cutile limit"}
    assert tp_kept.split_rows([keep, gone, other_tol, erred, blocked], perf) == (
        [keep, blocked], [gone, other_tol, erred])


def test_an_old_verdict_is_recognised_through_the_manifests_git_history(tmp_path):
    """A verdict written before test_inputs_sha (full inputs_sha only) still holds once perf shapes
    are added: its full hash names the earlier manifest in git, whose test-relevant part is today's."""
    import shutil
    import subprocess

    from tileport.gpu import kept as tp_kept

    results, op_dir = measured_tree(tmp_path, legacy=True)
    old = read(results / "relu" / "test.json")["details"]
    git = ["git", "-C", str(op_dir), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "m"], check=True)
    edit(op_dir, PERF, "perf_shapes: [[16777216], [67108864], [134217728]]")
    assert old["inputs_sha"] != harness.inputs_sha(op_dir)
    assert tp_kept.inputs_match(old, op_dir)
    # stamped, it holds without the history (a GPU bundle without .git)
    t = results / "relu" / "test.json"
    assert tp_kept.stamp(t, op_dir) and not tp_kept.stamp(t, op_dir)
    shutil.rmtree(op_dir / ".git")
    tp_kept._LEGACY.clear()
    assert tp_kept.inputs_match(read(t)["details"], op_dir) and not tp_kept.inputs_match(old, op_dir)
    edit(op_dir, "f32: {rtol: 0.0, atol: 0.0}", "f32: {rtol: 0.0, atol: 1.0e-6}")
    assert not tp_kept.inputs_match(read(t)["details"], op_dir)


def fake_gpu(monkeypatch, timed, ratio=1.1):
    """bench.run on the CPU: a GPU, a library and an operator context that time nothing; each
    config :func:`tileport.gpu.bench.measure` is asked for is recorded in ``timed``."""
    import types

    from test_bench import brow

    from tileport.gpu import bench
    from tileport.model import manifest

    class Ctx:      # as gpu_test.OpContext: the manifest the stage's Kept loaded
        def __init__(self, op, op_dir, results, library, nv_build=None, keeper=None):
            man = keeper.manifest if keeper is not None else manifest.load(op_dir / "manifest.yaml")
            self.man, self.nv = man, {}
            self.lib = types.SimpleNamespace(shims={}, jit_cache_stats=lambda: None)   # a library without the cache

        def call(self, kernel, variant, shape, seed=0, nv=False):
            return types.SimpleNamespace(kernel=kernel, variant=variant, shape=shape, nv=None, nv_note="",
                                         symbol="s")

    def measure(c, cfg, tol, **kw):
        shape = "x".join(map(str, c.shape))
        timed.append((c.kernel, c.variant.id, shape))
        return brow(ratio, kernel=c.kernel, variant=c.variant.id, shape=shape)

    monkeypatch.setattr(bench, "gpu_gate", lambda *a, **k: None)
    monkeypatch.setattr(bench, "library_for", lambda *a, **k: ("lib", None))
    monkeypatch.setattr(bench, "OpContext", Ctx)
    monkeypatch.setattr(bench, "measure", measure)
    monkeypatch.setattr(bench.harness, "env_versions", lambda: {})
    monkeypatch.setattr(bench.provenance, "collect", lambda **k: {})


def test_pending_only_times_exactly_the_missing_configs_and_merges_them(tmp_path, monkeypatch):
    import csv

    from tileport.core import stats
    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    edit(op_dir, PERF, "perf_shapes: [[16777216], [67108864], [134217728]]")
    timed = []
    fake_gpu(monkeypatch, timed)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", pending_only=True)
    assert sorted(timed) == sorted(("relu_kernel", f"{dt}-TILE{t}", "67108864")
                                   for dt in ("f16", "bf16", "f32") for t in (1024, 2048))
    det = d["details"]
    assert (d["verdict"], det["configs"], det["configs_pending"], det["timed_now"]) == ("DONE", 18, 0, 6)
    assert abs(det["geomean_ratio"] - stats.geomean([1.0] * 12 + [1.1] * 6)) < 1e-12
    rows = list(csv.DictReader(open(r / "bench.csv")))
    # manifest order: per variant, its perf shapes in the manifest's order
    assert [x["shape"] for x in rows[:3]] == ["16777216", "67108864", "134217728"] and len(rows) == 18
    assert all(x.get("rtol") == 0.0 for x in det["rows"] if x["shape"] == "67108864")
    # nothing left: a second pending-only run times nothing; a full run times every config
    timed.clear()
    assert bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", pending_only=True)[
        "details"]["configs"] == 18 and timed == []
    bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json")
    assert len(timed) == 18


def test_a_selection_times_only_its_configs_keeps_the_rest_and_says_so(tmp_path, monkeypatch):
    """--configs-below-loop / --configs: only the selected configs are timed again, every other
    valid row is kept as it was; a re-timed row carries its old loop ratio (loop_ratio_prev) and
    details.retimed says when, what was selected and the ratios before and after, run after run."""
    import json

    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    doc = json.loads((r / "bench.json").read_text())
    for x in doc["details"]["rows"]:
        x["loop_ratio"] = 0.9 if (x["variant"], x["shape"]) == ("f32-TILE1024", "134217728") else 1.0
    (r / "bench.json").write_text(json.dumps(doc))
    kept = {(x["variant"], x["shape"]): x for x in doc["details"]["rows"]}
    timed = []
    fake_gpu(monkeypatch, timed, ratio=1.1)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", below_loop=True)
    assert timed == [("relu_kernel", "f32-TILE1024", "134217728")]
    det = d["details"]
    assert (det["configs"], det["configs_pending"], det["timed_now"]) == (12, 0, 1)
    new = {(x["variant"], x["shape"]): x for x in det["rows"]}
    assert new["f32-TILE1024", "134217728"]["loop_ratio_prev"] == 0.9
    assert new["f32-TILE1024", "134217728"]["ratio"] == 1.1
    assert all(new[k][f] == kept[k][f] for k in kept if k != ("f32-TILE1024", "134217728") for f in kept[k])
    (rec,) = det["retimed"]
    assert rec["selection"] == {"configs": [], "below_loop": True, "loop_threshold": 0.97}
    assert [(c["shape"], c["loop_ratio_prev"]) for c in rec["configs"]] == [("134217728", 0.9)]
    assert rec["at"] and "regression to the mean" in rec["note"]
    # a pattern: the f16 configs at one shape; the earlier selection stays on record
    timed.clear()
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", configs=["relu_kernel/f16-*/16777216"])
    assert sorted(timed) == [("relu_kernel", f"f16-TILE{t}", "16777216") for t in (1024, 2048)]
    assert [len(x["configs"]) for x in d["details"]["retimed"]] == [1, 2]
    assert d["details"]["configs"] == 12 and d["details"]["timed_now"] == 2
    # no selection: a full run times everything, and the record of selections goes
    timed.clear()
    assert "retimed" not in bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json")["details"]
    assert len(timed) == 12
    # kept rows of another device: a selection refuses (nothing written) instead of mixing devices
    before = (r / "bench.json").read_text()
    monkeypatch.setattr(bench.harness, "env_versions", lambda: {"device": "NVIDIA H200"})
    doc = json.loads(before)
    doc["details"]["env"] = {"device": "NVIDIA H100 80GB HBM3"}
    (r / "bench.json").write_text(json.dumps(doc))
    with pytest.raises(bench.SelectionError, match="mix devices"):
        bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", below_loop=True)
    assert json.loads((r / "bench.json").read_text()) == doc
    # no kept verdict that holds (sources changed, none yet): nothing to keep, refused
    (r / "bench.json").write_text(before)
    monkeypatch.setattr(Kept, "bench", lambda self, *a: (None, None))
    with pytest.raises(bench.SelectionError, match="no kept bench verdict"):
        bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", configs=["*/*/*"])
    assert (r / "bench.json").read_text() == before
    with pytest.raises(ValueError, match="KERNEL/VARIANT/SHAPE"):
        bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", configs=["relu_kernel/f16"])


def test_a_time_budget_or_a_sigterm_stops_the_loop_writes_what_was_timed_and_leaves_the_rest_pending(
        tmp_path, monkeypatch):
    # a lent GPU's session or a job's time limit: the configs timed are written, the others pending,
    # and a --pending-only run afterwards times exactly those
    import os
    import signal

    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    timed = []
    fake_gpu(monkeypatch, timed)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", budget_s=0.0)
    # nothing timed: the kept measurement's rows stand (none lost), nothing pending
    assert timed == [] and d["details"]["configs"] == 12 and d["details"]["configs_pending"] == 0
    assert "budget" in d["details"]["stopped"] and d["details"]["kept_after_stop"]["configs"] == 12
    assert d["details"]["timed_now"] == 0
    # with no kept measurement the configs not reached are pending
    import shutil

    (r / "bench.json").unlink()
    shutil.rmtree(r / kept.KEEP)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", budget_s=0.0)
    assert timed == [] and d["details"]["configs_pending"] == 12 and "kept_after_stop" not in d["details"]
    measure = bench.measure

    def killed_at_the_fifth(c, cfg, tol, **kw):
        if len(timed) == 4:
            os.kill(os.getpid(), signal.SIGTERM)     # as `timeout` or Slurm would
        return measure(c, cfg, tol, **kw)

    monkeypatch.setattr(bench, "measure", killed_at_the_fifth)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json")
    det = d["details"]
    assert len(timed) == 4 and (det["configs"], det["configs_pending"]) == (4, 8)   # the fifth: stopped
    assert "SIGTERM" in det["stopped"] and signal.getsignal(signal.SIGTERM) is not bench._stop_on_sigterm
    timed.clear()
    monkeypatch.setattr(bench, "measure", measure)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", pending_only=True)
    assert len(timed) == 8 and (d["details"]["configs"], d["details"]["configs_pending"]) == (12, 0)
    assert "stopped" not in d["details"]


def test_a_config_timed_twice_counts_once_and_a_malformed_row_is_retired_not_a_crash():
    # a bench.json whose rows repeat a config (a merge done twice, a hand-edited file) must not
    # count it twice (configs 15 of 12, the geomean weighting it double); a row that is not a
    # mapping or records a tolerance that is not a number is retired (counted), not a traceback
    # in kept_bench / validity / summary
    from tileport.gpu import kept as tp_kept

    tol = {"rtol": 0.0, "atol": 0.0}
    perf = {("k", "f16-T1", "64x128"): tol, ("k", "f16-T1", "128x128"): tol}
    a = {"kernel": "k", "variant": "f16-T1", "shape": "64x128", "rtol": 0.0, "atol": 0.0, "ratio": 1.0}
    b = {**a, "shape": "128x128"}
    again = {**a, "ratio": 2.0}
    bad_tol = {**b, "rtol": "abc"}
    assert tp_kept.split_rows([a, b, again, "x", None, bad_tol], perf) == ([a, b], [again, "x", None, bad_tol])


@no_gpu_here
@pytest.mark.parametrize("rows", ["dup", "not_a_list", "bad_row"])
def test_a_bench_json_with_repeated_or_malformed_rows_adds_up(tmp_path, rows):
    import json

    from tileport.report import summary as tp_summary

    results, op_dir = measured_tree(tmp_path)
    p = results / "relu" / "bench.json"
    doc = json.loads(p.read_text())
    d = doc["details"]
    d["rows"] = {"dup": d["rows"] + d["rows"][:3], "not_a_list": {"a": 1},
                 "bad_row": d["rows"] + ["x", {**d["rows"][0], "atol": "1e-3?"}]}[rows]
    p.write_text(json.dumps(doc))
    held, _ = Kept(results, "relu", op_dir).bench(p)
    k = held["details"]
    assert k["configs"] + k["configs_pending"] == k["configs_total"] == 12
    assert k["retired_rows"] == {"dup": 3, "not_a_list": 1, "bad_row": 2}[rows]
    ops = {x["op"]: x for x in tp_summary.ops_rows(results, ["relu"])}
    assert ops["relu"]["configs"] + ops["relu"]["configs_pending"] == 12


def test_validity_says_a_corrupt_verdict_is_unreadable_not_missing(tmp_path):
    from tileport.gpu import kept as tp_kept

    results, op_dir = measured_tree(tmp_path)
    p = results / "relu" / "bench.json"
    p.write_text(p.read_text()[:200])
    s = tp_kept.status(results, "relu", op_dir)
    assert s["bench"].startswith("unreadable") and "bench.json" in s["bench"], s["bench"]
    (results / "relu" / "test.json").unlink()
    assert tp_kept.status(results, "relu", op_dir)["test"] == "missing"


def test_pending_only_does_not_pass_off_rows_of_another_device_as_this_runs(tmp_path, monkeypatch):
    import json

    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    doc = json.loads((r / "bench.json").read_text())
    doc["details"]["env"] = {"device": "NVIDIA H100 80GB HBM3"}
    (r / "bench.json").write_text(json.dumps(doc))
    edit(op_dir, PERF, "perf_shapes: [[16777216], [67108864], [134217728]]")
    timed = []
    fake_gpu(monkeypatch, timed)
    monkeypatch.setattr(bench.harness, "env_versions", lambda: {"device": "NVIDIA H200"})
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", pending_only=True)
    # every config is timed again here: the merged verdict has one env, one provenance, one device
    assert len(timed) == 18 and d["details"]["timed_now"] == 18 and "H100" not in json.dumps(d["details"])
    assert d["details"]["env"] == {"device": "NVIDIA H200"}
    # the same device: only the pending configs are timed
    timed.clear()
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", pending_only=True)
    assert timed == [] and d["details"]["configs"] == 18


def test_a_port_error_caused_by_the_references_cuda_fault_is_not_the_ports():
    # the cuTile Python reference runs first (check_call); its illegal address is sticky, so the
    # port's launch fails with a CUDA error too: the port never ran, no kernel writer can act
    r = {"kernel": "k", "variant": "f16-T1", "shape": [64],
         "ref": {"ok": False, "error": "RuntimeError: CUDA error: an illegal memory access was encountered",
                 "fail_class": "env", "cuda_error": True},
         "port": {"ok": False, "error": "FfiError: CUDA_ERROR_ILLEGAL_ADDRESS", "fail_class": "kernel",
                  "cuda_error": True}}
    v = gpu_test.verdict_of("op", [r], writers={"k": "translator"})
    assert (v.verdict, v.owner, v.fail_class) == ("FAIL", "manifest", None)
    assert "reference faulted first" in v.summary
    # the port's own fault (the reference ran clean) stays the port writer's
    r["ref"] = {"ok": True}
    v = gpu_test.verdict_of("op", [r], writers={"k": "translator"})
    assert (v.owner, v.fail_class) == ("tool", "kernel")


def test_an_old_verdict_without_git_history_is_said_unproven_not_stale(tmp_path):
    """A GPU bundle without .git holding verdicts written before test_inputs_sha: validity cannot
    prove them (no manifest history), and must say so and how to fix it (--stamp in the checkout),
    not call them stale (which sends the reader to re-measure)."""
    from tileport.gpu import kept as tp_kept

    results, op_dir = measured_tree(tmp_path, legacy=True)
    edit(op_dir, PERF, "perf_shapes: [[16777216], [67108864], [134217728]]")     # not a git checkout
    tp_kept._LEGACY.clear()
    s = tp_kept.status(results, "relu", op_dir)
    for name in ("test", "bench"):
        assert s[name].startswith("unproven") and "--stamp" in s[name], s[name]
    edit(op_dir, "f32: {rtol: 0.0, atol: 0.0}", "f32: {rtol: 0.0, atol: 1.0e-6}")
    assert tp_kept.status(results, "relu", op_dir)["test"].startswith("unproven")    # still unknowable here


def test_the_benchmarks_first_calls_name_the_side_that_failed():
    from tileport.gpu import bench

    seen = []

    def boom():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    with pytest.raises(bench.SideFailed) as e:
        bench.first_calls([("ref", boom), ("port", lambda: seen.append("port"))], sync=lambda: None)
    assert e.value.side == "ref" and "illegal memory access" in str(e.value) and seen == []


@pytest.mark.parametrize("side,owner,fail_class", [("ref", "manifest", None), ("port", "tool", "kernel"),
                                                   ("torch", "env", "env")])
def test_a_perf_config_the_reference_cannot_run_is_not_the_translators(tmp_path, monkeypatch, side, owner,
                                                                      fail_class):
    """bench.measure's untimed first calls run the reference first: its CUDA fault at a perf shape
    (a TileGym kernel past its own index range at an LLM size) was classed as the port's (kernel:
    owner tool, routed to the kernel writer). The side that failed decides: the reference's is
    the manifest's (that perf shape is not one the kernel runs), PyTorch's the environment's."""
    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    timed = []
    fake_gpu(monkeypatch, timed)

    def measure(c, cfg, tol, **kw):
        raise bench.SideFailed(side, RuntimeError("CUDA error: an illegal memory access was encountered"))

    monkeypatch.setattr(bench, "measure", measure)
    write(Verdict(stage="write_kernel", op="relu", verdict="PASS", summary="s", details={"backend": "translator"}),
          r / "write_kernel" / "relu_kernel.json")
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json")
    row = d["details"]["rows"][0]
    assert row["error_class"] == (fail_class or "manifest") and side_word(side) in row["error"]
    if side == "ref":
        # that config's finding (BLOCKED, owner manifest), as a config the port cannot launch is, not
        # the operator's FAIL (issue 33); its CUDA fault lost the context: the other 11 are pending
        assert (d["verdict"], d.get("owner"), d.get("fail_class")) == ("NOT_RUN", None, None)
        assert [(b["shape"], b["owner"]) for b in d["details"]["blocked_configs"]] == [("16777216", owner)]
        assert row["blocked_side"] == "ref" and d["details"]["configs_pending"] == 11
        assert "the cuTile Python reference cannot run this config" in d["summary"]
    else:
        assert (d["verdict"], d.get("owner"), d.get("fail_class")) == ("FAIL", owner, fail_class)


def side_word(side):
    return {"ref": "cuTile Python reference", "port": "port", "torch": "PyTorch"}[side]


def test_the_benchmark_times_the_variants_a_faithful_ref_defect_test_names(tmp_path, monkeypatch):
    """gpu_test FAITHFUL_REF_DEFECT (the port agrees with a reference whose defect the manifest
    declares, tileport.model.defects): the port is faithful, so its REF_DEFECT variants are timed like
    PASS ones; FAIL ones are not."""
    import json

    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    doc = json.loads((r / "test.json").read_text())
    vs = doc["details"]["variants"]
    keys = sorted(vs)
    vs[keys[0]], vs[keys[1]] = "REF_DEFECT", "FAIL"
    doc["verdict"], doc["owner"] = "FAITHFUL_REF_DEFECT", "kernel"
    (r / "test.json").write_text(json.dumps(doc))
    timed = []
    fake_gpu(monkeypatch, timed)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json")
    got = {f"{k}/{v}" for k, v, _ in timed}
    assert keys[0] in got and keys[1] not in got and len(got) == len(keys) - 1
    assert d["details"]["not_benchmarked"] == {keys[1]: "functional test FAIL"}


@pytest.mark.parametrize("value", ["nan", "-1", "-inf", "soon"])
def test_a_budget_that_is_nan_negative_or_no_number_is_refused_not_ignored(value, capsys):
    # NaN compares false with everything: the budget would silently never stop the loop
    from tileport.gpu import bench

    with pytest.raises(SystemExit) as exc:
        bench.main(["--op", "relu", f"--budget-s={value}"])
    assert exc.value.code == 2 and f"--budget-s {value}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="budget"):
        bench.run("relu", "operators/relu", "results", "x.csv", "x.json", budget_s=float(value)
              if value != "soon" else value)
    assert bench.budget_seconds("inf") == float("inf") and bench.budget_seconds("0") == 0.0


def test_a_sigterm_between_two_configs_stops_the_loop_too(tmp_path, monkeypatch):
    # the handler raises wherever the loop is: between configs (the budget check, the kept-row
    # lookup) it must stop the loop as inside one, not escape run() and lose every timed row
    import os
    import signal

    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    timed = []
    fake_gpu(monkeypatch, timed)
    clock, calls = bench.time.monotonic, []

    def monotonic():
        # after the third config: its own end (1), then the fourth's budget check (2) gets it
        if len(timed) == 3:
            calls.append(1)
            if len(calls) == 2:
                os.kill(os.getpid(), signal.SIGTERM)
        return clock()

    monkeypatch.setattr(bench.time, "monotonic", monotonic)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", budget_s=1e9)
    det = d["details"]
    assert (len(timed), det["configs"], det["configs_pending"]) == (3, 12, 0) and "SIGTERM" in det["stopped"]
    assert (det["timed_now"], det["kept_after_stop"]["configs"]) == (3, 9)
    assert signal.getsignal(signal.SIGTERM) is not bench._stop_on_sigterm


def test_a_bad_rust_marshal_setting_is_the_environments_error_not_the_hosts(tmp_path, monkeypatch):
    # HostLibrary refuses TILEPORT_RUST_MARSHAL=false (ffi.rust_marshal_env): gpu_test's ERROR must
    # route to env (fix the setting), not to the host builder (a rebuild would not help)
    from tileport.host import ffi

    monkeypatch.setattr(gpu_test, "gpu_gate", lambda *a, **k: None)
    monkeypatch.setattr(gpu_test, "library_for", lambda *a, **k: ("lib", None))

    def ctx(*a, **k):
        monkeypatch.setenv("TILEPORT_RUST_MARSHAL", "false")
        ffi.rust_marshal_env()

    monkeypatch.setattr(gpu_test, "OpContext", ctx)
    d = gpu_test.run("relu", tmp_path, tmp_path, tmp_path / "test.json")
    assert (d["verdict"], d["owner"], d["fail_class"]) == ("ERROR", "env", "env")
    assert "TILEPORT_RUST_MARSHAL='false'" in d["summary"]

    def lib_error(*a, **k):
        raise ffi.FfiError("*", "dlopen", 0, "cannot load x.so")

    monkeypatch.setattr(gpu_test, "OpContext", lib_error)
    d = gpu_test.run("relu", tmp_path, tmp_path, tmp_path / "test.json")
    assert (d["verdict"], d["owner"]) == ("ERROR", "host")


def test_a_config_the_reference_cannot_launch_is_that_configs_finding_the_rest_are_timed(tmp_path, monkeypatch):
    """The reference's first call raising at one perf config (no CUDA fault: the context lives)
    failed the whole operator, owner manifest, while a config the port cannot launch is BLOCKED per
    config. Now it is BLOCKED per config too (owner manifest), and the other 11 configs are timed
    and folded; its kept row is not timed again by --pending-only (a property of the inputs)."""
    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    timed = []
    fake_gpu(monkeypatch, timed)
    fake = bench.measure

    def measure(c, cfg, tol, **kw):
        if c.variant.id == "f32-TILE2048" and c.shape == (16777216,):
            raise bench.SideFailed("ref", ValueError("grid (65536, 1, 1) exceeds the kernel's limit"))
        return fake(c, cfg, tol, **kw)

    monkeypatch.setattr(bench, "measure", measure)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json")
    assert (d["verdict"], d.get("owner"), d["details"]["configs"], d["details"]["configs_pending"]) == \
        ("DONE", None, 11, 0)
    (b,) = d["details"]["blocked_configs"]
    assert (b["variant"], b["shape"], b["owner"]) == ("f32-TILE2048", "16777216", "manifest")
    assert "grid (65536, 1, 1)" in b["evidence"] and d["details"]["failed_variants"] == []
    assert "1 config(s) BLOCKED" in d["summary"]
    timed.clear()
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", pending_only=True)
    assert timed == [] and d["details"]["blocked_configs"][0]["owner"] == "manifest"


def test_a_kept_row_timed_under_the_floor_is_named_and_timed_again(tmp_path, monkeypatch):
    """A kept bench.json whose one row has a port time of 0.002 µs (written before the benchmark
    judged plausibility): read as it stands (Kept.reconcile), it is excluded and named, marked
    as the benchmark marks one now, so the summary's ALL row leaves it out; --pending-only times it
    again (and only it)."""
    import json

    from tileport.gpu import bench
    from tileport.gpu.kept import Kept
    from tileport.report import summary as tp_summary

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    doc = json.loads((r / "bench.json").read_text())
    odd = doc["details"]["rows"][3]
    odd.update(port_us=0.002, ratio=odd["ref_us"] / 0.002)
    (r / "bench.json").write_text(json.dumps(doc))
    k, _ = Kept(results, "relu", op_dir).bench()
    assert (k["verdict"], k["details"]["configs"], k["details"]["geomean_ratio"]) == ("DONE", 11, 1.0)
    assert [(x["variant"], x["shape"]) for x in k["details"]["implausible_configs"]] == [(odd["variant"], odd["shape"])]
    marked = k["details"]["rows"][3]
    assert marked["error"].startswith("implausible device time: port 0.002 µs") and marked["implausible"]
    ops = {x["op"]: x for x in tp_summary.ops_rows(results, ["relu"])}
    assert (ops["relu"]["configs"], ops["ALL"]["configs"], ops["ALL"]["geomean_ratio"]) == (11, 11, "1.000")
    timed = []
    fake_gpu(monkeypatch, timed)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", pending_only=True)
    assert timed == [(odd["kernel"], odd["variant"], odd["shape"])]
    assert (d["details"]["configs"], "implausible_configs" in d["details"]) == (12, False)


def test_a_corrupt_test_json_blocks_the_benchmark_naming_the_file_and_the_environment(tmp_path, monkeypatch):
    """A half-copied results/<op>/test.json read as missing: bench said BLOCKED, owner tool ("run
    gpu_test first"). It is unreadable: the file, the parse error, owner env (the copy)."""
    from tileport.gpu import bench

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    (r / "test.json").write_text((r / "test.json").read_text()[:150])
    fake_gpu(monkeypatch, [])
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json")
    assert (d["verdict"], d["owner"], d["fail_class"]) == ("BLOCKED", "env", "env")
    assert "unreadable verdict file" in d["summary"] and str(r / "test.json") in d["summary"]
    assert "not JSON" in d["summary"]


# -- error scales (issue 35) --------------------------------------------------------------------------

def test_check_call_judges_each_side_and_the_port_against_the_reference_with_the_error_scale(monkeypatch):
    """lg_modulated_rms_norm's failure mode on the CPU: the port one f16 ulp of x rstd (times
    W (1 + scale)) from reference.py and from the cuTile Python reference at an output that
    cancels; with the reference's error scale both pass and the port matches the reference."""
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    y = torch.tensor([-0.1339111328125, 0.75])
    scaled = harness.Expected([y], [torch.tensor([1.5, 0.75])])
    outs = {"ref": [torch.tensor([-0.1350097656250, 0.75])], "port": [torch.tensor([-0.1328125, 0.75])]}

    def call(exp):
        return SimpleNamespace(kernel="k", variant=SimpleNamespace(id="f16-T1"), shape=(2,), grid=(1, 1, 1),
                               ref=lambda: None, port=lambda: None, outputs=outs, expected=lambda: exp)
    tol = {"rtol": 2.0e-3, "atol": 2 ** -12}
    r = gpu_test.check_call(call(scaled), tol)
    assert r["ref"]["ok"] and r["port"]["ok"] and r["port_matches_ref"] and not r["bitwise_equal"]
    r = gpu_test.check_call(call(harness.Expected.plain([y])), tol)
    assert not r["ref"]["ok"] and not r["port"]["ok"] and not r["port_matches_ref"]
    assert r["port"]["worst"]["allowed"] == pytest.approx(2 ** -12 + 2.0e-3 * 0.1339111328125)
    outs["port"] = [torch.tensor([-0.1339111328125, 0.75 + 0.01])]     # past the scale too: the port's fault
    r = gpu_test.check_call(call(scaled), tol)
    assert r["ref"]["ok"] and not r["port"]["ok"] and not r["port_matches_ref"]
    assert r["port"]["worst"] == {"index": [1], "actual": 0.7599999904632568, "expected": 0.75,
                                  "allowed": pytest.approx(2 ** -12 + 2.0e-3 * 0.75), "scale": 0.75}
    assert gpu_test.verdict_of("op", [r]).verdict == "FAIL"


def test_a_reference_that_breaks_its_error_scale_contract_is_the_manifests_error(tmp_path, monkeypatch):
    """check_call raises ManifestValueError (harness.split_expected) where reference.py's return
    value disagrees with the manifest's error_scale: gpu_test writes ERROR, owner manifest, with
    the message naming the file and key, not a traceback."""
    _one_fake_case(monkeypatch)
    msg = ("operators/op/manifest.yaml:40: key 'kernels/k/error_scale': reference.py's reference() returned "
           "2 tensor(s); the manifest declares an error scale for Y, ...")

    def check_call(c, tol):
        raise harness.ManifestValueError(msg)
    monkeypatch.setattr(gpu_test, "check_call", check_call)
    make_op(tmp_path / "results", "op")
    d = gpu_test.run("op", tmp_path / "op", tmp_path / "results", tmp_path / "t.json", gpu="auto")
    assert (d["verdict"], d["owner"]) == ("ERROR", "manifest") and d["summary"] == msg
    assert read(tmp_path / "t.json")["verdict"] == "ERROR"
