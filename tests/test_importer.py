"""Importer (rule import_source): cuTile kernels read as text from an installed wheel.

Synthetic distributions are written as a site directory (package files + ``.dist-info`` with
METADATA and a RECORD of sha256 digests), as pip leaves an installed wheel; they are found
through ``sys.path`` like the real ``tilegym`` (never imported).
"""
import ast
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import copy_workflow, install_distribution

from tileport.core import source as tp_source
from tileport.core import wheels
from tileport.core.verdict import Finding, Verdict, read, write
from tileport.cpu import importer
from tileport.model.torch_uses import TORCH_DTYPES

install = install_distribution


def pin(path, name, version, sha):
    path.write_text(f"# test pin\n{name}=={version} \\\n    --hash=sha256:{sha}\n")
    return path


@pytest.fixture
def site(tmp_path, monkeypatch):
    s = tmp_path / "site"
    s.mkdir()
    monkeypatch.syspath_prepend(str(s))
    wheels._packages.cache_clear()
    yield s
    wheels._packages.cache_clear()


GYM = {
    "tilegym/__init__.py": "import torch\n",
    "tilegym/experimental.py": """\
        def experimental_kernel(k=None):
            return k
        """,
    "tilegym/ops/__init__.py": "",
    "tilegym/ops/utils.py": """\
        import cuda.tile as cut

        ConstInt = cut.Constant[int]
        SCALE = 0.5


        def scaled(x):
            return cut.mul(x, SCALE)


        def unused_host_helper(n):
            return n * 2
        """,
    "tilegym/ops/softmaxish.py": """\
        # a module as TileGym writes them: torch on top, wrappers below
        import math

        import cuda.tile as ct
        import torch
        from cuda.tile import RoundingMode as RMd

        from tilegym.experimental import experimental_kernel
        from tilegym.backend import register_impl

        from .utils import ConstInt
        from .utils import scaled as sc

        zero_pad = ct.PaddingMode.ZERO
        _OCC = 2
        _CACHE: dict = {}
        DT = torch.float16


        def _inner(t):
            return ct.exp(t, rounding_mode=RMd.APPROX) * math.pi


        @ct.function
        def _helper(t):
            return sc(_inner(t))


        @ct.kernel(occupancy=_OCC)
        def k_main(x, y, TILE: ConstInt):
            t = ct.load(x, index=(ct.bid(0),), shape=(TILE,), padding_mode=zero_pad)
            ct.store(y, index=(ct.bid(0),), tile=_helper(t))


        @experimental_kernel
        @ct.kernel
        def k_exp(x, y, TILE: ConstInt):
            t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
            ct.store(y, index=(ct.bid(0),), tile=t)


        @ct.kernel
        def k_torch(x, y, TILE: ConstInt):
            offs = ct.arange(TILE, dtype=ct.int32)
            t = ct.gather(x, offs)
            ct.scatter(y, offs, ct.astype(t, torch.float32))


        @ct.kernel
        def k_torch_deep(x, y, TILE: ConstInt):
            ct.store(y, index=(0,), tile=_deep(ct.load(x, index=(0,), shape=(TILE,))))


        def _deep(t):
            return ct.astype(t, DT)


        @ct.kernel
        def k_undefined(x, y, TILE: ConstInt):
            ct.store(y, index=(0,), tile=NOT_DEFINED)


        if True:
            COND = 1


        @ct.kernel
        def k_cond(x, y, TILE: ConstInt):
            ct.store(y, index=(0,), tile=ct.full((TILE,), COND, dtype=ct.float32))


        @functools_cache
        @ct.kernel
        def k_deco(x, y, TILE: ConstInt):
            pass


        def not_a_kernel(x):
            return x


        @register_impl("softmax", backend="cutile")
        def softmax(x):
            y = torch.empty_like(x)
            ct.launch(torch.cuda.current_stream(), (1,), k_main, (x, y, 1024))
            return y
        """,
    "tilegym/ops/clash.py": """\
        import cuda.tile as ct
        from .utils import scaled

        SCALE = 3.0


        @ct.kernel
        def k_clash(x, TILE: ct.Constant[int]):
            ct.store(x, index=(0,), tile=scaled(ct.load(x, index=(0,), shape=(TILE,))) * SCALE)
        """,
    "tilegym/ops/star.py": """\
        import cuda.tile as ct
        from .utils import *


        @ct.kernel
        def k_star(x, TILE: ct.Constant[int]):
            ct.store(x, index=(0,), tile=ct.full((TILE,), SCALE, dtype=ct.float32))
        """,
    "tilegym/ops/torchy.py": """\
        # torch inside kernels: the uses cuTile compiles like its own spelling, and the rest
        import cuda.tile as ct
        import torch


        def _plain(t):
            return ct.astype(ct.astype(t, torch.bool), torch.bfloat16)


        @ct.kernel
        def k_rewrites(x: torch.Tensor, y: torch.Tensor, TILE: ct.Constant[int]):
            offs = ct.arange(TILE, dtype=torch.int32)
            t = ct.astype(ct.gather(x, offs), torch.float32) + 0.5
            ct.scatter(y, offs, _plain(t))


        @ct.kernel
        def k_half(x, TILE: ct.Constant[int]):
            ct.store(x, index=(0,), tile=ct.full((TILE,), 0, dtype=torch.half))


        @ct.kernel
        def k_modobj(x, TILE: ct.Constant[int]):
            tt = torch
            ct.store(x, index=(0,), tile=ct.full((TILE,), 0, dtype=tt.int32))


        @ct.kernel
        def k_static(x, TILE: ct.Constant[int]):
            ct.static_assert(x.dtype == torch.float32)
            ct.store(x, index=(0,), tile=ct.full((TILE,), 0, dtype=ct.float32))


        def _dflt(t, dt=torch.float32):
            return ct.astype(t, dt)


        @ct.kernel
        def k_default(x, TILE: ct.Constant[int]):
            ct.store(x, index=(0,), tile=_dflt(ct.load(x, index=(0,), shape=(TILE,))))


        @ct.kernel
        def k_tuple(xs: tuple[torch.Tensor, ...], TILE: ct.Constant[int]):
            pass


        @ct.kernel
        def k_shadow(x, TILE: ct.Constant[int]):
            f = lambda ct: ct
            ct.store(x, index=(0,), tile=ct.full((TILE,), f(0), dtype=torch.int32))


        def _runs_in_python(t):
            return ct.astype(t, torch.int64)


        @ct.kernel
        def k_pyrun(x, TILE: ct.Constant[int]):
            t = _runs_in_python(ct.load(x, index=(0,), shape=(TILE,)))
            ct.store(x, index=(0,), tile=t + _zz_python_calls)


        _zz_python_calls = _runs_in_python(3)
        """,
    "tilegym/ops/thirdparty.py": """\
        import cuda.tile as ct
        import numpy as np
        import scipy
        from tilegym import ops


        @ct.kernel
        def k_np(x, TILE: ct.Constant[int]):
            ct.store(x, index=(0,), tile=ct.full((TILE,), 0, dtype=np.float32))


        @ct.kernel
        def k_scipy(x, TILE: ct.Constant[int]):
            ct.store(x, index=(0,), tile=ct.full((TILE,), scipy.pi, dtype=ct.float32))


        @ct.kernel
        def k_modobj(x, TILE: ct.Constant[int]):
            ct.store(x, index=(0,), tile=ops.utils.scaled(x))
        """,
}


