"""tileport.gpu.kept.Kept, the one owner of kept GPU measurements: each input read and hashed once
per stage job, failures kept, and the module below gpu.test and gpu.bench in the import graph."""
import ast
import collections
import json
from pathlib import Path

import pytest
from test_gpu_test import PERF, edit, fake_gpu, host_build, in_lib, measured_tree, row

from tileport.core import closure, source
from tileport.gpu import bench, harness, kept
from tileport.gpu import test as gpu_test
from tileport.gpu.kept import Kept
from tileport.host import shim as host_shim
from tileport.model import manifest as tp_manifest

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "tileport"


def count_inputs(monkeypatch, results, op_dir):
    """Counters of what one stage job reads: calls of the hashing and loading functions, and
    reads of each input file (``Path.read_bytes`` / ``read_text``), by file name. The job starts
    cold: :func:`tileport.core.source.source_of`'s cache of the manifest's ``source:`` cleared."""
    source._manifest_doc.cache_clear()
    calls, reads = collections.Counter(), collections.Counter()
    for mod, name in ((harness, "operator_files"), (host_shim, "sources_sha"), (tp_manifest, "load"),
                      (kept, "_manifest_part")):
        def counted(*a, _f=getattr(mod, name), _n=name, **k):
            calls[_n] += 1
            return _f(*a, **k)
        monkeypatch.setattr(mod, name, counted)
    r = results / "relu"
    watch = {op_dir / "kernel.py", op_dir / "reference.py", op_dir / "manifest.yaml", r / "host" / "ffi.json",
             r / "host" / "ffi.rs", r / "rust" / "src" / "relu_kernel.rs"}
    read_bytes, read_text = Path.read_bytes, Path.read_text

    def rb(self):
        if self in watch:
            reads[self.name] += 1
        return read_bytes(self)

    def rt(self, *a, **k):
        if self in watch:
            reads[self.name] += 1
        return read_text(self, *a, **k)
    monkeypatch.setattr(Path, "read_bytes", rb)
    monkeypatch.setattr(Path, "read_text", rt)
    return calls, reads


#: one stage job: each hashing / loading function called once, each input file read once --
#: manifest.yaml three times, once per reader: as bytes for the two hashes (Kept.files), by
#: tileport.core.source.source_of (which kernel.py: its ``source:`` key, cached per file version)
#: and by tileport.model.manifest.load (the validated manifest); the last two take a path
ONCE = {"operator_files": 1, "sources_sha": 1, "load": 1, "_manifest_part": 1}
READ_ONCE = {"kernel.py": 1, "reference.py": 1, "manifest.yaml": 3, "ffi.json": 1, "ffi.rs": 1, "relu_kernel.rs": 1}


@pytest.mark.parametrize("mode", ["full", "pending_only"])
def test_a_bench_job_reads_and_hashes_each_input_once(tmp_path, monkeypatch, mode):
    """bench.run with a GPU (faked), the way Snakemake runs it: its outputs removed, so the gate
    first restores the kept copy (reconciled against the manifest), then the library check, the
    operator context, the kept rows (--pending-only), the verdict's hashes and the snapshot. Before
    Kept, one such job called operator_files 6 times (10 with --pending-only), sources_sha 5 (7)
    and manifest.load 2 (4)."""
    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    Kept(results, "relu", op_dir).snapshot()
    if mode == "pending_only":
        edit(op_dir, PERF, "perf_shapes: [[16777216], [67108864], [134217728]]")
    for f in ("bench.json", "bench.csv"):
        (r / f).unlink()
    hb = host_build(results, {"relu": {**in_lib(results, "relu"), "kernels": ["relu_kernel"]}})
    timed = []
    fake_gpu(monkeypatch, timed)
    monkeypatch.setattr(bench, "gpu_gate", gpu_test.gpu_gate)         # the real gate and library check
    monkeypatch.setattr(bench, "library_for", gpu_test.library_for)
    monkeypatch.setattr(harness, "probe_gpu", lambda: "NVIDIA H200")
    calls, reads = count_inputs(monkeypatch, results, op_dir)
    d = bench.run("relu", op_dir, results, r / "bench.csv", r / "bench.json", gpu="auto", host_build=hb,
                  pending_only=mode == "pending_only")
    assert (d["verdict"], d["details"]["configs"], len(timed)) == (
        ("DONE", 12, 12) if mode == "full" else ("DONE", 18, 6))
    assert dict(calls) == ONCE and dict(reads) == READ_ONCE
    # and what it recorded is what the operator holds now
    now = Kept(results, "relu", op_dir)
    assert (d["details"]["sources_sha"], d["details"]["inputs_sha"], d["details"]["test_inputs_sha"]) == (
        now.sources_sha, now.inputs_sha, now.test_inputs_sha)
    assert now.holds(d) and (r / kept.KEEP / "bench.json").read_text() == (r / "bench.json").read_text()


