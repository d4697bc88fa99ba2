"""NVIDIA's shipped cuTile Rust ports (tilegym ops/cutile_rs) as the yardstick: tileport/nvidia/port.py,
tileport/nvidia/ffi.py. The unit tests read the installed tilegym wheel (no cargo, no GPU); the tests
marked ``nvidia`` build NVIDIA's crate (make test-nvidia)."""
import ast
import ctypes
import json
import tomllib
from pathlib import Path

import pytest

from tileport.nvidia import ffi as nv_ffi
from tileport.nvidia import port as nv_port

try:
    WHEEL = nv_port.installed_wheel()
except nv_port.NvPortError as exc:          # make install installs the pinned wheel; say so loudly
    pytest.fail(f"the tilegym wheel is needed: {exc}", pytrace=False)
FILES = nv_port.read_crate(WHEEL)
PORTS = nv_port.load_ports()


def kernel_rs(op):
    return FILES[nv_port.lib_modules(FILES["cutile_kernels/src/lib.rs"])[op]["kernel"]]


def reference_params(reference: str) -> list[tuple[str, str]]:
    """(name, kind) of a TileGym kernel's parameters, read from the installed wheel (ast, no
    import): ``constexpr`` (ct.Constant / ConstInt / ConstBool), ``scalar`` (int / float) or
    ``array`` (unannotated)."""
    module, fn = reference.rsplit(".", 1)
    tree = ast.parse((WHEEL.root.parent / "cutile" / f"{module.rsplit('.', 1)[1]}.py").read_text())
    f = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn)
    out = []
    for a in f.args.args:
        ann = ast.unparse(a.annotation) if a.annotation else ""
        kind = ("constexpr" if "Const" in ann else "scalar" if ann in ("int", "float") else "array")
        out.append((a.arg, kind + ("_bool" if "bool" in ann or "Bool" in ann else "")))
    return out


class FakeTensor:
    """What the FFI side reads of a torch tensor."""

    def __init__(self, shape, dtype="float16", ptr=0x7F00_0000_0000):
        self.shape, self.dtype, self._ptr = tuple(shape), dtype, ptr
        st, acc = [], 1
        for n in reversed(self.shape):
            st.insert(0, acc)
            acc *= n
        self._strides = tuple(st)

    def dim(self):
        return len(self.shape)

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides


# ---------------------------------------------------------------- ports.yaml against the wheel

def test_every_entry_matches_the_wheel_and_its_reference():
    """Each ports.yaml entry names a kernel.rs entry, maps exactly its generics and exactly its C
    function's arguments, from names the TileGym reference kernel has (read from the wheel)."""
    mods = nv_port.workspace_files(FILES, "shipped")[1]["modules"]
    assert sorted(PORTS) == sorted(mods) == ["attention_sink", "bmm", "matmul", "silu_and_mul", "swiglu"]
    for op, spec in PORTS.items():
        sym = mods[op]["symbols"][spec["symbol"]]
        sig = nv_ffi.signature(sym["params"], spec["symbol"])
        for entry, e in spec["entries"].items():
            ent = mods[op]["entries"][entry]
            params = reference_params(e["reference"])
            env = {"dtype": "f16", "grid": (4, 2, 1), "num_ctas": 2, "occupancy": 1}
            for name, kind in params:
                env[name] = (True if kind.endswith("bool") else 64 if kind.startswith("constexpr")
                             else 3 if kind == "scalar" else FakeTensor((8, 8)))
            consts = {n: env[n] for n, k in params if k.startswith("constexpr")}
            g = nv_port.generics_for(e, ent, "f16", consts, f"{op}/{entry}")
            assert len(g) == len(ent["generics"]) and g[0] == "f16"
            vals = nv_ffi.call_values(e, sig, env, f"{op}/{entry}")
            assert [n for n, _, _ in vals] == [n for n, _ in sig[:-2]]


def test_parse_entries_and_ffi_of_matmul():
    ents = nv_port.parse_entries(kernel_rs("matmul"))
    assert list(ents) == ["non_persistent_matmul_kernel", "static_persistent_matmul_kernel"]
    assert ents["non_persistent_matmul_kernel"]["generics"] == [
        ["E", "type"], ["BM", "const"], ["BN", "const"], ["BK", "const"], ["CAST_TF32", "const"]]
    assert ents["static_persistent_matmul_kernel"]["params"][3:] == [["m", "i32"], ["n", "i32"], ["k", "i32"]]
    ffi = nv_port.parse_ffi(FILES["matmul_kernel/ffi.rs"])["cutile_matmul"]
    assert [n for n, _ in ffi["params"]][:3] == ["c", "a", "b"] and ffi["returns"] == "i32"
    assert ffi["params"][0][1] == "*const TensorDesc" and ffi["params"][-1] == ["raw_stream", "u64"]


def test_parse_ignores_comments_and_nested_brackets():
    rs = ("#[cutile::module]\npub mod m_module {\n"
          "  #[cutile::entry(optimization_hints = (sm_100 = (occupancy = 2,),),)]\n"
          "  pub unsafe fn k<E: ElementType, const T: i32>(\n    x: &Tensor<E, { [-1, -1, -1] }>, // a, b, c\n"
          "    p: *mut E,\n    s: f32,\n  ) {}\n}\n")
    e = nv_port.parse_entries(rs)["k"]
    assert e["generics"] == [["E", "type"], ["T", "const"]] and e["line"] == 3
    assert e["params"] == [["x", "&Tensor<E, { [-1, -1, -1] }>"], ["p", "*mut E"], ["s", "f32"]]
    assert nv_port.strides_for(e) == "x=-1,-1,1" and nv_port.module_name(rs) == "m_module"


