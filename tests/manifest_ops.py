"""Small operators of our own that use the manifest forms real launches need (issue 12 section 2,
issue 17): written for these tests, shared by test_manifest / test_analyze / test_reference_ir /
test_write_kernel. ``make_op(root, name, kernel, manifest)`` writes one operator folder."""
from pathlib import Path

# index gather + scatter, an fp32 side output, an unannotated runtime scalar, an annotated one,
# constexprs of every kind (negative int, float, bool), a list-of-arrays kernel, a helper
PICK_KERNEL = '''\
import cuda.tile as ct

ConstInt = ct.Constant[int]


def _scaled(t, s):
    return t * s


@ct.kernel
def pick(src, idx, dst, stat, Count, gain: float, TILE: ConstInt, LAT: ConstInt,
         bias: ct.Constant[float], NEG: ct.Constant[bool]):
    b = ct.bid(0)
    i = ct.load(idx, index=(b,), shape=(TILE,))
    v = ct.astype(ct.gather(src, i), ct.float32)
    v = _scaled(v, gain) + bias + Count
    if NEG:
        v = -v
    ct.store(stat, index=(b,), tile=v)
    ct.scatter(dst, i, ct.astype(v, dst.dtype))


@ct.kernel
def copy_all(srcs, dsts, TILE: ConstInt):
    b = ct.bid(0)
    for g in range(len(srcs)):
        s = srcs[g]
        t = ct.load(s, index=(b,), shape=(TILE,))
        ct.store(dsts[g], index=(b,), tile=t)
'''

PICK_MANIFEST = '''\
op: {name}
kernels:
  pick:
    arrays:
      src: {{ndim: 1, role: input}}
      idx: {{ndim: 1, role: input, dtype: i32}}
      dst: {{ndim: 1, role: output}}
      stat: {{ndim: 1, role: output, dtype: f32}}
    scalars: {{Count: i32}}
    bind: {{Count: 3, gain: 0.5}}
    grid: "(cdiv(N, TILE), 1, 1)"
    variants:
      - {{dtypes: [f16, bf16], constexprs: {{TILE: 128, LAT: -1, bias: 1.0e-6, NEG: true}}}}
      - {{dtype: f32, constexprs: {{TILE: 32, LAT: 2, bias: 0.0, NEG: false}}, compiler_hints: {{occupancy: 2}}}}
  copy_all:
    arrays:
      srcs: {{ndim: 1, role: input, list: true}}
      dsts: {{ndim: 1, role: output, list: true}}
    grid: "(cdiv(N, TILE), 1, 1)"
    configs: [{{TILE: 64}}]
    tensors:
      srcs: {{shape: ["N + i"], role: input, count: 3}}
      dsts: {{shape: ["N + i"], role: output, count: 3}}
    reference: copy_reference
dtypes: [f16, bf16, f32]
shape_names: [N]
test_shapes: [[1000]]
perf_shapes: [[1048576]]
tolerance:
  f16: {{rtol: 1.0e-3, atol: 1.0e-3}}
  bf16: {{rtol: 1.0e-2, atol: 1.0e-2}}
  f32: {{rtol: 1.0e-5, atol: 1.0e-5}}
tensors:
  src: {{shape: [N], role: input}}
  idx: {{shape: [N], role: input, dtype: i32, init: permutation}}
  dst: {{shape: [N], role: output}}
  stat: {{shape: [N], role: output, dtype: f32}}
'''


def pick_manifest(name: str = "pick") -> str:
    """PICK_MANIFEST for an operator folder called ``name``."""
    return PICK_MANIFEST.format(name=name)


def make_op(root: Path, name: str = "pick", kernel: str = PICK_KERNEL, manifest: str | None = None) -> Path:
    """Write ``root/operators/<name>/{kernel.py,manifest.yaml}`` (the manifest as given, already
    naming ``op: <name>``) and return the folder."""
    d = Path(root) / "operators" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "kernel.py").write_text(kernel)
    (d / "manifest.yaml").write_text(manifest if manifest is not None else pick_manifest(name))
    return d


def checkout_op(root: Path, op: str) -> Path:
    """A copy of the checkout's ``operators/<op>`` under ``root``, its kernels imported from the
    installed wheel when the manifest names a ``source:`` (what rule import_source does), so a
    test needs no ``results/`` of the checkout. Skips the test when the import does not pass."""
    import shutil

    import pytest

    from tileport.core import source
    from tileport.cpu import importer

    repo = Path(__file__).resolve().parent.parent
    d = Path(root) / "operators" / op
    shutil.copytree(repo / "operators" / op, d)
    if source.source_of(d) is not None:
        k = source.imported_kernel_py(d)
        doc = importer.run(d, k, str(k) + ".map.json", k.parent / "import.json", op,
                           repo / "requirements-sources.txt")
        if doc["verdict"] not in ("PASS", "PASS_WITH_NOTES"):
            pytest.skip(f"{op}: the import did not pass ({doc['summary']}): nothing to analyse")
    return d
