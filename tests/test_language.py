"""cuTile Python's language beyond TileGym's dialect (issue 34 item 2): each kind a small kernel
of its own (tests/data/operators/lang), ported for an f16 and an f32 variant with the real
compilers (one crate build each), IR diff PASS without notes. Their f32 Tile IR joins
tests/data/ir/constructs/ for the mutation suite (tests/test_mutations.py):
TILEPORT_REGEN_IR=1 rewrites it from this run."""
import ast
import importlib
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import run_kernels

from tileport.model import constants
from tileport.translate import Unsupported, translate_kernel

OP = Path(__file__).parent / "data" / "operators" / "lang"
IR = Path(__file__).parent / "data" / "ir" / "constructs"
KERNELS = list(yaml.safe_load((OP / "manifest.yaml").read_text())["kernels"])
VARIANTS = ["f16-TILE1024-BM16", "f32-TILE1024-BM16"]
KEPT = "f32-TILE1024-BM16"        # the variant whose IR the mutation suite reads


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    return {v: run_kernels(OP, tmp_path_factory.mktemp(v), "lang", KERNELS, v) for v in VARIANTS}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_language_kind_reaches_ir_pass(ported, kernel, variant):
    diff, ref, port = ported[variant][kernel]
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])
    if os.environ.get("TILEPORT_REGEN_IR") and variant == KEPT:
        for side, path in (("ref", ref), ("port", port)):
            text = re.sub(r'di_file<"([^"]*)" in "[^"]*">', r'di_file<"\1" in "lang">',
                          path.read_text()).replace(str(OP.parent.parent.parent.parent) + "/", "")
            (IR / f"{kernel}.{side}.tileir").write_text(text)


def test_every_language_kernel_has_mutation_data():
    for k in KERNELS:
        assert (IR / f"{k}.ref.tileir").is_file() and (IR / f"{k}.port.tileir").is_file(), k


def test_ir_of_the_kinds(ported):
    """What each kind is in cuTile Python's IR, so the PASS above compares the right thing:
    `**` with an int exponent is fpowi; the separate mul/add statements are one fma; the f32
    accumulator's product contracts only where the variant is f32; the batched mma and matmul
    are rank-3 mmaf; the spin lock's atomic_cas is inside the loop it exits."""
    f16, f32 = ported["f16-TILE1024-BM16"], ported[KEPT]
    assert f32["pow_kernel"][1].read_text().count("= fpowi ") == 4
    for v in (f16, f32):
        assert v["fma_stmt_kernel"][1].read_text().count("= fma ") == 1
    assert " fma " not in f16["promote_acc_kernel"][1].read_text()
    assert "= fma " in f32["promote_acc_kernel"][1].read_text()
    assert len(re.findall(r"= mmaf .*: tile<2x16x16xf32>, tile<2x16x16xf32>", f32["bmm3_kernel"][1].read_text())) == 2
    for side in f32["spin_lock_kernel"][1:]:
        # the spin lock: the atomic_cas runs again in each iteration of a loop that breaks when
        # it did not find the lock taken; the release comes after the loop
        text = side.read_text()
        loop = text[text.index("= loop iter_values"):]
        loop = loop[:loop.index("    continue ")]
        assert "atomic_cas_tko acquire device" in loop and "break " in loop, side
        assert "xchg" not in loop and "atomic_rmw_tko release device" in text


def test_enum_modules_are_cuda_tiles_own():
    """ENUM_MODULES names, for each enum, the module of the installed cuda.tile that defines
    the very class ``cuda.tile`` exports."""
    import cuda.tile as ct
    for enum, mod in constants.ENUM_MODULES.items():
        assert getattr(importlib.import_module(mod), enum) is getattr(ct, enum), enum


def test_unresolved_enum_message_does_not_contradict(tmp_path):
    """An enum the translator cannot resolve (RoundingMode imported from a module whose
    RoundingMode is another class) is refused in words that say why, never 'must be one of
    [... APPROX ...]' of an APPROX (issue 34)."""
    op = tmp_path / "lang"
    shutil.copytree(OP, op)
    k = op / "kernel.py"
    k.write_text(k.read_text().replace("from cuda.tile._numeric_semantics import RoundingMode as RM",
                                       "from cuda.tile._bytecode.encodings import RoundingMode as RM"))
    with pytest.raises(Unsupported) as exc:
        translate_kernel(op, "rm_alias_kernel")
    assert "RM is not read as a cuda.tile enum" in exc.value.reason
    assert "cuda.tile._numeric_semantics" in exc.value.reason


def test_module_level_numpy_constant():
    tree = ast.parse("import numpy as np\nimport cuda.tile as ct\nA = -np.inf\nB = np.pi / 2\nC = np.float32\n")
    got = constants.module_constants(tree)
    assert got["A"] == float("-inf") and got["B"] == 3.141592653589793 / 2 and "C" not in got