# ---------------------------------------------------------------- the crate, its pins and locks

def test_workspace_keeps_nvidia_files_verbatim_and_pins_the_dumper_alike():
    ws, info = nv_port.workspace_files(FILES, "shipped")
    for rel, text in FILES.items():
        assert ws[rel] == text, rel
    assert tomllib.loads(ws["Cargo.toml"])["workspace"]["members"] == ["cutile_kernels", nv_port.IRDUMP_BIN]
    dump = tomllib.loads(ws[f"{nv_port.IRDUMP_BIN}/Cargo.toml"])
    assert dump["dependencies"] == tomllib.loads(FILES["cutile_kernels/Cargo.toml"])["dependencies"]
    assert info["pins"]["cutile"] == "=0.2.0" and info["package"] == "cutile-kernels"
    assert ws["Cargo.lock"] == nv_port.LOCKS["shipped"].read_text()
    main = ws[f"{nv_port.IRDUMP_BIN}/src/main.rs"]
    for op in PORTS:
        assert f'include!("../../{op}_kernel/kernel.rs")' in main
        assert f'("{op}", "{op}_module", {op}::{op}_module::__module_ast_self)' in main
    assert info["sources_sha"] in main
    assert ws[f"{nv_port.IRDUMP_BIN}/src/irdump.rs"] == (nv_port.REPO / "rust" / "irdump.rs").read_text()


def test_tileport_pin_set_repins_only_the_cutile_crates():
    ws, info = nv_port.workspace_files(FILES, "tileport")
    pin = nv_port.tileport_pin()
    assert pin == "0.5.0"
    shipped = nv_port.dependency_pins(FILES["cutile_kernels/Cargo.toml"])
    assert info["pins"] == {k: (f"={pin}" if k in nv_port.CUTILE_CRATES else v) for k, v in shipped.items()}
    assert all(ws[r] == t for r, t in FILES.items() if r != "cutile_kernels/Cargo.toml")
    with pytest.raises(nv_port.NvPortError, match="cannot re-pin"):
        nv_port.repin('[dependencies]\ncutile = { git = "x" }\n', "0.5.0")


def test_committed_locks_pin_what_the_crates_ask():
    for pins, want in (("shipped", "0.2.0"), ("tileport", nv_port.tileport_pin())):
        v = nv_port.lock_versions(nv_port.LOCKS[pins].read_text())
        assert {k: v[k] for k in nv_port.CUTILE_CRATES} == {k: [want] for k in nv_port.CUTILE_CRATES}, pins
        assert v["cutile-kernels"] == ["0.1.0"] and v[nv_port.IRDUMP_PKG] == ["0.1.0"]
    assert nv_port.dependency_pins(FILES["cutile_kernels/Cargo.toml"])["cutile"] == "=0.2.0"


def test_crate_is_read_from_the_installed_wheel_and_checked_against_record(tmp_path):
    assert "tilegym/ops/cutile_rs" in WHEEL.root.as_posix() and WHEEL.version == "1.5.1"
    assert all(h for h in WHEEL.files.values())
    copy = tmp_path / "cutile_rs"
    for rel in WHEEL.files:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text(FILES[rel])
    assert nv_port.read_crate(nv_port.Wheel("1.5.1", copy, WHEEL.files)) == FILES
    (copy / "ffi_util.rs").write_text(FILES["ffi_util.rs"] + "\n// edited\n")
    with pytest.raises(nv_port.NvPortError, match=r"ffi_util.rs: differs from tilegym 1.5.1's RECORD"):
        nv_port.read_crate(nv_port.Wheel("1.5.1", copy, WHEEL.files))


def test_write_workspace_rewrites_only_changes(tmp_path):
    ws, _ = nv_port.workspace_files(FILES, "shipped")
    nv_port.write_workspace(ws, tmp_path)
    lib = tmp_path / "cutile_kernels/src/lib.rs"
    before = lib.stat().st_mtime_ns
    (tmp_path / "stale.rs").write_text("x")
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "keep").write_text("x")
    nv_port.write_workspace(ws, tmp_path)
    assert lib.stat().st_mtime_ns == before
    assert not (tmp_path / "stale.rs").exists() and (tmp_path / "target" / "keep").exists()


def test_rustc_errors_become_findings_with_the_source_line(tmp_path):
    crate = tmp_path / "crate"
    (crate / "x_kernel").mkdir(parents=True)
    (crate / "ffi_util.rs").write_text("a\n    let t = Tensor::from_raw_parts(p, n, 0, s, t);\n")
    (crate / "x_kernel" / "kernel.rs").write_text("k\n")
    err = ("cutile_kernels/src/../../ffi_util.rs:2:9: error[E0061]: this function takes 6 arguments "
           "but 5 arguments were supplied\nx_kernel/kernel.rs:1:1: error: boom\n")
    f = nv_port.rustc_findings(err, crate, "tileport")
    assert [x.owner for x in f] == ["host", "kernel"]
    assert f[0].port == {"file": str(crate / "ffi_util.rs"), "line": 2,
                         "text": "let t = Tensor::from_raw_parts(p, n, 0, s, t);"}
    assert "tileport pins: ffi_util.rs:2: error[E0061]" in f[0].message


# ---------------------------------------------------------------- variants -> generics, the dumper