def extract(site, tmp_path, module, kernels, version="1.0", files=GYM):
    sha = install(site, "tilegym", version, files)
    return importer.extract(module, kernels, pin(tmp_path / "pin.txt", "tilegym", version, sha))


def test_keeps_kernel_decorator_arguments_and_what_it_uses_transitively(site, tmp_path):
    r = extract(site, tmp_path, "tilegym.ops.softmaxish", ["k_main"])
    assert r["problems"] == []
    text = r["text"]
    compile(text, "kernel.py", "exec")
    code = text.split("\n#\n", 1)[1]
    # kept: the kernel with occupancy=, its helpers (decorated or plain), constants, aliases, the
    # cuda.tile / stdlib imports; the helper from .utils under its alias and what it needs there
    for want in ("@ct.kernel(occupancy=_OCC)", "def k_main", "@ct.function", "def _helper",
                 "def _inner", "_OCC = 2", "zero_pad = ct.PaddingMode.ZERO", "import math",
                 "import cuda.tile as ct", "from cuda.tile import RoundingMode as RMd",
                 "import cuda.tile as cut", "ConstInt = cut.Constant[int]", "SCALE = 0.5",
                 "def scaled(x)", "sc = scaled"):
        assert want in code, want
    # dropped: torch, the wrapper, registration, unused names
    for gone in ("torch", "register_impl", "def softmax", "_CACHE", "DT =", "k_exp",
                 "unused_host_helper", "experimental"):
        assert gone not in code, gone
    # the helper module's definitions come before the module's own that use them
    assert code.index("def scaled") < code.index("sc = scaled") < code.index("def _helper")
    # header: distribution, version, pinned sha256, line ranges of every kept statement
    head = text.split("\n#\n", 1)[0]
    assert "tilegym 1.0, sha256 " in head and "module: tilegym.ops.softmaxish" in head
    m = re.search(r"#   (\d+)-(\d+) <- tilegym/ops/softmaxish.py:(\d+)-(\d+)  kernel k_main", head)
    a, b, c, d = map(int, m.groups())
    lines = text.splitlines()
    src = (site / "tilegym/ops/softmaxish.py").read_text().splitlines()
    assert lines[a - 1:b] == src[c - 1:d]
    # the line map: every mapped line is the module line it names, character for character
    for ln, origin in r["map"].items():
        f, _, n = origin.rpartition(":")
        orig = (site / f).read_text().splitlines()[int(n) - 1]
        assert lines[ln - 1] == orig or lines[ln - 1].startswith(("import", "from", "sc =")), (ln, origin)


def test_a_form_feed_in_a_wheel_module_does_not_shift_the_copied_lines(site, tmp_path):
    """Python (and so ast's and cuTile's line numbers) does not end a line at a form feed;
    str.splitlines does: the copied kernel and its line map follow Python's count."""
    files = dict(GYM)
    files["tilegym/ops/softmaxish.py"] = files["tilegym/ops/softmaxish.py"].replace(
        "import cuda.tile as ct\n", "import cuda.tile as ct  # page\x0cbreak\n", 1)
    assert "\x0c" in files["tilegym/ops/softmaxish.py"]
    r = extract(site, tmp_path, "tilegym.ops.softmaxish", ["k_main"], files=files)
    assert r["problems"] == []
    lines = r["text"].split("\n")
    src = (site / "tilegym/ops/softmaxish.py").read_text().split("\n")
    for ln, origin in r["map"].items():
        f, _, n = origin.rpartition(":")
        if f == "tilegym/ops/softmaxish.py":
            assert lines[ln - 1] == src[int(n) - 1] or lines[ln - 1].startswith(("import", "from", "sc =")), \
                (ln, origin)
    assert any(lines[ln - 1].startswith("def k_main") for ln in r["map"])


