"""Importer (rule import_source): cuTile kernels read as text from an installed wheel.

Synthetic distributions are written as a site directory (package files + ``.dist-info`` with
METADATA and a RECORD of sha256 digests), as pip leaves an installed wheel; they are found
through ``sys.path`` like the real ``tilegym`` (never imported).
"""
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import copy_workflow
from tileport import importer as I
from tileport import source as S
from tileport.verdict import Finding, Verdict, read, write


def install(site, name, version, files):
    """Write a fake installed distribution ``name`` ``version`` into ``site`` (replacing an
    earlier one, as pip does on a new pin): ``files`` = {path: text}. Returns the wheel sha256
    to pin (a digest of the files: the fake has no wheel file)."""
    for d in site.glob(f"{name}-*.dist-info"):
        shutil.rmtree(d)
    shutil.rmtree(site / name, ignore_errors=True)
    record = []
    for rel, text in files.items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = textwrap.dedent(text).encode()
        p.write_bytes(data)
        dig = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={dig},{len(data)}")
    di = site / f"{name}-{version}.dist-info"
    di.mkdir(parents=True)
    (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (di / "top_level.txt").write_text(f"{name}\n")
    (di / "RECORD").write_text("\n".join(record + [f"{di.name}/METADATA,,", f"{di.name}/RECORD,,"]) + "\n")
    return hashlib.sha256("".join(sorted(record)).encode()).hexdigest()


def pin(path, name, version, sha):
    path.write_text(f"# test pin\n{name}=={version} \\\n    --hash=sha256:{sha}\n")
    return path


@pytest.fixture
def site(tmp_path, monkeypatch):
    s = tmp_path / "site"
    s.mkdir()
    monkeypatch.syspath_prepend(str(s))
    I._packages.cache_clear()
    yield s
    I._packages.cache_clear()


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
    return I.extract(module, kernels, pin(tmp_path / "pin.txt", "tilegym", version, sha))


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
    ("k_torch", "tool", "torch", "is torch"),
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
    if kernel == "k_torch":
        # the first use inside the kernel, not the import line
        assert src[p.line - 1].strip() == "ct.scatter(y, offs, ct.astype(t, torch.float32))"
        assert str(p).startswith(f"tilegym/ops/softmaxish.py:{p.line}: 'torch'")
    if kernel == "k_torch_deep":
        assert src[p.line - 1].startswith("DT = torch")


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
    with pytest.raises(I.ImportFailed, match=r"pins tilegym==2.0 but tilegym 1.0 is installed"):
        I.extract("tilegym.ops.softmaxish", ["k_main"], pin(tmp_path / "p", "tilegym", "2.0", sha))
    with pytest.raises(I.ImportFailed, match="does not pin"):
        I.extract("tilegym.ops.softmaxish", ["k_main"], pin(tmp_path / "p", "other", "1.0", sha))
    p = site / "tilegym/ops/softmaxish.py"
    p.write_text(p.read_text() + "\n# edited by hand\n")
    with pytest.raises(I.ImportFailed, match="differs from the hash in the RECORD"):
        I.extract("tilegym.ops.softmaxish", ["k_main"], pin(tmp_path / "p", "tilegym", "1.0", sha))
    with pytest.raises(I.ImportFailed, match="no installed distribution provides the package 'nogym'"):
        I.extract("nogym.ops", ["k"], tmp_path / "p")


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
    kpy = S.kernel_py(d)
    assert kpy == (tmp_path / "results" / "tg_x" / "src" / "kernel.py").resolve()
    doc = I.run(d, kpy, str(kpy) + ".map.json", kpy.parent / "import.json", "tg_x", pin_file)
    assert doc["verdict"] == "PASS" and "2 kernel(s) of tilegym.ops.softmaxish from tilegym 1.0" in doc["summary"]
    assert doc["details"]["wheel"]["sha256"] == sha
    assert [f["severity"] for f in doc["findings"]] == ["info"]        # the decorator left out
    S.check_imported(d)                                                  # PASS: no exception
    assert S.source_name(d, "k_main") == "tilegym.ops.softmaxish:k_main"
    # an operator without source: keeps its own kernel.py
    own = _op(tmp_path, "own", "", own_kernel_py=True)
    assert S.kernel_py(own) == own / "kernel.py" and S.source_name(own, "k") == "operators/own/kernel.py:k"
    S.check_imported(own)
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
    # a BLOCKED import: kernel.py says so, the analysis quotes it with the import's owner
    d2 = _op(tmp_path, "tg_t", "source: {module: tilegym.ops.softmaxish}\n", kernels=("k_torch",))
    k2 = S.kernel_py(d2)
    doc = I.run(d2, k2, str(k2) + ".map.json", k2.parent / "import.json", "tg_t", pin_file)
    assert doc["verdict"] == "BLOCKED" and doc["owner"] == "tool" and "'torch'" in doc["summary"]
    assert doc["details"]["blocked"][0]["name"] == "torch"
    with pytest.raises(S.SourceBlocked, match="import BLOCKED") as exc:
        S.check_imported(d2)
    assert exc.value.owner == "tool"
    from tileport import analyze

    an = analyze.run(d2, tmp_path / "an.json", "tg_t")
    assert an["verdict"] == "BLOCKED" and an["owner"] == "tool" and "'torch'" in an["summary"]


def test_manifest_source_key(tmp_path):
    from tileport import manifest as M

    d = _op(tmp_path, "tg_m", "source: {module: tilegym.ops.softmaxish, kernels: [k_exp]}\n")
    with pytest.raises(M.ManifestError, match=r"manifest.yaml:2: key 'source/kernels'.*lacks \['k_main'\]"):
        M.load(d / "manifest.yaml")
    d = _op(tmp_path, "tg_n", "source: {module: 'not a module'}\n")
    with pytest.raises(M.ManifestError, match="key 'source/module'"):
        M.load(d / "manifest.yaml")


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

    from tileport import coverage as C
    from tileport import summary as SUM

    install(site, "tilegym", "1.0", {**GYM, "tilegym/ops/cutile/__init__.py": "",
                                     "tilegym/ops/cutile/a.py": KERNEL.format(name="ka") + textwrap.dedent("""\


        def factory(occ):
            @ct.kernel(occupancy=occ)
            def kf(x):
                pass
            return kf
        """), "tilegym/ops/cutile/common.py": "TWO = 2.0\n"})
    inv = C.inventory("tilegym.ops.cutile")
    assert [(k["function"], k.get("factory")) for k in inv] == [("ka", None), ("kf", "factory")]
    base = {c: "PASS" for c in SUM.COLUMNS}
    rows = [base | {"op": "tg_a", "kernel": "ka", "variant": "f16-T1", "test": "not_run (no GPU: x)",
                    "ratio": "not_run (no GPU: x)", "note": "", "source": "tilegym.ops.cutile.a:ka"},
            base | {"op": "tg_a", "kernel": "ka", "variant": "f32-T1", "ir_diff": "FAIL",
                    "note": "ir_diff: FAIL: first divergence at r/src/kernel.py:9 [tilegym/ops/cutile/a.py:7] | x",
                    "source": "tilegym.ops.cutile.a:ka"}]
    out = tmp_path / "results" / "summary.csv"
    out.parent.mkdir()
    with open(out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=SUM.COLUMNS)
        w.writeheader()
        w.writerows(rows)
    text = C.table(out, inv, tmp_path / "operators")
    lines = text.splitlines()
    ka = next(ln for ln in lines if ln.startswith("| `a:ka`"))
    assert ka.split(" | ")[1:7] == ["tg_a", "2", "2/2", "1/2", "ir_diff", "FAIL"]
    assert "[tilegym/ops/cutile/a.py:7] \\| x" in ka
    kf = next(ln for ln in lines if ln.startswith("| `a:kf`"))
    assert "no operator" in kf and "kernel factory" in kf
    assert "2 `@ct.kernel` functions" in text and "1 imported by an operator" in text
    readme = f"intro\n{C.BEGIN}\nold table\n{C.END}\noutro\n"
    assert C.replace_block(readme, text) == f"intro\n{C.BEGIN}\n{text}{C.END}\noutro\n"