def test_generics_from_a_reference_variant():
    mm = PORTS["matmul"]["entries"]
    np_ent = nv_port.parse_entries(kernel_rs("matmul"))["non_persistent_matmul_kernel"]
    c = {"TILE_SIZE_M": 128, "TILE_SIZE_N": 256, "TILE_SIZE_K": 32}
    assert nv_port.generics_for(mm["non_persistent_matmul_kernel"], np_ent, "f32", c, "w") == [
        "f32", "128", "256", "32", "1"]
    assert nv_port.generics_for(mm["non_persistent_matmul_kernel"], np_ent, "bf16", c, "w")[-1] == "0"
    bmm = nv_port.parse_entries(kernel_rs("bmm"))["static_persistent_bmm_kernel"]
    c = {"TILE_M": 128, "TILE_N": 128, "TILE_K": 64, "GROUP_SIZE_M": 8, "TRANSPOSE_A": True, "TRANSPOSE_B": False}
    assert nv_port.generics_for(PORTS["bmm"]["entries"]["static_persistent_bmm_kernel"], bmm, "f16", c, "w") == \
        ["f16", "128", "128", "64", "8", "1", "0"]
    with pytest.raises(nv_port.NvPortError, match="do not match kernel.rs"):
        nv_port.generics_for({"generics": {"E": "dtype"}}, np_ent, "f16", c, "w")
    with pytest.raises(nv_port.NvPortError, match="not an element type"):
        nv_port.generics_for({"generics": {"E": "'f64'", "BM": 1, "BN": 1, "BK": 1, "CAST_TF32": 0}},
                       np_ent, "f16", {}, "w")
    with pytest.raises(nv_port.NvPortError, match="NameError"):
        nv_port.generics_for(mm["non_persistent_matmul_kernel"], np_ent, "f16", {}, "w")


def test_supports_and_dump_command():
    sp = PORTS["matmul"]["entries"]["static_persistent_matmul_kernel"]
    assert nv_port.supported(sp, "f16", {"TRANSPOSE_A": False, "TRANSPOSE_B": False}, "w")
    assert not nv_port.supported(sp, "f16", {"TRANSPOSE_A": True, "TRANSPOSE_B": False}, "w")
    ent = nv_port.parse_entries(kernel_rs("attention_sink"))["attention_sink_kernel"]
    assert nv_port.strides_for(ent) == "q=-1,-1,-1,1;k=-1,-1,-1,1;v=-1,-1,-1,1;sinks=1;out=-1,-1,-1,1;start_q=1"
    silu = nv_port.parse_entries(kernel_rs("silu_and_mul"))["silu_and_mul_kernel"]
    assert nv_port.strides_for(silu) == ""          # pointers and scalars only
    assert nv_port.dump_command("/b/nv-irdump", "silu_and_mul", "silu_and_mul_kernel", "/o.tileirbc", "sm_90",
                          ["bf16", "4096"], "") == \
        ["/b/nv-irdump", "silu_and_mul", "silu_and_mul_kernel", "/o.tileirbc", "sm_90", "bf16,4096", ""]


def test_links_from_a_manifest_source(tmp_path):
    m = tmp_path / "manifest.yaml"
    m.write_text("op: x\nsource: {module: tilegym.ops.cutile.matmul, kernels: [_matmul_kernel, other]}\n")
    assert nv_port.links(m, PORTS) == {"_matmul_kernel": ("matmul", "non_persistent_matmul_kernel")}
    m.write_text("op: x\nsource: {module: tilegym.ops.cutile.bmm}\n"
                 "kernels: {_bmm_kernel: {}, _static_persistent_bmm_kernel: {}}\n")
    assert nv_port.links(m, PORTS) == {"_bmm_kernel": ("bmm", "non_persistent_bmm_kernel"),
                                 "_static_persistent_bmm_kernel": ("bmm", "static_persistent_bmm_kernel")}
    m.write_text("op: x\nsource: {module: tilegym.ops.cutile.swiglu, kernels: [{name: _swiglu_forward_kernel}]}\n")
    assert nv_port.links(m, PORTS) == {"_swiglu_forward_kernel": ("swiglu", "swiglu_forward_kernel")}
    m.write_text("op: x\nkernels: {matmul_kernel: {}}\n")     # tileport's own operators
    assert nv_port.links(m, PORTS) == {}


def test_ports_yaml_errors_name_file_and_line(tmp_path):
    p = tmp_path / "ports.yaml"
    p.write_text("matmul:\n  symbol: cutile_matmul\n  symbol: again\n  entries: {}\n")
    with pytest.raises(nv_port.NvPortError, match=r"ports.yaml:3: YAML error: duplicate key 'symbol'"):
        nv_port.load_ports(p)
    p.write_text("matmul:\n  symbol: cutile_matmul\n  entries:\n    k:\n"
                 "      reference: x.y\n      generics: {E: dtype}\n")
    with pytest.raises(nv_port.NvPortError, match=r"ports.yaml:4: key 'matmul/entries/k': 'call' is a required"):
        nv_port.load_ports(p)


