"""Issue 31 items 1-2: each launcher's facts, the run-time IR diff, SASS parity (stage runtime_ir)."""
import json
from pathlib import Path

import pytest
from manifest_ops import checkout_op

from tileport.cpu import reference_ir, runtime_ir, sass
from tileport.gpu import harness
from tileport.ir_diff import entry_facts
from tileport.ir_diff.graph_diff import diff_ir
from tileport.model import frontend, manifest
from tileport.model import launch_facts as lf
from tileport.report import summary

REPO = Path(__file__).resolve().parents[1]

# a tile copy written for these tests: each block copies one (BM, BN) tile of x to y
COPY = '''import cuda.tile as ct


@ct.kernel
def copy2d(x, y, BM: ct.Constant[int], BN: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0), ct.bid(1)), shape=(BM, BN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(ct.bid(0), ct.bid(1)), tile=t)
'''
COPY_PARAMS = [{"name": "x", "kind": "array", "ndim": 2, "role": "input", "dtype": "{dtype}"},
               {"name": "y", "kind": "array", "ndim": 2, "role": "output", "dtype": "{dtype}"},
               {"name": "BM", "kind": "constexpr", "ctype": "int"},
               {"name": "BN", "kind": "constexpr", "ctype": "int"}]


def _variant(dtype="f16", **cx):
    return manifest.Variant(dtype=dtype, constexprs=cx)


# -- layouts of bound arrays (torch's rules, without torch) ------------------------------------

def test_shaped_follows_torch_views_and_slices():
    y = lf.Shaped.fresh("bf16", (64, 24))                    # tg_mhc's y: M x (N*N + 2N), N = 4
    post = y[:, 4:8]
    assert (post.shape, post.strides, post.offset) == ((64, 4), (24, 1), 4)
    res = y[:, 8:24].view(64, 4, 4)
    assert (res.shape, res.strides, res.offset) == ((64, 4, 4), (24, 4, 1), 8)
    assert lf.Shaped.fresh("f16", (3, 5)).view(-1).shape == (15,)
    t = lf.Shaped.fresh("f32", (37, 1000)).t()
    assert t.strides == (1, 1000) and t.contiguous().strides == (37, 1)
    with pytest.raises(lf.LaunchFactsError, match="refuses"):
        t.view(-1)                                          # torch: view of a non-contiguous tensor
    assert t.reshape(-1).strides == (1,)


# -- cuda-tile 1.7.0's ct.launch: the published kernel names decode to exactly these facts -------

@pytest.mark.parametrize("dtype,name", [
    ("f16", "copy2d_Kt1_A2f16_1v8l0_2t1_p16_A2f16_1l0_2t1_p16_I64_I64"),
    ("f32", "copy2d_Kt1_A2f32_1v4l0_2t1_p16_A2f32_1l0_2t1_p16_I64_I64"),
])
def test_reference_facts_reproduce_ct_launch_names(dtype, name):
    # docs/results/h200/ops/tg_transpose/bench.json: _transpose_kernel_Kt1_A2f16_1v8l0_2t1_p16_A2f16_1l0_2t1_p16_...
    # for input (37, 1000) and output (1000, 37): only input's stride 1000 is divisible by 16 bytes
    from cuda.tile.compilation._name_mangling import mangle_kernel_name

    facts = {"x": lf.reference_facts(lf.Shaped.fresh(dtype, (37, 1000))),
             "y": lf.reference_facts(lf.Shaped.fresh(dtype, (1000, 37)))}
    sig = runtime_ir.ref_signature(COPY_PARAMS, _variant(dtype, BM=64, BN=64), facts)
    assert mangle_kernel_name("copy2d", sig) == name


def test_reference_facts_unit_extent_offset_and_16_multiples():
    # tg_mhc bench.json: bf16 Y_post = y[:, N:2N] (8 bytes in) has no p16, its f32 twin has;
    # extents divisible by 16 are i16; an extent of 1 is constant (s1) and needs calling convention v2
    y = lf.Shaped.fresh("bf16", (64, 24))
    assert lf.reference_facts(y[:, 4:8]).base_div == 1
    assert lf.reference_facts(lf.Shaped.fresh("f32", (64, 24))[:, 4:8]).base_div == 16
    f = lf.reference_facts(lf.Shaped.fresh("f32", (4096, 1)))
    assert f.shape_div == (16, 1) and f.shape_const == (None, 1) and f.stride_const == (1, 1)
    from cuda.tile.compilation._name_mangling import mangle_kernel_name

    sig = runtime_ir.ref_signature(COPY_PARAMS, _variant("f32", BM=16, BN=1), {"x": f, "y": f})
    assert mangle_kernel_name("k", sig).startswith("k_Kt2_A2f32_1i16_2s1_3t1_p16")


