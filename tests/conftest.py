import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# what a temp copy of the workflow needs (operators are added per test)
WORKFLOW_FILES = ["Snakefile", "config.yaml", "envs", "requirements.lock", "requirements-sources.txt", "rules",
                  "scripts", "schemas", "report", "profiles", "tileport", "prompts", "rust/irdump.rs",
                  "rust/port-template/Cargo.toml", "rust/port-template/Cargo.lock", "rust/port-template/src",
                  "rust/host-template", "rust/host", "rust/nvidia"]


def install_distribution(site: Path, name: str, version: str, files: dict) -> str:
    """Write a fake installed distribution ``name`` ``version`` into ``site`` (replacing an
    earlier one, as pip does on a new pin): ``files`` = {path: text} (dedented), each listed in
    its RECORD with its sha256. Returns the wheel sha256 to pin (a digest of the files: the fake
    has no wheel file)."""
    import hashlib
    import textwrap

    from tileport.core.wheels import record_digest

    for d in site.glob(f"{name}-*.dist-info"):
        shutil.rmtree(d)
    shutil.rmtree(site / name, ignore_errors=True)
    record = []
    for rel, text in files.items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = textwrap.dedent(text).encode()
        p.write_bytes(data)
        record.append(f"{rel},sha256={record_digest(data)},{len(data)}")
    di = site / f"{name}-{version}.dist-info"
    di.mkdir(parents=True)
    (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (di / "top_level.txt").write_text(f"{name}\n")
    (di / "RECORD").write_text("\n".join(record + [f"{di.name}/METADATA,,", f"{di.name}/RECORD,,"]) + "\n")
    return hashlib.sha256("".join(sorted(record)).encode()).hexdigest()


def copy_workflow(dst: Path, ops=()) -> Path:
    """Copy the workflow (WORKFLOW_FILES) and the named operators of this checkout into ``dst``."""
    for rel in WORKFLOW_FILES:
        src, to = REPO / rel, dst / rel
        to.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, to)
    for op in ops:
        shutil.copytree(REPO / "operators" / op, dst / "operators" / op)
    return dst


def pytest_addoption(parser):
    parser.addoption("--slurm", action="store_true",
                     help="run the cluster tests (marker 'slurm') against the Slurm cluster this machine "
                          "runs (.ci/slurm-cluster up); without it they are deselected")
    parser.addoption("--nvidia", action="store_true",
                     help="run the tests that build NVIDIA's shipped cuTile Rust crate (marker 'nvidia', "
                          "make test-nvidia: about 2 min per pin set cold on 2 idle cores); without it they "
                          "are deselected")


def pytest_configure(config):
    config.addinivalue_line("markers", "slurm: needs a running Slurm cluster (make test-slurm)")
    config.addinivalue_line("markers", "nvidia: builds NVIDIA's cutile 0.2.0 crate (make test-nvidia)")
    if not config.getoption("--slurm"):
        _without_slurm_controller_probe()
    _bytecode_outside_the_checkout()


def pytest_unconfigure(config):
    if _PYCACHE:                         # the process that made it (xdist's controller, or -n 0)
        shutil.rmtree(_PYCACHE[0], ignore_errors=True)


_PYCACHE: list[str] = []


def _bytecode_outside_the_checkout():
    """Where PYTHONDONTWRITEBYTECODE is set (as on the machine of issue 32), every Python process
    of a test -- some 700 Snakemake jobs, each importing a share of tileport from its workflow copy
    -- compiled every module it imported again: relu's workflow took 18.0 s of CPU instead of
    13.8 s. The tests then write their bytecode into one temporary folder instead
    (PYTHONPYCACHEPREFIX, removed when the run ends), never into the checkout; xdist's workers and
    every subprocess inherit it. Without the variable, Python's own __pycache__ is left alone."""
    import os
    import tempfile
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = tempfile.mkdtemp(prefix="tileport-tests-pycache-")
    _PYCACHE.append(prefix)
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False


def _without_slurm_controller_probe():
    """Every Snakemake process imports its executor plugins; snakemake-executor-plugin-slurm 2.8.0
    runs ``scontrol show config`` while importing (``job_status_query.get_min_job_age``, 10 s
    timeout). On a machine with Slurm's client but no controller up (after ``make test-slurm``
    stops its cluster), that costs about 9 s per Snakemake command, dozens of times per test run.
    Outside the cluster tests, an ``scontrol`` that fails at once goes first on PATH: the plugin
    then reads "no MinJobAge", as on a machine without Slurm (docs/configuration.md)."""
    import os
    import tempfile
    stub = Path(tempfile.mkdtemp(prefix="tileport-no-slurm-"))
    (stub / "scontrol").write_text("#!/bin/sh\necho 'tileport tests: no Slurm controller probed' >&2\nexit 1\n")
    (stub / "scontrol").chmod(0o755)
    os.environ["PATH"] = f"{stub}{os.pathsep}{os.environ.get('PATH', '')}"