def test_dump_blocks_unsupported_variants_and_missing_builds(tmp_path, monkeypatch):
    from tileport.core.verdict import Verdict, write
    from tileport.model.manifest import Variant

    op_dir = tmp_path / "op"
    op_dir.mkdir()
    (op_dir / "manifest.yaml").write_text(
        "op: op\nsource: {module: tilegym.ops.cutile.matmul, kernels: [_static_persistent_matmul_kernel]}\n")
    v = Variant("f16", {"TILE_SIZE_M": 128, "TILE_SIZE_N": 128, "TILE_SIZE_K": 64, "TRANSPOSE_A": True,
                        "TRANSPOSE_B": False, "GROUP_SIZE_M": 8, "LOAD_LATENCY": -1})
    monkeypatch.setattr(nv_port, "_variant", lambda *a: v)
    ws, info = nv_port.workspace_files(FILES, "shipped")
    build = tmp_path / "build.json"
    write(Verdict(stage="nv_build", op="nvidia", verdict="PASS", summary="x",
                  details={"irdump": {"ok": True, "binary": "/nonexistent"}, "modules": info["modules"]}), build)
    args = (op_dir, "op", "_static_persistent_matmul_kernel", v.id, build, tmp_path / "o.tileirbc",
            tmp_path / "o.tileir", tmp_path / "o.json")
    d = nv_port.dump(*args)
    assert d["verdict"] == "BLOCKED" and d["owner"] == "kernel" and "supports" in d["summary"]
    write(Verdict(stage="nv_build", op="nvidia", verdict="FAIL", owner="host", summary="rustc",
                  details={"irdump": {"ok": False}}), build)
    d = nv_port.dump(*args)
    assert d["verdict"] == "BLOCKED" and d["owner"] == "host" and "did not build" in d["summary"]


# ---------------------------------------------------------------- the C ABI (no GPU)

def test_tensor_desc_is_the_104_byte_layout_of_ffi_util():
    T = nv_ffi.TensorDesc
    assert ctypes.sizeof(T) == 104
    assert [(n, getattr(T, n).offset) for n, _ in T._fields_] == [
        ("ptr", 0), ("ndim", 8), ("shape", 16), ("strides", 56), ("dtype", 96)]
    d = nv_ffi.tensor_desc(FakeTensor((3, 4, 5), "torch.bfloat16", ptr=0xDEAD00))
    assert (d.ptr, d.ndim, list(d.shape), list(d.strides), d.dtype) == (
        0xDEAD00, 3, [3, 4, 5, 0, 0], [20, 5, 1, 0, 0], 2)
    assert nv_ffi.tensor_desc(FakeTensor((2,), "torch.int32")).dtype == 3
    with pytest.raises(nv_ffi.NvError, match="at most 5"):
        nv_ffi.tensor_desc(FakeTensor((1,) * 6))
    with pytest.raises(nv_ffi.NvError, match="no TensorDesc code"):
        nv_ffi.tensor_desc(FakeTensor((1,), "torch.complex64"))


def _stub_side(op, entry):
    """An NvSide over a recording Python function instead of the real library."""
    mods = nv_port.workspace_files(FILES, "shipped")[1]["modules"]
    spec = PORTS[op]
    sym = spec["symbol"]
    seen = []

    class Fn:
        rc = 0

        def __call__(self, *args):
            seen.append([ctypes.cast(a, ctypes.POINTER(nv_ffi.TensorDesc)).contents.ptr
                         if isinstance(a, type(ctypes.byref(nv_ffi.TensorDesc()))) else a for a in args])
            return self.rc

    fn = Fn()
    lib = type("Lib", (), {})()
    lib.sigs = {sym: nv_ffi.signature(mods[op]["symbols"][sym]["params"], sym)}
    lib.lib = type("CDLL", (), {sym: fn})()
    side = nv_ffi.NvSide(lib, op, entry, spec["entries"][entry], sym)
    return side.with_options({"num_ctas": nv_ffi.AUTO_OPTION, "occupancy": nv_ffi.AUTO_OPTION}), seen, fn


def test_nv_side_maps_a_matmul_launch_onto_cutile_matmul():
    side, seen, fn = _stub_side("matmul", "non_persistent_matmul_kernel")
    A, bench, C = (FakeTensor((256, 64), ptr=0xA0), FakeTensor((64, 512), ptr=0xB0), FakeTensor((256, 512), ptr=0xC0))
    launch = side.bind({"A": A, "B": bench, "C": C},
                       {"TILE_SIZE_M": 128, "TILE_SIZE_N": 128, "TILE_SIZE_K": 32}, (8, 1, 1), "f16",
                       device=1, stream=0x5555)
    launch()
    # c, a, b, bm, bn, bk, group_size_m, num_programs, num_cta_in_cga, occupancy, persistent, device, stream
    assert seen == [[0xC0, 0xA0, 0xB0, 128, 128, 32, 8, 8, -1, -1, 0, 1, 0x5555]]
    fn.rc = -3
    with pytest.raises(nv_ffi.NvError, match="cutile_matmul returned -3: kernel launch failed"):
        launch()


def test_nv_side_refuses_what_nvidia_would_misread():
    side, _, _ = _stub_side("attention_sink", "attention_sink_kernel")
    t = FakeTensor((1, 2, 128, 64))
    args = {"Q": t, "K": t, "V": t, "Out": t, "Sinks": FakeTensor((2,), "torch.float32"),
            "Start_q": FakeTensor((1,), "torch.int32"), "qk_scale": 0.125}
    cx = {"TILE_D": 64, "H": 2, "N_KV_CTX": 128, "TILE_M": 64, "TILE_N": 64, "QUERY_GROUP_SIZE": 1,
          "BANDWIDTH": 0}
    with pytest.raises(nv_ffi.NvError, match="call/sinks: tensor is f32, but cutile_attention_sink reads it as f16"):
        side.bind(args, cx, (2, 2, 1), "f16", stream=1)
    args["Sinks"] = FakeTensor((2,))
    side.bind(args, cx, (2, 2, 1), "f16", stream=1)
    sp, _, _ = _stub_side("matmul", "static_persistent_matmul_kernel")
    with pytest.raises(nv_ffi.NvError, match="does not implement"):
        sp.bind({}, {"TRANSPOSE_A": True, "TRANSPOSE_B": False}, (1, 1, 1), "f16", stream=1)


