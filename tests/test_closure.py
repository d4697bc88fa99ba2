"""A rule's code inputs from the import closure of its script (tileport.core.closure)."""
import shutil
from pathlib import Path

import pytest

from tileport.core import closure

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "tileport"


def _inputs(script: str) -> set[str]:
    return {str(Path(p).relative_to(REPO)) for p in closure.code_inputs(REPO / "scripts" / f"{script}.py", PKG)}


def test_a_stage_s_code_inputs_hold_what_it_imports_indirectly():
    # the two misses the hand-kept lists had: the translator's driver reads the manifest, and
    # the GPU test asks gpu.kept whether a kept measurement still holds
    assert "tileport/model/manifest.py" in _inputs("write_kernel")
    assert "tileport/gpu/kept.py" in _inputs("gpu_test")
    # every package face on the way, and the stage's own module
    assert {"tileport/__init__.py", "tileport/ir_diff/__init__.py",
            "tileport/ir_diff/normalise.py"} <= _inputs("nv_ir_diff")


def test_a_schema_a_module_reads_is_a_code_input_of_its_users():
    assert "schemas/manifest.schema.yaml" in _inputs("analyze")
    assert "schemas/nv_ports.schema.yaml" in _inputs("nv_ir")
    assert "schemas/nv_ports.schema.yaml" not in _inputs("rust_build")


def test_a_stage_s_code_inputs_leave_out_what_it_never_imports():
    assert not any(p.startswith(("tileport/gpu/", "tileport/report/", "tileport/translate/"))
                   for p in _inputs("rust_build"))
    assert "tileport/report/summary.py" not in _inputs("analyze")


def test_closure_follows_lazy_and_relative_imports(tmp_path):
    pkg = tmp_path / "tileport"
    (pkg / "core").mkdir(parents=True)
    for f in ("__init__.py", "core/__init__.py"):
        (pkg / f).write_text("")
    (pkg / "core" / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "core" / "b.py").write_text("from tileport.core.c import x\n")
    (pkg / "core" / "c.py").write_text("x = 1\n")
    (pkg / "core" / "d.py").write_text("")
    got = [p.relative_to(tmp_path).as_posix() for p in closure.import_closure("tileport.core.a", pkg)]
    assert got == ["tileport/__init__.py", "tileport/core/__init__.py", "tileport/core/a.py", "tileport/core/b.py",
                   "tileport/core/c.py"]
    script = tmp_path / "s.py"
    script.write_text("from tileport.core import a, c\n")
    assert [Path(p).name for p in closure.code_inputs(script, pkg)] == ["__init__.py", "__init__.py", "a.py", "b.py",
                                                                           "c.py"]
    script.write_text("from tileport.core import a\nfrom tileport.gone.module import x\n")
    with pytest.raises(KeyError, match="tileport.gone.module"):
        closure.code_inputs(script, pkg)


def test_the_graph_kept_on_disk_is_read_back_and_follows_every_edit(tmp_path, monkeypatch):
    """Each Snakemake command reads the import graph kept on disk (issue 32) instead of parsing
    the package; kept by content, so an edited import, a new module or a new schema file gives a
    new graph, in another copy of the package (a workflow copy) as in this one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def closure_of(pkg, module="tileport.core.a"):
        closure._graph_cached.cache_clear()        # a new process: only the disk holds the graph
        return [p.relative_to(pkg.parent).as_posix() for p in closure.import_closure(module, pkg)]

    pkg = tmp_path / "one" / "tileport"
    (pkg / "core").mkdir(parents=True)
    (tmp_path / "one" / "schemas").mkdir()
    for f in ("__init__.py", "core/__init__.py", "core/c.py"):
        (pkg / f).write_text("")
    (pkg / "core" / "a.py").write_text('from tileport.core import b\nS = REPO / "schemas" / "x.yaml"\n')
    (pkg / "core" / "b.py").write_text("")
    first = closure_of(pkg)
    assert first == ["tileport/__init__.py", "tileport/core/__init__.py", "tileport/core/a.py", "tileport/core/b.py"]
    (kept,) = (tmp_path / "cache" / "tileport" / "closure").iterdir()
    # read back: parsing is not called again (a copy elsewhere has the same content)
    copy = tmp_path / "two" / "tileport"
    shutil.copytree(pkg.parent, copy.parent)
    monkeypatch.setattr(closure, "_nodes", lambda path: pytest.fail(f"parsed {path} again"))
    assert closure_of(pkg) == closure_of(copy) == first
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # an edited import, a new schema file, a new module: each a new graph
    (copy / "core" / "b.py").write_text("from tileport.core import c\n")
    assert closure_of(copy) == first + ["tileport/core/c.py"]
    (copy.parent / "schemas" / "x.yaml").write_text("{}\n")
    assert closure_of(copy) == ["schemas/x.yaml"] + first + ["tileport/core/c.py"]
    (copy / "core" / "d.py").write_text("")
    (copy / "core" / "c.py").write_text("from tileport.core import d\n")
    assert closure_of(copy) == ["schemas/x.yaml"] + first + ["tileport/core/c.py", "tileport/core/d.py"]
    assert len(list(kept.parent.iterdir())) == 4          # one graph per content seen
