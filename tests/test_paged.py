"""Constructs of FlashInfer's paged decode kernels (TileGym's fmha_decode_bsr), each a small
kernel of its own (tests/data/operators/paged), ported with the real compilers: IR diff PASS.

- an mma whose contraction dim two different constexprs give (``(BM, LOAD_K) x (BK, BN)`` with
  LOAD_K == BK): the entries are specialised on them, so the dims are literals that agree;
- a ``ct.scatter`` whose index tuple is bound to a name first (``where = (row, cols + 1)``);
- a helper called as the kernel's last statement that returns early through a guard clause
  (the prefill bodies): cuTile Python's once-run ``loop`` with ``break``s;
- names first bound in both branches of a run-time ``if`` (the LPT schedule), yielded by it;
- ``bias = None``, rebound and read only under a constexpr test;
- ``ct.load_advanced_indexing`` of pages listed by a gathered index tile (``make_gather_scatter_view``
  + ``load_view_tko``), its page count ``NUM = BLOCK // LOAD`` computed in a helper;
- a tile size computed from constexprs in a helper (``shape=(BLOCK // LOAD,)``): the entries are
  specialised on them."""
from pathlib import Path

import pytest
from conftest import run_chain

from tileport.translate import Unsupported, translate_kernel

OP = Path(__file__).parent / "data" / "operators" / "paged"
CASES = {"mma_two_names_kernel": "f16-BM16-LOAD_K32-BK32-BN16", "scatter_tuple_kernel": "f16-TILE16",
         "helper_guard_kernel": "f16-TILE16", "branch_names_kernel": "f16-TILE16-SPLIT8",
         "none_placeholder_kernel": "f16-TILE16-HAS_BIASfalse", "paged_gather_kernel": "f16-BLOCK32-LOAD16-D64",
         "helper_size_kernel": "f16-BLOCK64-LOAD16"}


@pytest.mark.parametrize("kernel", list(CASES))
def test_paged_construct_reaches_ir_pass(tmp_path, kernel):
    diff, _, _ = run_chain(OP, tmp_path, "paged", kernel, CASES[kernel])
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])


def test_mma_dims_of_two_constexprs_are_specialised():
    """The two const generics never unify in Rust: both become the literal 32 in the entry."""
    src, _ = translate_kernel(OP, "mma_two_names_kernel")
    assert "{[BM, 32]}" in src and "{[32, BN]}" in src, src


def test_mma_dims_of_two_constexprs_that_differ_are_refused(tmp_path):
    """Where the two constexprs differ, the shapes do not agree (cuTile Python rejects the mma):
    after specialisation the literal dims still differ and the rule refuses them."""
    import shutil
    d = tmp_path / "paged"
    shutil.copytree(OP, d)
    m = d / "manifest.yaml"
    m.write_text(m.read_text().replace("{BM: 16, LOAD_K: 32, BK: 32, BN: 16}", "{BM: 16, LOAD_K: 16, BK: 32, BN: 16}"))
    with pytest.raises(Unsupported, match=r"operand shapes \('BM', '16'\) x \('32', 'BN'\)"):
        translate_kernel(d, "mma_two_names_kernel")


def test_index_tuple_name_is_read_only_as_a_gather_scatter_index(tmp_path):
    """A name bound to a tuple is an alias for its elements in a gather/scatter index; any other
    use is refused, naming it."""
    import shutil
    d = tmp_path / "paged"
    shutil.copytree(OP, d)
    k = d / "kernel.py"
    k.write_text(k.read_text().replace("ct.scatter(y, where, t * 2)", "ct.scatter(y, where, t * 2)\n"
                                       "    again = where"))
    with pytest.raises(Unsupported, match="translated as a ct.gather / ct.scatter index only"):
        translate_kernel(d, "scatter_tuple_kernel")


def test_none_placeholder_with_bias_reaches_ir_pass(tmp_path):
    """The other entry of none_placeholder_kernel: bias rebound to a tile and read."""
    diff, _, _ = run_chain(OP, tmp_path, "paged", "none_placeholder_kernel", "f16-TILE16-HAS_BIAStrue")
    assert diff["verdict"] == "PASS", (diff["summary"], [f["message"] for f in diff["findings"]])


def test_helper_guard_is_a_once_run_loop_with_breaks():
    src, _ = translate_kernel(OP, "helper_guard_kernel")
    assert "loop {" in src and src.count("break;") == 2 and "return;" not in src, src
    assert "new_token_unordered()" in src, src


def test_none_placeholder_read_is_refused(tmp_path):
    """A None placeholder read where the constexpr test does not rebind it is refused, naming it."""
    import shutil
    d = tmp_path / "paged"
    shutil.copytree(OP, d)
    k = d / "kernel.py"
    k.write_text(k.read_text().replace("    if HAS_BIAS:\n        t = t + bias", "    t = t + bias"))
    with pytest.raises(Unsupported, match="a name bound to None is read"):
        translate_kernel(d, "none_placeholder_kernel")


def test_helper_early_return_not_a_guard_is_refused(tmp_path):
    """An early return with statements before it in its branch stays refused."""
    import shutil
    d = tmp_path / "paged"
    shutil.copytree(OP, d)
    k = d / "kernel.py"
    k.write_text(k.read_text().replace("    if row >= x.shape[0] - 1:\n        return",
                                       "    if row >= x.shape[0] - 1:\n        row = row + 0\n        return"))
    with pytest.raises(Unsupported, match="an early return in a helper is not translated"):
        translate_kernel(d, "helper_guard_kernel")


def test_load_advanced_indexing_is_a_gather_scatter_view():
    """The view has the index tile's length on the sparse axis (0) and the slice lengths
    elsewhere, all literals once the entry is specialised on BLOCK, LOAD and D."""
    src, _ = translate_kernel(OP, "paged_gather_kernel")
    assert "use cutile::tileir::*;" in src, src
    view = "GatherScatterView<E, {[2, 16, 64]}, 0> = make_gather_scatter_view(cache, shape![2, 16, 64], padding::Zero)"
    assert view in src, src
    assert "load_view_raw(&" in src and "[false, false, false], shape![2, 16, 64])" in src, src


def test_load_advanced_indexing_needs_one_index_tile(tmp_path):
    import shutil
    d = tmp_path / "paged"
    shutil.copytree(OP, d)
    k = d / "kernel.py"
    k.write_text(k.read_text().replace("(ids, ct.Slice(0, LOAD), ct.Slice(0, D))",
                                       "(ct.Slice(0, NUM), ct.Slice(0, LOAD), ct.Slice(0, D))"))
    with pytest.raises(Unsupported, match="exactly one index must be a 1-D int32 tile"):
        translate_kernel(d, "paged_gather_kernel")


def test_helper_computed_tile_size_is_specialised():
    src, _ = translate_kernel(OP, "helper_size_kernel")
    assert "Tile<E, {[4]}>" in src, src