def _wheel_kernel(module: str, name: str):
    """A ``@ct.kernel`` object carrying a TileGym kernel's decorator as the installed wheel writes it
    (``@ct.kernel`` or ``@ct.kernel(occupancy=2)``, read with ast) over an empty body: its compiler
    options, without importing the module."""
    import cuda.tile as ct

    tree = ast.parse((WHEEL.root.parent / "cutile" / f"{module}.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    dec = next(d for d in fn.decorator_list if "kernel" in ast.unparse(d))
    space = {"ct": ct}
    exec(f"@{ast.unparse(dec)}\ndef {name}(x):\n    pass\n", space)
    return space[name]


# every reference kernel NVIDIA ported: (operator, kernel, TileGym module, NVIDIA op, entry, the
# (num_cta_in_cga, occupancy) pairs its variants bind). From the wheel's kernels and the manifests:
# tg_matmul's 256x256x64 variants and every persistent one carry num_ctas 2 (compiler_hints),
# attention_sink's @ct.kernel occupancy 2 (its num_ctas 1 / occupancy 1 variant overrides it),
# swiglu forward's occupancy 1; silu_and_mul and _bmm_kernel set none (-1: the compiler's default)
LINKED = [("tg_matmul", "_matmul_kernel", "matmul", "non_persistent_matmul_kernel", {(1, 1), (2, 1)}),
          ("tg_matmul", "_static_persistent_matmul_kernel", "matmul", "static_persistent_matmul_kernel", {(2, 1)}),
          ("tg_bmm", "_bmm_kernel", "bmm", "non_persistent_bmm_kernel", {(-1, -1)}),
          ("tg_bmm", "_static_persistent_bmm_kernel", "bmm", "static_persistent_bmm_kernel", {(2, 1)}),
          ("tg_silu_and_mul", "_silu_and_mul_kernel_row_wise", "silu_and_mul", "silu_and_mul_kernel", {(-1, -1)}),
          ("tg_swiglu", "_swiglu_forward_kernel", "swiglu", "swiglu_forward_kernel", {(-1, 1)}),
          ("tg_attention_sink", "_attention_sink_kernel", "attention_sink", "attention_sink_kernel",
           {(-1, 2), (1, 1)})]


@pytest.mark.parametrize("op, kernel, nv_op, entry, pairs", LINKED)
def test_nvidia_compiles_with_the_reference_variants_cga_size_and_occupancy(op, kernel, nv_op, entry, pairs):
    """Every variant of every reference kernel NVIDIA ported: its C function gets the CGA size and
    occupancy the reference compiles with (the wheel kernel's @ct.kernel options under the
    manifest's compiler_hints, as harness.build_call's replace_hints), -1 where neither sets one.
    A binding that drops the variant's num_ctas (tg_matmul 256x256x64, tg_bmm's persistent
    variants: 2) or the decorator's occupancy fails here."""
    from conftest import REPO

    from tileport.model import manifest as tp_manifest

    mpath = REPO / "operators" / op / "manifest.yaml"
    assert nv_port.links(mpath, PORTS)[kernel] == (nv_op, entry)
    spec = PORTS[nv_op]["entries"][entry]
    kfn = _wheel_kernel(spec["reference"].rsplit(".", 2)[1], kernel)
    sym = PORTS[nv_op]["symbol"]
    sig = nv_ffi.signature(nv_port.workspace_files(FILES, "shipped")[1]["modules"][nv_op]["symbols"][sym]["params"],
                           sym)
    bound = set()
    for v in tp_manifest.kernel_variants(tp_manifest.load(mpath))[kernel]:
        if not nv_port.supported(spec, v.dtype, v.constexprs, v.id):
            continue
        compiled = (kfn.replace_hints(**v.hints) if v.hints else kfn)._compiler_options
        opts = nv_ffi.reference_options(kfn, v.hints, "sm_90")
        assert opts == {k: -1 if getattr(compiled, k) is None else getattr(compiled, k)
                        for k in ("num_ctas", "occupancy")}, v.id
        assert all(opts[k] == v.hints[k] for k in ("num_ctas", "occupancy") if k in v.hints), v.id
        env = {"dtype": v.dtype, "grid": (4, 2, 1), **opts}
        for name, kind in reference_params(spec["reference"]):
            env[name] = (v.constexprs[name] if kind.startswith("constexpr") else 3 if kind == "scalar"
                         else FakeTensor((1,), "torch.int32") if name == "Start_q" else FakeTensor((8, 8)))
        vals = {n: x for n, _, x in nv_ffi.call_values(spec, sig, env, v.id)}
        bound.add((vals["num_cta_in_cga"], vals["occupancy"]))
        assert (vals["num_cta_in_cga"], vals["occupancy"]) == (opts["num_ctas"], opts["occupancy"]), v.id
    assert bound == pairs


def test_reference_options_follow_replace_hints_and_the_target():
    """ByTarget values resolve for the device's target (else their default); a variant's hint
    replaces the decorator's whole value, as replace_hints does; a non-kernel is refused."""
    import cuda.tile as ct

    @ct.kernel(occupancy=ct.ByTarget(sm_90=3, default=2), num_ctas=ct.ByTarget(sm_100=4))
    def k(x):
        pass

    assert nv_ffi.reference_options(k, {}, "sm_90") == {"num_ctas": -1, "occupancy": 3}
    assert nv_ffi.reference_options(k, {}, "sm_100") == {"num_ctas": 4, "occupancy": 2}
    assert nv_ffi.reference_options(k, {"occupancy": 1, "num_ctas": 2}, "sm_90") == {"num_ctas": 2, "occupancy": 1}
    with pytest.raises(nv_ffi.NvError, match="no cuTile compiler options"):
        nv_ffi.reference_options(object(), {}, "sm_90")


def test_gpu_stages_bind_nvidia_with_the_variants_options(monkeypatch):
    """gpu_test / bench get NVIDIA's side through OpContext.call: bound with the variant's
    num_ctas / occupancy (here num_ctas 2 from compiler_hints over a bare @ct.kernel), or, where
    they cannot be read, without them and the binding names why (no silent -1)."""
    from types import SimpleNamespace as NS

    import cuda.tile as ct

    from tileport.gpu import harness
    from tileport.gpu import test as gpu_test
    from tileport.model.manifest import Variant

    @ct.kernel
    def _matmul_kernel(A):
        pass

    side, seen, _ = _stub_side("matmul", "non_persistent_matmul_kernel")
    ctx = object.__new__(gpu_test.OpContext)
    ctx.nv, ctx._targets = {"_matmul_kernel": side.with_options(None)}, {0: "sm_90"}
    ctx.kmod = NS(_matmul_kernel=_matmul_kernel)
    ctx.lib, ctx.params, ctx.op_dir, ctx.man, ctx.rmod = NS(for_variant=lambda k, v: {"symbol": "s"}), {
        "_matmul_kernel": []}, None, None, None
    got = {}
    monkeypatch.setattr(harness, "build_call", lambda *a, nv=None, **kw: got.setdefault("nv", nv))
    v = Variant("f16", {"TILE_SIZE_M": 256, "TILE_SIZE_N": 256, "TILE_SIZE_K": 64}, {"num_ctas": 2, "occupancy": 1})
    ctx.call("_matmul_kernel", v, (512, 512, 64), nv=True)
    assert got["nv"].options == {"num_ctas": 2, "occupancy": 1}
    A, B, C = FakeTensor((512, 64), ptr=0xA0), FakeTensor((64, 512), ptr=0xB0), FakeTensor((512, 512), ptr=0xC0)
    got["nv"].bind({"A": A, "B": B, "C": C}, v.constexprs, (4, 1, 1), "f16", stream=7)()
    assert seen[-1][8:10] == [2, 1]                       # num_cta_in_cga, occupancy
    assert gpu_test.OpContext.nv_side(ctx, "other", v) is None
    ctx.kmod = NS(_matmul_kernel=object())               # not a cuTile kernel: options unknown
    s2 = ctx.nv_side("_matmul_kernel", v)
    with pytest.raises(nv_ffi.NvError, match="num_ctas / occupancy are not known: .*no cuTile compiler options"):
        s2.bind({"A": A, "B": B, "C": C}, v.constexprs, (4, 1, 1), "f16", stream=7)
    with pytest.raises(nv_ffi.NvError, match=r"\['occupancy'\] name both"):
        side.bind({"A": A, "B": B, "C": C, "occupancy": 1}, v.constexprs, (4, 1, 1), "f16", stream=7)


def test_call_mapping_errors():
    sig = [("c", nv_ffi.C_TYPES["*const TensorDesc"]), ("bm", ctypes.c_int32), ("device_id", ctypes.c_int32),
           ("raw_stream", ctypes.c_uint64)]
    with pytest.raises(nv_ffi.NvError, match=r"no value for C parameter\(s\) \['bm'\]"):
        nv_ffi.call_values({"call": {"c": "C"}}, sig, {"C": FakeTensor((1,))}, "w")
    with pytest.raises(nv_ffi.NvError, match=r"\['zz'\] are not parameters"):
        nv_ffi.call_values({"call": {"c": "C", "bm": 1, "zz": 2}}, sig, {"C": FakeTensor((1,))}, "w")
    with pytest.raises(nv_ffi.NvError, match="call/c: a tensor expected, got int"):
        nv_ffi.call_values({"call": {"c": 3, "bm": 1}}, sig, {}, "w")
    assert nv_ffi.call_values({"call": {"c": "C", "bm": "True"}}, sig, {"C": FakeTensor((1,))}, "w")[1][2] == 1
    with pytest.raises(nv_ffi.NvError, match="Rust type 'String'"):
        nv_ffi.signature([["s", "String"]], "f")
    with pytest.raises(nv_ffi.NvError, match="expected the last parameters"):
        nv_ffi.signature([["a", "i32"]], "f")


def test_gpu_binding_without_a_library_gives_a_reason(tmp_path):
    op_dir = tmp_path / "op"
    op_dir.mkdir()
    (op_dir / "manifest.yaml").write_text("op: op\nkernels: {k: {}}\n")
    assert nv_ffi.gpu_binding(op_dir, tmp_path) == ({}, "")
    (op_dir / "manifest.yaml").write_text("op: op\nsource: {module: tilegym.ops.cutile.swiglu, "
                                          "kernels: [_swiglu_forward_kernel]}\n")
    sides, note = nv_ffi.gpu_binding(op_dir, tmp_path)
    assert sides == {} and "NVIDIA's port not run" in note and "build.json" in note


# ---------------------------------------------------------------- summary and bench columns

def test_bench_fold_and_summary_carry_nvidia_columns(tmp_path):
    from tileport.core.verdict import Verdict, write
    from tileport.gpu import bench
    from tileport.report import summary as SM

    rows = [{"op": "o", "kernel": "k", "variant": "f16", "shape": s, "ratio": 1.0, "vs_torch": 1.0,
             "ref_vs_torch": 1.0, "ref_us": 10.0, "port_us": 10.0, "torch_us": 10.0, "error": "",
             "checked": "ok", **nv} for s, nv in (("1", {"nv_us": 20.0, "vs_nv": 2.0, "ref_vs_nv": 2.0}),
                                                 ("2", {"nv_us": 40.0, "vs_nv": 4.0, "ref_vs_nv": 4.0}),
                                                 ("3", {"nv_error": "not ported"}))]
    v = bench.fold("o", rows, 0.95)
    var = v.details["variants"]["k/f16"]
    assert var["nv_configs"] == 2 and var["nv_us"] == pytest.approx(800 ** 0.5)
    assert var["vs_nv"] == pytest.approx(8 ** 0.5) and v.details["geomean_vs_nv"] == pytest.approx(8 ** 0.5)
    assert bench.NV_COLUMNS[:3] == ["nv_us", "nv_iqr_us", "vs_nv"]
    cols = SM._gpu_columns({"verdict": "ALL_PASS", "details": {"variants": {"k/f16": "PASS"}}},
                           {"verdict": "DONE", "details": {"variants": var and {"k/f16": var}}}, "k/f16")
    assert (cols["nv_us"], cols["vs_nv"]) == ("28.28", "2.828")
    i = SM.COLUMNS.index("nv_ir_diff")
    assert (SM.COLUMNS[i:i + 3] == ["nv_ir_diff", "nv_us", "vs_nv"]
            and SM.OPS_COLUMNS[-7:-5] == ["vs_nv", "configs_pending"] and SM.OPS_COLUMNS[-3] == "vs_nv_configs")
    write(Verdict(stage="nv_ir_diff", op="o", kernel="k", variant="f16", verdict="FAIL", owner="kernel",
                  summary="x"), tmp_path / "o" / "nv_ir_diff" / "k" / "f16.json")
    row = SM.rows_for(tmp_path, "o", [("k", "f16"), ("k", "bf16")], None)
    assert [r["nv_ir_diff"] for r in row] == ["FAIL", ""]


def test_gpu_test_second_pass_folds_nvidia_per_variant(monkeypatch):
    """NVIDIA's pass of gpu_test (no GPU: the call, check and CUPTI count are stubbed): per
    kernel/variant PASS / FAIL / NOT_RUN, and nothing runs after a lost CUDA context."""
    from types import SimpleNamespace as NS

    from tileport.gpu import cupti
    from tileport.gpu import test as gpu_test
    from tileport.model.manifest import Variant

    results = iter([{"ok": True, "max_abs": 0.0}, {"ok": False, "max_abs": 1.0},
                    {"ok": False, "error": "CUDA error: illegal address", "cuda_error": True}])
    monkeypatch.setattr(gpu_test, "check_nv", lambda c, tol: next(results))
    monkeypatch.setattr(cupti, "profile", lambda sides, reps: {"launches": {"nv": [1]}})
    a, b, c, d = (Variant("f16", {"T": t}) for t in (1, 2, 3, 4))

    def call(kernel, variant, shape, seed, nv):
        return NS(nv=None if variant is b and shape == (9,) else (lambda: None), nv_note="not implemented")

    ctx = NS(nv={"k": object()}, nv_note="", man={"tolerance": {"f16": {"rtol": 1e-2, "atol": 1e-2}}}, call=call)
    todo = [("k", a, (1,)), ("k", b, (9,)), ("k", b, (1,)), ("other", a, (1,)), ("k", c, (1,)),
            ("k", d, (1,))]
    out = gpu_test.nv_pass(ctx, todo, 0)
    assert out["variants"] == {"k/f16-T1": "PASS", "k/f16-T2": "FAIL", "k/f16-T3": "FAIL",
                               "k/f16-T4": "NOT_RUN"}
    assert out["cases"][0]["launches"] == 1 and out["cases"][1]["not_run"] == "not implemented"
    assert "CUDA context lost" in out["cases"][-1]["not_run"] and len(out["cases"]) == 5


# ---------------------------------------------------------------- make test-nvidia: real builds

def extracted_reference(module: str, kernel: str, dst: Path) -> Path:
    """A kernel.py holding one TileGym kernel, cut out of the installed wheel at test time (the
    function's text unchanged, plus the module-level names it uses): what the importer stage does
    in general. ``torch`` is a module holding only the dtype names its body spells."""
    src = (WHEEL.root.parent / "cutile" / f"{module}.py").read_text()
    tree = ast.parse(src)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel)
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    consts = [ast.get_source_segment(src, n) for n in tree.body if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id in used for t in n.targets)]
    start = min([d.lineno for d in fn.decorator_list] + [fn.lineno]) - 1
    body = "\n".join(src.splitlines()[start:fn.end_lineno])
    dst.mkdir(parents=True, exist_ok=True)
    (dst / "kernel.py").write_text(
        "import types\n\nimport cuda.tile as ct\nfrom cuda.tile import RoundingMode as RMd\n\n"
        'torch = types.ModuleType("torch")\ntorch.int32, torch.float32 = ct.int32, ct.float32\n'
        + "\n".join(consts) + "\n\n\n" + body + "\n")
    return dst