def test_experimental_decorator_is_left_out_with_its_reason(site, tmp_path):
    r = extract(site, tmp_path, "tilegym.ops.softmaxish", ["k_exp"])
    assert r["problems"] == []
    code = r["text"].split("\n#\n", 1)[1]
    assert "@experimental_kernel" not in code and "@ct.kernel\ndef k_exp" in code
    (d,) = r["dropped"]
    assert d["qualified"] == "tilegym.experimental.experimental_kernel" and d["of"] == "k_exp"
    assert "same" in d["reason"] and "@experimental_kernel of k_exp" in r["text"]
    # the decorator's line maps nowhere: the def line maps to the module's def line
    src = (site / "tilegym/ops/softmaxish.py").read_text().splitlines()
    deco = src.index("@experimental_kernel") + 1
    assert f"tilegym/ops/softmaxish.py:{deco}" not in r["map"].values()


@pytest.mark.parametrize("kernel, owner, name, needle", [
    ("k_torch_deep", "tool", "torch", "used by k_torch_deep -> _deep -> DT"),
    ("k_undefined", "kernel", "NOT_DEFINED", "is not defined in"),
    ("k_cond", "tool", "COND", "module-level if/try"),
    ("k_deco", "tool", "tilegym.ops.softmaxish.functools_cache", "is not cuTile's"),
    ("not_a_kernel", "kernel", "not_a_kernel", "is not a @ct.kernel"),
    ("k_missing", "kernel", "k_missing", "no function 'k_missing'"),
])
def test_blocked_names_the_name_and_its_line(site, tmp_path, kernel, owner, name, needle):
    r = extract(site, tmp_path, "tilegym.ops.softmaxish", [kernel])
    assert r["problems"], kernel
    p = r["problems"][0]
    assert (p.owner, p.name) == (owner, name) and needle in str(p), str(p)
    src = (site / "tilegym/ops/softmaxish.py").read_text().splitlines()
    if kernel == "k_torch_deep":
        # the use, not the import line; a module-level statement is Python's, never rewritten
        assert src[p.line - 1].startswith("DT = torch") and "module-level statement" in str(p)
        assert str(p).startswith(f"tilegym/ops/softmaxish.py:{p.line}: 'torch'")


# -- torch inside kernels (tileport/model/torch_uses.py) -----------------------------------------------

def _positions(fn, ann_dropped=False):
    """(node type, line relative to the def, column) of every node of a function, the torch.Tensor
    annotations left out when ``ann_dropped`` (the importer drops them)."""
    skip = set()
    if ann_dropped:
        for a in ast.walk(fn.args):
            if isinstance(a, ast.arg) and isinstance(a.annotation, ast.Attribute) and a.annotation.attr == "Tensor":
                skip |= {id(n) for n in ast.walk(a.annotation)}
    return [(type(n).__name__, n.lineno - fn.lineno, n.col_offset) for n in ast.walk(fn)
            if hasattr(n, "col_offset") and id(n) not in skip]


def _def(tree, name):
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def test_torch_annotations_and_dtypes_become_cutiles_spelling_at_the_same_columns(site, tmp_path):
    sha = install(site, "tilegym", "1.0", GYM)
    pin_file = pin(tmp_path / "pin.txt", "tilegym", "1.0", sha)
    d = _op(tmp_path, "tg_r", "source: {module: tilegym.ops.torchy}\n", kernels=("k_rewrites",))
    kpy = tp_source.kernel_py(d)
    doc = importer.run(d, kpy, str(kpy) + ".map.json", kpy.parent / "import.json", "tg_r", pin_file)
    assert doc["verdict"] == "PASS" and "6 use(s) of torch rewritten" in doc["summary"], doc["summary"]
    text = kpy.read_text()
    code = text.split("\n#\n", 1)[1]
    assert "torch" not in code
    pad = " " * len(": torch.Tensor")
    # what follows a rewrite on its line keeps its column (spaces fill the difference)
    for want in (f"def k_rewrites(x{pad}, y{pad}, TILE: ct.Constant[int]):",
                 "offs = ct.arange(TILE, dtype=ct.int32)", "ct.float32   ) + 0.5",
                 "return ct.astype(ct.astype(t, ct.bool_  ), ct.bfloat16)"):
        assert want in code, want
    src = (site / "tilegym/ops/torchy.py").read_text()
    mod_tree, kpy_tree = ast.parse(src), ast.parse(text)
    assert _positions(_def(mod_tree, "k_rewrites"), True) == _positions(_def(kpy_tree, "k_rewrites"))
    assert _positions(_def(mod_tree, "_plain")) == _positions(_def(kpy_tree, "_plain"))
    # each rewrite: in the header, in the line map, and an info finding quoting the wheel's line
    # and citing cuTile's source
    rw = doc["details"]["rewritten"]
    assert [(r["kind"], r["original"], r["replacement"]) for r in rw] == [
        ("dtype", "torch.bool", "ct.bool_"), ("dtype", "torch.bfloat16", "ct.bfloat16"),
        ("annotation", ": torch.Tensor", ""), ("annotation", ": torch.Tensor", ""),
        ("dtype", "torch.int32", "ct.int32"), ("dtype", "torch.float32", "ct.float32")]
    lmap = json.loads(Path(str(kpy) + ".map.json").read_text())["lines"]
    lines = src.splitlines()
    for r in rw:
        assert lmap[str(r["kernel_line"])] == f"tilegym/ops/torchy.py:{r['line']}" and r["keeps_columns"]
        assert f"#   {r['kernel_line']} <- tilegym/ops/torchy.py:{r['line']}  '{r['original']}'" in text
        f = next(f for f in doc["findings"] if f["ref"]["line"] == r["line"] and f["ref"]["text"] == r["original"])
        assert f["severity"] == "info" and f"`{lines[r['line'] - 1].strip()}`" in f["message"]
        assert ("_annotated_function.py:_build_annotation_node" if r["kind"] == "annotation"
                else "foreign_dtype_object_to_native") in f["message"]


