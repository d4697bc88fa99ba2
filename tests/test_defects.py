"""Known defects of the user's kernel (manifest ``known_defects``, tileport.model.defects): the manifest's
checks, the test-relevant hash, and what gpu_test, bench, the GPU route, summary.csv, the report
and the coverage table make of a variant whose port agrees with a declared-defective reference.
Unit tests on small manifests and synthetic rows: no GPU, no build."""
from pathlib import Path

import pytest
from manifest_ops import make_op, pick_manifest

from tileport.gpu import kept
from tileport.gpu import test as gpu_test
from tileport.model import defects as tp_defects
from tileport.model import manifest as tp_manifest

REPO = Path(__file__).resolve().parent.parent

ENTRY = """known_defects:
  - kernel: pick
    line: 16
    variants: {constexprs: {NEG: true}}
    effect: the gain is applied twice
    evidence: an emulation
"""


def _op(tmp_path, entry=ENTRY, name="pick"):
    return make_op(tmp_path / name, name, manifest=pick_manifest(name) + entry)


def test_a_declared_defect_loads_and_covers_the_variants_its_selector_names(tmp_path):
    man = tp_manifest.load(_op(tmp_path) / "manifest.yaml")
    (d,) = tp_manifest.declared_defects(man)
    assert d.kernel == "pick" and d.line == 16 and d.file.endswith("operators/pick/kernel.py")
    assert d.variants == ("f16-TILE128-LATm1-bias1em06-NEGtrue", "bf16-TILE128-LATm1-bias1em06-NEGtrue")
    assert d.manifest_line == pick_manifest().count("\n") + 2 and d.label.startswith("known_defects[0] (")
    # the other selectors: all, a list of ids, dtypes
    for sel, n in (("all", 3), ("[f32-TILE32-LAT2-bias0p0-NEGfalse-occupancy2]", 1), ("{dtypes: [bf16]}", 1)):
        man = tp_manifest.load(_op(tmp_path / sel[:3], ENTRY.replace("{constexprs: {NEG: true}}", sel))
                               / "manifest.yaml")
        assert len(tp_manifest.declared_defects(man)[0].variants) == n, sel


@pytest.mark.parametrize("old,new,msg", [
    ("kernel: pick", "kernel: pik",
     r"key 'known_defects/0/kernel': 'pik' is not a kernel of this manifest \(did you mean pick\?\)"),
    ("{constexprs: {NEG: true}}", "[f16-TILE128]", r"'f16-TILE128' is not a variant of pick"),
    ("{constexprs: {NEG: true}}", "{constexprs: {NEGATE: true}}",
     r"'NEGATE' is not a constexpr of pick's variants \(did you mean NEG\?\)"),
    ("{constexprs: {NEG: true}}", "{constexprs: {NEG: 1}}", r"selects no variant of pick"),
    ("{constexprs: {NEG: true}}", "{dtypes: [f8e5m2]}", r"dtype 'f8e5m2' is not a dtype of pick's variants"),
    ("{constexprs: {NEG: true}}", "some", r"key 'known_defects/0/variants'"),
    ("line: 16", "line: 99", r"key 'known_defects/0/line': line 99 is past the end of .*kernel.py \(29 lines\)"),
    ("line: 16", "line: 3", r"line 3 of .*kernel.py is outside every function of it \(pick is lines 10-20\)"),
    ("line: 16", "line: 0", r"key 'known_defects/0/line'"),
    ("    evidence: an emulation\n", "", r"key 'known_defects/0': one known defect lacks the key 'evidence'"),
    ("    effect:", "    efect:", r"'efect' is not a key of one known defect"),
])
def test_a_bad_declaration_is_a_load_error_naming_file_line_and_cause(tmp_path, old, new, msg):
    text = ENTRY.replace(old, new)
    assert text != ENTRY
    d = _op(tmp_path, text)
    with pytest.raises(tp_manifest.ManifestError, match=r"manifest.yaml:\d+: .*" + msg):
        tp_manifest.load(d / "manifest.yaml")


