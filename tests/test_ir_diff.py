"""Tests for tileport.ir_diff: parser, normalisation and comparison of Tile IR texts.

Sample pairs (tests/data/ir) are tileirdisasm output of the kernels in the tileport
probe: ref_* from cuTile Python, port_* from cuTile Rust.  Mutants are generated from
them with small text edits that keep the IR parseable; each must FAIL with the right
category.  HINTS_IR / LOOP_IR are tileirdisasm output of two extra cuTile Python kernels
(hints, fma, scan, for/if/else; while-loop with break, print, gather/atomic/scatter).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tileport.core import verdict as verdict_mod
from tileport.ir_diff import IRParseError, diff_ir, parse_tileir, run

DATA = Path(__file__).parent / "data" / "ir"
KERNELS = ("softmax", "gelu", "mm", "rms")
SAMPLES = [f"{side}_{k}" for k in KERNELS for side in ("ref", "port")]

HINTS_IR = """\
entry @hk_Kt2_A1f16_1l0_A1f16_1l0_I1024(%arg0: tile<ptr<f16>>, %arg1: tile<i32>, %arg2: tile<i32>, %arg3: tile<ptr<f16>>, %arg4: tile<i32>, %arg5: tile<i32>) optimization_hints=<default = {num_cta_in_cga = 2, occupancy = 2}> {
  %0 = make_token : token
  %assume = assume bounded<0, ?>, %arg1 : tile<i32>
  %assume_0 = assume bounded<0, ?>, %arg2 : tile<i32>
  %tview = make_tensor_view %arg0, shape = [%assume], strides = [%assume_0] : tile<i32> -> tensor_view<?xf16, strides=[?]>
  %assume_1 = assume bounded<0, ?>, %arg4 : tile<i32>
  %assume_2 = assume bounded<0, ?>, %arg5 : tile<i32>
  %tview_3 = make_tensor_view %arg3, shape = [%assume_1], strides = [%assume_2] : tile<i32> -> tensor_view<?xf16, strides=[?]>
  %blockId_x, %blockId_y, %blockId_z = get_tile_block_id : tile<i32>
  %pview = make_partition_view %tview : partition_view<tile=(1024), tensor_view<?xf16, strides=[?]>>
  %tile, %result_token = load_view_tko weak %pview[%blockId_x] token = %0 optimization_hints = <default = {allow_tma = false, latency = 3}> : partition_view<tile=(1024), tensor_view<?xf16, strides=[?]>>, tile<i32> -> tile<1024xf16>, token
  %1 = ftof %tile  : tile<1024xf16> -> tile<1024xf32>
  %2 = fma %1, %1, %1  : tile<1024xf32>
  %cst_f32 = constant <f32: 5.000000e-01> : tile<f32>
  %reshape = reshape %cst_f32 : tile<f32> -> tile<1xf32>
  %bcast = broadcast %reshape : tile<1xf32> -> tile<1024xf32>
  %3 = cmpf greater_than ordered %1, %bcast : tile<1024xf32> -> tile<1024xi1>
  %4 = select %3, %2, %1 : tile<1024xi1>, tile<1024xf32>
  %5 = scan %4 dim=0 reverse=false identities=[0.000000e+00 : f32] : tile<1024xf32> -> tile<1024xf32> 
  (%arg6: tile<f32>, %arg7: tile<f32>) {
    %8 = addf %arg6, %arg7  : tile<f32>
    yield %8 : tile<f32>
  }
  %cst_3_i32 = constant <i32: 3> : tile<i32>
  %cst_0_i32 = constant <i32: 0> : tile<i32>
  %cst_1_i32 = constant <i32: 1> : tile<i32>
  %cst_1_i32_4 = constant <i32: 1> : tile<i32>
  %for = for %loopIdx in (%cst_0_i32 to %cst_3_i32, step %cst_1_i32) : tile<i32> iter_values(%iterArg0 = %5) -> (tile<1024xf32>) {
    %8 = cmpi equal %loopIdx, %cst_1_i32_4, signed : tile<i32> -> tile<i1>
    %9 = if %8 -> (tile<1024xf32>) {
      %cst_1_f32 = constant <f32: 1.000000e+00> : tile<f32>
      %reshape_6 = reshape %cst_1_f32 : tile<f32> -> tile<1xf32>
      %bcast_7 = broadcast %reshape_6 : tile<1xf32> -> tile<1024xf32>
      %10 = addf %iterArg0, %bcast_7  : tile<1024xf32>
      yield %10 : tile<1024xf32>
    } else {
      yield %iterArg0 : tile<1024xf32>
    }
    continue %9 : tile<1024xf32>
  }
  %6 = ftof %for  : tile<1024xf32> -> tile<1024xf16>
  %pview_5 = make_partition_view %tview_3 : partition_view<tile=(1024), tensor_view<?xf16, strides=[?]>>
  %7 = store_view_tko weak %6, %pview_5[%blockId_x] token = %0 optimization_hints = <default = {latency = 2}> : tile<1024xf16>, partition_view<tile=(1024), tensor_view<?xf16, strides=[?]>>, tile<i32> -> token
  return
}
"""

LOOP_IR = """\
entry @hk2_Kt2_A1f32_1l0_A1f32_1l0_I16(%arg0: tile<ptr<f32>>, %arg1: tile<i32>, %arg2: tile<i32>, %arg3: tile<ptr<f32>>, %arg4: tile<i32>, %arg5: tile<i32>) optimization_hints=<default = {}> {
  %0 = make_token : token
  %assume = assume bounded<0, ?>, %arg1 : tile<i32>
  %assume_0 = assume bounded<0, ?>, %arg2 : tile<i32>
  %assume_1 = assume bounded<0, ?>, %arg4 : tile<i32>
  %assume_2 = assume bounded<0, ?>, %arg5 : tile<i32>
  %blockId_x, %blockId_y, %blockId_z = get_tile_block_id : tile<i32>
  %cst_0_i32 = constant <i32: 0> : tile<i32>
  %cst_0_f32 = constant <f32: 0.000000e+00> : tile<16xf32>
  %cst_4_i32 = constant <i32: 4> : tile<i32>
  %1 = iota : tile<16xi32>
  %2 = exti %assume signed : tile<i32> -> tile<i64>
  %reshape = reshape %2 : tile<i64> -> tile<1xi64>
  %bcast = broadcast %reshape : tile<1xi64> -> tile<16xi64>
  %3 = exti %assume_0 signed : tile<i32> -> tile<i64>
  %reshape_3 = reshape %3 : tile<i64> -> tile<1xi64>
  %bcast_4 = broadcast %reshape_3 : tile<1xi64> -> tile<16xi64>
  %reshape_5 = reshape %arg0 : tile<ptr<f32>> -> tile<1xptr<f32>>
  %bcast_6 = broadcast %reshape_5 : tile<1xptr<f32>> -> tile<16xptr<f32>>
  %cst_0_f32_7 = constant <f32: 0.000000e+00> : tile<f32>
  %reshape_8 = reshape %cst_0_f32_7 : tile<f32> -> tile<1xf32>
  %bcast_9 = broadcast %reshape_8 : tile<1xf32> -> tile<16xf32>
  %cst_2_i32 = constant <i32: 2> : tile<i32>
  %cst_1_i32 = constant <i32: 1> : tile<i32>
  %4:3 = loop iter_values(%arg6 = %cst_0_f32, %arg7 = %cst_0_i32, %arg8 = %0) : tile<16xf32>, tile<i32>, token -> tile<16xf32>, tile<i32>, token {
    %24 = cmpi less_than %arg7, %cst_4_i32, signed : tile<i32> -> tile<i1>
    if %24 {
    } else {
      break %arg6, %arg7, %arg8 : tile<16xf32>, tile<i32>, token
    }
    %reshape_22 = reshape %arg7 : tile<i32> -> tile<1xi32>
    %bcast_23 = broadcast %reshape_22 : tile<1xi32> -> tile<16xi32>
    %25 = addi %1, %bcast_23 : tile<16xi32>
    %26 = exti %25 signed : tile<16xi32> -> tile<16xi64>
    %27 = cmpi less_than %26, %bcast, unsigned : tile<16xi64> -> tile<16xi1>
    %28 = muli %26, %bcast_4 : tile<16xi64>
    %29 = offset %bcast_6, %28 : tile<16xptr<f32>>, tile<16xi64> -> tile<16xptr<f32>>
    %result_24, %result_token_25 = load_ptr_tko weak %29, %27, %bcast_9 token=%0 : tile<16xptr<f32>>, tile<16xi1>, tile<16xf32> -> tile<16xf32>, token
    %30 = join_tokens %arg8, %result_token_25 : token
    %31 = addf %arg6, %result_24  : tile<16xf32>
    %32 = cmpi equal %arg7, %cst_2_i32, signed : tile<i32> -> tile<i1>
    if %32 {
      break %31, %arg7, %30 : tile<16xf32>, tile<i32>, token
    } else {
    }
    %33 = addi %arg7, %cst_1_i32 : tile<i32>
    continue %31, %33, %30 : tile<16xf32>, tile<i32>, token
  }
  %5 = join_tokens %0, %4#2 : token
  %6 = print_tko "v=%d\\0A", %blockId_x token=%5 : tile<i32> -> token
  %7 = iota : tile<16xi32>
  %8 = exti %7 signed : tile<16xi32> -> tile<16xi64>
  %9 = exti %assume_1 signed : tile<i32> -> tile<i64>
  %reshape_10 = reshape %9 : tile<i64> -> tile<1xi64>
  %bcast_11 = broadcast %reshape_10 : tile<1xi64> -> tile<16xi64>
  %10 = cmpi less_than %8, %bcast_11, unsigned : tile<16xi64> -> tile<16xi1>
  %11 = exti %assume_2 signed : tile<i32> -> tile<i64>
  %reshape_12 = reshape %11 : tile<i64> -> tile<1xi64>
  %bcast_13 = broadcast %reshape_12 : tile<1xi64> -> tile<16xi64>
  %12 = muli %8, %bcast_13 : tile<16xi64>
  %reshape_14 = reshape %arg3 : tile<ptr<f32>> -> tile<1xptr<f32>>
  %bcast_15 = broadcast %reshape_14 : tile<1xptr<f32>> -> tile<16xptr<f32>>
  %13 = offset %bcast_15, %12 : tile<16xptr<f32>>, tile<16xi64> -> tile<16xptr<f32>>
  %14 = join_tokens %0, %4#2, %6 : token
  %result, %result_token = atomic_rmw_tko acq_rel device %13, addf, %4#0, %10 token=%14 : tile<16xptr<f32>>, tile<16xf32>, tile<16xi1> -> tile<16xf32>, token
  %15 = iota : tile<16xi32>
  %16 = exti %15 signed : tile<16xi32> -> tile<16xi64>
  %17 = exti %assume_1 signed : tile<i32> -> tile<i64>
  %reshape_16 = reshape %17 : tile<i64> -> tile<1xi64>
  %bcast_17 = broadcast %reshape_16 : tile<1xi64> -> tile<16xi64>
  %18 = cmpi less_than %16, %bcast_17, unsigned : tile<16xi64> -> tile<16xi1>
  %19 = exti %assume_2 signed : tile<i32> -> tile<i64>
  %reshape_18 = reshape %19 : tile<i64> -> tile<1xi64>
  %bcast_19 = broadcast %reshape_18 : tile<1xi64> -> tile<16xi64>
  %20 = muli %16, %bcast_19 : tile<16xi64>
  %reshape_20 = reshape %arg3 : tile<ptr<f32>> -> tile<1xptr<f32>>
  %bcast_21 = broadcast %reshape_20 : tile<1xptr<f32>> -> tile<16xptr<f32>>
  %21 = offset %bcast_21, %20 : tile<16xptr<f32>>, tile<16xi64> -> tile<16xptr<f32>>
  %22 = join_tokens %result_token, %6 : token
  %23 = store_ptr_tko weak %21, %4#0, %18 token=%22 : tile<16xptr<f32>>, tile<16xf32>, tile<16xi1> -> token
  return
}
"""


def load(name: str) -> str:
    return (DATA / f"{name}.tileir").read_text()


def sub1(pattern: str, repl: str, text: str, count: int = 1) -> str:
    """re.sub that insists the pattern matched (a mutant that changes nothing is a bug)."""
    out, n = re.subn(pattern, repl, text, count=count)
    assert n >= 1, f"mutation pattern {pattern!r} did not match"
    return out


def assert_pass_but_fma(res) -> None:
    """Same dataflow, but one side fused a*b+c into fma: a warn (one rounding vs two)."""
    warns = [f for f in res.findings if f.severity != "info"]
    assert res.verdict == "PASS_WITH_NOTES", res.summary
    assert len(warns) == 1 and warns[0].category == "math" and warns[0].severity == "warn"
    assert "fma contraction differs" in warns[0].message


def assert_pass(res) -> None:
    bad = [f for f in res.findings if f.severity != "info"]
    assert res.verdict == "PASS", (res.summary, [f.message for f in bad])
    assert res.first_divergence is None


def assert_fail(res, categories) -> None:
    categories = {categories} if isinstance(categories, str) else set(categories)
    assert res.verdict == "FAIL", res.summary
    fd = res.first_divergence
    assert fd is not None and fd.severity == "critical"
    assert fd.category in categories, (fd.category, fd.message)
    # the root cause is quoted with a source line on at least one side
    assert (fd.ref and fd.ref["line"]) or (fd.port and fd.port["line"])


# ---------------------------------------------------------------------------------
# text transformations that must NOT change the verdict
# ---------------------------------------------------------------------------------

SSA = r"%([A-Za-z0-9_$.\-]+)"


STRING_OR_SSA = re.compile(r'"(?:[^"\\]|\\.)*"|' + SSA)


def rename_ssa(text: str) -> str:
    """Rename every SSA name consistently (reverse-numbered, so no original name or
    order survives); string literals are left alone."""
    names = []
    for m in STRING_OR_SSA.finditer(text):
        if m.group(1) and m.group(1) not in names:
            names.append(m.group(1))
    mapping = {n: f"r{len(names) - i}z" for i, n in enumerate(names)}
    return STRING_OR_SSA.sub(lambda m: "%" + mapping[m.group(1)] if m.group(1) else m.group(0), text)


def _defs(line: str) -> set[str]:
    head = line.split(" = ", 1)[0]
    return set(re.findall(SSA, head))


def _uses(line: str) -> set[str]:
    return set(re.findall(SSA, line.split(" = ", 1)[-1]))


def _simple(lines: list[str], i: int) -> bool:
    """A one-line op with results and no region, not followed by a block-arg line."""
    ln = lines[i]
    nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
    return (re.match(r"^\s+%\S.* = \w", ln) is not None and not ln.rstrip().endswith("{")
            and not nxt.startswith("("))


def swap_independent(text: str, max_swaps: int = 3) -> tuple[str, int]:
    """Swap up to ``max_swaps`` disjoint pairs of adjacent independent ops."""
    lines = text.splitlines()
    swaps, i = 0, 0
    while i < len(lines) - 1 and swaps < max_swaps:
        a, b = lines[i], lines[i + 1]
        indent_a = len(a) - len(a.lstrip())
        indent_b = len(b) - len(b.lstrip())
        if (_simple(lines, i) and _simple(lines, i + 1) and indent_a == indent_b
                and not (_defs(a) & _uses(b)) and a.strip() != b.strip()):
            lines[i], lines[i + 1] = b, a
            swaps += 1
            i += 2
        else:
            i += 1
    return "\n".join(lines) + "\n", swaps


def duplicate_constant(text: str) -> str:
    """Insert a copy of the first constant under a new name and let its first user read
    the copy."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"^(\s+)(%[A-Za-z0-9_$.\-]+) = constant (.*)$", ln)
        if not m:
            continue
        name = m.group(2)
        use = re.compile(re.escape(name) + r"(?![A-Za-z0-9_$.\-])")
        for j in range(i + 1, len(lines)):
            if use.search(lines[j]) and not lines[j].lstrip().startswith(name + " ="):
                head, tail = lines[j].split(" = ", 1) if " = " in lines[j] else ("", lines[j])
                tail = use.sub("%dupcst", tail, count=1)
                lines[j] = f"{head} = {tail}" if head else tail
                lines.insert(i + 1, f"{m.group(1)}%dupcst = constant {m.group(3)}")
                return "\n".join(lines) + "\n"
    raise AssertionError("no used constant found")