@pytest.mark.parametrize("kernel, needle", [
    ("k_half", "torch.half is not one of the torch dtypes that cuTile maps"),
    ("k_modobj", "uses the module object torch itself"),
    ("k_static", "an argument of static_assert(), which cuTile evaluates as Python"),
    ("k_default", "a default value, which Python evaluates"),
    ("k_tuple", "annotation tuple[torch.Tensor, ...] of parameter 'xs': tileport drops only"),
    ("k_shadow", "'ct' is a local name in 'lambda'"),
    ("k_pyrun", "Python may also run '_runs_in_python' (tilegym/ops/torchy.py:"),
])
def test_other_uses_of_torch_stay_blocked_naming_the_use_and_its_line(site, tmp_path, kernel, needle):
    r = extract(site, tmp_path, "tilegym.ops.torchy", [kernel])
    (p,) = r["problems"]
    assert (p.owner, p.name) == ("tool", "torch") and needle in str(p) and "is torch" in str(p), str(p)
    src = (site / "tilegym/ops/torchy.py").read_text().splitlines()
    assert "torch" in src[p.line - 1] and str(p).startswith(f"tilegym/ops/torchy.py:{p.line}: 'torch'")


def test_a_kernel_factory_is_blocked_saying_what_the_kernel_reads_from_it(site, tmp_path):
    files = {**GYM, "tilegym/ops/factory.py": """\
        from functools import lru_cache

        import cuda.tile as ct


        @lru_cache
        def make(occupancy, scale):
            unused = 1

            @ct.kernel(occupancy=occupancy)
            def kf(x, TILE: ct.Constant[int]):
                ct.store(x, index=(0,), tile=ct.full((TILE,), scale, dtype=ct.float32))
            return kf


        def launch(x):
            return make(2, 0.5)
        """}
    r = extract(site, tmp_path, "tilegym.ops.factory", ["kf"], files=files)
    (p,) = r["problems"]
    assert (p.owner, p.name, p.line) == ("tool", "kf", 11)
    assert ("inside the function 'make' (line 7), a kernel factory" in str(p)
            and "called at line 17 in launch" in str(p)
            and "read the factory's own occupancy (line 10), scale (line 12)" in str(p)), str(p)


# cuTile's registry of foreign dtypes imports `torch` and reads dtype attributes by name; this
# test-only stand-in gives it fresh objects under torch's names (and a Tensor class for
# annotations), so cuTile's own code decides what each maps to
STAND_IN = """
import sys, types
torch = types.ModuleType("torch")
class dtype:
    def __init__(self, name):
        self.name = name
for _n in NAMES:
    setattr(torch, _n, dtype(_n))
class Tensor:
    pass
torch.Tensor = Tensor
sys.modules["torch"] = torch
"""