def pytest_collection_modifyitems(config, items):
    # make test: neither the cluster tests nor NVIDIA's crate builds are collected; make
    # test-slurm / make test-nvidia: only the marked ones are
    wanted = {m for m in ("slurm", "nvidia") if config.getoption(f"--{m}")}

    def selected(item):
        marks = {m for m in ("slurm", "nvidia") if m in item.keywords}
        return bool(marks & wanted) if wanted else not marks

    keep = [i for i in items if selected(i)]
    drop = [i for i in items if not selected(i)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# --- make test's two workers -----------------------------------------------------------------
# make test runs pytest-xdist with --dist loadfile, and this conftest gives it a scheduler of its
# own (pytest_xdist_make_scheduler): a worker takes one unit at a time, and a unit runs whole on
# one worker. A unit is a test file (its module fixtures -- a workflow run, a crate build -- are
# built once), except that the files of SHARED_UNITS form one unit (a session fixture of this
# conftest that they share is built once: test_host.py and test_ffi.py read the same host
# library, ``built``). Units go out longest first (UNIT_SECONDS), so that the two workers finish
# together: xdist's own order (the number of tests per unit) sent the few-test workflow files
# last, and one worker ran the last of them alone (issue 32). Units not in the table take a few
# seconds; they follow in xdist's order. (xdist's --dist loadgroup would group by marks, but
# pytest-xdist 3.8.0 loses the groups under pytest 9.2: pytest-dev/pytest-xdist#1386.)
SHARED_UNITS = {"test_host.py": "host_library", "test_ffi.py": "host_library"}
# seconds of one worker (pytest --durations, summed per unit; a loaded 2-core machine's numbers
# halved, so about an idle one's): only their order matters
UNIT_SECONDS = {
    "test_workflow.py": 190,
    "test_workflow_llm.py": 185,
    "test_workflow_llm_rounds.py": 145,
    "test_frontend.py": 45,
    "test_mutation_study.py": 40,
    "host_library": 38,
    "test_constructs.py": 33,
    "test_profiles.py": 30,
    "test_mutations.py": 20,
    "test_importer.py": 17,
    "test_write_kernel.py": 14,
}


def unit_of(nodeid: str) -> str:
    """The scheduling unit of a test (its node id): its file, or its SHARED_UNITS unit."""
    path = nodeid.split("::", 1)[0]
    return SHARED_UNITS.get(Path(path).name, path)


@pytest.hookimpl(optionalhook=True)      # pytest -p no:xdist: no xdist, no hook to implement
def pytest_xdist_make_scheduler(config, log):
    """make test's scheduler (--dist loadfile): xdist's, with the units of :func:`unit_of`, sent
    out longest first (UNIT_SECONDS; a stable sort, so the others keep xdist's order)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from collections import OrderedDict

    from xdist.scheduler import LoadFileScheduling

    class LongestUnitFirst(LoadFileScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)

        def _assign_work_unit(self, node):
            # xdist fills the queue, then hands out its first units; sort it before the first
            if not getattr(self, "_sorted", False):
                self._sorted = True
                self.workqueue = OrderedDict(sorted(self.workqueue.items(),
                                                    key=lambda u: -UNIT_SECONDS.get(Path(u[0]).name, 0)))
            super()._assign_work_unit(node)

    return LongestUnitFirst(config, log)


def make_host_op(results, op, kernels, op_dir=None):
    """results/<op>/: analysis, translation, port crate build -- what host_shim reads."""
    from tileport.cpu import analyze, rust_ir, write_kernel
    from tileport.host import shim as host

    r = results / op
    op_dir = op_dir or REPO / "operators" / op
    assert analyze.run(op_dir, r / "analysis.json", op)["verdict"] == "PASS"
    for k in kernels:
        v = write_kernel.run(op_dir, k, r / "rust" / "src" / f"{k}.rs", r / "write_kernel" / f"{k}.json", op)
        assert v["verdict"] == "PASS", v["summary"]
    b = rust_ir.build(op, r / "rust", {k: r / "write_kernel" / f"{k}.json" for k in kernels},
                      r / "rust" / "build.json")
    assert b["verdict"] == "PASS", b["summary"]
    d = host.write_shim(op, r / "analysis.json", r, r / "host" / "ffi.rs", r / "host" / "ffi.json",
                        r / "host" / "shim.json")
    assert d["verdict"] == "PASS", d["summary"]
    return r


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """A results tree with relu, rms_norm (scalars) and three construct kernels (arrays of their
    own dtype; a scalar between arrays; a gather / scatter reading 2-D arrays' strides) and the
    host library built from it: test_host.py and test_ffi.py (one scheduling unit) read it, and
    copy what they change."""
    from tileport.host import shim as host

    results = tmp_path_factory.mktemp("host") / "results"
    make_host_op(results, "relu", ["relu_kernel"])
    make_host_op(results, "rms_norm", ["rms_norm_kernel"])
    make_host_op(results, "constructs", ["dtypes_kernel", "promote_kernel", "gather_kernel"],
                 REPO / "tests" / "data" / "operators" / "constructs")
    v = host.build(["relu", "rms_norm", "constructs"], results, results / "host" / "build.json")
    return results, v


@pytest.fixture
def repo():
    return REPO


@pytest.fixture
def op_copy(tmp_path):
    """Copy an operator folder into tmp_path/operators/<name> and return its path."""

    def _copy(op, name=None):
        dst = tmp_path / "operators" / (name or op)
        shutil.copytree(REPO / "operators" / op, dst)
        if name:
            m = dst / "manifest.yaml"
            m.write_text(m.read_text().replace(f"op: {op}", f"op: {name}", 1))
        return dst

    return _copy


def run_chain(op_dir, root, op, kernel, variant):
    """write_kernel -> rust_build -> rust_ir, reference_ir, ir_diff, ir_diagnose in ``root``
    (real compilers). Returns (diff verdict, diagnosis verdict, path of the generated .rs)."""
    from tileport import ir_diff
    from tileport.cpu import ir_diagnose, reference_ir, rust_ir, write_kernel

    crate = root / "rust"
    rs = crate / "src" / f"{kernel}.rs"
    wk = write_kernel.run(op_dir, kernel, rs, root / "wk.json", op)
    assert wk["verdict"] == "PASS", wk["summary"]
    b = rust_ir.build(op, crate, {kernel: root / "wk.json"}, root / "build.json")
    assert b["verdict"] == "PASS", b["summary"]
    d = rust_ir.dump(op_dir, op, kernel, variant, root / "build.json", root / "p.tileirbc",
                     root / "p.tileir", root / "p.json")
    assert d["verdict"] == "PASS", d["summary"]
    r = reference_ir.run(op_dir, kernel, variant, root / "r.tileirbc", root / "r.tileir",
                         root / "r.json", op)
    assert r["verdict"] == "PASS", r["summary"]
    diff = ir_diff.run(root / "r.tileir", root / "p.tileir", root / "diff.json", op, kernel, variant,
                       writer=d["details"].get("writer"), target="sm_90")
    diag = ir_diagnose.run(root / "diff.json", crate, str(rs) + ".map.json", op_dir / "kernel.py",
                           root / "diag.json", op, kernel, variant)
    return diff, diag, rs


def run_kernels(op_dir, root, op, kernels, variant, target="sm_90"):
    """:func:`run_chain` for several kernels of one operator with one crate build (real
    compilers). Returns ``{kernel: (diff verdict, reference .tileir, port .tileir)}``."""
    from tileport import ir_diff
    from tileport.cpu import reference_ir, rust_ir, write_kernel

    crate = root / "rust"
    verdicts = {}
    for k in kernels:
        wk = write_kernel.run(op_dir, k, crate / "src" / f"{k}.rs", root / f"{k}.wk.json", op,
                              target=target)
        assert wk["verdict"] == "PASS", wk["summary"]
        verdicts[k] = root / f"{k}.wk.json"
    b = rust_ir.build(op, crate, verdicts, root / "build.json")
    assert b["verdict"] == "PASS", b["summary"]
    out = {}
    for k in kernels:
        d = rust_ir.dump(op_dir, op, k, variant, root / "build.json", root / f"{k}.p.tileirbc",
                         root / f"{k}.p.tileir", root / f"{k}.p.json", target=target)
        assert d["verdict"] == "PASS", d["summary"]
        r = reference_ir.run(op_dir, k, variant, root / f"{k}.r.tileirbc", root / f"{k}.r.tileir",
                             root / f"{k}.r.json", op)
        assert r["verdict"] == "PASS", r["summary"]
        diff = ir_diff.run(root / f"{k}.r.tileir", root / f"{k}.p.tileir", root / f"{k}.diff.json",
                           op, k, variant, writer=d["details"].get("writer"), target=target)
        out[k] = (diff, root / f"{k}.r.tileir", root / f"{k}.p.tileir")
    return out

