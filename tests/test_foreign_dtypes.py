"""torch / cupy dtype attributes inside a kernel body of a plain operators/<op>/kernel.py
(issue 34 item 2 a): without torch or cupy on the CPU side, ``torch.int32`` and ``cp.float32``
are read as cuTile reads them (its own ct.int32 / ct.float32), the imports nothing else needs are
blanked, and the kernel reaches IR PASS with the real compilers (tests/data/operators/foreign)."""
import importlib.util
from pathlib import Path

import pytest
from conftest import run_kernels

from tileport.model import torch_uses as TU

OP = Path(__file__).parent / "data" / "operators" / "foreign"


def test_the_modules_are_not_installed_here():
    """What the test relies on: the CPU side has neither module (else it would prove nothing)."""
    assert importlib.util.find_spec("torch") is None and importlib.util.find_spec("cupy") is None


def test_plain_kernel_reaches_ir_pass(tmp_path):
    diff, ref, port = run_kernels(OP, tmp_path, "foreign", ["foreign_dtype_kernel"], "f16-TILE256")[
        "foreign_dtype_kernel"]
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])
    text = ref.read_text()
    assert "iota" in text and "tile<256xi32>" in text and "ftof" in text and "tile<256xf32>" in text
    assert 'di_file<"kernel.py"' in text          # locations still name kernel.py's lines


def test_rewrite_keeps_lines_and_blanks_only_unused_imports():
    src = (OP / "kernel.py").read_text()
    new, rw = TU.plain_kernel_text(src)
    assert [r.shown for r in rw] == ["'torch.int32' -> 'ct.int32'", "'cp.float32' -> 'ct.float32'"]
    assert new.count("\n") == src.count("\n") and "import torch" not in new and "import cupy" not in new
    # a module the launch code also reads keeps its import; the body's dtype is still rewritten
    launch = src + "\n\ndef launch(x):\n    return torch.empty_like(x)\n"
    new, rw = TU.plain_kernel_text(launch)
    assert "import torch" in new and "import cupy" not in new and "torch.int32" not in new


@pytest.mark.parametrize("use,why", [
    ("x.astype(torch.half)", "torch.half"),              # an alias cuTile's registry does not read
    ("x.astype(ct.float32) if torch else x", "torch"),   # the module object itself
])
def test_a_use_cutile_does_not_map_is_left_alone(use, why):
    src = ("import torch\nimport cuda.tile as ct\n\n\n@ct.kernel\ndef k(x, y):\n"
           f"    ct.store(y, index=(0,), tile={use})\n")
    new, rw = TU.plain_kernel_text(src)
    assert new == src and rw == [], why


def test_numpy_dtypes_are_cutiles_registry():
    """NUMPY_DTYPES is what the installed cuTile maps numpy's (and so cupy's) dtype types to."""
    import cuda.tile as ct
    import numpy as np
    from cuda.tile._cext import ConstantKind, classify_constant, foreign_dtype_object_to_native

    for name, cute in TU.NUMPY_DTYPES.items():
        obj = getattr(np, name)
        assert classify_constant(obj, False) == ConstantKind.ForeignDType, name
        assert foreign_dtype_object_to_native(obj) is getattr(ct, cute), name