def _python(code, names):
    p = subprocess.run([sys.executable, "-c", f"NAMES = {names!r}\n" + STAND_IN + code],
                       capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def test_the_torch_dtype_table_is_the_one_cutiles_registry_reads():
    from tileport.model import torch_uses as TU

    others = ["half", "float", "long", "int", "double", "complex64", "float8_e4m3fnuz", "uint1"]
    out = _python("""
import json
import cuda.tile as ct
from cuda.tile._cext import foreign_dtype_object_to_native as native
from tileport.model.torch_uses import TORCH_DTYPES
print(json.dumps({n: None if native(getattr(torch, n)) is None else
                  [k for k in TORCH_DTYPES.values() if getattr(ct, k) is native(getattr(torch, n))]
                  for n in NAMES}))
""", list(TU.TORCH_DTYPES) + others)
    got = json.loads(out)
    assert {n: got[n] for n in TU.TORCH_DTYPES} == {n: [c] for n, c in TU.TORCH_DTYPES.items()}
    assert all(got[n] is None for n in others)          # torch's aliases are not read by name


SAME_IR = """
import importlib.util, json, linecache
from pathlib import Path
from cuda.tile.compilation import export_kernel
from tileport.model import manifest as M
from tileport.cpu import reference_ir as R

for case in json.loads(Path(CASES).read_text()):
    path, out = Path(case["path"]), []
    for tag in ("rewritten", "original"):
        path.write_text(case[tag])                # one path: the debug locations name the same file
        linecache.clearcache()
        mod = R.load_module(path)
        sig = R.signature_for(case["params"], M.Variant(case["dtype"], case["constexprs"]))
        bc = path.with_suffix("." + tag)
        export_kernel(getattr(mod, case["kernel"]), [sig], str(bc), output_format="tileir_bytecode")
        out.append(bc.read_bytes())
    print(case["kernel"], out[0] == out[1], len(out[0]))
"""


def _same_ir(tmp_path, res, cases):
    """Compile each kernel from the importer's kernel.py and from the same file with every rewrite
    undone and ``import torch`` (the stand-in) on its first line; print whether the Tile IR
    bytecode (debug locations included) is the same."""
    lines = res["text"].split("\n")
    orig = list(lines)
    for r in res["rewritten"]:
        orig[r["kernel_line"] - 1] = (Path(res["wheel"]["site"]) / r["file"]).read_text().split("\n")[r["line"] - 1]
    assert orig[0].startswith("#") and "import torch" not in res["text"]
    orig[0] = "import torch"
    for c in cases:
        c.update(path=str(tmp_path / "kernel.py"), rewritten=res["text"], original="\n".join(orig))
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    out = _python(f"CASES = {str(tmp_path / 'cases.json')!r}\n" + SAME_IR, list(TORCH_DTYPES))
    return {ln.split()[0]: ln.split()[1] == "True" for ln in out.splitlines()}


ARR = {"kind": "array"}


def test_rewritten_kernels_compile_to_the_tile_ir_of_the_original(site, tmp_path):
    res = extract(site, tmp_path, "tilegym.ops.torchy", ["k_rewrites"])
    assert len(res["rewritten"]) == 6
    params = [{**ARR, "ndim": 1}, {**ARR, "ndim": 1, "dtype": "bf16"}, {"kind": "constexpr", "name": "TILE"}]
    assert _same_ir(tmp_path, res, [{"kernel": "k_rewrites", "params": params, "dtype": "f16",
                                     "constexprs": {"TILE": 64}}]) == {"k_rewrites": True}


def test_tilegyms_silu_and_mul_compiles_to_the_same_tile_ir_after_its_rewrites(tmp_path):
    # the installed tilegym 1.5.1: torch.int32 / torch.float32 in both row-wise kernels
    ks = ["_silu_and_mul_kernel_row_wise", "_silu_and_mul_backward_kernel_row_wise"]
    res = importer.extract("tilegym.ops.cutile.silu_and_mul", ks, Path(__file__).parent.parent / wheels.PIN_FILE)
    assert not res["problems"] and {r["original"] for r in res["rewritten"]} == {"torch.int32", "torch.float32"}
    two_d = {**ARR, "ndim": 2}
    const = [{"kind": "constexpr", "name": "TILE_SIZE"}, {"kind": "constexpr", "name": "TOTAL_HIDDEN_SIZE"}]
    cases = [{"kernel": ks[0], "params": [two_d] * 2 + const, "dtype": "f16",
              "constexprs": {"TILE_SIZE": 1024, "TOTAL_HIDDEN_SIZE": 1000}},
             {"kernel": ks[1], "params": [two_d] * 4 + const, "dtype": "bf16",
              "constexprs": {"TILE_SIZE": 4096, "TOTAL_HIDDEN_SIZE": 4096}}]
    assert _same_ir(tmp_path, res, cases) == {k: True for k in ks}


def test_third_party_module_objects_and_clashes(site, tmp_path):
    r = extract(site, tmp_path, "tilegym.ops.thirdparty", ["k_np"])
    assert r["problems"] == [] and "import numpy as np" in r["text"]     # pinned in requirements.lock
    for k, needle in (("k_scipy", "copies no other third-party import"), ("k_modobj", "module object")):
        r = extract(site, tmp_path, "tilegym.ops.thirdparty", [k])
        assert r["problems"] and needle in str(r["problems"][0]), k
    r = extract(site, tmp_path, "tilegym.ops.star", ["k_star"])
    assert r["problems"][0].owner == "tool" and "does not follow star imports" in str(r["problems"][0])
    r = extract(site, tmp_path, "tilegym.ops.clash", ["k_clash"])
    assert r["problems"] and "with different definitions" in str(r["problems"][0])
    assert r["problems"][0].name == "SCALE"


def test_pin_and_record_are_checked(site, tmp_path):
    sha = install(site, "tilegym", "1.0", GYM)
    with pytest.raises(wheels.ImportFailed, match=r"pins tilegym==2.0 but tilegym 1.0 is installed"):
        importer.extract("tilegym.ops.softmaxish", ["k_main"], pin(tmp_path / "p", "tilegym", "2.0", sha))
    with pytest.raises(wheels.ImportFailed, match="does not pin"):
        importer.extract("tilegym.ops.softmaxish", ["k_main"], pin(tmp_path / "p", "other", "1.0", sha))
    p = site / "tilegym/ops/softmaxish.py"
    p.write_text(p.read_text() + "\n# edited by hand\n")
    with pytest.raises(wheels.ImportFailed, match="differs from the hash in the RECORD"):
        importer.extract("tilegym.ops.softmaxish", ["k_main"], pin(tmp_path / "p", "tilegym", "1.0", sha))
    with pytest.raises(wheels.ImportFailed, match="no installed distribution provides the package 'nogym'"):
        importer.extract("nogym.ops", ["k"], tmp_path / "p")


def _op(tmp_path, name, source, kernels=("k_main",), own_kernel_py=False):
    d = tmp_path / "operators" / name
    d.mkdir(parents=True)
    ks = "\n".join(f"  {k}:\n    arrays:\n      x: {{ndim: 1, role: input}}\n      y: {{ndim: 1, role: output}}\n"
                   f"    grid: \"(1, 1, 1)\"" for k in kernels)
    (d / "manifest.yaml").write_text(
        f"op: {name}\n{source}kernels:\n{ks}\ndtypes: [f32]\nconfigs:\n  - {{TILE: 1024}}\n"
        f"shape_names: [N]\ntest_shapes: [[1024]]\nperf_shapes: [[1024]]\n"
        f"tolerance:\n  f32: {{rtol: 0.0, atol: 0.0}}\n")
    if own_kernel_py:
        (d / "kernel.py").write_text("import cuda.tile as ct\n")
    return d


def test_run_writes_kernel_map_verdict_and_every_stage_finds_it(site, tmp_path):
    sha = install(site, "tilegym", "1.0", GYM)
    pin_file = pin(tmp_path / "pin.txt", "tilegym", "1.0", sha)
    d = _op(tmp_path, "tg_x", "source: {module: tilegym.ops.softmaxish, kernels: [k_main, k_exp]}\n")
    kpy = tp_source.kernel_py(d)
    assert kpy == (tmp_path / "results" / "tg_x" / "src" / "kernel.py").resolve()
    doc = importer.run(d, kpy, str(kpy) + ".map.json", kpy.parent / "import.json", "tg_x", pin_file)
    assert doc["verdict"] == "PASS" and "2 kernel(s) of tilegym.ops.softmaxish from tilegym 1.0" in doc["summary"]
    assert doc["details"]["wheel"]["sha256"] == sha
    assert [f["severity"] for f in doc["findings"]] == ["info"]        # the decorator left out
    tp_source.check_imported(d)                                                  # PASS: no exception
    assert tp_source.source_name(d, "k_main") == "tilegym.ops.softmaxish:k_main"
    # an operator without source: keeps its own kernel.py
    own = _op(tmp_path, "own", "", own_kernel_py=True)
    assert (tp_source.kernel_py(own) == own / "kernel.py"
            and tp_source.source_name(own, "k") == "operators/own/kernel.py:k")
    tp_source.check_imported(own)
    # a verdict naming a line of the imported file also names the module's line, once
    line = next(i for i, t in enumerate(kpy.read_text().splitlines(), 1) if t.startswith("def k_main"))
    src = (site / "tilegym/ops/softmaxish.py").read_text().splitlines()
    want = f"tilegym/ops/softmaxish.py:{src.index('def k_main(x, y, TILE: ConstInt):') + 1}"
    v = write(Verdict(stage="analyze", op="tg_x", verdict="BLOCKED", owner="tool",
                      summary=f"{kpy}:{line}: ct.gather: no rule",
                      findings=[Finding("unsupported", "critical", "tool", "m", ref={"file": str(kpy), "line": line}),
                                Finding("math", "critical", "kernel", "diff",
                                        ref={"file": "a.tileir", "line": 3, "source": f"{kpy}:{line}"})]),
              tmp_path / "v.json")
    assert v["summary"] == f"{kpy}:{line} [{want}]: ct.gather: no rule"
    assert v["findings"][0]["ref"]["origin"] == want and v["findings"][1]["ref"]["origin"] == want
    assert write(read(tmp_path / "v.json"), tmp_path / "v2.json")["summary"] == v["summary"]
    # an annotated multi-digit line is left alone (its prefix line {line} is not annotated inside it)
    assert tp_source.annotate_text(f"{kpy}:{line}7 [tilegym/ops/x.py:1]: m") == f"{kpy}:{line}7 [tilegym/ops/x.py:1]: m"
    # a BLOCKED import: kernel.py says so, the analysis quotes it with the import's owner
    d2 = _op(tmp_path, "tg_t", "source: {module: tilegym.ops.softmaxish}\n", kernels=("k_torch_deep",))
    k2 = tp_source.kernel_py(d2)
    doc = importer.run(d2, k2, str(k2) + ".map.json", k2.parent / "import.json", "tg_t", pin_file)
    assert doc["verdict"] == "BLOCKED" and doc["owner"] == "tool" and "'torch'" in doc["summary"]
    assert doc["details"]["blocked"][0]["name"] == "torch"
    with pytest.raises(tp_source.SourceBlocked, match="import BLOCKED") as exc:
        tp_source.check_imported(d2)
    assert exc.value.owner == "tool"
    from tileport.cpu import analyze

    an = analyze.run(d2, tmp_path / "an.json", "tg_t")
    assert an["verdict"] == "BLOCKED" and an["owner"] == "tool" and "'torch'" in an["summary"]


def test_manifest_source_key(tmp_path):
    from tileport.model import manifest

    d = _op(tmp_path, "tg_m", "source: {module: tilegym.ops.softmaxish, kernels: [k_exp]}\n")
    with pytest.raises(manifest.ManifestError, match=r"manifest.yaml:2: key 'source/kernels'.*lacks \['k_main'\]"):
        manifest.load(d / "manifest.yaml")
    d = _op(tmp_path, "tg_n", "source: {module: 'not a module'}\n")
    with pytest.raises(manifest.ManifestError, match="key 'source/module'"):
        manifest.load(d / "manifest.yaml")


# -- the workflow: a new pin reruns exactly the operators whose source files changed ----------

KERNEL = textwrap.dedent("""\
    import cuda.tile as ct
    from .common import TWO


    @ct.kernel
    def {name}(x, y, TILE: ct.Constant[int]):
        t = ct.load(x, index=(ct.bid(0),), shape=(TILE,))
        ct.store(y, index=(ct.bid(0),), tile=t * TWO)
    """)


def _wheel(a_extra="", common="TWO = 2.0\n"):
    return {"tilegym/__init__.py": "", "tilegym/ops/__init__.py": "",
            "tilegym/ops/common.py": common,
            "tilegym/ops/a.py": KERNEL.format(name="ka") + a_extra,
            "tilegym/ops/b.py": KERNEL.replace("from .common import TWO", "TWO = 2.0").format(name="kb")}


def test_new_wheel_reruns_exactly_the_operators_whose_source_changed(tmp_path):
    wd = copy_workflow(tmp_path / "wf")
    site = tmp_path / "site"
    for op, mod, k in (("tg_a", "a", "ka"), ("tg_b", "b", "kb")):
        d = wd / "operators" / op
        d.mkdir(parents=True)
        (d / "manifest.yaml").write_text(
            f"op: {op}\nsource: {{module: tilegym.ops.{mod}}}\nkernels:\n  {k}:\n    arrays:\n"
            f"      x: {{ndim: 1, role: input}}\n      y: {{ndim: 1, role: output}}\n"
            f"    grid: \"(cdiv(N, TILE), 1, 1)\"\ndtypes: [f32]\nconfigs:\n  - {{TILE: 1024}}\n"
            f"shape_names: [N]\ntest_shapes: [[1024]]\nperf_shapes: [[1024]]\n"
            f"tolerance:\n  f32: {{rtol: 0.0, atol: 0.0}}\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    targets = [f"results/{op}/analysis.json" for op in ("tg_a", "tg_b")]

    def smk(*args):
        exe = os.path.join(os.path.dirname(sys.executable), "snakemake")
        p = subprocess.run([exe, "--cores", "1", *args, *targets], cwd=wd, env=env,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        out = p.stdout + p.stderr
        if "Nothing to be done" in out:
            return {}
        stats = out.split("Job stats:", 1)[1]
        return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.M) if m[1] != "total"}

    def install_pin(version, files):
        pin(wd / "requirements-sources.txt", "tilegym", version, install(site, "tilegym", version, files))

    install_pin("1.0", _wheel())
    assert smk() == {"import_source": 2, "analyze": 2}
    for op in ("tg_a", "tg_b"):
        an = read(wd / "results" / op / "analysis.json")
        assert an["verdict"] == "PASS", an["summary"]
        assert an["details"]["kernel_file"].endswith(f"results/{op}/src/kernel.py")
    assert "tilegym 1.0" in (wd / "results/tg_a/src/kernel.py").read_text()
    # 1.1 changes a.py only (pip rewrites every file: b.py and common.py get new mtimes, same bytes)
    install_pin("1.1", _wheel(a_extra="\n\ndef host_side():\n    return 1\n"))
    assert smk("-n") == {"import_source": 1, "analyze": 1}
    smk()
    assert "tilegym 1.1" in (wd / "results/tg_a/src/kernel.py").read_text()
    # 1.2 changes the sibling module a's kernel uses (b has its own TWO): a again, b not
    install_pin("1.2", _wheel(a_extra="\n\ndef host_side():\n    return 1\n", common="TWO = 3.0\n"))
    assert smk("-n") == {"import_source": 1, "analyze": 1}


def test_coverage_table_lists_every_kernel_with_its_furthest_stage(site, tmp_path):
    import csv

    from tileport.report import coverage
    from tileport.report import summary as SUM

    install(site, "tilegym", "1.0", {**GYM, "tilegym/ops/cutile/__init__.py": "",
                                     "tilegym/ops/cutile/a.py": KERNEL.format(name="ka") + textwrap.dedent("""\


        def factory(occ):
            @ct.kernel(occupancy=occ)
            def kf(x):
                pass
            return kf
        """), "tilegym/ops/cutile/common.py": "TWO = 2.0\n",
        **{f"tilegym/suites/{d}__init__.py": "" for d in ("", "liger/", "liger/cutile/")},
        "tilegym/suites/liger/cutile/b.py": KERNEL.format(name="kb"),
        "tilegym/transformers/__init__.py": "", "tilegym/transformers/m.py": KERNEL.format(name="km")})
    inv = coverage.inventory("tilegym.ops.cutile")
    assert [(k["function"], k.get("factory")) for k in inv] == [("ka", None), ("kf", "factory")]
    everything = coverage.inventory("tilegym")          # the census: every subtree of the wheel
    everything = [k for k in everything if k["module"].startswith(("tilegym.ops.cutile", "tilegym.suites",
                                                                   "tilegym.transformers"))]
    assert sorted((coverage.subtree(k["module"]), k["function"]) for k in everything) == [
        ("ops/cutile", "ka"), ("ops/cutile", "kf"), ("suites/liger", "kb"), ("transformers", "km")]
    assert coverage.subtree("tilegym.ops.fused") == "ops"
    base = {c: "PASS" for c in SUM.COLUMNS}
    rows = [base | {"op": "tg_a", "kernel": "ka", "variant": "f16-T1", "test": "not_run (no GPU: x)",
                    "ratio": "not_run (no GPU: x)", "note": "", "source": "tilegym.ops.cutile.a:ka"},
            base | {"op": "tg_a", "kernel": "ka", "variant": "f32-T1", "ir_diff": "FAIL",
                    "note": f"ir_diff: FAIL: first divergence at {tmp_path}/results/tg_a/src/kernel.py:9 "
                            f"[tilegym/ops/cutile/a.py:7] | x",
                    "source": "tilegym.ops.cutile.a:ka"}]
    out = tmp_path / "results" / "summary.csv"
    out.parent.mkdir()
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=SUM.COLUMNS)
        w.writeheader()
        w.writerows(rows)
    text = coverage.table(out, inv, tmp_path / "operators", package="tilegym.ops.cutile")
    block = coverage.readme_block(out, everything, tmp_path / "operators")
    assert "| `ops/cutile` | 2 | 1 | 1 | 0 | 0 | 0 |" in block      # ka: f32 at ir_diff FAIL
    assert "| `suites/liger` | 1 | 0 | 0 | 0 | 0 | 0 |" in block and "| **all** | 4 | 1 |" in block
    assert "4 `@ct.kernel` functions in `tilegym`" in block and "docs/coverage.md" in block
    lines = text.splitlines()
    ka = next(ln for ln in lines if ln.startswith("| `a:ka`"))
    assert ka.split(" | ")[1:7] == ["tg_a", "2", "2/2", "1/2", "ir_diff", "FAIL"]
    assert "[tilegym/ops/cutile/a.py:7] \\| x" in ka
    # a path of this machine's checkout, as an older summary.csv names it: from the checkout root
    assert "divergence at results/tg_a/src/kernel.py:9 [" in ka and str(tmp_path) not in ka
    kf = next(ln for ln in lines if ln.startswith("| `a:kf`"))
    assert "no operator" in kf and "kernel factory" in kf
    assert "2 `@ct.kernel` functions" in text and "1 imported by an operator" in text
    readme = f"intro\n{coverage.BEGIN}\nold table\n{coverage.END}\noutro\n"
    assert coverage.replace_block(readme, text) == f"intro\n{coverage.BEGIN}\n{text}{coverage.END}\noutro\n"