def test_the_tileGym_declarations_load_against_the_wheel_and_cover_the_failing_variants():
    swa = tp_manifest.load(REPO / "operators" / "tg_swa_attention" / "manifest.yaml")
    (d,) = tp_manifest.declared_defects(swa)
    assert d.where == "tilegym/ops/cutile/experimental/swa_attention.py:110"
    assert d.variants == ("f16-TILE_M64-TILE_N128-TILE_D64-CAUSALtrue", "f16-TILE_M64-TILE_N128-TILE_D64-CAUSALfalse")
    var = tp_manifest.load(REPO / "operators" / "tg_attention_variant" / "manifest.yaml")
    (d,) = tp_manifest.declared_defects(var)
    assert d.where == "tilegym/ops/cutile/attention_variant.py:370" and d.kernel == "_fmha_variant_kernel_nsbd"
    assert len(d.variants) == 4


def test_the_declaration_enters_the_test_hash_but_its_prose_does_not(tmp_path):
    d = _op(tmp_path)
    base = kept.tested_inputs_sha(d)
    text = (d / "manifest.yaml").read_text()
    (d / "manifest.yaml").write_text(text.replace("the gain is applied twice", "gain twice (L16)")
                                     .replace("an emulation", "the H200"))
    assert kept.tested_inputs_sha(d) == base
    for old, new in (("line: 16", "line: 15"), ("{constexprs: {NEG: true}}", "all")):
        (d / "manifest.yaml").write_text(text.replace(old, new))
        assert kept.tested_inputs_sha(d) != base, old
    (d / "manifest.yaml").write_text(pick_manifest())
    assert kept.tested_inputs_sha(d) != base


# -- gpu_test ----------------------------------------------------------------------------------
DEF = tp_defects.Defect(0, "operators/x/manifest.yaml", 42, "k", "tilegym/ops/cutile/x.py", 370,
               ("f16-T1",), "keys >= 128 score 0", "emulation")
MISS = {"ok": False, "max_abs": 0.7, "mismatches": 10, "numel": 100,
        "worst": {"index": [3], "actual": 0.01, "expected": -0.7, "allowed": 0.017}}


def row(variant="f16-T1", same=True, ref_ok=False, port_ok=False):
    r = {"kernel": "k", "variant": variant, "shape": [64], "launches": {"ref": 1, "port": 1, "torch": 3},
         "ref": {"ok": True, "mismatches": 0} if ref_ok else dict(MISS),
         "port": {"ok": True, "mismatches": 0} if port_ok else dict(MISS)}
    if not ref_ok and not port_ok:
        r.update(bitwise_equal=same, port_matches_ref=same)
    return r


def test_a_covered_same_miss_is_ref_defect_and_the_operator_faithful_owner_kernel():
    v = gpu_test.verdict_of("op", [row(), row("f16-T2", ref_ok=True, port_ok=True)], writers={"k": "translator"},
                     defects=[DEF])
    assert (v.verdict, v.owner, v.fail_class) == ("FAITHFUL_REF_DEFECT", "kernel", None)
    assert v.details["variants"] == {"k/f16-T1": "REF_DEFECT", "k/f16-T2": "PASS"}
    assert "known_defects[0] (operators/x/manifest.yaml:42)" in v.summary and "x.py:370" in v.summary
    (f,) = [f for f in v.findings if f.owner == "kernel"]
    assert f.severity == "warn" and f.ref == {"file": "tilegym/ops/cutile/x.py", "line": 370}
    assert "manifest.yaml:42" in f.message and "x.py:370" in f.message
    assert v.details["known_defects"]["k/f16-T1"]["line"] == "tilegym/ops/cutile/x.py:370"
    assert not [f for f in v.findings if f.owner == "manifest"] and gpu_test.exit_status(v.to_dict()) == 0


def test_a_port_that_differs_from_a_declared_defective_reference_is_still_the_ports():
    v = gpu_test.verdict_of("op", [row(same=False)], writers={"k": "translator"}, defects=[DEF])
    assert (v.verdict, v.owner, v.fail_class) == ("FAIL", "tool", "kernel")
    assert v.details["variants"] == {"k/f16-T1": "FAIL"}
    assert any("known_defects[0]" in f.message and "the port is wrong" in f.message for f in v.findings)
    # a port that misses alone on a covered variant (the reference right there) too
    v = gpu_test.verdict_of("op", [row(ref_ok=True)], writers={"k": "translator"}, defects=[DEF])
    assert (v.verdict, v.owner) == ("FAIL", "tool")


def test_an_undeclared_same_miss_stays_the_manifests():
    v = gpu_test.verdict_of("op", [row("f16-T2")], writers={"k": "translator"}, defects=[DEF])
    assert (v.verdict, v.owner, v.fail_class) == ("FAIL", "manifest", None)
    assert gpu_test.verdict_of("op", [row()], writers={"k": "translator"}).owner == "manifest"