def test_port_facts_are_compute_spec():
    # cutile 0.5.0 compute_spec: largest power-of-two divisor up to 16, in elements; pointer in bytes
    assert [lf.pow2_divisor(v) for v in (1000, 37000, 24, 37, 0, 4096)] == [8, 8, 8, 1, 16, 16]
    f = lf.port_facts(lf.Shaped.fresh("f16", (37, 1000)))
    assert f.shape_div == (1, 8) and f.stride_div == (8, 1) and f.stride_const == (None, 1) and f.base_div == 16
    assert lf.port_facts(lf.Shaped.fresh("bf16", (64, 24))[:, 4:8]).base_div == 8
    assert lf.port_scalar_hint(24) == 8 and lf.port_scalar_hint(37) == 1


def test_port_facts_of_an_array_the_port_reads_by_dimension_are_the_shims():
    # lg_dyt's da_partial (132, 1), strides (1, 1): cutile's launcher alone would compile both
    # strides as static 1s, leaving the port's get_shape_dim(tensor_strides(t), 0) an empty list
    # (cutile panicked: "removal index (is 0) should be < len (is 0)"); the shim keeps the outer
    # unit stride dynamic, so runtime_ir must compile what the shim launches
    da = lf.Shaped.fresh("f32", (132, 1))
    assert lf.port_facts(da).stride_const == (1, 1)
    assert lf.shim_strides((132, 1), (1, 1)) == ((1, 1), frozenset({0}))
    assert lf.port_facts_shimmed(da).stride_const == (None, 1)
    # an extent-1 dimension's stride is the contiguous one, at least 2 (tg_flash_decode's LSE_Out)
    assert lf.shim_strides((1, 8, 4, 1), (32, 4, 1, 1)) == ((32, 4, 1, 1), frozenset({2}))
    assert lf.shim_strides((1, 8), (1, 1)) == ((8, 1), frozenset())
    assert lf.port_facts_shimmed(lf.Shaped.fresh("f16", (1, 1))).stride_div == (2, 1)
    with pytest.raises(lf.LaunchFactsError, match="innermost stride"):
        lf.shim_strides((4, 8), (1, 4))
    facts = runtime_ir.port_launch_facts({"da_partial": da, "x": lf.Shaped.fresh("f32", (132, 1))},
                                         {"da_partial"})
    assert facts["da_partial"].stride_const == (None, 1) and facts["x"].stride_const == (1, 1)
    params = [{"kind": "array", "name": "da_partial"}, {"kind": "array", "name": "x"}]
    assert runtime_ir.port_spec(params, facts, {})[0] == "da_partial=-1,1;x=1,1"


def test_matched_facts_are_the_ports_on_both_sides():
    a = lf.Shaped.fresh("f16", (37, 1000))
    m = lf.matched_facts(lf.port_facts(a), None)
    assert (m.shape_div, m.stride_div, m.base_div) == ((1, 8), (8, 1), 16) and m.shape_const == (None, None)


@pytest.mark.parametrize("op", ["tg_transpose", "relu", "tg_mhc", "tg_layer_norm_legacy"])
def test_perf_cases_equal_the_benchmarks(op):
    man = manifest.load(REPO / "operators" / op / "manifest.yaml")
    for k in man["kernels"]:
        mine = [(v.id, s) for v, s in lf.perf_cases(man, k)]
        theirs = [(v.id, s) for kk, v, s in harness.cases(man, "perf") if kk == k]
        assert mine == theirs


def test_call_arrays_evaluate_bindings(tmp_path):
    d = checkout_op(tmp_path, "tg_mhc")
    man = manifest.load(d / "manifest.yaml")
    params = frontend.load(d).kernel("_mhc_apply_residual_kernel").info()["params"]
    v, shape = lf.perf_cases(man, "_mhc_apply_residual_kernel")[0]
    arrays, _ = lf.call_arrays(man, "_mhc_apply_residual_kernel", params, v, shape)
    assert arrays["Y_post"].offset == 4 and arrays["Y_res"].strides[1:] == (4, 1)


# -- the run-time IR diff ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def copy_ir(tmp_path_factory):
    """Tile IR text of copy2d f16 for (37, 1000) -> (37, 1000) with ct.launch's facts and with
    one more fact: x's extent 1000 divisible by 8 (what cutile's launcher adds)."""
    from cuda.tile.compilation import export_kernel

    from tileport.core import toolchain

    d = tmp_path_factory.mktemp("copy")
    (d / "kernel.py").write_text(COPY)
    fn = reference_ir.load_module(d / "kernel.py").copy2d
    a = lf.Shaped.fresh("f16", (37, 1000))
    plain = lf.reference_facts(a)
    hinted = lf.ArrayFacts((1, 8), plain.stride_div, plain.shape_const, plain.stride_const, plain.base_div)
    out = {}
    for name, fx in (("plain", plain), ("hinted", hinted)):
        sig = runtime_ir.ref_signature(COPY_PARAMS, _variant("f16", BM=64, BN=64), {"x": fx, "y": plain})
        bc = d / f"{name}.tileirbc"
        export_kernel(fn, [sig], str(bc), output_format="tileir_bytecode")
        out[name] = toolchain.disassemble(bc)
        out[name + "_bc"] = bc
    return out


