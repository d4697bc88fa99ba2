"""The package's layers (docs/architecture.md): a module imports only from its own layer or the
layers below, never in a loop, and never under a one-letter alias. Read from the code's own
imports (module level and inside functions alike), so a new loop or upward import fails here."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tileport.core import closure

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "tileport"

#: bottom to top; a module of layer i may import layers 0..i
LAYERS = ("core", "model", "translate", "ir_diff", "cpu", "host", "nvidia", "gpu", "flow", "report")


def layer_of(module: str) -> int:
    """Index in :data:`LAYERS` of ``tileport.<layer>[.<...>]``; the package's face
    (``tileport`` itself) is below every layer."""
    parts = module.split(".")
    return -1 if len(parts) == 1 else LAYERS.index(parts[1])


def test_every_module_is_in_a_layer():
    strays = [p.relative_to(REPO) for p in PKG.glob("*.py") if p.name != "__init__.py"]
    assert not strays, f"modules outside every layer package: {strays}"
    assert sorted(p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()) == sorted(LAYERS)


def test_no_upward_import():
    graph = closure.import_graph(PKG)
    upward = [f"{a} -> {b}" for a, bs in graph.items() for b in bs if layer_of(b) > layer_of(a)]
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(sorted(upward))


def test_no_import_loop():
    loops = closure.cycles(closure.import_graph(PKG))
    assert not loops, "modules that import each other in a loop: " + "; ".join(" -> ".join(c) for c in loops)


def test_cycles_finds_a_loop_and_an_upward_import_is_seen(tmp_path):
    """The two checks above can fail: a package of three modules in a loop, one importing lazily."""
    pkg = tmp_path / "tileport"
    for layer in ("core", "gpu"):
        (pkg / layer).mkdir(parents=True)
        (pkg / layer / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from tileport.core import b\n")
    (pkg / "core" / "b.py").write_text("def f():\n    from tileport.gpu.c import g\n")
    (pkg / "gpu" / "c.py").write_text("from tileport.core.a import x\n")
    graph = closure.import_graph(pkg)
    assert graph["tileport.core.b"] == {"tileport.gpu.c"}
    assert closure.cycles(graph) == [["tileport.core.a", "tileport.core.b", "tileport.gpu.c"]]
    assert layer_of("tileport.gpu.c") > layer_of("tileport.core.b")


def _one_letter_aliases(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mod = node.module or "" if isinstance(node, ast.ImportFrom) else ""
            for a in node.names:
                full = f"{mod}.{a.name}" if mod else a.name
                ours = full.startswith("tileport") or getattr(node, "level", 0) > 0     # relative: ours
                if a.asname and len(a.asname.lstrip("_")) == 1 and ours:
                    out.append(f"{path.relative_to(REPO)}:{node.lineno}: {full} as {a.asname}")
    return out


@pytest.mark.parametrize("folder", ["tileport", "scripts", "tests"])
def test_no_one_letter_module_alias(folder):
    """``from tileport.core import source as S`` read as ``stats`` in another file: a module is
    named by its own name (or a spelled-out alias)."""
    found = [x for p in sorted((REPO / folder).rglob("*.py")) for x in _one_letter_aliases(p)]
    assert not found, "\n".join(found)
