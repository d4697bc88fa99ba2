"""The mutation study (issue 36): the generator, the grep-count detector, the study of a real
small kernel (relu, through the workflow on the CPU) and its report."""
import json
import shutil
import subprocess
import sys

import pytest
from conftest import copy_workflow

from tileport.cpu import mutate, mutation
from tileport.gpu import mutation_test
from tileport.host import mutants as host_mutants
from tileport.host.ffi import HostLibrary
from tileport.ir_diff import grep_count
from tileport.report import mutation as report

PORT = """#[cutile::module]
pub mod port {
    use cutile::core::*;

    #[cutile::entry()]
    pub unsafe fn k__f16<E: ElementType, const T: i32>(
        x: &Tensor<E, {[-1]}>,
    ) {
        let __pid: (i32, i32, i32) = get_tile_block_id();
        let __t3: Tile<i32, {[]}> = divi(__t1, __t2, rounding::PositiveInf);
        for k in 0i32..n {
            let a: Tile<E, {[T]}> = load_view_tko(&__v, [k], ordering::Weak, scope::TileBlock, None, tma::Enabled);
            let __t9: Tile<f32, {[T, T]}> = mma(a, b, acc);
        }
        let y: Tile<f32, {[T]}> = fma(a, b, c, rounding::NearestEven, ftz::Disabled);
        let z: Tile<f32, {[T]}> = constant(0.044715f32, shape![T]);
        let q_t: Tile<E, {[T, T]}> = permute(q, const_array![1, 0]);
    }

}
"""


def test_entries_and_candidates_keep_every_other_line():
    assert mutate.entries(PORT) == {"k__f16": (6, 18)}
    cands = mutate.candidates(PORT)
    kinds = {c.kind for c in cands}
    assert {"cdiv_floor", "int_div_trunc", "loop_bound", "tma_hint", "latency_hint", "operand_swap",
            "fma_split", "constant_digit", "index_offset", "transpose"} <= kinds
    for c in cands:
        out = mutate.apply(PORT, c)
        assert out != PORT and len(out.split("\n")) == len(PORT.split("\n"))
        assert [a for a, b in zip(out.split("\n"), PORT.split("\n"), strict=True) if a != b] == [c.after]
    assert any(c.after.strip() == "let q_t: Tile<E, {[T, T]}> = q;" for c in cands)
    digit = next(c for c in cands if c.kind == "constant_digit")
    assert "0.044716f32" in digit.after
    with pytest.raises(ValueError):
        mutate.apply(PORT.replace("rounding::PositiveInf", "rounding::Zero"),
                     next(c for c in cands if c.kind == "cdiv_floor"))


FUSE = """#[cutile::module]
pub mod port {
    #[cutile::entry()]
    pub unsafe fn k<const T: i32>() {
        let p: Tile<f32, {[T]}> = a * b;
        let q: Tile<f32, {[T]}> = c + p;
        let a: Tile<f32, {[T]}> = a.reshape(shape![T]);
        let r: Tile<f32, {[T]}> = p + c;
        let s: Tile<f32, {[T]}> = s * t;
        let u: Tile<f32, {[T]}> = s + c;
        let w: Tile<f32, {[1, T]}> = x * y;
        let v: Tile<f32, {[T]}> = w + c;
    }
}
"""


def test_fma_fuse_fuses_a_product_an_add_reads_as_written():
    """The reverse of fma_split: q = c + p with p = a * b becomes fma(a, b, c); once a is bound
    again (r), or where the product is of its own name (s = s * t) or another tile type (w, v),
    no mutant."""
    got = [m for m in mutate.candidates(FUSE) if m.kind == "fma_fuse"]
    assert [(m.line, m.after.strip()) for m in got] == [
        (6, "let q: Tile<f32, {[T]}> = fma(a, b, c, rounding::NearestEven, ftz::Disabled);")]
    assert "fma_fuse" in mutate.KINDS and got[0].description == "a * b + c fused into one fma"