def test_entry_facts_read_each_sides_assumes(copy_ir):
    f = entry_facts.entry_facts(copy_ir["plain"], COPY_PARAMS)
    assert f == {"x.base": "div_by<16>", "x.stride[0]": "div_by<8>", "x.stride[1]": "const 1",
                 "y.base": "div_by<16>", "y.stride[0]": "div_by<8>", "y.stride[1]": "const 1",
                 "x.view": "tensor view", "y.view": "tensor view"}
    assert entry_facts.entry_facts(copy_ir["hinted"], COPY_PARAMS)["x.shape[1]"] == "div_by<8>"


def test_runtime_pair_names_a_one_sided_assume_div_by(copy_ir):
    # the hint-free diff sees through assume: no finding names the launch fact
    old = diff_ir(copy_ir["plain"], copy_ir["hinted"])
    assert old.verdict in ("PASS", "PASS_WITH_NOTES")
    assert not [f for f in old.findings if f.category == "launch_facts"]
    d = entry_facts.diff_runtime_pair(copy_ir["plain"], copy_ir["hinted"], COPY_PARAMS)
    assert d["verdict"] == "PASS_WITH_NOTES" and d["owner"] == "tool"
    assert d["facts_differ"] == [["x.shape[1]", None, "div_by<8>"]]
    named = [f for f in d["findings"] if f.category == "launch_facts"]
    assert len(named) == 1 and named[0].owner == "tool" and "x.shape[1]: ref none, port div_by<8>" in named[0].message
    same = entry_facts.diff_runtime_pair(copy_ir["hinted"], copy_ir["hinted"], COPY_PARAMS)
    assert same["verdict"] == "PASS" and same["facts_differ"] == []


# a live use of the view %tview and the scalar %assume_2 (a load from one by the other)
_LOAD_N = ("  %0 = make_token : token\n"
           "  %pv = make_partition_view %tview : partition_view<tile=(16), tensor_view<?xf16, strides=[1]>>\n"
           "  %t, %tok = load_view_tko weak %pv[%assume_2] token = %0 : partition_view<tile=(16), "
           "tensor_view<?xf16, strides=[1]>>, tile<i32> -> tile<16xf16>, token\n  return\n")


def test_a_kept_runtime_pair_diff_is_the_diff(copy_ir, tmp_path, monkeypatch):
    """ir_diff.kept: the second diff of the same texts, paths, parameters and code is read back
    (the same verdict, findings and facts); other texts or paths are diffed anew; off bypasses it."""
    from tileport.ir_diff import kept

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    args = (copy_ir["plain"], copy_ir["hinted"], COPY_PARAMS, "a/ref.tileir", "a/port.tileir", "sm_90")
    fresh = entry_facts.diff_runtime_pair(*args)
    first = kept.kept_diff_runtime_pair(*args)
    files = list((tmp_path / "xdg").rglob("irdiff/*.json"))
    assert len(files) == 1 and first == fresh
    calls = []
    monkeypatch.setattr(kept, "diff_runtime_pair", lambda *a: calls.append(a))
    again = kept.kept_diff_runtime_pair(*args)
    assert calls == [] and again == fresh and isinstance(again["findings"][0], type(fresh["findings"][0]))
    # the paths are part of the key (the findings name them)
    assert kept.kept_diff_runtime_pair(*args[:3], "b/ref.tileir", "a/port.tileir", "sm_90") is None
    # a corrupt entry is diffed again, never trusted
    files[0].write_text("{not json")
    assert kept.kept_diff_runtime_pair(*args) is None and len(calls) == 2
    monkeypatch.setenv("TILEPORT_IRDIFF_CACHE", "off")
    monkeypatch.setattr(kept, "diff_runtime_pair", entry_facts.diff_runtime_pair)
    assert kept.kept_diff_runtime_pair(*args) == fresh
    # the code is part of the key: another digest misses
    monkeypatch.delenv("TILEPORT_IRDIFF_CACHE")
    monkeypatch.setattr(kept, "code_digest", lambda: "other")
    monkeypatch.setattr(kept, "diff_runtime_pair", lambda *a: calls.append(a))
    assert kept.kept_diff_runtime_pair(*args) is None and len(calls) == 3


