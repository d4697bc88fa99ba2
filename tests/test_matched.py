"""Issue 31 item 3: the reference compiled under the port's launch facts (tileport.gpu.matched).
CPU only: cuda-tile's own compilation step (``kernel._compile``, what ``ct.launch`` calls) to an
sm_90 cubin with tileiras, no GPU."""

import pytest

from tileport.cpu import reference_ir, sass
from tileport.gpu import matched
from tileport.model import launch_facts as lf

COPY = '''import cuda.tile as ct


@ct.kernel
def copy2d(x, y, BM: ct.Constant[int], BN: ct.Constant[int]):
    t = ct.load(x, index=(ct.bid(0), ct.bid(1)), shape=(BM, BN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(ct.bid(0), ct.bid(1)), tile=t)
'''
PARAMS = [{"name": "x", "kind": "array", "ndim": 2}, {"name": "y", "kind": "array", "ndim": 2},
          {"name": "BM", "kind": "constexpr"}, {"name": "BN", "kind": "constexpr"}]


class FakeTensor:
    """What matched reads of a torch tensor: shape, stride(), data_ptr() (bytes)."""

    def __init__(self, shape, strides, ptr):
        self.shape, self._strides, self._ptr = tuple(shape), tuple(strides), ptr

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr


def _launch_signature(rows, cols):
    """The signature ct.launch builds for copy2d on two fresh f16 (rows, cols) tensors."""
    import cuda.tile as ct
    from cuda.tile.compilation import ArrayConstraint, CallingConvention, KernelSignature

    f = lf.reference_facts(lf.Shaped.fresh("f16", (rows, cols)))
    a = ArrayConstraint(ct.float16, 2, index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=[],
                        may_alias_internally=False, stride_constant=list(f.stride_const),
                        shape_constant=list(f.shape_const), stride_divisible_by=list(f.stride_div),
                        shape_divisible_by=list(f.shape_div), base_addr_divisible_by=f.base_div)
    cc = CallingConvention.cutile_python_v2() if rows == 1 else CallingConvention.cutile_python_v1()
    return KernelSignature([a, a, 64, 64], calling_convention=cc)


@pytest.fixture(scope="module")
def copy2d(tmp_path_factory):
    d = tmp_path_factory.mktemp("matched")
    (d / "kernel.py").write_text(COPY)
    return reference_ir.load_module(d / "kernel.py").copy2d


def test_strengthen_takes_the_larger_divisor_and_keeps_constants():
    sig = _launch_signature(1, 1000)            # extent 1: ct.launch's constant
    f = lf.port_facts_at((1, 1000), (1000, 1), 0x7F0000000100)
    c = matched.strengthen(sig.parameters[0], f)
    assert c.shape_constant == (1, None) and c.shape_divisible_by == (1, 8)
    assert c.stride_constant == (None, 1) and c.stride_divisible_by == (8, 1) and c.base_addr_divisible_by == 16
    with pytest.raises(ValueError, match="rank 1 for an array of rank 2"):
        matched.strengthen(sig.parameters[0], lf.port_facts_at((1000,), (1,), 0))


def test_matched_kernel_compiles_with_the_ports_facts(copy2d, tmp_path):
    from cuda.tile._cext import default_tile_context

    x, y = FakeTensor((37, 1000), (1000, 1), 0x7F0000000000), FakeTensor((37, 1000), (1000, 1), 0x7F0000100000)
    mk = matched.matched_kernel(copy2d, (x, y, 64, 64), PARAMS)
    assert mk.notes == []
    sig = _launch_signature(37, 1000)
    plain_cubin, plain_sym, _, _ = copy2d._compile(sig, default_tile_context, (9, 0))
    cubin, sym, _, _ = mk._compile(sig, default_tile_context, (9, 0))
    # the mangled name encodes the facts: dimension 2 of each array divisible by 8 (2i8)
    assert "2i8" not in plain_sym and sym.count("2i8") == 2 and mk.symbols == [sym]
    ins = {}
    for name, blob in (("plain", plain_cubin), ("matched", cubin)):
        (tmp_path / f"{name}.cubin").write_bytes(blob)
        ins[name] = sass.instructions(sass.disassemble(tmp_path / f"{name}.cubin"))
    got = sass.compare(ins["plain"], ins["matched"])
    assert got["verdict"] == "DIFFERENT" and got["delta"].get("LDG.E.128", 0) > 0, got


def test_what_cannot_be_matched_is_said(copy2d):
    params = PARAMS[:2] + [{"name": "n", "kind": "scalar", "dtype": "i32"}]
    mk = matched.matched_kernel(copy2d, (FakeTensor((1, 64), (64, 1), 0), FakeTensor((64, 64), (64, 1), 0), 24),
                                params)
    assert mk.notes == ["x: an extent of 1 stays ct.launch's constant (cutile hints no constant)",
                        "n = 24: cutile hints div_by<8>; cuda-tile 1.7.0 has no scalar divisibility constraint"]
    assert mk.facts[2] is None and mk.facts[1].shape_div == (16, 16)