def fix_rms_port(text: str) -> str:
    """The cuTile Rust rms port omits the ``/ TILE`` of the mean; add it (inside the
    loop, where the reference hoisted the constant out of it)."""
    text = sub1(r"(\n(\s+)%reshape = reshape %reduce : tile<1xf32> -> tile<1x1xf32>)",
                r"\1\n\2%cdiv = constant <f32: 1.024000e+03> : tile<f32>"
                r"\n\2%rdiv = reshape %cdiv : tile<f32> -> tile<1x1xf32>"
                r"\n\2%mean = divf %reshape, %rdiv  : tile<1x1xf32>", text)
    return sub1(r"%12 = addf %reshape, %bcast", "%12 = addf %mean, %bcast", text)


# ---------------------------------------------------------------------------------
# the sample pairs
# ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", ["softmax", "gelu", "mm"])
def test_reference_and_port_match(kernel):
    res = diff_ir(load(f"ref_{kernel}"), load(f"port_{kernel}"))
    # the gelu sample port was written by hand without the frontend's fma contraction
    (assert_pass_but_fma if kernel == "gelu" else assert_pass)(res)
    assert res.stats["unmatched"] == {"ref": 0, "port": 0}
    assert res.stats["matched"] == res.stats["ops_after"]["ref"] == res.stats["ops_after"]["port"]
    # the port's static unit strides are reported, as info, owned by the host
    notes = [f for f in res.findings if f.category == "memory"]
    assert notes and all(f.severity == "info" and f.owner == "host" for f in notes)


@pytest.mark.parametrize("kernel", ["softmax", "rms", "mm"])
def test_a_kept_module_is_left_as_parsed(kernel):
    """parse_tileir hands a kept Module out again for the same text: no diff may change one
    (the run-time pair diffs each text up to six times)."""
    from tileport.ir_diff.entry_facts import diff_runtime_pair

    ref, port = load(f"ref_{kernel}"), load(f"port_{kernel}")
    kept = [parse_tileir(t, p) for t, p in ((ref, "ref.tileir"), (port, "port.tileir"), (ref, "<ir>"))]
    before = [repr(m) for m in kept]
    diff_ir(ref, port, "ref.tileir", "port.tileir")
    diff_runtime_pair(ref, port, [], "ref.tileir", "port.tileir")
    again = [parse_tileir(t, p) for t, p in ((ref, "ref.tileir"), (port, "port.tileir"), (ref, "<ir>"))]
    # kept by text: one parse of ref, handed out under each path it is read as
    assert all(a.entries is k.entries for a, k in zip(again, kept))
    assert again[2].entries is again[0].entries
    assert [m.path for m in again] == ["ref.tileir", "port.tileir", "<ir>"]
    assert [repr(m) for m in again] == before


def test_a_kept_text_names_the_path_it_is_read_under():
    """One compiled Tile IR is the text of several cases (runtime_ir: perf shapes with the same
    launch facts), each under its own path: the module kept for the text carries the path asked
    for, and a malformed text is never kept, so each error names the path it was read under."""
    text = load("ref_mm")
    a, b = parse_tileir(text, "case1/matched.ref.tileir"), parse_tileir(text, "case2/matched.ref.tileir")
    assert (a.path, b.path) == ("case1/matched.ref.tileir", "case2/matched.ref.tileir")
    assert a.entries is b.entries
    bad = text + "}\n"                   # one close brace too many
    for path in ("case1/bad.tileir", "case2/bad.tileir"):
        with pytest.raises(IRParseError) as ei:
            parse_tileir(bad, path)
        assert str(ei.value).startswith(f"{path}:") and ei.value.path == path


