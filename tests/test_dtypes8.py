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