def test_a_declared_defect_that_does_not_show_is_a_stale_declaration():
    v = gpu_test.verdict_of("op", [row(ref_ok=True, port_ok=True)], defects=[DEF])
    assert v.verdict == "ALL_PASS" and "stale" in v.summary
    (f,) = v.findings
    assert (f.owner, f.severity) == ("manifest", "warn") and "operators/x/manifest.yaml:42" in f.message
    assert v.details["stale_defects"][0]["variant"] == "f16-T1"


def test_a_ref_defect_variant_next_to_a_failing_one_leaves_the_operator_failing():
    bad = {**row("f16-T2", ref_ok=True), "port": dict(MISS)}
    v = gpu_test.verdict_of("op", [row(), bad], writers={"k": "translator"}, defects=[DEF])
    assert (v.verdict, v.owner) == ("FAIL", "tool")
    assert v.details["variants"] == {"k/f16-T1": "REF_DEFECT", "k/f16-T2": "FAIL"}


# -- bench ----------------------------------------------------------------------------------
def brow_miss(same=True, variant="f16-T1"):
    from test_bench import brow

    return {**brow(1.0, kernel="k", variant=variant, shape="64"), "checked": "MISMATCH", "ref_checked": "MISMATCH",
            "port_matches_ref": same, "port_mismatch": "port output mismatch: 10 of 100"}


def test_the_benchmark_treats_a_declared_defect_as_gpu_test_does():
    from tileport.gpu import bench

    v = bench.fold("op", [brow_miss()], 0.95, writers={"k": "translator"}, defects=[DEF])
    assert v.verdict == "DONE" and "known defect" in v.summary
    assert v.details["known_defect_configs"][0]["declared"] == DEF.label
    assert [f.owner for f in v.findings] == ["kernel"]
    v = bench.fold("op", [brow_miss()], 0.95, writers={"k": "translator"})
    assert (v.verdict, v.owner) == ("FAIL", "manifest")
    v = bench.fold("op", [brow_miss(same=False)], 0.95, writers={"k": "translator"}, defects=[DEF])
    assert (v.verdict, v.owner, v.fail_class) == ("FAIL", "tool", "kernel")


def test_the_route_summary_report_and_coverage_read_the_faithful_verdict():
    from tileport.flow import gpu_round
    from tileport.report import coverage, summary
    from tileport.report import data as RD

    test = gpu_test.verdict_of("op", [row()], defects=[DEF]).to_dict()
    d = gpu_round.decide_gpu(test, {"verdict": "DONE", "summary": "ok"}, {}, {"k": 1}, 1, writer="translator",
                     writer_cap=2)
    assert d["next"] == "accept" and "FAITHFUL_REF_DEFECT" in d["reason"]
    assert summary._gpu_columns(test, None, "k/f16-T1")["test"] == "REF_DEFECT"
    assert RD.verdict_class("gpu_test", "REF_DEFECT", 0.95) == "notes"
    cpu = {st: "PASS" for st in coverage.CPU_STAGES}
    assert coverage._stop({**cpu, "test": "REF_DEFECT", "ratio": "1.0"})[1] == "bench"
    assert gpu_test.MEASURED[:2] == ("ALL_PASS", "FAITHFUL_REF_DEFECT")


def test_without_the_wheel_the_line_is_checked_against_the_imported_line_map(tmp_path, monkeypatch):
    """A GPU node has results/ but not the TileGym wheel: the declared line must be one the
    imported kernel.py holds (its line map); with neither, the line cannot be checked there."""
    import json
    import shutil

    from tileport.core import wheels

    def no_wheel(*a, **k):
        raise wheels.ImportFailed("no installed distribution provides the package 'tilegym'")

    monkeypatch.setattr(tp_defects, "find_wheel", no_wheel)
    op = tmp_path / "operators" / "tg_attention_variant"
    shutil.copytree(REPO / "operators" / "tg_attention_variant", op)
    tp_manifest.load(op / "manifest.yaml")                            # no wheel, no map: not checkable here
    src = tmp_path / "results" / "tg_attention_variant" / "src"
    src.mkdir(parents=True)
    lines = {str(i): f"tilegym/ops/cutile/attention_variant.py:{360 + i}" for i in range(1, 20)}
    (src / "kernel.py.map.json").write_text(json.dumps({"lines": lines}))
    tp_manifest.load(op / "manifest.yaml")                            # line 370 is held
    (op / "manifest.yaml").write_text((op / "manifest.yaml").read_text().replace("line: 370", "line: 12"))
    with pytest.raises(tp_manifest.ManifestError, match=r"key 'known_defects/0/line': line 12 of "
                                              r"tilegym/ops/cutile/attention_variant.py is not among the lines"):
        tp_manifest.load(op / "manifest.yaml")


