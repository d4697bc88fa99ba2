"""The cuda.tile API table (docs/cuda-tile-api.yaml, docs/cuda-tile-api.md) against the installed
cuda.tile: every public name has a row, and each row's evidence holds.

- PASS: the rule is a method of the translator, the construct kernel (tests/data/operators/
  constructs or int_ids, compiled to IR PASS by tests/test_constructs.py; api, by this file;
  lang, by tests/test_language.py) spells the name in its
  source, and the named mutant is one of that kernel's in tests/test_mutations.py (which checks
  the IR diff catches it);
- BLOCKED: the quoted text is on the named line of the cutile 0.5.0 source;
- NOT_YET / HOST: a reason is given (load_table checks the fields).
"""
import ast
import glob
import importlib
import os
import re
from pathlib import Path

import pytest
import yaml
from conftest import run_kernels

from tileport.model import api_table

DATA = Path(__file__).parent / "data" / "operators"
KERNEL_OPS = ("constructs", "int_ids", "api", "lang", "dtypes8")
API = DATA / "api"
IR = Path(__file__).parent / "data" / "ir" / "constructs"
API_KERNELS = list(yaml.safe_load((API / "manifest.yaml").read_text())["kernels"])
# an operator row -> the AST node class and operator class that spell it
OPS = {"__add__": (ast.BinOp, ast.Add), "__sub__": (ast.BinOp, ast.Sub), "__mul__": (ast.BinOp, ast.Mult),
       "__truediv__": (ast.BinOp, ast.Div), "__floordiv__": (ast.BinOp, ast.FloorDiv),
       "__mod__": (ast.BinOp, ast.Mod), "__pow__": (ast.BinOp, ast.Pow), "__matmul__": (ast.BinOp, ast.MatMult),
       "__and__": (ast.BinOp, ast.BitAnd), "__or__": (ast.BinOp, ast.BitOr), "__xor__": (ast.BinOp, ast.BitXor),
       "__lshift__": (ast.BinOp, ast.LShift), "__rshift__": (ast.BinOp, ast.RShift),
       "__neg__": (ast.UnaryOp, ast.USub), "__invert__": (ast.UnaryOp, ast.Invert),
       "__eq__": (ast.Compare, ast.Eq), "__ne__": (ast.Compare, ast.NotEq), "__lt__": (ast.Compare, ast.Lt),
       "__le__": (ast.Compare, ast.LtE), "__gt__": (ast.Compare, ast.Gt), "__ge__": (ast.Compare, ast.GtE)}


def kernel_sources() -> dict:
    """``{kernel: [FunctionDef, ...]}``: each kernel of the test operators with the module-level
    helpers it calls (transitively), as cuTile Python inlines them."""
    out = {}
    for op in KERNEL_OPS:
        tree = ast.parse((DATA / op / "kernel.py").read_text())
        fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
        for k in yaml.safe_load((DATA / op / "manifest.yaml").read_text())["kernels"]:
            seen, todo = [], [k]
            while todo:
                f = fns[todo.pop()]
                if f in seen:
                    continue
                seen.append(f)
                todo += [n.func.id for n in ast.walk(f) if isinstance(n, ast.Call)
                         and isinstance(n.func, ast.Name) and n.func.id in fns]
            out[k] = seen
    return out


def _is_ct(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "ct"


def spells(fns: list, name: str) -> bool:
    """Whether the functions ``fns`` spell the row ``name`` (see :func:`api_table.public_names`)."""
    nodes = [n for f in fns for n in ast.walk(f)]
    kw = None
    if name.endswith("=)"):
        name, kw = name[:-2].split("(")
    owner, attr = name.split(".", 1)
    if owner == "Tile" and attr in OPS:
        node_cls, op_cls = OPS[attr]
        return any(isinstance(n, node_cls) and (any(isinstance(o, op_cls) for o in n.ops)
                                                if node_cls is ast.Compare else isinstance(n.op, op_cls))
                   for n in nodes)
    if owner == "Tile" and attr == "__getitem__":
        return any(isinstance(n, ast.Subscript) and not (isinstance(n.value, ast.Attribute)
                                                         and n.value.attr == "shape") for n in nodes)
    if owner == "ct":
        hits = [n for n in nodes if isinstance(n, ast.Attribute) and _is_ct(n.value) and n.attr == attr]
        if kw is None:
            return bool(hits)
        calls = [n for n in nodes if isinstance(n, ast.Call)]
        calls += [d for f in fns for d in f.decorator_list if isinstance(d, ast.Call)]
        return any(c.func in hits and any(k.arg == kw for k in c.keywords) for c in calls)
    # Tile.<attr> / Array.<attr>: an attribute of a kernel value, not of the module
    params = {a.arg for f in fns for a in f.args.args}
    for n in nodes:
        if isinstance(n, ast.Attribute) and n.attr == attr and not _is_ct(n.value):
            if owner == "Array" and not (isinstance(n.value, ast.Name) and n.value.id in params):
                continue
            return True
    return False


def mutants() -> dict:
    """``{kernel: {description, ...}}`` of tests/test_mutations.py's mutants: meaning-changing
    ones (FAIL) and changed speed hints (a `hint` warning)."""
    import test_mutations
    out = {}
    for kernel, what, *_ in test_mutations.MUTANTS + test_mutations.HINT_MUTANTS:
        out.setdefault(kernel, set()).add(what)
    return out


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    return run_kernels(API, tmp_path_factory.mktemp("api"), "api", API_KERNELS, "f16-TILE1024-BM16")


@pytest.mark.parametrize("kernel", API_KERNELS)
def test_api_kernel_reaches_ir_pass(ported, kernel):
    """The kernels of tests/data/operators/api (names no construct kernel spelled) port with the
    real compilers at IR PASS, without notes. TILEPORT_REGEN_IR=1 writes their Tile IR to
    tests/data/ir/constructs/ for the mutation suite."""
    diff, ref, port = ported[kernel]
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])
    if os.environ.get("TILEPORT_REGEN_IR"):
        for side, path in (("ref", ref), ("port", port)):
            text = re.sub(r'di_file<"([^"]*)" in "[^"]*">', r'di_file<"\1" in "api">',
                          path.read_text()).replace(str(API.parent.parent.parent.parent) + "/", "")
            (IR / f"{kernel}.{side}.tileir").write_text(text)