@pytest.fixture(scope="module")
def nv_builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("nvidia")
    return root, {p: nv_port.build(p, root / p, root / p / "build.json") for p in nv_port.PIN_SETS}


@pytest.mark.nvidia
def test_build_with_the_shipped_pins_and_with_tileports(nv_builds):
    root, b = nv_builds
    s, t = b["shipped"], b["tileport"]
    assert s["verdict"] == "PASS", s["summary"]
    assert s["details"]["lock"]["cutile"] == ["0.2.0"] and s["details"]["pins"]["cutile"] == "=0.2.0"
    assert s["details"]["symbols"] == sorted(f"cutile_{op}" for op in PORTS)
    assert Path(s["details"]["cdylib"]["library"]).is_file()
    assert (root / "shipped" / "crate" / "cutile_kernels" / "Cargo.toml").read_text() == \
        FILES["cutile_kernels/Cargo.toml"]
    # cutile 0.5.0: NVIDIA's FFI layer does not compile; every difference is a finding
    assert t["verdict"] == "FAIL" and t["details"]["lock"]["cutile"] == ["0.5.0"], t["summary"]
    assert not t["details"]["cdylib"]["ok"] and t["findings"]
    assert all(f["owner"] == "host" and f["port"]["file"].endswith("ffi_util.rs") for f in t["findings"])
    # cargo built the copy shared by every checkout; a finding names the copy under results/
    assert s["details"]["built_crate"] == str(nv_port.target_dir("shipped") / "crate")
    assert all(f["port"]["file"].startswith(str(root / "tileport" / "crate")) for f in t["findings"])