def test_rms_port_is_missing_the_mean_division():
    """The Rust rms port computes rsqrt(sum(x*x) + eps): the reference divides the sum by
    TILE first.  That is a real bug in the port, and the diff must say so."""
    res = diff_ir(load("ref_rms"), load("port_rms"), "ref_rms.tileir", "port_rms.tileir")
    assert_fail(res, "math")
    fd = res.first_divergence
    assert fd.ref["line"] == 40 and "divf" in fd.ref["text"]
    assert fd.port is not None and "addf" in fd.port["text"]
    assert fd.ref["file"] == "ref_rms.tileir" and fd.port["file"] == "port_rms.tileir"
    assert [f.severity for f in res.findings].count("critical") == 1
    assert res.stats["propagated"]["ref"] > 0


def test_rms_fixed_port_matches_despite_hoisting():
    """With the division added (constant inside the loop, hoisted in the reference; the
    weight load inside the loop, hoisted in the reference) the pair matches; the load the
    port runs in its loop is a named warning (it compiles to other SASS), nothing critical."""
    res = diff_ir(load("ref_rms"), fix_rms_port(load("port_rms")))
    assert res.verdict == "PASS_WITH_NOTES" and not [f for f in res.findings if f.severity == "critical"]
    warns = [f for f in res.findings if f.severity == "warn"]
    assert len(warns) == 1 and warns[0].category == "memory" and warns[0].owner == "tool"
    assert warns[0].message.startswith("1 load(s) run inside more loops on the port side")
    assert warns[0].ref["line"] < warns[0].port["line"]
    asserts = [f for f in res.findings if f.category == "control_flow" and "assert" in f.message]
    assert len(asserts) == 1 and "port 2" in asserts[0].message and asserts[0].owner == "compiler"


def test_fma_note_on_gelu():
    res = diff_ir(load("ref_gelu"), load("port_gelu"))
    assert_pass_but_fma(res)
    notes = [f for f in res.findings if f.category == "math"]
    assert len(notes) == 1 and notes[0].owner == "kernel"
    assert res.stats["fma"] == {"ref": 1, "port": 0}


# ---------------------------------------------------------------------------------
# invariances
# ---------------------------------------------------------------------------------

ALL_TEXTS = SAMPLES + ["HINTS", "LOOP"]


def text_of(name: str) -> str:
    return {"HINTS": HINTS_IR, "LOOP": LOOP_IR}.get(name) or load(name)


@pytest.mark.parametrize("name", ALL_TEXTS)
def test_self_compare(name):
    t = text_of(name)
    res = diff_ir(t, t)
    assert_pass(res)
    assert res.stats["matched"] == res.stats["ops_after"]["ref"] > 0


@pytest.mark.parametrize("name", ALL_TEXTS)
def test_ssa_renaming_is_irrelevant(name):
    t = text_of(name)
    renamed = rename_ssa(t)
    assert renamed != t
    assert_pass(diff_ir(t, renamed))


@pytest.mark.parametrize("kernel", ["softmax", "gelu", "mm"])
def test_renamed_port_still_matches_reference(kernel):
    res = diff_ir(load(f"ref_{kernel}"), rename_ssa(load(f"port_{kernel}")))
    # the gelu sample port was written by hand without the frontend's fma contraction
    (assert_pass_but_fma if kernel == "gelu" else assert_pass)(res)


@pytest.mark.parametrize("name", ALL_TEXTS)
def test_swapping_independent_ops_is_irrelevant(name):
    t = text_of(name)
    swapped, n = swap_independent(t)
    assert n >= 1 and swapped != t
    assert_pass(diff_ir(t, swapped))


@pytest.mark.parametrize("name", SAMPLES + ["HINTS"])
def test_duplicated_constant_is_merged(name):
    t = text_of(name)
    dup = duplicate_constant(t)
    assert "%dupcst = constant" in dup
    assert_pass(diff_ir(t, dup))


def test_module_wrapper_and_entry_name_are_irrelevant():
    t = load("ref_softmax")
    wrapped = "cuda_tile.module @kernels {\n" + t.replace("@softmax_k_Kt2", "@other") + "}\n"
    mod = parse_tileir(wrapped)
    assert mod.name == "kernels" and len(mod.entries) == 1
    assert_pass(diff_ir(t, wrapped))


# ---------------------------------------------------------------------------------
# mutants that must FAIL with the right category
# (reference text, port text after mutation, expected first-divergence category)
# ---------------------------------------------------------------------------------

def _drop_output_cast(t: str) -> str:
    t = sub1(r"\n\s+%6 = ftof %5  : tile<1x1024xf32> -> tile<1x1024xf16>", "", t)
    return sub1(r"store_view_tko weak %6,", "store_view_tko weak %5,", t)


def _drop_input_cast(t: str) -> str:
    t = sub1(r"\n\s+%2 = ftof %tile  : tile<1x1024xf16> -> tile<1x1024xf32>", "", t)
    t = sub1(r"reduce %2 dim=1", "reduce %tile dim=1", t)
    return sub1(r"subf %2, %bcast", "subf %tile, %bcast", t)