def test_module_files_are_kept_on_disk_and_found_again_when_a_read_file_changes(site, tmp_path, monkeypatch):
    """The DAG's input function reads the kept answer back without extracting, and extracts again
    when a file it read changes (same length, same version) or a module appears beside them."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    install_distribution(site, "tilegym", "1.0", _wheel())
    first = importer.module_files("tilegym.ops.a", ["ka"])
    assert sorted(Path(f).name for f in first) == ["a.py", "common.py"]
    runs = []
    real = importer.Extraction.run
    monkeypatch.setattr(importer.Extraction, "run", lambda self: runs.append(1) or real(self))
    assert importer.module_files("tilegym.ops.a", ["ka"]) == first and runs == []
    # the same bytes' length, the same version: only the content tells
    (site / "tilegym/ops/common.py").write_text("TWO = 3.0\n")
    assert importer.module_files("tilegym.ops.a", ["ka"]) == first and runs == [1]
    assert importer.module_files("tilegym.ops.a", ["ka"]) == first and runs == [1]
    # a module added beside the read ones
    (site / "tilegym/ops/extra.py").write_text("")
    importer.module_files("tilegym.ops.a", ["ka"])
    assert runs == [1, 1]
    # other kernels: another answer
    assert importer.module_files("tilegym.ops.a", ["nope"]) != [] and runs == [1, 1, 1]


def test_kept_answers_drop_the_least_recently_used(tmp_path, monkeypatch):
    """toolchain.keep keeps the ``latest`` documents most recently written *or read*: an answer
    read back at each DAG build stays while others are written (with 256 by write time alone,
    three checkouts' 92 operators evicted each other's and every build extracted them again)."""
    import os

    from tileport.core import toolchain

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    toolchain.keep("t", "a" * 64, {"v": 1}, 2)
    toolchain.keep("t", "b" * 64, {"v": 2}, 2)
    folder = tmp_path / "cache" / "tileport" / "t"
    for n, f in enumerate(sorted(folder.glob("*.json"))):       # a older than b
        os.utime(f, (1000 + n, 1000 + n))
    assert toolchain.read_kept("t", "a" * 64) == {"v": 1, "key": "a" * 64}      # read: now the newest
    toolchain.keep("t", "c" * 64, {"v": 3}, 2)
    assert toolchain.read_kept("t", "a" * 64) is not None
    assert toolchain.read_kept("t", "b" * 64) is None
    assert toolchain.read_kept("t", "c" * 64) is not None
    assert importer.KEPT_ANSWERS >= 92 * 4


def test_the_wheel_is_named_by_its_real_path_whatever_link_ran_python(tmp_path):
    """The checkout's .venv links to the machine's shared environment: Snakemake run as
    `.venv/bin/python -m snakemake` saw the wheel under the link's path, as `.venv/bin/snakemake`
    (pip's real path) did not, so import_source's and nv_build's input sets changed between the
    two and the whole corpus reran (962 jobs, 2026-12-07). Both roots are real paths now."""
    link = tmp_path / "env"
    link.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    code = ("from tileport.core import wheels; from tileport.nvidia import port; "
            "print(wheels.find_wheel('tilegym').root); print(port.installed_wheel().root)")
    roots = []
    for python in (Path(sys.executable), link / "bin" / "python"):
        p = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                           cwd=Path(__file__).resolve().parents[1])
        assert p.returncode == 0, p.stderr
        roots.append(p.stdout.split())
    assert roots[0] == roots[1]
    assert all(Path(r) == Path(r).resolve() for r in roots[0])