@pytest.mark.nvidia
def test_silu_and_mul_port_against_the_reference_ir(nv_builds, tmp_path, monkeypatch):
    from tileport.cpu import reference_ir
    from tileport.model.manifest import Variant

    root, b = nv_builds
    kernel, v = "_silu_and_mul_kernel_row_wise", Variant("bf16", {"TILE_SIZE": 1024, "TOTAL_HIDDEN_SIZE": 1000})
    op_dir = extracted_reference("silu_and_mul", kernel, tmp_path / "tg_silu")
    (op_dir / "manifest.yaml").write_text(
        f"op: tg_silu\nkernels:\n  {kernel}:\n    arrays:\n      input: {{ndim: 2, role: input}}\n"
        "      output: {ndim: 2, role: output}\n    grid: \"(M, 1, 1)\"\ndtypes: [bf16]\n"
        "configs:\n  - {TILE_SIZE: 1024, TOTAL_HIDDEN_SIZE: 1000}\nshape_names: [M]\ntest_shapes: [[1]]\n"
        "perf_shapes: [[1]]\ntolerance:\n  bf16: {rtol: 1.0e-2, atol: 1.0e-2}\n")
    reference_ir.run(op_dir, kernel, v.id, tmp_path / "r.tileirbc", tmp_path / "r.tileir", tmp_path / "r.json",
                     "tg_silu")
    # the importer's manifest key (source:) is not in this branch's manifest schema: the link is
    # read from a copy that has it, the variant from the manifest above
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "manifest.yaml").write_text(
        f"op: tg_silu\nsource: {{module: tilegym.ops.cutile.silu_and_mul, kernels: [{kernel}]}}\n")
    monkeypatch.setattr(nv_port, "_variant", lambda *a: v)
    d = nv_port.dump(linked, "tg_silu", kernel, v.id, root / "shipped" / "build.json", tmp_path / "n.tileirbc",
               tmp_path / "n.tileir", tmp_path / "n.json", other_build=root / "tileport" / "build.json")
    assert d["verdict"] == "PASS", d["summary"]
    assert d["details"]["generics"] == ["bf16", "1024"] and d["details"]["entry"] == "silu_and_mul_kernel"
    # the same kernel under cutile 0.5.0 (its kernels compile although its FFI does not)
    assert d["details"]["other_pin"]["cutile"] == "0.5.0" and d["details"]["other_pin"]["verdict"] == "PASS"
    assert "tile<1024xptr<bf16>>" in (tmp_path / "n.tileir").read_text()
    r = nv_port.diff("tg_silu", kernel, v.id, tmp_path / "r.tileir", tmp_path / "r.json", tmp_path / "n.tileir",
               tmp_path / "n.json", tmp_path / "d.json")
    assert r["stage"] == "nv_ir_diff" and r["verdict"] in ("PASS", "PASS_WITH_NOTES", "FAIL")
    assert r["details"]["nv"]["entry"] == "silu_and_mul_kernel"
    assert json.loads((tmp_path / "d.json").read_text())["stage"] == "nv_ir_diff"


