"""Variant dtypes beyond f16 / bf16 / f32 (issue 34 item 2 f): an f64 elementwise kernel, an f8
matmul with an f32 accumulator (f8e4m3fn and f8e5m2 variants) and e8m0 block scales
(f8e8m0fnu, a manifest dtype) read as a tile, each ported with the real compilers and at IR diff
PASS (tests/data/operators/dtypes8). The first variant's Tile IR of each joins
tests/data/ir/constructs/ for the mutation suite: TILEPORT_REGEN_IR=1 rewrites it."""
import os
import re
from pathlib import Path

import pytest
import yaml
from conftest import run_kernels

OP = Path(__file__).parent / "data" / "operators" / "dtypes8"
IR = Path(__file__).parent / "data" / "ir" / "constructs"
CASES = {"f64_axpy_kernel": ["f64-TILE256"],
         "f8_mm_kernel": ["f8e4m3fn-BM64-BN64-BK64", "f8e5m2-BM64-BN64-BK64"],
         "e8m0_scale_kernel": ["f32-TILE32"]}


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    out = {}
    for k, variants in CASES.items():
        for v in variants:
            out[(k, v)] = run_kernels(OP, tmp_path_factory.mktemp(f"{k}-{v}"), "dtypes8", [k], v)[k]
    return out


def test_cases_are_the_manifests():
    m = yaml.safe_load((OP / "manifest.yaml").read_text())
    assert set(CASES) == set(m["kernels"])


@pytest.mark.parametrize("kernel,variant", [(k, v) for k, vs in CASES.items() for v in vs])
def test_dtype_kernel_reaches_ir_pass(ported, kernel, variant):
    diff, ref, port = ported[(kernel, variant)]
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])
    if os.environ.get("TILEPORT_REGEN_IR") and variant == CASES[kernel][0]:
        for side, path in (("ref", ref), ("port", port)):
            text = re.sub(r'di_file<"([^"]*)" in "[^"]*">', r'di_file<"\1" in "dtypes8">',
                          path.read_text()).replace(str(OP.parent.parent.parent.parent) + "/", "")
            (IR / f"{kernel}.{side}.tileir").write_text(text)


def test_ir_has_the_dtypes(ported):
    """The PASS compares the right thing: f64 tiles, f8 operands into an f32 mmaf, e8m0 scales
    loaded and extended to f32."""
    f64 = ported[("f64_axpy_kernel", "f64-TILE256")][1].read_text()
    assert "tile<256xf64>" in f64
    for v, t in (("f8e4m3fn-BM64-BN64-BK64", "f8E4M3FN"), ("f8e5m2-BM64-BN64-BK64", "f8E5M2")):
        mm = ported[("f8_mm_kernel", v)][1].read_text()
        assert f"tile<64x64x{t}>" in mm and "mmaf" in mm and "tile<64x64xf32>" in mm
    sc = ported[("e8m0_scale_kernel", "f32-TILE32")][1].read_text()
    assert "f8E8M0FNU" in sc


F8PAD_KERNEL = '''import cuda.tile as ct


@ct.kernel
def f8_pad_kernel(x, y, M: ct.Constant[int], TILE: ct.Constant[int]):
    rows = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    cols = ct.arange(TILE, dtype=ct.int32)
    t = ct.gather(x, (rows[:, None], cols[None, :]), check_bounds=True, padding_value=0)
    ct.scatter(y, (rows[:, None], cols[None, :]), ct.astype(t, ct.float32) * 2.0, check_bounds=True)
'''

F8PAD_MANIFEST = '''op: f8pad
kernels:
  f8_pad_kernel:
    arrays: {x: {ndim: 2, role: input, dtype: f8e4m3fn}, y: {ndim: 2, role: output}}
    grid: "(cdiv(M, TILE), 1, 1)"
    variants: [{dtype: f32, constexprs: {M: 100, TILE: 64}}]
shape_names: [M]
test_shapes: [[100]]
perf_shapes: [[100]]
fits: "True"
tolerance: {f32: {rtol: 1.0e-6, atol: 1.0e-6}}
tensors:
  x: {shape: [M, 64], role: input, dtype: f8e4m3fn}
  y: {shape: [M, 64], role: output}
'''


def test_python_number_padding_of_an_f8_gather(tmp_path):
    """A masked gather of a float8_e4m3fn array with a Python number as padding_value
    (Unsloth's weight_dequant_kernel_ct: padding_value=0) pads with the fp8 zero, as cuTile
    Python makes it: IR diff PASS with the real compilers. A padding cutile 0.5.0 cannot write
    as an fp8 constant (any value but +0) is BLOCKED, not rounded through another type."""
    from conftest import run_chain

    from tileport import translate

    d = tmp_path / "operators" / "f8pad"
    d.mkdir(parents=True)
    (d / "kernel.py").write_text(F8PAD_KERNEL)
    (d / "manifest.yaml").write_text(F8PAD_MANIFEST)
    src, _ = translate.translate_kernel(d, "f8_pad_kernel")
    assert "f8e4m3fn::ZERO" in src, src
    diff, _, _ = run_chain(d, tmp_path, "f8pad", "f8_pad_kernel", "f32-M100-TILE64")
    assert diff["verdict"] == "PASS", diff["summary"]
    (d / "kernel.py").write_text(F8PAD_KERNEL.replace("padding_value=0)", "padding_value=1)"))
    with pytest.raises(translate.Unsupported, match="f8e4m3fn"):
        translate.translate_kernel(d, "f8_pad_kernel")