def test_entry_facts_follow_assume_chains_and_scalars():
    # cutile's entry: an assume chain on an argument, and an integer scalar with its hint
    text = ("entry @k(%arg0: tile<ptr<f16>>, %arg1: tile<i32>, %arg2: tile<i32>, %arg3: tile<i32>) {\n"
            "  %assume = assume bounded<0, ?>, %arg1 : tile<i32>\n"
            "  %assume_assume = assume div_by<8>, %assume : tile<i32>\n"
            "  %assume_2 = assume div_by<4>, %arg3 : tile<i32>\n"
            "  %assume_1 = assume div_by<16>, %arg0 : tile<ptr<f16>>\n"
            "  %tview = make_tensor_view %assume_1, shape = [%assume_assume], strides = [1] : tile<i32> -> "
            "tensor_view<?xf16, strides=[1]>\n" + _LOAD_N + "}\n")
    params = [{"name": "x", "kind": "array", "ndim": 1}, {"name": "n", "kind": "scalar_i32", "dtype": "i32"}]
    assert entry_facts.entry_facts(text, params) == {
        "n": "div_by<4>", "x.base": "div_by<16>", "x.shape[0]": "div_by<8>", "x.stride[0]": "const 1",
        "x.view": "tensor view"}
    # an array the other side reads by gather (no tensor view): its folded unit stride is no difference
    gathered = {"n": "div_by<4>", "x.base": "div_by<16>", "x.shape[0]": "div_by<8>"}
    assert entry_facts.compare(gathered, entry_facts.entry_facts(text, params)) == []
    wider = {**gathered, "x.shape[0]": "div_by<16>"}
    assert entry_facts.compare(wider, gathered) == [("x.shape[0]", "div_by<16>", "div_by<8>")]


def test_entry_facts_leave_out_facts_nothing_live_reads():
    # cutile's entry states a fact on every argument and builds a view of every array; cuda-tile
    # states only what the kernel reads (fi_fmha_prefill_bsr: query.shape[0], an extent the
    # kernel slices away; fi_ragged_block_scaled_bmm: max_m_device, an array it never reads)
    head = ("entry @k(%arg0: tile<ptr<f16>>, %arg1: tile<i32>, %arg2: tile<i32>, %arg3: tile<i32>, "
            "%arg4: tile<ptr<f16>>, %arg5: tile<i32>, %arg6: tile<i32>) {\n"
            "  %assume_2 = assume div_by<4>, %arg3 : tile<i32>\n"
            "  %assume_1 = assume div_by<16>, %arg0 : tile<ptr<f16>>\n"
            "  %tview = make_tensor_view %assume_1, shape = [%arg1], strides = [1] : tile<i32> -> "
            "tensor_view<?xf16, strides=[1]>\n")
    dead = ("  %assume_3 = assume bounded<0, ?>, %arg5 : tile<i32>\n"
            "  %assume_4 = assume div_by<16>, %assume_3 : tile<i32>\n"
            "  %assume_5 = assume div_by<16>, %arg4 : tile<ptr<f16>>\n"
            "  %tview_6 = make_tensor_view %assume_5, shape = [%assume_4], strides = [1] : tile<i32> -> "
            "tensor_view<?xf16, strides=[1]>\n")
    params = [{"name": "x", "kind": "array", "ndim": 1}, {"name": "n", "kind": "scalar_i32", "dtype": "i32"},
              {"name": "y", "kind": "array", "ndim": 1}]
    port, ref = head + dead + _LOAD_N + "}\n", head + _LOAD_N + "}\n"
    assert entry_facts.entry_facts(port, params) == entry_facts.entry_facts(ref, params) == {
        "n": "div_by<4>", "x.base": "div_by<16>", "x.stride[0]": "const 1", "x.view": "tensor view"}
    d = entry_facts.diff_runtime_pair(ref, port, params)
    assert d["facts_differ"] == [] and d["verdict"] == "PASS"
    # read by a live op, the same facts are a difference
    live = port.replace("%pv = make_partition_view %tview :", "%pv = make_partition_view %tview_6 :")
    assert entry_facts.entry_facts(live, params)["y.shape[0]"] == "div_by<16>"
    assert ["y.shape[0]", None, "div_by<16>"] in entry_facts.diff_runtime_pair(ref, live, params)["facts_differ"]


def test_raw_difference_is_identical_up_to_locations_and_the_entry_name():
    a = ("entry @k_Kt1(%arg0: tile<i32>) {\n  %0 = make_token : token loc(#loc1)\n  return loc(#loc2)\n}\n"
         "#loc1 = loc(\"k.py\":3:4)\n#loc2 = loc(callsite(#loc1 at #loc1))\n")
    b = "entry @k_entry(%arg0: tile<i32>) {\n  %0 = make_token : token loc(#loc7)\n  return\n}\n"
    assert entry_facts.raw_difference(a, b) == {"identical": True}
    c = b.replace("  return", "  %1 = make_token : token\n  return")
    assert entry_facts.raw_difference(a, c) == {"identical": False, "op_counts": {"make_token": [1, 2]}}


