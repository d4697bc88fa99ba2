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