def test_sampling_is_deterministic_and_bounded():
    cands = mutate.candidates(PORT)
    a = mutate.sample(cands, "k", seed=0, per_kind=1, max_mutants=5)
    assert a == mutate.sample(cands, "k", seed=0, per_kind=1, max_mutants=5)
    assert len(a) == 5 and [m.id for m in a] == ["m001", "m002", "m003", "m004", "m005"]
    assert len(mutate.sample(cands, "k", seed=0, per_kind=9, max_mutants=100)) == len(
        {(c.kind, c.before.strip(), c.after.strip()) for c in cands})


REF_IR = """  %v = make_partition_view %t : partition_view<tile=(1024), padding_value = zero, tensor_view<?xf32>>
  %a, %tok = load_view_tko weak %v[%i] : tile<1024xf32>
  %s = subf %a, %b : tile<1024xf32>
  %r = reduce %s dim=0 identities=[0.000000e+00 : f32] : tile<1024xf32> -> tile<f32>
"""


def test_grep_count_sees_counts_and_attributes_not_dataflow():
    assert grep_count.compare(REF_IR, REF_IR)["verdict"] == "PASS"
    swapped = REF_IR.replace("subf %a, %b", "subf %b, %a")
    assert grep_count.compare(REF_IR, swapped)["verdict"] == "PASS"          # its blind spot
    padded = grep_count.compare(REF_IR, REF_IR.replace("padding_value = zero", "padding_value = neg_inf"))
    assert padded["verdict"] == "FAIL" and padded["differ"]["attr:padding_value=zero"] == [1, 0]
    axis = grep_count.compare(REF_IR, REF_IR.replace("dim=0", "dim=1"))
    assert axis["differ"] == {"attr:dim=0": [1, 0], "attr:dim=1": [0, 1]}
    assert grep_count.counts(REF_IR)["op:load_view_tko"] == 1


def test_without_locations_drops_debug_info_only():
    a = '  %x = addf %a, %b : tile<f32> loc(#loc3)\n#loc3 = loc("k.rs":12:4)\n'
    b = '  %x = addf %a, %b : tile<f32> loc(#loc9)\n#loc9 = loc("k.rs":12:40)\n'
    assert mutation.without_locations(a) == mutation.without_locations(b) == "  %x = addf %a, %b : tile<f32>"
    assert mutation.without_locations(a) != mutation.without_locations(a.replace("addf", "subf"))