def test_sass_cause_names_facts_then_what_the_diff_matched_through():
    from tileport.core.verdict import Finding

    loop = Finding("memory", "warn", "tool", "4 load(s) run inside more loops on the port side than ...")
    d = {"facts_differ": [["x.shape[0]", None, "div_by<16>"]], "findings": [
        Finding("hint", "info", "compiler", "assume ops are transparent (optimizer facts only): 1 only in ref"),
        Finding("hint", "warn", "kernel", "only the ref assumes `div_by<16>` on a value: ..."),
        Finding("control_flow", "info", "tool", "2 op(s) run inside more loops on the port side ..."), loop],
        "raw": {"identical": False, "op_counts": {"make_token": [1, 7]}}}
    cause = runtime_ir.sass_cause(d)
    assert cause.startswith("launch facts differ: x.shape[0] ref none port div_by<16>; 4 load(s) run inside")
    assert "2 op(s) run inside" in cause and "Tile IR op counts ref/port: make_token 1/7" in cause
    assert "assume ops are transparent" not in cause and "only the ref assumes" not in cause
    assert runtime_ir.sass_cause({**d, "facts_differ": []}).startswith("4 load(s) run inside more loops")
    assert runtime_ir.sass_cause({**d, "raw": {"identical": True}}).startswith("identical Tile IR")
    rec = {"variant": "f16-A", "shape": [4, 8], "readings": {"matched": {"sass": {"sm_90": {
        "verdict": "DIFFERENT", "ref_instructions": 2, "port_instructions": 3, "delta": {"MOV": 1},
        "cause": cause}}}}}
    f = runtime_ir._case_findings([rec], ("sm_90",))
    assert len(f) == 1 and f[0].message.endswith("; cause: " + cause)


# -- SASS ------------------------------------------------------------------------------------

SASS_A = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
        /*0010*/              @!P0 BRA 0x60 ;                               /* 0x0 */
        /*0020*/                   LDG.E.128 R4, desc[UR4][R2.64] ;        /* 0x0 */
        /*0030*/                   EXIT ;                                  /* 0x0 */