def test_a_gpu_test_job_reads_and_hashes_each_input_once(tmp_path, monkeypatch):
    import types

    results, op_dir = measured_tree(tmp_path)
    r = results / "relu"
    Kept(results, "relu", op_dir).snapshot()
    (r / "test.json").unlink()
    hb = host_build(results, {"relu": {**in_lib(results, "relu"), "kernels": ["relu_kernel"]}})
    monkeypatch.setattr(harness, "probe_gpu", lambda: "NVIDIA H200")
    monkeypatch.setattr(harness, "env_versions", lambda: {})
    monkeypatch.setattr(gpu_test.provenance, "collect", lambda **k: {})
    monkeypatch.setattr(gpu_test, "OpContext", lambda op, op_dir, results, library, nv_build, keeper: (
        types.SimpleNamespace(man=keeper.manifest, nv={}, nv_note=None, call=lambda *a: object())))
    failed = {"ok": False, "error": "FfiError: bad arguments", "fail_class": "host", "cuda_error": False}
    monkeypatch.setattr(gpu_test, "check_call", lambda c, tol: row("relu_kernel", port=failed, launches=None))
    calls, reads = count_inputs(monkeypatch, results, op_dir)
    d = gpu_test.run("relu", op_dir, results, r / "test.json", gpu="auto", host_build=hb)
    assert (d["verdict"], d["fail_class"]) == ("FAIL", "host")
    assert dict(calls) == ONCE and dict(reads) == READ_ONCE
    assert Kept(results, "relu", op_dir).holds(d)


def test_an_input_that_fails_to_read_fails_every_question_the_same_way(tmp_path, monkeypatch):
    results, op_dir = measured_tree(tmp_path)
    test_doc = gpu_test.read(results / "relu" / "test.json")
    (results / "relu" / "host" / "ffi.json").unlink()
    keeper = Kept(results, "relu", op_dir)
    with pytest.raises(FileNotFoundError) as first:
        keeper.sources_sha
    (results / "relu" / "host" / "ffi.json").write_text("{}")       # not read again by this object
    with pytest.raises(FileNotFoundError) as again:
        keeper.sources_sha
    assert again.value is first.value
    assert keeper.standing(test_doc).startswith("stale (sources unreadable: ") and not keeper.holds(test_doc)
    assert Kept(None, "relu", op_dir).standing(test_doc).startswith("stale (sources unreadable: ")


def test_a_given_manifest_is_not_loaded_again(tmp_path, monkeypatch):
    results, op_dir = measured_tree(tmp_path)
    man = tp_manifest.load(op_dir / "manifest.yaml")

    def load(path):
        raise AssertionError(f"loaded {path} again")
    monkeypatch.setattr(tp_manifest, "load", load)
    keeper = Kept(results, "relu", op_dir, man=man)
    doc, src = keeper.bench()
    assert keeper.manifest is man and src == results / "relu" / "bench.json"
    assert (doc["verdict"], doc["details"]["configs"], keeper.pending()) == ("DONE", 12, [])


def test_the_kept_rows_and_pending_configs_come_from_the_reconciled_verdict(tmp_path):
    results, op_dir = measured_tree(tmp_path)
    edit(op_dir, PERF, "perf_shapes: [[16777216], [67108864], [134217728]]")
    keeper = Kept(results, "relu", op_dir)
    rows, src, other = keeper.rows(None, {"device": None})
    assert (len(rows), src, other) == (12, results / "relu" / "bench.json", None)
    assert {p["shape"] for p in keeper.pending()} == {"67108864"} and len(keeper.pending()) == 6
    # rows of another device: none kept, the file and the device named
    doc = json.loads((results / "relu" / "bench.json").read_text())
    doc["details"]["env"] = {"device": "NVIDIA H100 80GB HBM3"}
    (results / "relu" / "bench.json").write_text(json.dumps(doc))
    assert keeper.rows(None, {"device": "NVIDIA H200"}) == ({}, src, "NVIDIA H100 80GB HBM3")
    assert keeper.rows(None, {"device": "NVIDIA H100 80GB HBM3"})[0] == rows
    assert Kept(results, "relu", tmp_path / "nowhere").pending() is None            # inputs changed: none holds