@pytest.mark.nvidia
def test_every_entry_calls_the_real_library_up_to_the_device(nv_builds):
    """The built library, called through NvSide for every entry with descriptors of the reference
    launch and device -1: it reads every descriptor and argument, then stops at its device check
    (-4) -- the arity, types and descriptor layout hold against the real C functions (no GPU)."""
    root, _ = nv_builds
    lib = nv_ffi.NvLibrary(root / "shipped" / "build.json")
    assert sorted(lib.sigs) == sorted(spec["symbol"] for spec in PORTS.values())
    for op, spec in PORTS.items():
        for entry, e in spec["entries"].items():
            side = lib.side(op, entry, e, spec["symbol"])
            args, cx = {}, {}
            for name, kind in reference_params(e["reference"]):
                if kind == "array":
                    args[name] = FakeTensor((1,) if name == "Start_q" else (2, 64, 64),
                                            "torch.int32" if name == "Start_q" else "torch.float16")
                else:
                    cx[name] = False if kind.endswith("bool") else 64
            launch = side.with_options({"num_ctas": 2, "occupancy": 1}).bind(args, cx, (2, 2, 1), "f16",
                                                                            device=-1, stream=0)
            with pytest.raises(nv_ffi.NvError, match=r"returned -4: device init failed"):
                launch()