"""


def test_sass_modulo_registers_and_targets():
    renamed = SASS_A.replace("R4,", "R8,").replace("R1,", "R3,").replace("0x60", "0x90").replace("UR4", "UR6")
    assert sass.compare(sass.instructions(SASS_A), sass.instructions(renamed))["verdict"] == "IDENTICAL"
    lines = SASS_A.strip().splitlines()
    swapped = "\n".join([lines[0], lines[2], lines[1], lines[3]])
    assert sass.compare(sass.instructions(SASS_A), sass.instructions(swapped))["verdict"] == "SAME_OPCODE_COUNTS"
    narrow = SASS_A.replace("LDG.E.128", "LDG.E.U16")
    got = sass.compare(sass.instructions(SASS_A), sass.instructions(narrow))
    assert got["verdict"] == "DIFFERENT" and got["delta"] == {"LDG.E.128": -1, "LDG.E.U16": 1}
    assert sass.opcode("@!P BRA ADDR") == "BRA"


def test_sass_of_the_launchers_facts_differs_and_matched_is_identical(copy_ir, tmp_path):
    # the issue's measurement on our own copy kernel: without x's extent divisor the loads stay narrow
    out = {}
    for name in ("plain", "hinted"):
        cub = sass.cubin(copy_ir[name + "_bc"], tmp_path / f"{name}.cubin", "sm_90", "ref")
        out[name] = sass.instructions(sass.disassemble(cub))
    got = sass.compare(out["plain"], out["hinted"])
    assert got["verdict"] == "DIFFERENT" and got["delta"].get("LDG.E.128", 0) > 0
    assert sass.compare(out["hinted"], list(out["hinted"]))["verdict"] == "IDENTICAL"
    res = sass.resources(tmp_path / "plain.cubin")
    assert res["registers"] > 0 and res["threads"] in (32, 64, 128, 256) and res["local"] == 0
    assert 1 <= sass.ctas_per_sm(res) <= sass.SM90["ctas"]


def test_ctas_per_sm_is_the_occupancy_arithmetic():
    # _ce_online_kernel f16 4096x32768 on sm_90 (docs/results/h100-matched-2026-12-05): 142
    # registers x 128 threads -> 144 x 32 = 4608 per warp, 18432 per CTA: 3 fit in 65536; 128 -> 4
    assert sass.ctas_per_sm({"registers": 142, "threads": 128, "shared": 1040}) == 3
    assert sass.ctas_per_sm({"registers": 128, "threads": 128, "shared": 1040}) == 4
    assert sass.ctas_per_sm({"registers": 177, "threads": 128, "shared": 1040}) == 2
    assert sass.ctas_per_sm({"registers": 32, "threads": 128, "shared": 100 * 1024}) == 2     # shared bound
    assert sass.ctas_per_sm({"registers": 16, "threads": 32, "shared": 0}) == 32              # CTA cap
    assert sass.ctas_per_sm({"registers": 142, "threads": None}) is None


def test_occupancy_text_names_what_differs():
    base = {"registers": 128, "threads": 128, "local": 0, "shared": 1040, "ctas_per_sm": 4}
    assert sass.occupancy_text({"ref": base, "port": dict(base)}) == ""
    assert sass.occupancy_text({"ref": base}) == "" and sass.occupancy_text(None) == ""
    got = sass.occupancy_text({"ref": {**base, "registers": 142, "ctas_per_sm": 3}, "port": base})
    assert got.startswith("occupancy: ref 3, port 4 resident CTAs per SM (142 / 128 registers")
    got = sass.occupancy_text({"ref": {**base, "registers": 120, "local": 64}, "port": base})
    assert got == "resources ref / port: registers 120 / 128, local 64 / 0 (both 4 CTAs per SM)"


def test_sass_text_is_cached_by_content(copy_ir, tmp_path, monkeypatch):
    """The same bytecode, arch, flags and tools give the cached text; other flags or another
    bytecode miss; TILEPORT_SASS_CACHE=off compiles (and stores nothing)."""
    bc, cache = copy_ir["plain_bc"], tmp_path / "cache"
    text, hit = sass.sass_text(bc, "sm_90", "ref", 3, cache_dir=cache)
    assert not hit and sass.instructions(text)
    assert sass.sass_text(bc, "sm_90", "ref", 3, cache_dir=cache) == (text, True)
    assert not sass.sass_text(bc, "sm_90", "port", 3, cache_dir=cache)[1]            # other flags
    assert not sass.sass_text(copy_ir["hinted_bc"], "sm_90", "ref", 3, cache_dir=cache)[1]
    assert len(list(cache.rglob("*.sass"))) == 3
    # the resources are kept beside the text: an entry without them is compiled again
    text2, res, hit = sass.compiled(bc, "sm_90", "ref", 3, cache_dir=cache)
    assert (text2, hit) == (text, True) and res["registers"] > 0
    assert res["ctas_per_sm"] == sass.ctas_per_sm(res, sass.SM90)
    next(cache.rglob("*.res.json")).unlink()
    assert sum(not sass.compiled(b, "sm_90", s, 3, cache_dir=cache)[2]
               for b, s in ((bc, "ref"), (bc, "port"), (copy_ir["hinted_bc"], "ref"))) == 1
    monkeypatch.setenv("TILEPORT_SASS_CACHE", "off")
    assert sass.sass_text(bc, "sm_90", "ref", 3, cache_dir=tmp_path / "none") == (text, False)
    assert not (tmp_path / "none").exists()


def test_sass_instructions_kept_beside_the_cache_entry(copy_ir, tmp_path, monkeypatch):
    """compiled_instructions: the normalised stream of sass.instructions, the text placed at
    ``out``; a hit reads the kept stream (.ins.json), a damaged one is normalised again, and
    TILEPORT_SASS_CACHE=off writes the text and keeps nothing."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    bc, out = copy_ir["plain_bc"], tmp_path / "art" / "a.sass"
    ins, res, hit = sass.compiled_instructions(bc, "sm_90", "ref", out)
    text = out.read_text()
    assert not hit and ins == sass.instructions(text) and res["registers"] > 0
    kept = next((tmp_path / "xdg").rglob("*.ins.json"))
    assert sass.compiled_instructions(bc, "sm_90", "ref", tmp_path / "b.sass") == (ins, res, True)
    assert (tmp_path / "b.sass").read_text() == text
    kept.write_text("[truncat")
    assert sass.compiled_instructions(bc, "sm_90", "ref", out) == (ins, res, True)
    assert kept.read_text().startswith("[") and len(kept.read_text()) > 10
    monkeypatch.setenv("TILEPORT_SASS_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "none"))
    assert sass.compiled_instructions(bc, "sm_90", "ref", tmp_path / "c.sass") == (ins, res, False)
    assert (tmp_path / "c.sass").read_text() == text
    assert not [p for p in (tmp_path / "none").rglob("*") if p.name.endswith((".sass", ".ins.json"))]


def test_sass_cache_key_is_shared_by_clones(tmp_path, monkeypatch):
    """The same kernel exported by runtime_ir in two clones (Tile IR cache off): the same bytes and
    SASS key, as the export names kernel.py by its path relative to the clone; exported from each
    clone's absolute path, the bytes (cuda-tile's di_file and locations) and the keys differ."""
    from cuda.tile.compilation import export_kernel

    monkeypatch.setenv("TILEPORT_TILEIR_CACHE", "off")
    a = lf.Shaped.fresh("f16", (37, 1000))
    v = _variant("f16", BM=64, BN=64)
    sig = runtime_ir.ref_signature(COPY_PARAMS, v, {"x": lf.reference_facts(a), "y": lf.reference_facts(a)})
    rel, absolute = [], []
    for clone in ("clone-a", "clone-b"):
        op = tmp_path / clone / "operators" / "copy"
        op.mkdir(parents=True)
        (op / "kernel.py").write_text(COPY)
        monkeypatch.chdir(tmp_path / clone)
        work = runtime_ir._Work(Path("operators/copy"), "copy2d", tmp_path / clone / "art", None, "sm_90", None, "copy")
        rel.append(work.ref(v, sig))
        bc = tmp_path / clone / "abs.tileirbc"
        export_kernel(reference_ir.load_module(op / "kernel.py").copy2d, [sig], str(bc),
                      output_format="tileir_bytecode")
        absolute.append(bc)
    assert rel[0].read_bytes() == rel[1].read_bytes()
    assert sass.cache_key(rel[0], "sm_90", "ref") == sass.cache_key(rel[1], "sm_90", "ref")
    assert absolute[0].read_bytes() != absolute[1].read_bytes()
    assert sass.cache_key(absolute[0], "sm_90", "ref") != sass.cache_key(absolute[1], "sm_90", "ref")


def test_tool_identity_is_its_bytes_not_its_path(tmp_path):
    """Two clones' virtualenvs hold the same pinned tileiras at two paths: one cache identity;
    another build of the tool is another."""
    for d, body in (("venv-a", b"tool v1"), ("venv-b", b"tool v1"), ("venv-c", b"tool v2")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "tileiras").write_bytes(body)
    ids = [sass.tool_id(str(tmp_path / d / "tileiras")) for d in ("venv-a", "venv-b", "venv-c")]
    assert ids[0] == ids[1] != ids[2] and ids[0][0] == "tileiras"


def test_reference_tile_ir_is_kept_across_jobs_and_clones(tmp_path, monkeypatch):
    """A second job, in another folder holding the same kernel.py, takes the reference's Tile IR
    from the machine's cache (the same bytes: the export names kernel.py relative to the working
    directory); another signature or an edited kernel.py compiles again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    a = lf.Shaped.fresh("f16", (37, 1000))
    plain = lf.reference_facts(a)
    hinted = lf.ArrayFacts((1, 8), plain.stride_div, plain.shape_const, plain.stride_const, plain.base_div)
    sig = {n: runtime_ir.ref_signature(COPY_PARAMS, _variant("f16", BM=64, BN=64), {"x": fx, "y": plain})
           for n, fx in (("plain", plain), ("hinted", hinted))}
    v = _variant("f16", BM=64, BN=64)

    def job(folder, text=COPY):
        op = Path.cwd() / folder
        op.mkdir(exist_ok=True)
        (op / "kernel.py").write_text(text)
        return runtime_ir._Work(Path(folder), "copy2d", op / "art", None, "sm_90", None, "copy")

    one = job("one")
    first = one.ref(v, sig["plain"]).read_bytes()
    assert one.counts["tile_ir_cached"] == 0 and b"one/kernel.py" in first and str(tmp_path).encode() not in first
    two = job("one-again")
    assert two.ref(v, sig["plain"]).read_bytes() != first          # another folder is another program text
    clone = tmp_path / "clone"
    clone.mkdir()
    monkeypatch.chdir(clone)                                          # the same relative layout elsewhere
    again = job("one")
    assert again.ref(v, sig["plain"]).read_bytes() == first and again.counts["tile_ir_cached"] == 1
    assert again.ref(v, sig["plain"]).with_suffix(".tileir").read_text() == \
        one.ref(v, sig["plain"]).with_suffix(".tileir").read_text()
    again.ref(v, sig["hinted"])
    assert again.counts == {**again.counts, "tile_ir": 2, "tile_ir_cached": 1}
    edited = job("one", COPY + "\n# an edit\n")
    edited.ref(v, sig["plain"])
    assert edited.counts["tile_ir_cached"] == 0
    # another environment's cuda-tile (another clone's own .venv): its inlined helpers' locations
    # would name that folder, so its texts are never read back here (as reference_ir keys them)
    real = reference_ir.cuda_tile_id()
    monkeypatch.setattr(reference_ir, "cuda_tile_id", lambda: (real[0], "/elsewhere/.venv/cuda/tile/__init__.py"))
    other_env = job("one")
    other_env.ref(v, sig["plain"])
    assert other_env.counts["tile_ir_cached"] == 0
    monkeypatch.setenv("TILEPORT_TILEIR_CACHE", "off")
    off = job("one")
    off.ref(v, sig["plain"])
    assert off.counts["tile_ir_cached"] == 0


# -- summary columns -------------------------------------------------------------------------

def test_summary_columns_from_a_runtime_verdict():
    def case(shape, ir, s90, delta=None):
        sass_ = {"verdict": s90, "delta": delta or {}}
        return {"variant": "f16-A", "shape": shape, "readings": {
            "launched": {"ir_diff": {"verdict": ir}, "sass": {"sm_90": sass_, "sm_100": sass_}},
            "matched": {"ir_diff": {"verdict": "PASS"}, "sass": {"sm_90": {"verdict": "IDENTICAL"},
                                                                 "sm_100": {"verdict": "IDENTICAL"}}}}}
    doc = {"verdict": "PASS_WITH_NOTES", "owner": "tool", "summary": "",
           "details": {"archs": ["sm_90", "sm_100"], "not_run": {"f32-B": "ir_diff FAIL: x"},
                       "cases": [case([8192, 8192], "PASS_WITH_NOTES", "IDENTICAL"),
                                 case([37, 1000], "PASS_WITH_NOTES", "DIFFERENT", {"LDG.E.U16": -32, "LDG.E.128": 4})]}}
    cols = summary.runtime_columns(doc)
    assert cols["f16-A"]["runtime_ir"] == "PASS_WITH_NOTES | matched PASS"
    assert cols["f16-A"]["sass_sm_90"] == "DIFFERENT 37x1000 (LDG.E.U16 -32, LDG.E.128 +4) | matched IDENTICAL"
    assert cols["f32-B"]["sass_sm_100"].startswith("not_run (ir_diff FAIL")
    assert summary.runtime_columns(None) == {}
    assert {"runtime_ir", "sass_sm_90", "sass_sm_100"} <= set(summary.COLUMNS)
    json.dumps(cols)
    # a launched FAIL that the same facts make PASS is the launchers' (the stage marks it)
    fail = case([1, 32], "FAIL", "DIFFERENT", {"MOV": -3})
    doc["details"]["cases"].append(fail)
    assert summary.runtime_columns(doc)["f16-A"]["runtime_ir"] == "FAIL | matched PASS"
    fail["readings"]["launched"]["ir_diff"]["by_launch_facts"] = True
    assert summary.runtime_columns(doc)["f16-A"]["runtime_ir"] == "FAIL (launch facts) | matched PASS"


def test_stage_findings_are_valid_verdict_findings(tmp_path):
    from tileport.core.verdict import Verdict, read, write

    rec = {"variant": "f16-A", "shape": [37, 1000], "readings": {
        "launched": {"ir_diff": {"facts_differ": [["x.shape[1]", None, "div_by<8>"]]}, "sass": {}},
        "matched": {"sass": {"sm_100": {"verdict": "DIFFERENT", "ref_instructions": 2, "port_instructions": 3,
                                        "delta": {"MOV": 1}}}}}}
    fs = runtime_ir._case_findings([rec, {**rec, "shape": [64, 1000]}], ("sm_90", "sm_100"))
    assert [f.category for f in fs] == ["launch_facts", "performance", "performance"]
    assert "x.shape[1]: ct.launch states none, cutile's launcher div_by<8> (2 case(s)" in fs[0].message
    write(Verdict(stage="runtime_ir", op="o", kernel="k", verdict="PASS_WITH_NOTES", owner="tool", summary="s",
                  findings=fs), tmp_path / "v.json")
    assert read(tmp_path / "v.json")["findings"][0]["owner"] == "tool"


def test_stage_without_a_port_build_is_blocked(tmp_path):
    op = REPO / "operators" / "relu"
    d = runtime_ir.run(op, "relu", "relu_kernel", tmp_path / "missing.json", {}, tmp_path / "v.json", tmp_path / "a")
    assert d["verdict"] == "BLOCKED" and "no Rust build" in d["summary"]


def test_a_constant_extent_on_one_side_is_a_launch_fact_not_a_failure(tmp_path):
    # ct.launch makes an extent of 1 a constant (tensor_view<?x1x...>); cutile never does: the
    # structural diff sees another tensor view type, the run-time diff names the launch fact
    from cuda.tile.compilation import export_kernel

    from tileport.core import toolchain

    (tmp_path / "kernel.py").write_text(COPY)
    fn = reference_ir.load_module(tmp_path / "kernel.py").copy2d
    a = lf.Shaped.fresh("f32", (4096, 1))
    ref = lf.reference_facts(a)
    assert ref.shape_const == (None, 1)
    port = lf.ArrayFacts(ref.shape_div, ref.stride_div, (None, None), ref.stride_const, ref.base_div)
    text = {}
    for name, fx in (("ref", ref), ("port", port)):
        sig = runtime_ir.ref_signature(COPY_PARAMS, _variant("f32", BM=16, BN=1), {"x": fx, "y": fx})
        export_kernel(fn, [sig], str(tmp_path / f"{name}.bc"), output_format="tileir_bytecode")
        text[name] = toolchain.disassemble(tmp_path / f"{name}.bc")
    assert diff_ir(text["ref"], text["port"]).verdict == "FAIL"
    d = entry_facts.diff_runtime_pair(text["ref"], text["port"], COPY_PARAMS)
    assert d["verdict"] == "PASS_WITH_NOTES" and d["owner"] == "tool"
    assert ["x.shape[1]", "const 1", None] in d["facts_differ"] and ["y.shape[1]", "const 1", None] in d["facts_differ"]
    assert all(f.severity != "critical" for f in d["findings"])