@pytest.mark.parametrize("old,new,msg", [
    ("line: 16", "line: 16.0",
     r"key 'known_defects/0/line': .*must be an integer, not the number 16.0; write line: 16$"),
    ("line: 16", "line: 26", r"line 26 of .*kernel.py is in copy_all, which pick does not call \(it calls _scaled\)"),
    ("{constexprs: {NEG: true}}", "{constexprs: {TILE: 128.0}}", r"selects no variant of pick"),
    ("effect: the gain is applied twice", "effect: ' '", r"key 'known_defects/0/effect'"),
    (ENTRY, ENTRY + ENTRY[len("known_defects:\n"):], r"key 'known_defects/1': repeats known_defects\[0\]"),
])
def test_a_declaration_coerced_repeated_or_pointing_at_no_code_of_the_kernel_is_an_error(tmp_path, old, new, msg):
    """Nothing silently reinterpreted: a float line, a float selector for an int constexpr, blank
    prose, a repeated entry, a blank line or a line of a function the kernel never calls."""
    text = ENTRY.replace(old, new)
    assert text != ENTRY
    d = _op(tmp_path, text)
    with pytest.raises(tp_manifest.ManifestError, match=r"manifest.yaml:\d+: .*" + msg):
        tp_manifest.load(d / "manifest.yaml")
    # a line of a helper the kernel calls is fine
    tp_manifest.load(_op(tmp_path / "ok", ENTRY.replace("line: 16", "line: 7")) / "manifest.yaml")


def test_a_line_that_is_a_comment_or_blank_inside_the_kernel_is_an_error(tmp_path):
    from manifest_ops import PICK_KERNEL

    kernel = PICK_KERNEL.replace("    b = ct.bid(0)\n", "    # the block\n\n    b = ct.bid(0)\n")
    for ln, what in ((13, "a comment"), (14, "blank")):
        d = make_op(tmp_path / str(ln), "pick", kernel,
                    pick_manifest("pick") + ENTRY.replace("line: 16", f"line: {ln}"))
        with pytest.raises(tp_manifest.ManifestError, match=rf"manifest.yaml:\d+: key 'known_defects/0/line': "
                                                            rf"line {ln} of .*kernel.py is {what}; give the line "
                                                            rf"of pick's code"):
            tp_manifest.load(d / "manifest.yaml")


@pytest.mark.parametrize("sep", ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_a_line_is_counted_as_python_counts_it_not_split_on_other_separators(tmp_path, sep):
    """Python's tokenizer and ast (and cuTile's locations) break lines at \\n, \\r\\n and \\r only: a
    form feed or \\u2028 in a comment does not shift the lines after it."""
    from manifest_ops import PICK_KERNEL

    kernel = PICK_KERNEL.replace("    b = ct.bid(0)\n", f"    # one{sep}two\n    # the block\n    b = ct.bid(0)\n")
    ok = make_op(tmp_path / "ok", "pick", kernel, pick_manifest("pick") + ENTRY.replace("line: 16", "line: 15"))
    man = tp_manifest.load(ok / "manifest.yaml")                      # line 15 is `b = ct.bid(0)`
    assert tp_manifest.declared_defects(man)[0].line == 15
    bad = make_op(tmp_path / "bad", "pick", kernel, pick_manifest("pick") + ENTRY.replace("line: 16", "line: 14"))
    with pytest.raises(tp_manifest.ManifestError, match=r"key 'known_defects/0/line': line 14 of .*kernel.py is "
                                                        r"a comment; give the line of pick's code"):
        tp_manifest.load(bad / "manifest.yaml")
    n = kernel.count("\n")
    with pytest.raises(tp_manifest.ManifestError, match=rf"line {n + 1} is past the end of .*kernel.py \({n} lines\)"):
        tp_manifest.load(make_op(tmp_path / "end", "pick", kernel, pick_manifest("pick")
                                 + ENTRY.replace("line: 16", f"line: {n + 1}")) / "manifest.yaml")