MUTANTS = {
    # reductions
    "combiner_max_to_min": ("softmax", lambda t: sub1(r"maxf %reduce_lhs", "minf %reduce_lhs", t), "reduction"),
    "combiner_add_to_max": ("softmax", lambda t: sub1(r"addf %reduce_lhs", "maxf %reduce_lhs", t), "reduction"),
    "identity_changed": ("softmax", lambda t: sub1(r"identities=\[0xFF800000 : f32\]",
                                                   "identities=[0x00000000 : f32]", t), "reduction"),
    "sum_identity_changed": ("rms", lambda t: sub1(r"identities=\[0.000000e\+00 : f32\]",
                                                   "identities=[1.000000e+00 : f32]", fix_rms_port(t)),
                             "reduction"),
    "reduce_dim_changed": ("softmax", lambda t: sub1(r"reduce %2 dim=1", "reduce %2 dim=0", t), "reduction"),
    "loop_body_combiner": ("rms", lambda t: sub1(r"%26 = addf", "%26 = mulf", fix_rms_port(t)), "reduction"),
    # casts
    "dropped_output_ftof": ("softmax", _drop_output_cast, "cast"),
    "dropped_input_ftof": ("softmax", _drop_input_cast, "cast"),
    "cast_target_dtype": ("gelu", lambda t: sub1(r"ftof %11  : tile<1024xf32> -> tile<1024xf16>",
                                                 "ftof %11  : tile<1024xf32> -> tile<1024xbf16>", t), "cast"),
    "accumulate_in_f16": ("rms", lambda t: sub1(r"ftof %tile  : tile<1x1024xbf16> -> tile<1x1024xf32>",
                                                "ftof %tile  : tile<1x1024xbf16> -> tile<1x1024xf16>",
                                                fix_rms_port(t)), "cast"),
    # memory
    "tile_shape_changed": ("softmax", lambda t: t.replace("1x1024", "1x512"), "memory"),
    "padding_changed": ("softmax", lambda t: sub1(r"padding_value = neg_inf", "padding_value = zero", t, 0),
                        "memory"),
    "padding_removed": ("softmax", lambda t: sub1(r"padding_value = neg_inf, ", "", t, 0), "memory"),
    "mm_padding_removed": ("mm", lambda t: sub1(r"padding_value = zero, ", "", t, 0), "memory"),
    "store_to_wrong_view": ("softmax", lambda t: sub1(r"%pview_32\[", "%pview[", t), "memory"),
    "load_wrong_index": ("mm", lambda t: sub1(r"%pview_17\[%assume_28, %assume_blockId_y\]",
                                              "%pview_17[%assume_blockId_y, %assume_28]", t), "memory"),
    "duplicated_store_in_loop": ("rms", lambda t: sub1(
        r"(\n\s+)(%25)( = store_view_tko weak %17, [^\n]*)", r"\1\2\3\1%25b\3", fix_rms_port(t)), "memory"),
    "store_index_swapped": ("rms", lambda t: sub1(r"%pview_51\[%loopIdx, %cst_0_i32_52\]",
                                                  "%pview_51[%cst_0_i32_52, %loopIdx]", fix_rms_port(t)),
                            "memory"),
    "tensor_view_dtype": ("softmax", lambda t: t.replace("tensor_view<?x?xf16", "tensor_view<?x?xbf16"),
                          {"memory", "signature"}),
    # math
    "subf_swapped": ("softmax", lambda t: sub1(r"subf %2, %bcast", "subf %bcast, %2", t), "math"),
    "divf_swapped": ("softmax", lambda t: sub1(r"divf %4, %bcast_25", "divf %bcast_25, %4", t), "math"),
    "mmaf_swapped": ("mm", lambda t: sub1(r"mmaf %tile, %tile_33,", "mmaf %tile_33, %tile,", t), "math"),
    "exp_to_exp2": ("softmax", lambda t: sub1(r"= exp %3", "= exp2 %3", t), "math"),
    "tanh_input": ("gelu", lambda t: sub1(r"tanh %7", "tanh %6", t), "math"),
    # constants
    "loop_step_off_by_one": ("mm", lambda t: sub1(r"(%cst_1_i32_18 = constant <i32: )1>", r"\g<1>2>", t),
                             "constant"),
    "load_index_off_by_one": ("softmax", lambda t: sub1(r"(%cst_0_i32 = constant <i32: )0>", r"\g<1>1>", t),
                              "constant"),
    "float_constant_changed": ("gelu", lambda t: sub1(r"4.471500e-02", "4.471600e-02", t), "constant"),
    "accumulator_init_changed": ("mm", lambda t: sub1(r"<f32: 0.000000e\+00> : tile<128x128xf32>",
                                                      "<f32: 1.000000e+00> : tile<128x128xf32>", t), "constant"),
    # entry signature
    "arg_dtype": ("softmax", lambda t: sub1(r"%arg5: tile<ptr<f16>>", "%arg5: tile<ptr<bf16>>", t), "signature"),
    "extra_arg": ("gelu", lambda t: sub1(r"%arg5: tile<i32>\)", "%arg5: tile<i32>, %arg6: tile<i32>)", t),
                  "signature"),
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_port_mutant_fails(mutant):
    kernel, mutate, category = MUTANTS[mutant]
    port = load(f"port_{kernel}")
    mutated = mutate(port)
    assert mutated != port
    res = diff_ir(load(f"ref_{kernel}"), mutated)
    assert_fail(res, category)
    if category == "signature":
        assert res.owner == "host"
    else:
        assert res.owner == "kernel"


@pytest.mark.parametrize("mutant", ["subf_swapped", "combiner_max_to_min", "tile_shape_changed"])
def test_mutant_fails_against_itself_too(mutant):
    """Mutating one side of a self-comparison is caught in either direction."""
    kernel, mutate, category = MUTANTS[mutant]
    port = load(f"port_{kernel}")
    assert_fail(diff_ir(port, mutate(port)), category)
    assert_fail(diff_ir(mutate(port), port), category)


def test_stride_specialisation():
    """A static unit stride against a run-time stride is an info note owned by the host;
    another static stride is a warning; two different static strides are a failure."""
    port = load("port_softmax")
    res = diff_ir(load("ref_softmax"), port)
    notes = [f for f in res.findings if f.category == "memory"]
    assert [f.severity for f in notes] == ["info", "info"]
    assert notes[0].ref["line"] == 7 and notes[0].port["line"] == 7
    two = port.replace("strides = [%assume_1, 1]", "strides = [%assume_1, 2]")
    res = diff_ir(load("ref_softmax"), two)
    assert res.verdict == "PASS_WITH_NOTES"
    assert [f.owner for f in res.findings if f.severity == "warn"] == ["host"]
    assert_fail(diff_ir(port, two), "memory")


def test_first_divergence_quotes_both_sides():
    res = diff_ir(load("ref_softmax"), MUTANTS["subf_swapped"][1](load("port_softmax")),
                  "r.tileir", "p.tileir")
    fd = res.first_divergence
    assert fd.ref == {"file": "r.tileir", "line": 25, "text": "%2 = subf %1, %bcast  : tile<1x1024xf32>"}
    assert fd.port["file"] == "p.tileir" and fd.port["line"] == 40 and "subf %bcast, %2" in fd.port["text"]
    crit = [f for f in res.findings if f.severity == "critical"]
    assert len(crit) == 1, [f.message for f in crit]       # downstream ops are not reported
    assert res.stats["propagated"]["ref"] >= 3              # exp, reduce, divf, ftof, store ...


def test_constant_finding_names_both_values():
    res = diff_ir(load("ref_mm"), MUTANTS["loop_step_off_by_one"][1](load("port_mm")))
    assert "<i32: 1>" in res.first_divergence.message and "<i32: 2>" in res.first_divergence.message


# ---------------------------------------------------------------------------------
# hints, fma, regions (HINTS_IR / LOOP_IR)
# ---------------------------------------------------------------------------------

def test_an_fma_split_by_hand_around_a_negation_is_the_fma_minus_one_rounding():
    """fma(a, b, -c) and mulf + addf(.., negf(c)) in either operand order: the same dataflow
    (x + (-y) is x - y in IEEE 754), so only the fma contraction note; dropping the negation
    FAILs."""
    neg = "  %n = negf %1  : tile<1024xf32>\n"
    ref = HINTS_IR.replace("  %2 = fma %1, %1, %1  : tile<1024xf32>\n",
                           neg + "  %2 = fma %1, %1, %n  : tile<1024xf32>\n")
    for add in ("addf %m, %n", "addf %n, %m"):
        port = HINTS_IR.replace("  %2 = fma %1, %1, %1  : tile<1024xf32>\n",
                                neg + f"  %m = mulf %1, %1  : tile<1024xf32>\n  %2 = {add}  : tile<1024xf32>\n")
        assert port != HINTS_IR
        assert_pass_but_fma(diff_ir(ref, port))
    dropped = HINTS_IR.replace("  %2 = fma %1, %1, %1  : tile<1024xf32>\n",
                               "  %m = mulf %1, %1  : tile<1024xf32>\n  %2 = addf %m, %1  : tile<1024xf32>\n")
    assert diff_ir(ref, dropped).verdict == "FAIL"


def test_op_hint_difference_is_a_warning():
    res = diff_ir(HINTS_IR, HINTS_IR.replace("latency = 3", "latency = 5"))
    assert res.verdict == "PASS_WITH_NOTES"
    warns = [f for f in res.findings if f.severity == "warn"]
    assert len(warns) == 1 and warns[0].category == "hint" and "latency=5" in warns[0].message
    assert warns[0].ref["line"] == 11 and warns[0].port["line"] == 11


def test_removed_op_hints_is_a_warning():
    no_hints = re.sub(r" optimization_hints = <default = \{[^}]*\}>", "", HINTS_IR)
    assert no_hints != HINTS_IR
    res = diff_ir(HINTS_IR, no_hints)
    assert res.verdict == "PASS_WITH_NOTES"
    assert {f.category for f in res.findings if f.severity == "warn"} == {"hint"}


def test_entry_hint_difference_is_a_warning():
    res = diff_ir(HINTS_IR, HINTS_IR.replace("occupancy = 2", "occupancy = 4"))
    assert res.verdict == "PASS_WITH_NOTES"
    (w,) = [f for f in res.findings if f.severity == "warn"]
    assert w.category == "hint" and "occupancy=4" in w.message


def test_empty_entry_hints_equal_none():
    t = load("ref_softmax")
    assert_pass(diff_ir(t, t.replace(" optimization_hints=<default = {}>", "")))


def test_hints_compare_as_they_apply_to_the_compiled_target():
    # cutile keys what it carries by the compile target, cuTile Python writes `default`
    keyed = HINTS_IR.replace("<default = {allow_tma = false, latency = 3}>",
                             "<sm_90 = {allow_tma = false, latency = 3}>").replace(
        "optimization_hints=<default = {num_cta_in_cga = 2, occupancy = 2}>",
        "optimization_hints=<sm_90 = {num_cta_in_cga = 2, occupancy = 2}>")
    assert keyed != HINTS_IR
    assert_pass(diff_ir(HINTS_IR, keyed, target="sm_90"))
    assert diff_ir(HINTS_IR, keyed).verdict == "PASS_WITH_NOTES"       # no target: as written
    # a ByTarget: the target's group overrides the default, other targets' groups do not apply
    by_target = HINTS_IR.replace("<default = {num_cta_in_cga = 2, occupancy = 2}>",
                                 "<default = {num_cta_in_cga = 2, occupancy = 4}, sm_90 = {occupancy = 2}, "
                                 "sm_80 = {occupancy = 1}>")
    assert_pass(diff_ir(by_target, keyed, target="sm_90"))
    res = diff_ir(by_target, keyed, target="sm_100")        # sm_90 groups do not apply to sm_100
    w = [f.message for f in res.findings if f.severity == "warn"]
    assert "entry optimization hints for sm_100 differ: ref 'num_cta_in_cga=2, occupancy=4' vs port 'none'" in w
    # the same hint with another value for the target is still a difference
    res = diff_ir(HINTS_IR, keyed.replace("latency = 3", "latency = 5"), target="sm_90")
    assert res.verdict == "PASS_WITH_NOTES" and "latency=5" in res.findings[0].message


CONST_IR = """\
entry @c(%arg0: tile<ptr<f16>>, %arg1: tile<i32>) {
  %0 = make_token : token
  %tview = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf16, strides=[1]>
  %blockId_x, %blockId_y, %blockId_z = get_tile_block_id : tile<i32>
  %pview = make_partition_view %tview : partition_view<tile=(1024), tensor_view<?xf16, strides=[1]>>
  %tile, %tok = load_view_tko weak %pview[%blockId_x] token = %0 : partition_view<tile=(1024), tensor_view<?xf16, strides=[1]>>, tile<i32> -> tile<1024xf16>, token
  %cst_f16 = constant <f16: -0.000000e+00> : tile<1024xf16>
  %1 = addf %tile, %cst_f16 : tile<1024xf16>
  %2 = store_view_tko weak %1, %pview[%blockId_x] token = %0 : tile<1024xf16>, partition_view<tile=(1024), tensor_view<?xf16, strides=[1]>>, tile<i32> -> token
  return
}
"""


@pytest.mark.parametrize("port,same", [
    # the same bits spelled otherwise: hex, or an f32 constant converted to f16 (cutile's form)
    ("%cst_f16 = constant <f16: 0x8000> : tile<1024xf16>", True),
    ("%c32 = constant <f32: -0.000000e+00> : tile<1024xf32>\n  %cst_f16 = ftof %c32 : tile<1024xf32> -> tile<1024xf16>", True),
    ("%c32 = constant <f32: -0.000000e+00> : tile<f32>\n  %c16 = ftof %c32 : tile<f32> -> tile<f16>\n"
     "  %r = reshape %c16 : tile<f16> -> tile<1xf16>\n  %cst_f16 = broadcast %r : tile<1xf16> -> tile<1024xf16>", True),
    ("%ci = constant <i16: -32768> : tile<1024xi16>\n  %cst_f16 = bitcast %ci : tile<1024xi16> -> tile<1024xf16>", True),
    # another value: +0.0 (the sign of zero), or an f32 constant that f16 rounds elsewhere
    ("%cst_f16 = constant <f16: 0.000000e+00> : tile<1024xf16>", False),
    ("%c32 = constant <f32: 0.000000e+00> : tile<1024xf32>\n  %cst_f16 = ftof %c32 : tile<1024xf32> -> tile<1024xf16>", False),
    # a rounding mode other than nearest-even is not folded (it is not the reference's op)
    ("%c32 = constant <f32: -0.000000e+00> : tile<1024xf32>\n  %cst_f16 = ftof %c32 rounding<zero> : tile<1024xf32> -> tile<1024xf16>", False),
])
def test_constants_compare_by_their_bits(port, same):
    text = CONST_IR.replace("%cst_f16 = constant <f16: -0.000000e+00> : tile<1024xf16>", port)
    res = diff_ir(CONST_IR, text)
    if same:
        assert_pass(res)
    else:
        assert res.verdict == "FAIL" and {f.category for f in res.findings if f.severity == "critical"} & {"constant", "math", "cast"}


def test_nan_inf_and_subnormal_constants():
    for ref_c, port_c in (("<f16: 0x7E00>", "<f32: 0x7FC00000>"), ("<f16: 0x7C00>", "<f32: 0x7F800000>"),
                          ("<f16: 5.960460e-08>", "<f32: 5.96046448E-8>")):
        ref = CONST_IR.replace("<f16: -0.000000e+00>", ref_c)
        port = CONST_IR.replace("%cst_f16 = constant <f16: -0.000000e+00> : tile<1024xf16>",
                                f"%c = constant {port_c} : tile<1024xf32>\n  %cst_f16 = ftof %c : tile<1024xf32> -> tile<1024xf16>")
        assert_pass(diff_ir(ref, port))
    # the NaN the port makes from the i32 bit pattern
    port = CONST_IR.replace("%cst_f16 = constant <f16: -0.000000e+00> : tile<1024xf16>",
                            "%i = constant <i32: 2143289344> : tile<1024xi32>\n  %c = bitcast %i : tile<1024xi32> -> tile<1024xf32>\n"
                            "  %cst_f16 = ftof %c : tile<1024xf32> -> tile<1024xf16>")
    assert_pass(diff_ir(CONST_IR.replace("<f16: -0.000000e+00>", "<f16: 0x7E00>"), port))


def test_fma_expansion_matches_unfused_form():
    unfused = sub1(r"%2 = fma %1, %1, %1  : tile<1024xf32>",
                   "%m = mulf %1, %1 : tile<1024xf32>\n  %2 = addf %1, %m : tile<1024xf32>", HINTS_IR)
    res = diff_ir(HINTS_IR, unfused)
    assert_pass_but_fma(res)
    # a wrong unfused form is still caught
    wrong = unfused.replace("addf %1, %m", "subf %1, %m")
    assert_fail(diff_ir(HINTS_IR, wrong), "math")


def test_fma_flags_are_kept():
    t = HINTS_IR.replace("%2 = fma %1, %1, %1  :", "%2 = fma %1, %1, %1 flush_to_zero :")
    unfused = sub1(r"%2 = fma %1, %1, %1 flush_to_zero : tile<1024xf32>",
                   "%m = mulf %1, %1 flush_to_zero : tile<1024xf32>\n"
                   "  %2 = addf %1, %m flush_to_zero : tile<1024xf32>", t)
    assert_pass_but_fma(diff_ir(t, unfused))
    assert_fail(diff_ir(t, unfused.replace("addf %1, %m flush_to_zero", "addf %1, %m")), "math")


def test_scan_combiner_and_if_branch_are_compared():
    assert_fail(diff_ir(HINTS_IR, sub1(r"%8 = addf %arg6, %arg7", "%8 = maxf %arg6, %arg7", HINTS_IR)),
                "reduction")
    assert_fail(diff_ir(HINTS_IR, sub1(r"reverse=false", "reverse=true", HINTS_IR)), "reduction")
    assert_fail(diff_ir(HINTS_IR, sub1(r"%10 = addf %iterArg0, %bcast_7", "%10 = subf %iterArg0, %bcast_7",
                                       HINTS_IR)), "math")
    # else-branch yields the other value
    swapped_else = sub1(r"(\} else \{\n\s+yield )%iterArg0", r"\g<1>%10", HINTS_IR)
    with pytest.raises(IRParseError):        # %10 is not visible in the else region
        parse_tileir(swapped_else)
    cmp_changed = sub1(r"cmpi equal %loopIdx", "cmpi not_equal %loopIdx", HINTS_IR)
    assert_fail(diff_ir(HINTS_IR, cmp_changed), "math")


def test_loop_break_print_atomic_are_compared():
    assert_fail(diff_ir(LOOP_IR, sub1(r"cmpi equal %arg7, %cst_2_i32", "cmpi equal %arg7, %cst_4_i32",
                                      LOOP_IR)), {"math", "constant"})
    assert_fail(diff_ir(LOOP_IR, sub1(r"addf, %4#0", "maxf, %4#0", LOOP_IR)), "memory")
    assert_fail(diff_ir(LOOP_IR, sub1(r'"v=%d\\0A"', '"w=%d\\0A"', LOOP_IR)), "math")
    # dropping the print is a missing side effect
    no_print = sub1(r"\n\s+%6 = print_tko.*", "", LOOP_IR)
    no_print = no_print.replace("%14 = join_tokens %0, %4#2, %6", "%14 = join_tokens %0, %4#2")
    no_print = no_print.replace("%22 = join_tokens %result_token, %6", "%22 = join_tokens %result_token")
    assert diff_ir(LOOP_IR, no_print).verdict == "FAIL"


GUARD_REF_IR = """\
entry @k(%arg0: tile<ptr<f32>>, %arg1: tile<i32>) {
  %0 = make_token : token
  %tv = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %bx, %by, %bz = get_tile_block_id : tile<i32>
  %c = cmpi greater_than_or_equal %bx, %arg1, signed : tile<i32> -> tile<i1>
  if %c {
    return
  } else {
  }
  %cst = constant <f32: 1.000000e+00> : tile<16xf32>
  %pv = make_partition_view %tv : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>
  %st = store_view_tko weak %cst, %pv[%bx] token = %0 : tile<16xf32>, partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
  return
}
"""

GUARD_PORT_IR = """\
entry @k(%arg0: tile<ptr<f32>>, %arg1: tile<i32>) {
  %0 = make_token : token
  %tv = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %bx, %by, %bz = get_tile_block_id : tile<i32>
  %c = cmpi greater_than_or_equal %bx, %arg1, signed : tile<i32> -> tile<i1>
  if %c {
  } else {
    %cst = constant <f32: 1.000000e+00> : tile<16xf32>
    %pv = make_partition_view %tv : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>
    %st = store_view_tko weak %cst, %pv[%bx] token = %0 : tile<16xf32>, partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
  }
  return
}
"""


def test_guard_clause_as_an_if_with_the_rest_in_its_else():
    """cuTile Python's guard clause `if c { return }; rest` and the port's `if c { } else
    { rest }` (no once-run loop: tileiras 13.4 kept less of what the guard says inside it)
    are one control flow (_Normaliser.guard_returns); the old loop form still matches too."""
    assert_pass(diff_ir(GUARD_REF_IR, GUARD_PORT_IR))
    assert_pass(diff_ir(GUARD_PORT_IR, GUARD_REF_IR))
    looped = GUARD_REF_IR.replace("  %0 = make_token : token\n", "  %0 = make_token : token\n  loop {\n", 1) \
        .replace("  return\n}\n", "  return\n  }\n  return\n}\n")
    assert "loop {" in looped
    assert_pass(diff_ir(GUARD_PORT_IR, looped))
    # the store falls through the guard, or runs only where the guard holds: not the same
    fall = GUARD_PORT_IR.replace("  } else {\n", "  } else {\n  }\n", 1).replace("  }\n  return\n}", "  return\n}")
    assert fall != GUARD_PORT_IR and diff_ir(GUARD_REF_IR, fall).verdict == "FAIL"
    inverted = GUARD_PORT_IR.replace("  if %c {\n  } else {\n", "  if %c {\n", 1).replace(
        "token\n  }\n  return", "token\n  } else {\n  }\n  return")
    assert inverted != GUARD_PORT_IR and diff_ir(GUARD_REF_IR, inverted).verdict == "FAIL"


TWO_REDUCES_IR = """\
entry @k(%arg0: tile<ptr<f32>>, %arg1: tile<i32>, %arg2: tile<ptr<f32>>, %arg3: tile<i32>) {
  %0 = make_token : token
  %tv = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %tv2 = make_tensor_view %arg2, shape = [%arg3], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %c0 = constant <i32: 0> : tile<i32>
  %pv = make_partition_view %tv : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>
  %x, %t = load_view_tko weak %pv[%c0] token = %0 : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<16xf32>, token
  %a = reduce %x dim=0 identities=[0.000000e+00 : f32] : tile<16xf32> -> tile<f32>
  (%l: tile<f32>, %r: tile<f32>) {
    %s = addf %l, %r : tile<f32>
    yield %s : tile<f32>
  }
  %b = reduce %x dim=0 identities=[0.000000e+00 : f32] : tile<16xf32> -> tile<f32>
  (%l: tile<f32>, %r: tile<f32>) {
    %s = maxf %l, %r : tile<f32>
    yield %s : tile<f32>
  }
  %d = subf %a, %b : tile<f32>
  %rs = reshape %d : tile<f32> -> tile<1xf32>
  %bc = broadcast %rs : tile<1xf32> -> tile<16xf32>
  %pv2 = make_partition_view %tv2 : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>
  %st = store_view_tko weak %bc, %pv2[%c0] token = %0 : tile<16xf32>, partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
  return
}
"""


def test_reduce_results_are_distinguished_by_their_combiner():
    """Two reductions with the same header differ only by their combiner; using them
    the other way round must fail (the reduce's signature includes its body)."""
    assert_pass(diff_ir(TWO_REDUCES_IR, TWO_REDUCES_IR))
    assert_fail(diff_ir(TWO_REDUCES_IR, sub1(r"subf %a, %b", "subf %b, %a", TWO_REDUCES_IR)), "math")
    # merging the two identical-header reductions into one is fine only if combiners agree
    same = TWO_REDUCES_IR.replace("%s = maxf %l, %r", "%s = addf %l, %r")
    merged = same.replace("subf %a, %b", "subf %a, %a")
    assert_pass(diff_ir(same, merged))


def test_combiner_change_propagates_through_the_reduce():
    res = diff_ir(load("ref_softmax"), MUTANTS["combiner_max_to_min"][1](load("port_softmax")))
    assert sum(f.severity == "critical" for f in res.findings) == 1
    # the reduce itself and everything after it (reshape, broadcast, subf, exp, ...)
    assert res.stats["propagated"]["ref"] >= 6 and res.stats["propagated"]["port"] >= 6


WSTORE = ("%wst = store_view_tko weak %tile, %pview_13[%cst_0_i32_12] token = %0 : tile<1024xbf16>, "
          "partition_view<tile=(1024), tensor_view<?xbf16, strides=[?]>>, tile<i32> -> token")


def test_loop_invariant_store_moved_into_loop_fails():
    """A store whose operands are all loop-invariant matches op-for-op, but running it
    once per iteration instead of once is a different program: the loop must differ."""
    ref = load("ref_rms")
    inside = sub1(r"(\n(\s+)%10 = store_view_tko[^\n]*)", r"\1\n\2" + WSTORE, ref)
    outside = sub1(r"(\n  \}\n)(\s+return)", r"\1  " + WSTORE + r"\n\2", ref)
    assert_pass(diff_ir(inside, inside))
    assert_pass(diff_ir(outside, outside))
    res = diff_ir(outside, inside)
    assert_fail(res, "control_flow")
    assert "only in the port body: 'store_view_tko'" in res.first_divergence.message
    assert_fail(diff_ir(inside, outside), "control_flow")


def test_join_tokens_with_fresh_tokens_and_order():
    t = LOOP_IR
    reordered = sub1(r"join_tokens %0, %4#2, %6", "join_tokens %6, %4#2", t)
    assert_pass(diff_ir(t, reordered))
    single = sub1(r"\n\s+%5 = join_tokens %0, %4#2 : token", "", t)
    single = sub1(r"token=%5 ", "token=%4#2 ", single)
    assert_pass(diff_ir(t, single))
    assert diff_ir(t, sub1(r"join_tokens %result_token, %6", "join_tokens %result_token", t)).verdict == "FAIL"


def test_parser_structure():
    mod = parse_tileir(load("ref_mm"), "ref_mm.tileir")
    (entry,) = mod.entries
    assert [a.type for a in entry.args][:2] == ["tile<ptr<f16>>", "tile<i32>"]
    assert entry.args[14].position == 14 and entry.args[14].name == "%arg14"
    ops = {op.line: op for op in entry.body}
    gis = ops[21]
    assert gis.results == ["%1#0", "%1#1"] and gis.opname == "get_index_space_shape"
    loop = ops[27]
    assert loop.opname == "for"
    assert loop.operands == ["%cst_0_i32", "%1#1", "%cst_1_i32", "%cst_0_f32"]
    assert [a.name for a in loop.regions[0].args] == ["%loopIdx", "%iterArg0"]
    assert loop.regions[0].args[1].type == "tile<128x128xf32>"
    assert loop.result_types == ["tile<128x128xf32>"]
    body = loop.regions[0].ops
    assert [op.opname for op in body] == ["load_view_tko", "load_view_tko", "mmaf", "continue"]
    assert body[0].results == ["%tile", "%result_token"]
    assert body[0].result_types == ["tile<128x64xf16>", "token"]
    assert body[2].operands == ["%tile", "%tile_19", "%iterArg0"] and body[2].line == 30
    red = parse_tileir(load("ref_softmax")).entries[0].body[16]
    assert red.opname == "reduce" and [a.name for a in red.regions[0].args] == ["%reduce_lhs", "%reduce_rhs"]
    assert "%" in red.attrs and "reduce_lhs" not in red.attrs and "dim=1" in red.attrs
    hints = parse_tileir(HINTS_IR).entries[0]
    assert "occupancy=2" in hints.hints
    load_op = next(op for op in hints.body if op.opname == "load_view_tko")
    assert "latency=3" in load_op.hints and "latency" not in load_op.pre
    if_op = next(op for op in hints.body if op.opname == "for").regions[0].ops[1]
    assert if_op.opname == "if" and len(if_op.regions) == 2


# ---------------------------------------------------------------------------------
# malformed input
# ---------------------------------------------------------------------------------

def _lines(t: str) -> list[str]:
    return t.splitlines()


MALFORMED = {
    "missing_close_brace": (lambda t: t.rstrip().rsplit("}", 1)[0], None, "not closed"),
    "extra_close_brace": (lambda t: t + "}\n", None, "'}'"),
    "undefined_value": (lambda t: t.replace("%2 = subf %1, %bcast", "%2 = subf %nope, %bcast"), 25,
                        "undefined SSA value %nope"),
    "garbage_line": (lambda t: "\n".join(_lines(t)[:4] + ["this is not IR at all"] + _lines(t)[4:]), 5,
                     "unknown op"),
    "symbol_garbage": (lambda t: "\n".join(_lines(t)[:4] + ["@@@ ### $$$"] + _lines(t)[4:]), 5, "garbage"),
    "unbalanced_angle": (lambda t: t.replace("-> tile<1x1024xf32>\n", "-> tile<1x1024xf32\n", 1), 17,
                         "unbalanced"),
    "redefinition": (lambda t: t.replace("%3 = exp %2", "%1 = exp %2"), 26, "redefinition"),
    "empty": (lambda t: "\n\n", None, "empty"),
    "region_value_escapes": (lambda t: t.replace("%reshape = reshape %reduce", "%reshape = reshape %7"), 23,
                             "undefined SSA value %7"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_ir_raises_with_line(case):
    mutate, line, words = MALFORMED[case]
    bad = mutate(load("ref_softmax"))
    with pytest.raises(IRParseError) as ei:
        parse_tileir(bad, "bad.tileir")
    err = ei.value
    assert str(err).startswith(f"bad.tileir:{err.line}:")
    assert words in str(err), str(err)
    if line is not None:
        assert err.line == line
    with pytest.raises(IRParseError):
        diff_ir(load("ref_softmax"), bad)


# ---------------------------------------------------------------------------------
# run(): the stage verdict
# ---------------------------------------------------------------------------------

def test_run_writes_valid_verdicts(tmp_path):
    out = tmp_path / "v.json"
    doc = run(DATA / "ref_softmax.tileir", DATA / "port_softmax.tileir", out, "softmax",
              kernel="softmax_k", variant="f16", attempt=2)
    assert doc == verdict_mod.read(out)
    assert doc["stage"] == "ir_diff" and doc["verdict"] == "PASS" and doc["attempt"] == 2
    assert doc["artifacts"] == {"ref": str(DATA / "ref_softmax.tileir"),
                                "port": str(DATA / "port_softmax.tileir")}
    assert doc["details"]["first_divergence"] is None
    assert doc["details"]["stats"]["matched"] > 0

    bad_port = tmp_path / "port_rms.tileir"
    bad_port.write_text(load("port_rms"))
    doc = run(DATA / "ref_rms.tileir", bad_port, out, "rms")
    assert doc["verdict"] == "FAIL" and doc["owner"] == "kernel"
    fd = doc["details"]["first_divergence"]
    assert fd["category"] == "math" and fd["ref"]["line"] == 40
    assert json.loads(out.read_text())["verdict"] == "FAIL"
    # the same difference in a port the deterministic translator wrote is the translator's:
    # owner tool, "the translator lacks a rule", never the user's kernel (an LLM's port stays kernel)
    doc = run(DATA / "ref_rms.tileir", bad_port, out, "rms", writer="translator")
    assert doc["verdict"] == "FAIL" and doc["owner"] == "tool"
    assert doc["summary"].startswith("the translator lacks a rule")
    assert {f["owner"] for f in doc["findings"] if f["severity"] == "critical"} == {"tool"}
    assert doc["details"]["first_divergence"]["owner"] == "tool"
    assert run(DATA / "ref_rms.tileir", bad_port, out, "rms", writer="anthropic")["owner"] == "kernel"
    # notes are no failure: the translator's port that passes with notes is not said to fail
    doc = run(DATA / "ref_gelu.tileir", DATA / "port_gelu.tileir", out, "gelu", writer="translator")
    assert doc["verdict"] == "PASS_WITH_NOTES" and doc["owner"] == "tool"
    assert "lacks a rule" not in doc["summary"] and "fails" not in doc["summary"], doc["summary"]


def test_run_reports_parse_errors_as_error_verdict(tmp_path):
    broken = tmp_path / "port.tileir"
    broken.write_text(load("port_softmax").replace("%3 = subf %2, %bcast", "%3 = subf %2, %missing"))
    out = tmp_path / "v.json"
    doc = run(DATA / "ref_softmax.tileir", broken, out, "softmax")
    assert doc["verdict"] == "ERROR" and doc["owner"] == "tool"
    (f,) = doc["findings"]
    assert f["port"]["file"] == str(broken) and f["port"]["line"] == 40 and f["ref"] is None
    assert f"{broken}:40" in f["message"]
    verdict_mod.read(out)
    doc = run(tmp_path / "missing.tileir", broken, out, "softmax")
    assert doc["verdict"] == "ERROR" and doc["owner"] == "tool"


FMA_IR = """entry @k(%arg0: tile<f32>, %arg1: tile<f32>, %arg2: tile<f32>, %arg3: tile<f32>, %arg4: tile<ptr<f32>>) {
  %0 = make_token : token
  %m = mulf %arg0, %arg1 : tile<f32>
  %r = fma %arg2, %arg3, %m : tile<f32>
  %p = reshape %arg4 : tile<ptr<f32>> -> tile<ptr<f32>>
  %t = store_ptr_tko weak %p, %r token = %0 : tile<ptr<f32>>, tile<f32> -> token
  return
}
"""


def test_fma_placement_is_compared_not_only_counted():
    """a*b + c*d contracted on the other product: same dataflow, other rounding -> warn."""
    other = FMA_IR.replace("%m = mulf %arg0, %arg1", "%m = mulf %arg2, %arg3").replace(
        "fma %arg2, %arg3, %m", "fma %arg0, %arg1, %m")
    res = diff_ir(FMA_IR, other)
    assert res.verdict == "PASS_WITH_NOTES"
    assert any("fma contraction differs" in f.message and "at other places" in f.message
               for f in res.findings)
    assert diff_ir(FMA_IR, FMA_IR).verdict == "PASS"


def test_one_sided_assume_is_a_warning():
    ref = load("ref_softmax")
    line = next(l for l in ref.splitlines() if "assume bounded<0, ?>, %arg1" in l)
    res = diff_ir(ref, ref.replace(line, line.replace("bounded<0, ?>", "div_by<1024>")))
    assert res.verdict == "PASS_WITH_NOTES"
    assert any(f.category == "hint" and "div_by<1024>" in f.message for f in res.findings)


def _loop_assume(t: str, pred: str) -> str:
    """scalar_load_kernel's reference with ``assume <pred>`` on its loop's index (cutile puts
    one on the index of every loop over constant bounds), the body reading the assumed value."""
    t = t.replace("(tile<1024xf16>) {\n    %reshape_10 = reshape %loopIdx",
                  f"(tile<1024xf16>) {{\n    %lo = assume {pred}, %loopIdx : tile<i32>\n"
                  f"    %reshape_10 = reshape %lo", 1)
    assert "%lo = assume" in t
    return t


def test_assume_a_loop_states_by_its_constant_bounds_is_transparent():
    """for i in 1..1024: `bounded<1, 1023>` (or wider, or a lower bound only) on i promises
    nothing its loop does not; a narrower range is a one-sided promise (a warning)."""
    ref = (Path(__file__).parent / "data" / "ir" / "constructs" / "scalar_load_kernel.ref.tileir").read_text()
    for pred in ("bounded<1, 1023>", "bounded<0, 2000>", "bounded<1, ?>"):
        res = diff_ir(ref, _loop_assume(ref, pred))
        assert res.verdict == "PASS", (pred, res.summary)
    for pred in ("bounded<1, 1000>", "bounded<2, ?>"):
        res = diff_ir(ref, _loop_assume(ref, pred))
        assert res.verdict == "PASS_WITH_NOTES", (pred, res.summary)
        assert any(f.category == "hint" and pred.split(",")[0] in f.message for f in res.findings)


DIV_IR = """\
entry @d(%arg0: tile<ptr<f16>>, %arg1: tile<i32>) {
  %0 = make_token : token
  %tview = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf16, strides=[1]>
  %blockId_x, %blockId_y, %blockId_z = get_tile_block_id : tile<i32>
  %pview = make_partition_view %tview : partition_view<tile=(1024), tensor_view<?xf16, strides=[1]>>
  %q = constant <i32: 1> : tile<i32>
  %idx = addi %blockId_x, %q : tile<i32>
  %tile, %tok = load_view_tko weak %pview[%idx] token = %0 : partition_view<tile=(1024), tensor_view<?xf16, strides=[1]>>, tile<i32> -> tile<1024xf16>, token
  %2 = store_view_tko weak %tile, %pview[%blockId_x] token = %0 : tile<1024xf16>, partition_view<tile=(1024), tensor_view<?xf16, strides=[1]>>, tile<i32> -> token
  return
}
"""
DIV_UNFOLDED = ("%a = constant <i32: 2023> : tile<i32>\n  %b = constant <i32: 1024> : tile<i32>\n"
                "  %q = divi %a, %b signed rounding<negative_inf> : tile<i32>")
REM_UNFOLDED = ("%a = constant <i32: 2049> : tile<i32>\n  %b = constant <i32: 1024> : tile<i32>\n"
                "  %q = remi %a, %b signed : tile<i32>")


def _unfolded(res):
    return [f for f in res.findings if f.owner == "tool" and "of constants" in f.message]


@pytest.mark.parametrize("unfolded,op", [(DIV_UNFOLDED, "divi"), (REM_UNFOLDED, "remi")])
def test_a_division_of_constants_folded_on_one_side_only_is_a_tool_warning(unfolded, op):
    """The normaliser folds `divi`/`remi` of constants, so the graphs match; but neither cutile
    nor tileiras 13.4 folds them (a loop they bound is not unrolled): on one side only it is a
    warning, owner `tool`, naming the op and its line in that side's IR."""
    text = DIV_IR.replace("%q = constant <i32: 1> : tile<i32>", unfolded)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if f"= {op} " in t)
    res = diff_ir(DIV_IR, text)
    assert res.verdict == "PASS_WITH_NOTES", res.findings
    (f,) = _unfolded(res)
    assert f.severity == "warn" and f.category == "math" and f"`{op}`" in f.message
    assert f"port IR line {line}" in f.message and f.port["line"] == line and f.ref is None
    # the reverse: the reference keeps the op, the port has the constant
    res = diff_ir(text, DIV_IR)
    (f,) = _unfolded(res)
    assert f.severity == "warn" and f"ref IR line {line}" in f.message and f.ref["line"] == line
    # on both sides: nothing to report
    assert not _unfolded(diff_ir(text, text)) and diff_ir(text, text).verdict == "PASS"
    # another value is still a mismatch, not a note
    assert diff_ir(DIV_IR, text.replace("<i32: 2023>", "<i32: 2048>").replace("<i32: 2049>", "<i32: 2050>")).verdict == "FAIL"


def test_if_on_a_one_trip_loop_index_is_the_branch_it_takes():
    """tg_mamba2 compute_dd_dcb_dx_kernel bf16-cs64_hpg4_N32 (results of 2026-12-02): the
    reference keeps ``if head_tile_idx == 0`` inside ``for head_tile_idx in range(1)``, cutile
    drops it (it knows the loop's range): the diff takes the branch the constant condition
    selects. With the condition negated the reference takes the other branch: a failure."""
    ref, port = load("ref_mamba2_dd_dcb_dx"), load("port_mamba2_dd_dcb_dx")
    assert_pass(diff_ir(ref, port, target="sm_90"))
    negated = sub1(r"cmpi equal %loopIdx_160, %cst_0_i32_117", "cmpi not_equal %loopIdx_160, %cst_0_i32_117", ref)
    assert diff_ir(negated, port, target="sm_90").verdict == "FAIL"


UNIT_VIEW_REF = """\
entry @k(%arg0: tile<ptr<i32>>, %arg1: tile<i32>, %arg2: tile<ptr<i32>>) {
  %0 = make_token : token
  %cst_1_i32 = constant <i32: 1> : tile<i32>
  %assume_cst_1_i32 = assume bounded<0, ?>, %cst_1_i32 : tile<i32>
  %tview = make_tensor_view %arg0, shape = [1], strides = [%assume_cst_1_i32] : tile<i32> -> tensor_view<1xi32, strides=[?]>
  %tview_1 = make_tensor_view %arg2, shape = [1], strides = [1] : tensor_view<1xi32, strides=[1]>
  %cst_0_i32 = constant <i32: 0> : tile<i32>
  %pview = make_partition_view %tview : partition_view<tile=(1), tensor_view<1xi32, strides=[?]>>
  %tile, %tok = load_view_tko weak %pview[%cst_0_i32] token = %0 : partition_view<tile=(1), tensor_view<1xi32, strides=[?]>>, tile<i32> -> tile<1xi32>, token
  %pview_2 = make_partition_view %tview_1 : partition_view<tile=(1), tensor_view<1xi32, strides=[1]>>
  %tok_2 = store_view_tko weak %tile, %pview_2[%cst_0_i32] token = %tok : tile<1xi32>, partition_view<tile=(1), tensor_view<1xi32, strides=[1]>>, tile<i32> -> token
  return
}
"""


def test_a_one_element_view_with_a_run_time_stride_matches_a_static_one():
    """A [1] array's view: the reference reads its stride at run time (an operand, so Tile IR
    prints the operand type `tile<i32> ->`), the port (Tensor<E, {[1]}>) has the static stride
    1 and no operand: once the stride is unified, the view is the same op (an info note), and a
    real difference in it still fails."""
    port = UNIT_VIEW_REF.replace(
        "strides = [%assume_cst_1_i32] : tile<i32> -> tensor_view<1xi32, strides=[?]>",
        "strides = [1] : tensor_view<1xi32, strides=[1]>").replace("strides=[?]", "strides=[1]")
    assert port != UNIT_VIEW_REF
    res = diff_ir(UNIT_VIEW_REF, port)
    assert res.verdict == "PASS", [f.message for f in res.findings]
    assert [f.severity for f in res.findings if f.category == "memory"] == ["info"]
    assert_fail(diff_ir(UNIT_VIEW_REF, port.replace("load_view_tko weak %pview[%cst_0_i32]",
                                                    "load_view_tko weak %pview[%cst_1_i32]")), "constant")


ZERO_TRIP_REF = """\
entry @z(%arg0: tile<ptr<f32>>, %arg1: tile<i32>) {
  %0 = make_token : token
  %tview = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %blockId_x, %blockId_y, %blockId_z = get_tile_block_id : tile<i32>
  %pview = make_partition_view %tview : partition_view<tile=(1024), tensor_view<?xf32, strides=[1]>>
  %tile, %tok = load_view_tko weak %pview[%blockId_x] token = %0 : partition_view<tile=(1024), tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<1024xf32>, token
  %c0 = constant <i32: 0> : tile<i32>
  %c1 = constant <i32: 1> : tile<i32>
  %for:2 = for %loopIdx in (%c0 to %c0, step %c1) : tile<i32> iter_values(%iterArg0 = %tile, %iterArg1 = %tok) -> (tile<1024xf32>, token) {
    %2 = addf %iterArg0, %iterArg0  : tile<1024xf32>
    %3 = store_view_tko weak %2, %pview[%loopIdx] token = %iterArg1 : tile<1024xf32>, partition_view<tile=(1024), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
    continue %2, %3 : tile<1024xf32>, token
  }
  %4 = store_view_tko weak %for#0, %pview[%blockId_x] token = %for#1 : tile<1024xf32>, partition_view<tile=(1024), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
  return
}
"""


def test_a_zero_trip_for_is_its_inits():
    """``for i in range(0)`` carrying a tile and a token (cuTile Python keeps it: Liger's KL-div
    with N_FULL_CHUNKS 0; cutile 0.5.0 cannot write it): its results are its inits and its
    body's store never runs (Tile IR spec 8.5.4), so the port without the loop matches, with an
    info note. The loop over 0..1 runs once: the port without it fails."""
    port = re.sub(r"  %c0 = .*?\n  }\n", "", ZERO_TRIP_REF, flags=re.S).replace(
        "%for#0, %pview[%blockId_x] token = %for#1", "%tile, %pview[%blockId_x] token = %tok")
    assert "for %loopIdx" not in port and "%for" not in port
    res = diff_ir(ZERO_TRIP_REF, port)
    assert res.verdict == "PASS", [f.message for f in res.findings]
    assert any(f.severity == "info" and "zero-trip" in f.message and "ref 1, port 0" in f.message
               for f in res.findings)
    assert diff_ir(ZERO_TRIP_REF, ZERO_TRIP_REF).verdict == "PASS"
    # stop > start: the loop runs (once), its add and store are missing from the port
    once = ZERO_TRIP_REF.replace("(%c0 to %c0, step %c1)", "(%c0 to %c1, step %c1)")
    assert diff_ir(once, port).verdict == "FAIL"
    # a bound that is no constant: the loop may run
    dyn = ZERO_TRIP_REF.replace("(%c0 to %c0, step %c1)", "(%c0 to %arg1, step %c1)")
    assert diff_ir(dyn, port).verdict == "FAIL"
    # stop < start runs no iteration either
    back = ZERO_TRIP_REF.replace("(%c0 to %c0, step %c1)", "(%c1 to %c0, step %c1)")
    assert diff_ir(back, port).verdict == "PASS"
    # an fma in the body that never runs is no contraction the port lacks (no math warning)
    fused = ZERO_TRIP_REF.replace("%2 = addf %iterArg0, %iterArg0  : tile<1024xf32>",
                                  "%2 = fma %iterArg0, %iterArg0, %iterArg0  : tile<1024xf32>")
    assert fused != ZERO_TRIP_REF
    res = diff_ir(fused, port)
    assert res.verdict == "PASS" and not [f for f in res.findings if f.category == "math"], res.findings


def test_a_bitcast_to_its_own_type_is_its_operand():
    """cutile's bitcast of an int64 tile to u64 (one Tile IR type, i64) before it indexes a
    gather; the reference uses the value itself: the same graph. A bitcast to another type (the
    bits of an i32 read as f32) changes the value: FAIL."""
    ref = DIV_IR
    port = DIV_IR.replace("%idx = addi %blockId_x, %q : tile<i32>",
                          "%idx0 = addi %blockId_x, %q : tile<i32>\n"
                          "  %idx = bitcast %idx0 : tile<i32> -> tile<i32>")
    assert port != ref
    assert diff_ir(ref, port).verdict == "PASS"
    other = DIV_IR.replace("%idx = addi %blockId_x, %q : tile<i32>",
                           "%idx0 = addi %blockId_x, %q : tile<i32>\n"
                           "  %f = bitcast %idx0 : tile<i32> -> tile<f32>\n"
                           "  %idx = bitcast %f : tile<f32> -> tile<i32>")
    assert diff_ir(ref, other).verdict == "FAIL"


NESTED_IF_REF_IR = """\
entry @k(%arg0: tile<ptr<f32>>, %arg1: tile<i32>) {
  %0 = make_token : token
  %tv = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %bx, %by, %bz = get_tile_block_id : tile<i32>
  %c0 = constant <i32: 0> : tile<i32>
  %c = cmpi greater_than %bx, %c0, signed : tile<i32> -> tile<i1>
  %d = cmpi less_than %bx, %arg1, signed : tile<i32> -> tile<i1>
  %r = if %c -> (tile<i32>) {
    %r2 = if %d -> (tile<i32>) {
      %s = addi %bx, %bx : tile<i32>
      yield %s : tile<i32>
    } else {
      yield %bx : tile<i32>
    }
    yield %r2 : tile<i32>
  } else {
    yield %bx : tile<i32>
  }
  %idx = addi %r, %arg1 : tile<i32>
  %cst = constant <f32: 1.000000e+00> : tile<16xf32>
  %pv = make_partition_view %tv : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>
  %st = store_view_tko weak %cst, %pv[%idx] token = %0 : tile<16xf32>, partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
  return
}
"""

# cutile 0.5.0 inside a loop: every `if` carries the enclosing loop's carried values too (here
# %arg1 stands for one), the outer if yielding the inner if's pass-through result
NESTED_IF_PORT_IR = NESTED_IF_REF_IR.replace("""\
  %r = if %c -> (tile<i32>) {
    %r2 = if %d -> (tile<i32>) {
      %s = addi %bx, %bx : tile<i32>
      yield %s : tile<i32>
    } else {
      yield %bx : tile<i32>
    }
    yield %r2 : tile<i32>
  } else {
    yield %bx : tile<i32>
  }
  %idx = addi %r, %arg1 : tile<i32>""", """\
  %r:2 = if %c -> (tile<i32>, tile<i32>) {
    %r2:2 = if %d -> (tile<i32>, tile<i32>) {
      %s = addi %bx, %bx : tile<i32>
      yield %s, %arg1 : tile<i32>, tile<i32>
    } else {
      yield %bx, %arg1 : tile<i32>, tile<i32>
    }
    yield %r2#0, %r2#1 : tile<i32>, tile<i32>
  } else {
    yield %bx, %arg1 : tile<i32>, tile<i32>
  }
  %idx = addi %r#0, %r#1 : tile<i32>""")


def test_a_nested_ifs_pass_through_result_is_forwarded_through_the_outer_if():
    """An ``if`` result every branch yields as the same value is that value, innermost ``if``
    first: the outer ``if`` that yields a nested one's pass-through result passes it through too
    (_Normaliser.if_forwarding; cutile 0.5.0 carries every loop-carried variable through an
    ``if`` in a loop, Unsloth's grouped GEMM walks its experts so). A branch that yields
    another value is no pass-through and is caught."""
    assert NESTED_IF_PORT_IR != NESTED_IF_REF_IR
    assert_pass(diff_ir(NESTED_IF_REF_IR, NESTED_IF_PORT_IR))
    mutant = NESTED_IF_PORT_IR.replace("    } else {\n      yield %bx, %arg1", "    } else {\n      yield %bx, %bx", 1)
    assert mutant != NESTED_IF_PORT_IR
    assert diff_ir(NESTED_IF_REF_IR, mutant).verdict == "FAIL"


# ---------------------------------------------------------------------------------
# loop placement: what the signatures match through but tileiras compiles differently
# ---------------------------------------------------------------------------------

PLACED_IR = """\
entry @k(%arg0: tile<ptr<f32>>, %arg1: tile<i32>, %arg2: tile<ptr<f32>>, %arg3: tile<i32>) {
  %0 = make_token : token
  %c0 = constant <i32: 0> : tile<i32>
  %c1 = constant <i32: 1> : tile<i32>
  %c4 = constant <i32: 4> : tile<i32>
  %acc0 = constant <f32: 0.000000e+00> : tile<16xf32>
  %tv = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %pv = make_partition_view %tv : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>
  %j = muli %arg3, %c4 : tile<i32>
HOISTED
  %for = for %i in (%c0 to %c4, step %c1) : tile<i32> iter_values(%acc = %acc0) -> (tile<16xf32>) {
IN_LOOP
    %s = addf %acc, %x : tile<16xf32>
    continue %s : tile<16xf32>
  }
  %tv2 = make_tensor_view %arg2, shape = [%arg3], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %pv2 = make_partition_view %tv2 : partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>
  %t2 = store_view_tko weak %for, %pv2[%c0] token = %0 : tile<16xf32>, partition_view<tile=(16), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
  return
}
"""
PLACED_LOAD = ("  %x, %t = load_view_tko weak %pv[%k] token = %0 : partition_view<tile=(16), tensor_view<?xf32, "
               "strides=[1]>>, tile<i32> -> tile<16xf32>, token")
PLACED_OP = "  %k = addi %j, %c1 : tile<i32>"


def _placed(load_in_loop: bool, op_in_loop: bool) -> str:
    inner = [("  " + PLACED_OP) if op_in_loop else None, ("  " + PLACED_LOAD) if load_in_loop else None]
    outer = [None if op_in_loop else PLACED_OP, None if load_in_loop else PLACED_LOAD]
    text = PLACED_IR.replace("HOISTED\n", "".join(x + "\n" for x in outer if x))
    return text.replace("IN_LOOP\n", "".join(x + "\n" for x in inner if x))


def test_a_load_the_port_runs_in_a_loop_is_a_named_warning():
    ref, port = _placed(False, False), _placed(True, False)
    assert diff_ir(ref, ref).verdict == "PASS"
    res = diff_ir(ref, port)
    assert res.verdict == "PASS_WITH_NOTES" and res.owner == "tool"
    w = [f for f in res.findings if f.severity == "warn"]
    assert len(w) == 1 and w[0].category == "memory"
    assert w[0].message.startswith("1 load(s) run inside more loops on the port side than on the ref side")
    assert "load_view_tko" in w[0].ref["text"] and "load_view_tko" in w[0].port["text"]
    # the other way round it is the reference's
    back = [f for f in diff_ir(port, ref).findings if f.severity == "warn"]
    assert len(back) == 1 and back[0].message.startswith("1 load(s) run inside more loops on the ref side")


def test_a_pure_op_the_port_runs_in_a_loop_is_a_note():
    res = diff_ir(_placed(True, False), _placed(True, True))
    assert res.verdict == "PASS"
    notes = [f for f in res.findings if "run inside more loops" in f.message]
    assert len(notes) == 1 and notes[0].severity == "info" and notes[0].category == "control_flow"
    assert notes[0].message.startswith("1 op(s) run inside more loops on the port side") and "'addi'" in notes[0].message


def test_a_loop_that_runs_once_is_no_loop_for_placement():
    # cutile wraps a kernel that returns early in a `loop` that ends in `break`: it runs once
    ref = _placed(False, False)
    body = ref.split("{\n", 1)[1].rsplit("  return\n}", 1)[0]
    wrapped = ref.split("{\n", 1)[0] + "{\n  loop {\n" + "".join(
        "  " + ln + "\n" for ln in body.splitlines()) + "    break\n  }\n  return\n}\n"
    res = diff_ir(ref, wrapped)
    assert not [f for f in res.findings if "run inside more loops" in f.message], [f.message for f in res.findings]
    # but a `loop` that continues is a loop
    looping = wrapped.replace("    break\n  }\n  return", "    continue\n  }\n  return")
    assert "continue\n  }\n  return" in looping
    assert [f for f in diff_ir(ref, looping).findings if "1 load(s) run inside" in f.message]