def test_every_api_kernel_has_mutation_data():
    for k in API_KERNELS:
        assert (IR / f"{k}.ref.tileir").is_file() and (IR / f"{k}.port.tileir").is_file(), k


@pytest.fixture(scope="module")
def table():
    return api_table.load_table()


def test_every_public_name_has_a_row(table):
    names = set(api_table.public_names())
    missing, extra = sorted(names - set(table)), sorted(set(table) - names)
    assert not missing, f"cuda.tile names without a row in docs/cuda-tile-api.yaml: {missing}"
    assert not extra, f"rows of docs/cuda-tile-api.yaml that the installed cuda.tile lacks: {extra}"


def test_public_names_reads_the_module():
    """public_names enumerates whatever module it is given: a name added to a release is a row."""
    import cuda.tile as ct

    class Fake:
        __all__ = [*ct.__all__, "frobnicate"]
        Tile, Array = ct.Tile, ct.Array

        def __getattr__(self, n):
            return (lambda x, /, *, depth=2: x) if n == "frobnicate" else getattr(ct, n)

    names = api_table.public_names(Fake())
    assert {"ct.frobnicate", "ct.frobnicate(depth=)", "ct.load(latency=)", "Tile.__pow__",
            "Tile.__lt__", "Array.slice", "ct.kernel(occupancy=)"} <= set(names)
    assert "Tile.__radd__" not in names and "Tile.__add__" in names


def test_pass_rows_have_a_rule_a_kernel_that_spells_them_and_a_mutant(table):
    from tileport.translate.driver import KernelTranslator
    sources, caught = kernel_sources(), mutants()
    bad = []
    for name, row in sorted(table.items()):
        if row["status"] != "PASS":
            continue
        mod, cls, meth = row["rule"].rsplit(".", 2)   # tileport.translate.memory.MemoryRules.load
        if getattr(getattr(importlib.import_module(mod), cls, None), meth, None) is None \
                or not hasattr(KernelTranslator, meth):
            bad.append(f"{name}: rule {row['rule']} is no method of the translator")
        if row["kernel"] not in sources:
            bad.append(f"{name}: kernel {row['kernel']} is not a test operator's kernel")
        elif not spells(sources[row["kernel"]], name):
            bad.append(f"{name}: kernel {row['kernel']} does not spell it")
        if row["mutant"] not in caught.get(row["kernel"], ()):
            bad.append(f"{name}: no mutant {row['mutant']!r} of {row['kernel']} in test_mutations.py")
    assert not bad, "\n".join(bad)


def test_blocked_rows_quote_the_cutile_source(table):
    roots = [Path(r) for r in glob.glob(str(Path.home() / ".cargo/registry/src/*"))]
    blocked = {n: r for n, r in table.items() if r["status"] == "BLOCKED"}
    if not blocked:
        return
    if not any((r / "cutile-0.5.0").is_dir() for r in roots):
        pytest.skip("the cutile 0.5.0 source is fetched by the first cargo build (rust_build)")
    bad = []
    for name, row in sorted(blocked.items()):
        ev = row["evidence"]
        files = [r / ev["file"] for r in roots if (r / ev["file"]).is_file()]
        if not files:
            bad.append(f"{name}: no file {ev['file']}")
            continue
        lines = Path(files[0]).read_text().splitlines()
        if not (0 < ev["line"] <= len(lines) and ev["text"] in lines[ev["line"] - 1]):
            bad.append(f"{name}: {ev['file']}:{ev['line']} does not read {ev['text']!r}")
    assert not bad, "\n".join(bad)


def test_not_yet_rows_have_no_rule_in_the_translator(table):
    """A NOT_YET row is honest: the translator has no rule of that ct name (when it gains one,
    the row must become PASS with a kernel and a mutant)."""
    from tileport.translate.driver import KernelTranslator
    stale = [n for n, r in table.items() if r["status"] == "NOT_YET" and n.startswith("ct.")
             and "(" not in n and n[3:] in KernelTranslator.CALLS]
    assert not stale, f"rows NOT_YET whose ct name has a translator rule: {stale}"


def test_page_is_generated_from_the_table(table):
    assert api_table.PAGE.read_text() == api_table.render_markdown(table), \
        "docs/cuda-tile-api.md is stale: python -m tileport.model.api_table"


def test_load_table_names_the_bad_row(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("ct.exp:\n  status: PASS\n  rule: x.y\n  kernel: k\n")
    with pytest.raises(ValueError, match=r"t.yaml: ct.exp: status PASS needs .*missing \['mutant'\]"):
        api_table.load_table(p)
    p.write_text("ct.exp:\n  status: MAYBE\n")
    with pytest.raises(ValueError, match="status 'MAYBE' is not one of"):
        api_table.load_table(p)
