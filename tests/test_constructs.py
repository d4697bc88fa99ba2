"""Every construct the translator has a rule for, ported from a small kernel of its own
(tests/data/operators/constructs) with the real compilers: each kernel's IR diff is PASS,
without notes. Their Tile IR is kept in tests/data/ir/constructs/ for the mutation suite
(tests/test_mutations.py): TILEPORT_REGEN_IR=1 rewrites it from this run."""
import os
import re
from pathlib import Path

import pytest
import yaml
from conftest import run_kernels

OP = Path(__file__).parent / "data" / "operators" / "constructs"
IR = Path(__file__).parent / "data" / "ir" / "constructs"
KERNELS = list(yaml.safe_load((OP / "manifest.yaml").read_text())["kernels"])
VARIANT = "f16-TILE1024-BM16"


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    return run_kernels(OP, tmp_path_factory.mktemp("constructs"), "constructs", KERNELS, VARIANT)


@pytest.mark.parametrize("kernel", KERNELS)
def test_construct_reaches_ir_pass(ported, kernel):
    diff, ref, port = ported[kernel]
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])
    if os.environ.get("TILEPORT_REGEN_IR"):
        IR.mkdir(parents=True, exist_ok=True)
        for side, path in (("ref", ref), ("port", port)):
            # locations relative to the repository, as the workflow writes them
            text = re.sub(r'di_file<"([^"]*)" in "[^"]*">', r'di_file<"\1" in "constructs">',
                          path.read_text()).replace(str(OP.parent.parent.parent.parent) + "/", "")
            (IR / f"{kernel}.{side}.tileir").write_text(text)


def test_every_construct_kernel_has_mutation_data():
    """The mutation suite reads each construct kernel's IR (regenerate with TILEPORT_REGEN_IR=1)."""
    for k in KERNELS:
        assert (IR / f"{k}.ref.tileir").is_file() and (IR / f"{k}.port.tileir").is_file(), k


INT_IDS = Path(__file__).parent / "data" / "operators" / "int_ids"


@pytest.mark.parametrize("variant", ["i64-TILE1024"])
def test_int_variant_dtype_reaches_ir_pass(tmp_path, variant):
    """An int variant dtype (tests/data/operators/int_ids: ids of int32 or int64, as TileGym's
    MoE routing takes them): an entry per dtype with the ids' concrete element type, IR PASS.
    Its Tile IR joins tests/data/ir/constructs/ for the mutation suite (TILEPORT_REGEN_IR=1)."""
    kernel = "int_variant_kernel"
    diff, ref, port = run_kernels(INT_IDS, tmp_path, "int_ids", [kernel], variant)[kernel]
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])
    src = (tmp_path / "rust" / "src" / f"{kernel}.rs").read_text()
    assert "ids: &Tensor<i32, {[-1]}>" in src and "ids: &Tensor<i64, {[-1]}>" in src
    if os.environ.get("TILEPORT_REGEN_IR"):
        for side, path in (("ref", ref), ("port", port)):
            text = re.sub(r'di_file<"([^"]*)" in "[^"]*">', r'di_file<"\1" in "int_ids">',
                          path.read_text()).replace(str(INT_IDS.parent.parent.parent.parent) + "/", "")
            (IR / f"{kernel}.{side}.tileir").write_text(text)