@pytest.fixture(scope="module")
def relu_study(tmp_path_factory):
    """relu's CPU stages and its mutation study, run by Snakemake in a copy of the workflow."""
    root = copy_workflow(tmp_path_factory.mktemp("mut"), ["relu"])
    cfg = root / "config.yaml"
    cfg.write_text(cfg.read_text().replace("operators: []", "operators: [relu]"))
    targets = ["results/mutation/relu/relu_kernel.json", "results/mutation/relu/relu_kernel.host.json",
               "results/mutation/relu/relu_kernel.gpu.json"]
    proc = subprocess.run([sys.executable, "-m", "snakemake", *targets, "--cores", "1", "--config", "gpu=off"],
                          cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_relu_study_catches_what_grep_misses_and_flags_no_correct_port(relu_study):
    d = json.loads((relu_study / "results/mutation/relu/relu_kernel.json").read_text())
    det = d["details"]
    assert d["verdict"] in ("PASS", "PASS_WITH_NOTES")
    assert det["false_positives"]["ir_diff"] == [] and det["false_positives"]["runtime_ir"] == []
    by_kind = {m["kind"]: m for m in det["mutants"]}
    # relu's max(x, 0) became min(x, 0): the IR diff fails it, the op counts stay the same
    flip = by_kind["arith_op"]
    assert flip["compiles"] and flip["caught"]["ir_diff"] and flip["caught"]["runtime_ir"]
    assert not flip["caught"]["grep_count"]
    # a speed hint is a note for the IR diff, never a FAIL
    tma = by_kind["tma_hint"]
    assert tma["caught"]["ir_diff"] and not tma["semantic"]
    assert all(e["ir_diff"]["verdict"] != "FAIL" for e in tma["evidence"].values())
    gpu = json.loads((relu_study / "results/mutation/relu/relu_kernel.gpu.json").read_text())
    assert gpu["verdict"] == "NOT_RUN"


def test_a_mutant_rustc_rejects_is_counted_apart(relu_study, monkeypatch, tmp_path):
    monkeypatch.chdir(relu_study)
    bad = ("cast_width", mutate._sub(r"max_tile\((\w+), (\w+)\)", r"max_tile(\1, 1u8)", "a u8 where a tile goes"))
    monkeypatch.setattr(mutate, "OPERATORS", [bad] + mutate.OPERATORS)
    vs = [p.stem for p in sorted((relu_study / "results/relu/ir_diff/relu_kernel").glob("*.json"))]
    d = mutation.run("operators/relu", "relu", "relu_kernel", "results/relu/rust/build.json",
                     "results/relu/ref/relu_kernel", "results/relu/runtime/relu_kernel.json", vs,
                     tmp_path / "m.json", tmp_path / "work", {"max_shapes": 1, "max_variants": 1})
    rej = [m for m in d["details"]["mutants"] if not m["compiles"]]
    assert [m["rejected_by"]["stage"] for m in rej] == ["rustc"] and "caught" not in rej[0]
    assert all(m["compiles"] for m in d["details"]["mutants"] if m is not rej[0])
    assert str(len(d["details"]["mutants"]) - 1) + " compile" in d["summary"]


def test_report_tables_from_the_relu_study(relu_study, tmp_path):
    r = relu_study / "results/mutation/relu"
    agg = report.build([r / "relu_kernel.json"], [r / "relu_kernel.gpu.json"], tmp_path / "s.csv",
                       tmp_path / "s.json", tmp_path / "m.tex", tmp_path / "m.svg")
    assert agg["compiling"] == agg["mutants"] and agg["catch_rate"]["ir_diff"] == 1.0
    assert agg["catch_rate"]["grep_count"] < 1.0 and not agg["gpu_measured"]
    assert agg["false_positive"]["ir_diff"]["rate"] == 0.0
    # relu's reference Tile IR (results/relu/ref/) loads and stores views only: elementwise
    assert agg["per_family"] == {"elementwise": {"kernels": 1, "compiling": agg["compiling"],
                                                 **{k: agg["catch_rate"][k] for k in agg["catch_rate"]}}}
    tex = (tmp_path / "m.tex").read_text()
    assert "grep count" in tex and "not run" in tex and "tab:mutation" in tex
    assert (tmp_path / "m.svg").stat().st_size > 1000


def test_kernel_families_from_the_reference_tile_ir():
    """Issue 36 counts mutants per kernel family: the first of FAMILIES whose ops the text has."""
    assert report.family("%1 = mmaf %a, %b, %c\n%2 = exp2 %1") == "attention"
    assert report.family("%1 = mmaf %a, %b, %c\n%2 = reduce %1") == "matmul"
    assert report.family("%r = reduce %t dim=0\n%e = exp %r") == "reduction"
    assert report.family("%t, %k = load_ptr_tko weak %p") == "gather/scatter"
    assert report.family("%t, %k = load_view_tko weak %v\n%s = maxf %t, %z") == "elementwise"
    assert report.family("%1 = mmaf_like %a") == "elementwise"          # whole op names only


def test_the_mutant_library_exports_every_compiling_mutant(relu_study):
    r = relu_study / "results/mutation/relu"
    study = json.loads((r / "relu_kernel.json").read_text())
    ids = ["m000"] + [m["id"] for m in study["details"]["mutants"] if m["compiles"]]
    host = json.loads((r / "relu_kernel.host.json").read_text())
    assert host["verdict"] == "PASS" and sorted(host["details"]["mutants"]) == ids
    ffi = json.loads((r / "relu_kernel.host/ffi.json").read_text())
    want = {f"tp_relu__{mid}__relu_kernel" for mid in ids}
    assert {f["symbol"] for f in ffi["functions"]} == want
    assert {f["mutant"] for f in ffi["functions"]} == set(ids)
    lib = r / "relu_kernel.host" / host_mutants.LIB
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    names = {ln.split()[-1] for ln in nm.splitlines() if ln.strip()}
    assert want <= names and {w + "__packed" for w in want} <= names
    # each mutant is the operator's port under its own name: its source, one line edited
    m1 = next(m for m in study["details"]["mutants"] if m["compiles"])
    src = (r / "relu_kernel.host/src/ops" / m1["id"] / "relu_kernel.rs").read_text()
    assert m1["after"].strip() in src
    shims = (r / "relu_kernel.host/src/ops" / m1["id"] / "ffi.rs").read_text()
    assert "tp_relu__" + m1["id"] + "__relu_kernel(" in shims
    # ctypes binds every shim of it on the CPU (the CUDA driver loads only at a launch)
    assert set(HostLibrary(lib, [r / "relu_kernel.host/ffi.json"]).shims) == want


def test_a_mutant_the_library_build_rejects_is_counted_not_caught(relu_study, tmp_path):
    r = relu_study / "results/mutation/relu"
    work = tmp_path / "relu_kernel"
    shutil.copytree(r / "relu_kernel", work, ignore=shutil.ignore_patterns("ir", "ir_diff"))
    study = json.loads((r / "relu_kernel.json").read_text())
    bad = [m["id"] for m in study["details"]["mutants"] if m["compiles"]][-1]
    src = work / "crate/src" / f"relu_kernel__{bad}.rs"
    src.write_text(src.read_text() + "\npub fn broken() -> i32 {\n    1u8\n}\n")     # a type error
    d = host_mutants.build("relu", "relu_kernel", r / "relu_kernel.json", work,
                           relu_study / "results/relu/host/ffi.json", tmp_path / "relu_kernel.host",
                           tmp_path / "relu_kernel.host.json")
    assert d["verdict"] == "PASS_WITH_NOTES" and list(d["details"]["rejected"]) == [bad]
    assert d["details"]["rejected"][bad]["stage"] == "cargo build" and bad not in d["details"]["mutants"]
    # the GPU column counts it, never as caught
    plans = mutation_test.plan(study, mutation_test.tp_manifest.load(relu_study / "operators/relu/manifest.yaml"),
                               "relu_kernel", mutation_test.settings_of({}), set(d["details"]["mutants"]))
    recs, _, _ = mutation_test.evaluate([p for p in plans if p["id"] == bad], lambda mid, case: {}, 1e9)
    assert recs[0]["outcome"] == "rejected" and mutation_test.column("rejected") == "MISSED"


def test_the_gpu_column_with_a_fake_launcher_reaches_the_report(relu_study, tmp_path):
    """The runner's logic on relu's real study and mutant library, with a fake launcher standing
    in for the GPU (a test of the bookkeeping, written to tmp_path only: no GPU number)."""
    r = relu_study / "results/mutation/relu"
    study = json.loads((r / "relu_kernel.json").read_text())
    first = next(m["id"] for m in study["details"]["mutants"] if m["compiles"] and m["kind"] == "arith_op")
    offset = next(m["id"] for m in study["details"]["mutants"] if m["compiles"] and m["kind"] == "index_offset")
    seen = []

    def launch(mid, case):
        seen.append((mid, case["on"], tuple(case["shape"])))
        flag = (mid == first) or (mid == offset and case["on"] == "unseen")
        return {"ref": {"ok": True}, "port": {"ok": True}, "port_matches_ref": not flag}

    out = tmp_path / "relu_kernel.gpu.json"
    d = mutation_test.run("relu", "relu_kernel", r / "relu_kernel.json", out, op_dir=relu_study / "operators/relu",
                          results=relu_study / "results", settings={"gpu_max_variants": 1}, launch=launch)
    det = d["details"]
    assert d["verdict"] == "DONE" and det["mutants"][first] == "CAUGHT" and det["mutants"][offset] == "CAUGHT"
    out_of = {x["id"]: x["outcome"] for x in det["records"]}
    assert out_of[first] == "test" and out_of[offset] == "unseen"
    assert sum(v == "MISSED" for v in det["mutants"].values()) == len(det["mutants"]) - 2
    # the test shapes first, then the unseen ones (relu: 8, 1007, 4104), m000 once per case
    assert [s for m, on, s in seen if m == offset] == [(1,), (1000,), (4097,), (8,)]
    assert sum(m == "m000" for m, _, _ in seen) == len({s for _, _, s in seen}) == 6
    agg = report.build([r / "relu_kernel.json"], [out], tmp_path / "s.csv", tmp_path / "s.json",
                       tmp_path / "m.tex", tmp_path / "m.svg")
    assert agg["gpu_measured"] and agg["gpu"]["measured"] == len(det["mutants"])
    assert [x["id"] for x in agg["gpu"]["only_unseen"]] == [offset]
    assert agg["catch_rate"]["gpu_test_shapes"] < agg["catch_rate"]["gpu_test"]
    assert agg["false_positive"]["gpu_test"]["rate"] == 0.0
    # the IR diff catches every relu mutant; the fake numeric test misses the rest
    assert {x["id"] for x in agg["gpu"]["only_ir_not_gpu"]} == {m for m, w in det["mutants"].items() if w == "MISSED"}
    tex = (tmp_path / "m.tex").read_text()
    assert "GPU test, test shapes only" in tex
    # a library built from other mutants than the study's now: BLOCKED, not judged
    stale = json.loads((r / "relu_kernel.host.json").read_text())
    stale["details"]["sources_sha"] = "0" * 64
    (tmp_path / "stale.host.json").write_text(json.dumps(stale))
    b = mutation_test.run("relu", "relu_kernel", r / "relu_kernel.json", tmp_path / "b.json",
                          host_json=tmp_path / "stale.host.json", op_dir=relu_study / "operators/relu", launch=launch)
    assert b["verdict"] == "BLOCKED" and "rebuild" in b["summary"]


def test_the_worker_calls_each_mutant_by_its_own_symbol(relu_study, monkeypatch, capsys):
    """The worker loop on the CPU: the real mutant library bound by ctypes, the call's GPU parts
    (build_call, check_call, reference.py's torch import) stood in for; it answers one tagged
    line per job, by the mutant's own symbol, and exits after a CUDA error."""
    import io

    from tileport.gpu import harness
    from tileport.gpu import test as gpu_test

    r = relu_study / "results"
    monkeypatch.setattr(harness, "load_module", lambda path, name: object())
    monkeypatch.setattr(harness, "build_call", lambda *a, **k: {"symbol": a[9], "shape": a[7]})
    monkeypatch.setattr(harness, "tolerance", lambda man, v, s: {"rtol": 0.0, "atol": 0.0})

    def check_call(c, tol):
        bad = c["symbol"] == "tp_relu__m001__relu_kernel"
        return {"ref": {"ok": True}, "port": {"ok": not bad, "error": "CUDA error: x" if bad else None,
                                              "cuda_error": bad}, "symbol": c["symbol"]}
    monkeypatch.setattr(gpu_test, "check_call", check_call)
    jobs = [{"mutant": "m000", "variant": "f16-TILE1024", "shape": [1000], "on": "test"},
            {"mutant": "m999", "variant": "f16-TILE1024", "shape": [1000], "on": "test"},
            {"mutant": "m001", "variant": "bf16-TILE2048", "shape": [8], "on": "unseen"},
            {"mutant": "m002", "variant": "f16-TILE1024", "shape": [1000], "on": "test"}]
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(json.dumps(j) + "\n" for j in jobs)))
    h = r / "mutation/relu/relu_kernel.host"
    rc = mutation_test.worker({"op": "relu", "kernel": "relu_kernel", "op_dir": str(relu_study / "operators/relu"),
                               "results": str(r), "library": str(h / host_mutants.LIB),
                               "ffi_json": str(h / "ffi.json"), "seed": 0})
    out = [json.loads(x[len(mutation_test.TAG):]) for x in capsys.readouterr().out.splitlines()
           if x.startswith(mutation_test.TAG)]
    assert out[0] == {"ready": True} and rc == 3 and len(out) == 4      # m002 never ran: the context is lost
    assert out[1]["row"]["symbol"] == "tp_relu__m000__relu_kernel" and not out[1]["restart"]
    assert "no shim of m999" in out[2]["row"]["setup_error"]
    assert out[3]["row"]["symbol"] == "tp_relu__m001__relu_kernel" and out[3]["restart"]
    assert mutation_test.judge(out[3]["row"])[1].startswith("CUDA error")