def test_the_kept_test_verdict_is_the_output_else_its_kept_copy(tmp_path):
    results, op_dir = measured_tree(tmp_path)
    keeper = Kept(results, "relu", op_dir)
    r = results / "relu"
    assert keeper.test()[1] == r / "test.json" and keeper.test()[0]["verdict"] == "ALL_PASS"
    keeper.snapshot()
    (r / "test.json").unlink()                       # what Snakemake does before it reruns a job
    assert keeper.test()[1] == r / kept.KEEP / "test.json"
    assert keeper.restore("test.json", r / "test.json")["verdict"] == "ALL_PASS"
    assert (r / "test.json").read_bytes() == (r / kept.KEEP / "test.json").read_bytes()
    edit(op_dir, "test_shapes: [[1], [1000],", "test_shapes: [[1], [1001],")     # a test shape: stale
    assert Kept(results, "relu", op_dir).test() == (None, None)
    assert Kept(results, "relu", op_dir).restore("test.json", tmp_path / "t.json") is None


# -- the import graph: kept below test and bench, no lazy import hiding a loop ------------------

def test_kept_never_imports_the_stages_it_serves():
    mods = {p.relative_to(REPO).as_posix() for p in closure.import_closure("tileport.gpu.kept", PKG)}
    assert "tileport/gpu/kept.py" in mods and "tileport/gpu/fold.py" in mods
    assert not mods & {"tileport/gpu/test.py", "tileport/gpu/bench.py"}, mods


#: the gpu modules whose imports are all at module level but for torch (heavy, absent on a CPU node)
MODULE_LEVEL = ("kept", "fold", "test", "bench", "hostbench", "loopstudy", "perf_diagnose")


@pytest.mark.parametrize("name", MODULE_LEVEL)
def test_gpu_modules_import_at_module_level_and_say_why_when_not(name):
    path = PKG / "gpu" / f"{name}.py"
    text = path.read_text()
    lines = text.splitlines()
    lazy = []
    for fn in ast.walk(ast.parse(text)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                if names != ["torch"] or "# lazy:" not in lines[node.lineno - 1]:
                    lazy.append(f"{path.name}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not lazy, "imports inside functions (only torch, with a '# lazy:' comment):\n" + "\n".join(lazy)


def test_the_owner_of_kept_verdicts_says_a_damaged_one_is_unreadable_and_who_acts(tmp_path):
    """Kept.verdict: the document; None for no file; for a truncated file an ERROR verdict of its
    stage naming the file and the parse error, owner env (the copy), and the kept copy that
    still holds; JSON that breaks the schema is tileport's (owner tool)."""
    from tileport.core.verdict import validate

    results, op_dir = measured_tree(tmp_path)
    keeper, r = Kept(results, "relu", op_dir), results / "relu"
    assert keeper.verdict("test.json")["verdict"] == "ALL_PASS"
    keeper.snapshot()                                   # .measured/ holds both
    (r / "bench.json").write_text((r / "bench.json").read_text()[:300])
    d = keeper.verdict("bench.json")
    validate(d)
    assert (d["stage"], d["verdict"], d["owner"], d["fail_class"]) == ("bench", "ERROR", "env", "env")
    assert d["details"]["unreadable"] == str(r / "bench.json") and "not JSON" in d["details"]["error"]
    assert d["details"]["kept_copy"] == str(r / kept.KEEP / "bench.json") and "copy back" in d["summary"]
    (r / "test.json").write_text('{"schema": "tileport.verdict/1", "verdict": "PASS"}')
    d = keeper.verdict("test.json")
    assert (d["stage"], d["owner"], d.get("fail_class")) == ("gpu_test", "tool", None)
    (r / "test.json").unlink()
    assert keeper.verdict("test.json") is None
    with pytest.raises(ValueError):
        keeper.verdict("route.json")
