"""Mutation suite: can the IR diff be trusted?

Starting from the real reference Tile IRs of the eight operators (``tests/data/ir/ops``,
printed by ``tileirdisasm -g`` from this workflow's own ``results/``; the softmax, rms_norm and
layer_norm ports regenerated with raw loads, BM=4 as their references), every meaning-changing
mutant must FAIL with the right category, and every meaning-keeping rewrite must PASS.
The real (reference, port) pairs must PASS too. ``test_catch_rate`` prints the figures.
"""
import re
from pathlib import Path

import pytest
import yaml

from tileport.ir_diff import diff_ir

DATA = Path(__file__).parent / "data" / "ir" / "ops"
# one small kernel per construct (tests/data/operators/constructs, tests/test_constructs.py)
CONSTRUCTS = Path(__file__).parent / "data" / "ir" / "constructs"
OPS = ["relu", "gelu", "silu_and_mul", "softmax", "rms_norm", "layer_norm", "matmul", "bmm"]
TARGET = "sm_90"         # the workflow's gpu_target: hints compare as they apply to it


def ref(op: str) -> str:
    return ((CONSTRUCTS if op.endswith("_kernel") else DATA) / f"{op}.ref.tileir").read_text()


def sub(text: str, old: str, new: str, count: int = 1) -> str:
    """Literal replacement that must hit exactly ``count`` places (0 = every place, >= 1)."""
    n = text.count(old)
    assert (n >= 1) if count == 0 else (n == count), f"{old!r} occurs {n} times"
    return text.replace(old, new)


def line_of(text: str, needle: str) -> str:
    (hit,) = [ln for ln in text.splitlines() if needle in ln]
    return hit


def drop_line(text: str, needle: str) -> str:
    return sub(text, line_of(text, needle) + "\n", "")


def dropped_cast(t: str) -> str:
    # delete `%2 = ftof %tile` and let its users read the f16 tile directly
    t = drop_line(t, "%2 = ftof %tile  :")
    return sub(t, "reduce %2 dim=1", "reduce %tile dim=1").replace("subf %2, %bcast", "subf %tile, %bcast")


def extra_cast(t: str) -> str:
    # round-trip the f32 tile through f16 before the max-reduction (loses precision)
    line = line_of(t, "%2 = ftof %tile  :")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    t = sub(t, line, line + f"\n    %down = ftof %2 : tile<4x1024xf32> -> tile<4x1024xf16>{loc}"
                             f"\n    %up = ftof %down : tile<4x1024xf16> -> tile<4x1024xf32>{loc}")
    return sub(t, "reduce %2 dim=1", "reduce %up dim=1")


def pointer_load(t: str) -> str:
    # matmul's A tile read through a pointer tile (gather) instead of the partition view
    load = line_of(t, "load_view_tko weak %pview_16[")
    loc = re.search(r" loc\(#loc\d+\)$", load).group(0)
    new = ("    %ptrs = broadcast %arg0 : tile<ptr<f16>> -> tile<128x64xptr<f16>>" + loc + "\n"
           "    %tile, %result_token = load_ptr_tko weak %ptrs token = %0 : tile<128x64xptr<f16>> "
           "-> tile<128x64xf16>, token" + loc)
    return sub(t, load, new)


def _alias_padding_nan(t: str) -> str:
    for needle in ("%pview_4 = make_partition_view", "load_view_tko weak %pview_4["):
        line = line_of(t, needle)
        t = sub(t, line, line.replace("padding_value = zero", "padding_value = nan"))
    return t


def _early_return_falls_through(t: str) -> str:
    lines = t.split("\n")
    i = next(k for k, ln in enumerate(lines) if "%7 = store_view_tko" in ln)
    assert lines[i + 1].strip().startswith("return")
    lines[i + 1] = lines[i + 1].replace("return", "yield %7 : token")
    return "\n".join(lines)


def _bare_return_dropped(t: str) -> str:
    lines = t.split("\n")
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith("if %5 {"))
    assert lines[i + 1].strip().startswith("return")
    del lines[i + 1]
    return "\n".join(lines)


def _body_in_single_pass_loop(t: str) -> str:
    lines = t.split("\n")
    start = next(k for k, ln in enumerate(lines) if "get_tile_block_id" in ln)
    end = max(k for k, ln in enumerate(lines) if ln.startswith("  return"))
    body = ["  " + ln for ln in lines[start:end + 1]]
    return "\n".join(lines[:start] + ["  loop {"] + body + ["  }", lines[end]] + lines[end + 1:])


def _store_dim_map_dropped(t: str) -> str:
    for needle in ("%pview_25 = make_partition_view", "store_view_tko weak %tile, %pview_25["):
        line = line_of(t, needle)
        t = sub(t, line, line.replace(", dim_map=[1, 0]>", ">"))
    return t


def _fused_where_the_reference_is_not(t: str) -> str:
    # fma_choice_kernel: `wd - t * c` fused (-t * c + wd) where cuTile Python leaves it apart
    sub_line, mul_line = line_of(t, "%4 = subf %1, %3"), line_of(t, "%3 = mulf %tile, %bcast_4")
    loc = re.search(r" loc\(#loc\d+\)$", sub_line).group(0)
    return sub(sub(t, mul_line + "\n", ""), sub_line,
               f"  %n = negf %tile : tile<1024xf16>{loc}\n  %4 = fma %n, %bcast_4, %1 : tile<1024xf16>{loc}")


# (op, mutant, edit, expected category) -- each changes what the kernel computes
def _assume_on_index(t: str, bounds: str, first: bool = True) -> str:
    # single_trip_kernel: an assume on the one-trip (first) or two-trip loop's index, read by
    # the index's multiply (cutile writes such an assume where it knows the loop's range)
    loop = ("%for = for %loopIdx in (%cst_0_i32 to %cst_1_i32_2," if first
            else "%for_17 = for %loopIdx in (%cst_0_i32_8 to %cst_2_i32,")
    mul = f"%6 = muli %loopIdx, %cst_1024_i32 : tile<i32> loc(#loc{30 if first else 36})"
    line = line_of(t, loop)
    t = sub(t, line, line + f"\n    %aidx = assume bounded<{bounds}>, %loopIdx : tile<i32>")
    return sub(t, mul, mul.replace("%loopIdx", "%aidx"))


MUTANTS = [
    ("softmax", "max combiner -> min", lambda t: sub(t, "= maxf %reduce_lhs", "= minf %reduce_lhs"), "reduction"),
    ("softmax", "max identity -inf -> +inf", lambda t: sub(t, "0xFF800000", "0x7F800000"), "reduction"),
    ("softmax", "sum reduces over dim 0", lambda t: sub(t, "reduce %4 dim=1", "reduce %4 dim=0"), "reduction"),
    ("softmax", "padding -inf -> zero", lambda t: sub(t, "padding_value = neg_inf", "padding_value = zero", 0), "memory"),
    ("softmax", "x - max swapped", lambda t: sub(t, "subf %2, %bcast ", "subf %bcast, %2 "), "math"),
    ("softmax", "e / sum swapped", lambda t: sub(t, "divf %4, %bcast_12", "divf %bcast_12, %4"), "math"),
    ("softmax", "exp -> exp2", lambda t: sub(t, "= exp %3", "= exp2 %3"), "math"),
    ("softmax", "store to the input view", lambda t: sub(t, "store_view_tko weak %6, %pview_9[", "store_view_tko weak %6, %pview_7["), "memory"),
    ("softmax", "dropped f16->f32 cast", dropped_cast, "cast"),
    ("softmax", "extra f32->f16->f32 round trip", extra_cast, "cast"),
    ("softmax", "f16 -> bf16 tensors", lambda t: sub(sub(t, "xf16", "xbf16", 0), "ptr<f16>", "ptr<bf16>", 0), "signature"),
    ("softmax", "tile shape 4x1024 -> 2x1024 on load", lambda t: sub(t, "tile=(4x1024), padding_value = neg_inf", "tile=(2x1024), padding_value = neg_inf", 0), "memory"),
    ("softmax", "persistent loop step 1", lambda t: sub(t, "step %gridSize_x", "step %cst_1_i32"), "control_flow"),
    ("softmax", "store column index off by one", lambda t: sub(t, "%cst_0_i32_8 = constant <i32: 0>", "%cst_0_i32_8 = constant <i32: 1>"), "constant"),
    ("silu_and_mul", "sigmoid without negation", lambda t: sub(t, "= exp %3", "= exp %1"), "math"),
    ("silu_and_mul", "1 + exp -> 2 + exp", lambda t: sub(t, "<f32: 1.000000e+00>", "<f32: 2.000000e+00>"), "constant"),
    ("silu_and_mul", "a / (1+e) swapped", lambda t: sub(t, "divf %1, %5", "divf %5, %1"), "math"),
    ("silu_and_mul", "up read from gate", lambda t: sub(t, "load_view_tko weak %pview_15[", "load_view_tko weak %pview["), "memory"),
    ("silu_and_mul", "gate tile index transposed", lambda t: sub(t, "weak %pview[%blockId_x, %blockId_y_13]", "weak %pview[%blockId_y_13, %blockId_x]"), "memory"),
    ("relu", "max -> min", lambda t: sub(t, "= maxf %tile", "= minf %tile"), "math"),
    ("relu", "threshold 0 -> 1", lambda t: sub(t, "<f16: 0.000000e+00>", "<f16: 1.000000e+00>"), "constant"),
    ("relu", "padding zero -> nan", lambda t: sub(t, "padding_value = zero", "padding_value = nan", 0), "memory"),
    ("relu", "threshold +0.0 -> -0.0 (max(-0, +0) is +0)", lambda t: sub(t, "<f16: 0.000000e+00>", "<f16: -0.000000e+00>"), "constant"),
    ("relu", "threshold made in f32 as the f16 subnormal 2**-24", lambda t: sub(
        t, "%cst_0_f16 = constant <f16: 0.000000e+00> : tile<1024xf16>",
        "%c32 = constant <f32: 5.96046448E-8> : tile<1024xf32>\n  %cst_0_f16 = ftof %c32 : tile<1024xf32> -> tile<1024xf16>"), "constant"),
    ("gelu", "tanh -> exp", lambda t: sub(t, "= tanh %5", "= exp %5"), "math"),
    ("gelu", "0.044715 -> 0.44715", lambda t: sub(t, "4.471500e-02", "4.471500e-01"), "constant"),
    ("gelu", "fma addend is the cube", lambda t: sub(t, "fma %3, %1, %1 ", "fma %3, %1, %3 "), "math"),
    ("gelu", "bf16 output cast dropped to f16", lambda t: sub(t, "ftof %9  : tile<1024xf32> -> tile<1024xbf16>", "ftof %9  : tile<1024xf32> -> tile<1024xf16>"), "cast"),
    ("rms_norm", "rsqrt -> sqrt", lambda t: sub(t, "= rsqrt %5", "= sqrt %5"), "math"),
    ("rms_norm", "inv_n and eps swapped in the fma", lambda t: sub(t, "fma %reshape_21, %bcast, %bcast_15", "fma %reshape_21, %bcast_15, %bcast"), "math"),
    ("rms_norm", "weight not applied", lambda t: sub(t, "mulf %7, %bcast_17", "mulf %7, %7"), "math"),
    ("rms_norm", "sum identity 0 -> 1", lambda t: sub(t, "identities=[0.000000e+00 : f32]", "identities=[1.000000e+00 : f32]"), "reduction"),
    ("rms_norm", "flush-to-zero added to rsqrt", lambda t: sub(t, "= rsqrt %5 :", "= rsqrt %5 flush_to_zero :"), "math"),
    ("layer_norm", "variance without -mean^2", lambda t: sub(t, "fma %reshape_34, %bcast_23, %5", "fma %reshape_34, %bcast_23, %4"), "math"),
    ("layer_norm", "second moment combiner add -> mul", lambda t: re.sub(r"(reduce %3 dim=1[^\n]*\n[^\n]*\n\s+%13 = )addf", r"\1mulf", t), "reduction"),
    ("layer_norm", "x - mean swapped", lambda t: sub(t, "subf %tile_30, %bcast_35", "subf %bcast_35, %tile_30"), "math"),
    ("matmul", "mma operands swapped", lambda t: sub(t, "mmaf %tile, %tile_19,", "mmaf %tile_19, %tile,"), "math"),
    ("matmul", "accumulator starts at 1", lambda t: sub(t, "<f32: 0.000000e+00> : tile<128x128xf32>", "<f32: 1.000000e+00> : tile<128x128xf32>"), "constant"),
    ("matmul", "no loop-carried accumulator", lambda t: sub(t, "mmaf %tile, %tile_19, %iterArg0", "mmaf %tile, %tile_19, %cst_0_f32"), "math"),
    ("matmul", "K loop over M tiles", lambda t: sub(t, "to %1#1,", "to %1#0,"), "control_flow"),
    ("matmul", "pointer load where a view load was", pointer_load, "memory"),
    ("bmm", "batch and row index swapped", lambda t: sub(t, "%pview_25[%blockId_z_23, %blockId_x, %loopIdx]", "%pview_25[%blockId_x, %blockId_z_23, %loopIdx]"), "memory"),
    ("bmm", "B tile reshaped to the wrong shape", lambda t: sub(t, "tile<1x32x64xbf16> -> tile<32x64xbf16>", "tile<1x32x64xbf16> -> tile<64x32xbf16>"), "math"),
    ("bmm", "B partition 32x64 -> 64x32", lambda t: sub(t, "tile=(1x32x64)", "tile=(1x64x32)", 0), "memory"),
    # constructs
    ("alias_kernel", "local zero_pad padding -> neg_inf", lambda t: sub(t, "%pview = make_partition_view %tview : partition_view<tile=(1024), padding_value = zero,", "%pview = make_partition_view %tview : partition_view<tile=(1024), padding_value = neg_inf,"), "memory"),
    ("alias_kernel", "module-level NEG_INF padding -> zero", lambda t: sub(t, "padding_value = neg_inf", "padding_value = zero", 0), "memory"),
    ("alias_kernel", "the aliased array's load reads the output", lambda t: sub(t, "%pview = make_partition_view %tview :", "%pview = make_partition_view %tview_2 :"), "memory"),
    ("store_helper_kernel", "the helper's scale 3 -> 2", lambda t: sub(t, "<f16: 3.000000e+00>", "<f16: 2.000000e+00>"), "constant"),
    ("store_helper_kernel", "the nested helper stores the unscaled tile", lambda t: sub(t, "store_view_tko weak %1,", "store_view_tko weak %tile,"), "math"),
    ("store_helper_kernel", "the helper stores to the input array", lambda t: sub(t, "%pview_3 = make_partition_view %tview_2 :", "%pview_3 = make_partition_view %tview :"), "memory"),
    ("static_arith_kernel", "TILE & 512 taken (the other branch)", lambda t: sub(sub(t, "%1 = addf %tile, %bcast ", "%1 = mulf %tile, %bcast "), "<f16: 1.000000e+00>", "<f16: 2.000000e+00>"), "math"),
    ("static_arith_kernel", "the BM arithmetic test's branch dropped", lambda t: sub(t, "%3 = mulf %2, %bcast_6", "%3 = mulf %1, %bcast_6"), "math"),
    ("static_arith_kernel", "MODE & 2 not taken", lambda t: sub(t, "store_view_tko weak %3,", "store_view_tko weak %2,"), "math"),
    ("shared_input_kernel", "v read through k's view", lambda t: sub(t, "%pview_6 = make_partition_view %tview_3 :", "%pview_6 = make_partition_view %tview :"), "memory"),
    ("shared_input_kernel", "a * b - a -> a * a - a", lambda t: sub(t, "%2 = fma %tile, %tile_7, %1", "%2 = fma %tile, %tile, %1"), "math"),
    ("numpy_dtype_kernel", "np.int32 iota converted unsigned", lambda t: sub(t, "%3 = itof %2 signed", "%3 = itof %2 unsigned"), "cast"),
    ("numpy_dtype_kernel", "the np.float32 cast of the load dropped", lambda t: sub(t, "%4 = mulf %1, %3", "%4 = mulf %tile, %3"), "cast"),
    ("launch_hints_kernel", "t + t -> t * t", lambda t: sub(t, "%1 = addf %tile, %tile", "%1 = mulf %tile, %tile"), "math"),
    ("helper_fma_kernel", "the addend is the constant, not the load", lambda t: sub(t, "%1 = fma %bcast, %tile, %tile", "%1 = fma %bcast, %tile, %bcast"), "math"),
    ("helper_fma_kernel", "a * x + b -> a * a + b", lambda t: sub(t, "%1 = fma %bcast, %tile, %tile", "%1 = fma %bcast, %bcast, %tile"), "math"),
    ("fma_choice_kernel", "wd - t * c -> t * c - wd", lambda t: sub(t, "%4 = subf %1, %3", "%4 = subf %3, %1"), "math"),
    ("fma_choice_kernel", "wd - t * c fused (one rounding where the reference has two)", _fused_where_the_reference_is_not, "math"),
    ("fma_choice_kernel", "u + r * c with u = t", lambda t: sub(t, "%6 = fma %4, %bcast_7, %5", "%6 = fma %4, %bcast_7, %tile"), "math"),
    ("alias_kernel", "helper's load at the block's own index", lambda t: sub(t, "load_view_tko weak %pview_4[%1]", "load_view_tko weak %pview_4[%blockId_x]"), "math"),
    ("gather2d_pad_kernel", "2-D gather padding 1.0 -> 0.0", lambda t: sub(t, "%cst_1_f16 = constant <f16: 1.000000e+00>", "%cst_1_f16 = constant <f16: 0.000000e+00>"), "constant"),
    ("gather2d_pad_kernel", "2-D gather mask of the other gather", lambda t: sub(t, "load_ptr_tko weak %28, %25, %bcast_36", "load_ptr_tko weak %28, %13, %bcast_36"), "memory"),
    ("select_kernel", "select operands swapped", lambda t: sub(t, "select %2, %tile, %cst_0_f16 ", "select %2, %cst_0_f16, %tile "), "math"),
    ("select_kernel", "select condition of another comparison", lambda t: sub(t, "select %4, %3, %bcast", "select %2, %3, %bcast"), "math"),
    ("select_kernel", "idx < 100 -> idx <= 100", lambda t: sub(t, "cmpi less_than %1", "cmpi less_than_or_equal %1"), "math"),
    ("select_kernel", "signed -> unsigned comparison", lambda t: sub(t, "%1, %cst_7_i32, signed", "%1, %cst_7_i32, unsigned"), "math"),
    ("select_kernel", "t != t unordered -> ordered (NaN)", lambda t: sub(t, "not_equal unordered", "not_equal ordered"), "math"),
    ("select_kernel", "iota bound 100 -> 101", lambda t: sub(t, "<i32: 100>", "<i32: 101>"), "constant"),
    ("gather_kernel", "bounds check signed (negative indices load)", lambda t: sub(t, "%5 = cmpi less_than %bcast, %bcast_6, unsigned", "%5 = cmpi less_than %bcast, %bcast_6, signed"), "math"),
    ("gather_kernel", "row bound read from the column extent", lambda t: sub(t, "%4 = exti %assume signed", "%4 = exti %assume_2 signed"), "math"),
    ("gather_kernel", "row offset times the column extent, not the row stride", lambda t: sub(t, "%6 = exti %assume_3 signed", "%6 = exti %assume_2 signed"), "math"),
    ("gather_kernel", "user mask or-ed instead of and-ed", lambda t: sub(t, "%15 = andi %11, %2", "%15 = ori %11, %2"), "math"),
    ("gather_kernel", "gather without its user mask", lambda t: sub(t, "load_ptr_tko weak %14, %15,", "load_ptr_tko weak %14, %11,"), "memory"),
    ("gather_kernel", "padding -inf -> +inf", lambda t: sub(t, "<f16: 0xFC00>", "<f16: 0x7C00>"), "constant"),
    ("gather_kernel", "scatter of the unmasked gather only", lambda t: sub(t, "store_ptr_tko weak %31, %23, %24", "store_ptr_tko weak %31, %result_23, %24"), "math"),
    ("gather_kernel", "gather from the output array", lambda t: sub(t, "%reshape_11 = reshape %arg0 :", "%reshape_11 = reshape %arg5 :"), "memory"),
    ("gather1d_kernel", "scatter without its bounds mask", lambda t: sub(t, "store_ptr_tko weak %14, %9, %12 token=%0 : tile<1024xptr<f16>>, tile<1024xf16>, tile<1024xi1>",
                                                                        "store_ptr_tko weak %14, %9 token=%0 : tile<1024xptr<f16>>, tile<1024xf16>"), "memory"),
    ("gather1d_kernel", "index widened unsigned (zero-extended)", lambda t: sub(t, "%4 = exti %3 signed", "%4 = exti %3 unsigned"), "cast"),
    ("intdiv_kernel", "n // TILE rounds toward zero", lambda t: sub(t, "%1 = divi %assume, %cst_1024_i32 signed rounding<negative_inf>", "%1 = divi %assume, %cst_1024_i32 signed rounding<zero>"), "math"),
    ("intdiv_kernel", "cdiv rounds down", lambda t: sub(t, "%10 = divi %assume, %cst_1024_i32 signed rounding<positive_inf>", "%10 = divi %assume, %cst_1024_i32 signed rounding<negative_inf>"), "math"),
    ("intdiv_kernel", "min -> max", lambda t: sub(t, "%2 = mini %blockId_x, %1 signed", "%2 = maxi %blockId_x, %1 signed"), "math"),
    ("intdiv_kernel", "% keeps the C remainder's sign (no correction)", lambda t: sub(t, "%9 = select %7, %8, %3", "%9 = select %7, %3, %3"), "math"),
    ("intdiv_kernel", "(TILE + 7) // 8 -> (TILE + 8) // 8", lambda t: sub(t, "<i32: 128>", "<i32: 129>"), "constant"),
    ("shapes_kernel", "extract the first half, not the second", lambda t: sub(t, "extract %3[%cst_1_i32_9,", "extract %3[%cst_0_i32_10,"), "constant"),
    ("shapes_kernel", "new axis inserted first, not last", lambda t: sub(t, "%reshape_8 = reshape %reduce : tile<16xf16> -> tile<16x1xf16>", "%reshape_8 = reshape %reduce : tile<16xf16> -> tile<1x16xf16>"), "math"),
    ("shapes_kernel", "permutation [1, 0] -> [0, 1]", lambda t: sub(t, "%3 = permute %2 [1, 0]", "%3 = permute %2 [0, 1]"), "math"),
    ("shapes_kernel", "broadcast of r, not of r + r", lambda t: sub(t, "%bcast = broadcast %1 :", "%bcast = broadcast %reshape :"), "math"),
    ("shapes_kernel", "cat on axis 1", lambda t: sub(t, "cat %4, %4 dim = 0", "cat %4, %4 dim = 1"), "math"),
    ("bitwise_kernel", "& -> |", lambda t: sub(t, "%2 = andi %1, %cst_7_i32", "%2 = ori %1, %cst_7_i32"), "math"),
    ("bitwise_kernel", "arithmetic >> -> logical >>", lambda t: sub(t, "%3 = shri %1, %cst_2_i32 signed", "%3 = shri %1, %cst_2_i32 unsigned"), "math"),
    ("bitwise_kernel", "<< by the other operand", lambda t: sub(t, "%6 = shli %5, %cst_1_i32_1", "%6 = shli %cst_1_i32_1, %5"), "math"),
    ("bitwise_kernel", "~ dropped", lambda t: sub(t, "itof %7 signed", "itof %6 signed"), "cast"),
    ("bitwise_kernel", "mask | -> ^", lambda t: sub(t, "%10 = ori %8, %9", "%10 = xori %8, %9"), "math"),
    ("control_kernel", "if condition == -> !=", lambda t: sub(t, "%10 = cmpi equal %9", "%10 = cmpi not_equal %9"), "math"),
    ("control_kernel", "while k < bid -> k <= bid", lambda t: sub(t, "cmpi less_than %arg6, %blockId_x", "cmpi less_than_or_equal %arg6, %blockId_x"), "math"),
    ("control_kernel", "loop step 1 -> 2", lambda t: sub(t, "%16 = addi %arg6, %cst_1_i32_5", "%16 = addi %arg6, %cst_2_i32"), "constant"),
    ("control_kernel", "elif threshold 5 -> 6", lambda t: sub(t, "<i32: 5>", "<i32: 6>"), "constant"),
    ("control_kernel", "a if c else 0 -> else 1", lambda t: sub(t, "%cst_0_i32_7 = constant <i32: 0>", "%cst_0_i32_7 = constant <i32: 1>"), "control_flow"),
    ("control_kernel", "loop carries the tile undoubled", lambda t: sub(t, "continue %16, %15", "continue %16, %arg7"), "control_flow"),
    ("helper_kernel", "helper's negation dropped", lambda t: sub(t, "%4 = exp %3 ", "%4 = exp %2 "), "math"),
    ("helper_kernel", "helper's 1 / (1 + e) swapped", lambda t: sub(t, "divf %bcast_6, %5", "divf %5, %bcast_6"), "math"),
    ("helper_kernel", "the helper's two results swapped", lambda t: sub(t, "%7 = addf %6, %1", "%7 = addf %6, %2"), "math"),
    ("intdiv_kernel", "tile % 3 -> tile % 2", lambda t: sub(t, "%15 = remi %14, %cst_3_i32 signed", "%15 = remi %14, %cst_2_i32 signed"), "constant"),
    ("tokens_kernel", "in-place store does not wait for the load", lambda t: sub(t, "%pview_5[%blockId_x] token = %2 :", "%pview_5[%blockId_x] token = %0 :"), "memory"),
    ("tokens_kernel", "loop gather does not wait for the last iteration's store", lambda t: sub(t, "token=%iterArg1 :", "token=%4 :"), "memory"),
    ("tokens_kernel", "while store does not wait for the last iteration's", lambda t: sub(t, "%pview_21[%arg6] token = %arg7 :", "%pview_21[%arg6] token = %16#0 :"), "memory"),
    ("rounding_kernel", "exp APPROX -> the default (FULL)", lambda t: sub(t, "%2 = exp %1 rounding<approx>", "%2 = exp %1"), "math"),
    ("rounding_kernel", "tanh APPROX dropped", lambda t: sub(t, "%4 = tanh %1 rounding<approx>", "%4 = tanh %1"), "math"),
    ("rounding_kernel", "truediv without flush_to_zero", lambda t: sub(t, "divf %2, %3 rounding<approx> flush_to_zero", "divf %2, %3 rounding<approx>"), "math"),
    ("aliases_kernel", "the local alias's padding zero -> nan", _alias_padding_nan, "memory"),
    ("aliases_kernel", "full() filled with the block id, not bid * TILE", lambda t: sub(t, "%reshape = reshape %2 : tile<i32>", "%reshape = reshape %blockId_x : tile<i32>"), "math"),
    ("aliases_kernel", "ones(dtype=t.dtype) -> twos", lambda t: sub(t, "<f16: 1.000000e+00> : tile<1024xf16>", "<f16: 2.000000e+00> : tile<1024xf16>"), "constant"),
    ("scan_kernel", "scan axis 0 -> 1", lambda t: sub(t, "%2 = scan %1 dim=0 reverse=false", "%2 = scan %1 dim=1 reverse=false"), "reduction"),
    ("scan_kernel", "reverse scan run forward", lambda t: sub(t, "%3 = scan %1 dim=0 reverse=true", "%3 = scan %1 dim=0 reverse=false"), "reduction"),
    ("scan_kernel", "int scan combiner add -> mul", lambda t: sub(t, "addi %arg10, %arg11 : tile<i32>", "muli %arg10, %arg11 : tile<i32>"), "reduction"),
    ("scan_kernel", "scan identity 0 -> 1", lambda t: sub(t, "identities=[0 : i32]", "identities=[1 : i32]"), "reduction"),
    ("atomic_kernel", "atomic add -> exchange", lambda t: sub(t, "atomic_rmw_tko acq_rel device %9, addf,", "atomic_rmw_tko acq_rel device %9, xchg,"), "memory"),
    ("atomic_kernel", "relaxed atomic made acq_rel", lambda t: sub(t, "atomic_rmw_tko relaxed device", "atomic_rmw_tko acq_rel device"), "memory"),
    ("atomic_kernel", "tile-block scope -> device", lambda t: sub(t, "atomic_rmw_tko acq_rel tl_blk", "atomic_rmw_tko acq_rel device"), "memory"),
    ("atomic_kernel", "load after the atomics does not wait for them", lambda t: sub(t, "%pview_19[%20] token = %21 :", "%pview_19[%20] token = %0 :"), "memory"),
    ("return_kernel", "early return dropped: the zero store falls through", _early_return_falls_through, "control_flow"),
    # the reference's guard reads `if c { } else { <the store> }` after guard_returns; the
    # mutant's `if c { } else { }` is dead code, so the guard's own condition (divi) is what
    # has no match first
    ("return_kernel", "bare early return dropped", _bare_return_dropped, "math"),
    ("return_kernel", "return condition > -> >=", lambda t: sub(t, "cmpi greater_than %blockId_x, %4", "cmpi greater_than_or_equal %blockId_x, %4"), "math"),
    ("item_kernel", "loop bound from the index's item, not the sum's (the sum's cast left unread)", lambda t: sub(t, "to %reshape_11,", "to %reshape_3,"), "cast"),
    ("item_kernel", "index item without the block id", lambda t: sub(t, "%reshape_3 = reshape %2 :", "%reshape_3 = reshape %1 :"), "math"),
    ("views_kernel", "the F-order store's dim_map dropped (an untransposed store)", _store_dim_map_dropped, "memory"),
    ("views_kernel", "check_bounds=False load checked again (inbounds dropped)", lambda t: sub(t, "{latency = 2}> inbounds = [true, true]", "{latency = 2}>"), "memory"),
    ("views_kernel", "acquiring load made weak", lambda t: sub(t, "load_view_tko acquire device %pview_18", "load_view_tko weak %pview_18"), "memory"),
    ("views_kernel", "releasing store does not wait for the other loads", lambda t: sub(t, "%9 = join_tokens %8, %3, %result_token_20", "%9 = join_tokens %8, %result_token_20"), "memory"),
    ("tokens_kernel", "if yields the token from before its store", lambda t: sub(t, "yield %19, %20 :", "yield %19, %for_17#0 :"), "control_flow"),
    ("dtypes_kernel", "int32 indices of the index array zero-extended", lambda t: sub(t, "%1 = exti %tile_12 signed", "%1 = exti %tile_12 unsigned"), "cast"),
    ("dtypes_kernel", "one-element scatter into the other f32 array", lambda t: sub(t, "%16 = offset %arg12,", "%16 = offset %arg9,"), "memory"),
    ("dtypes_kernel", "sum of the loaded tile, not of the gathered one", lambda t: sub(t, "%reduce = reduce %result dim=0", "%reduce = reduce %tile dim=0"), "reduction"),
    ("dtypes_kernel", "f16 tile added to the f32 one without its cast", lambda t: sub(t, "%8 = fma %6, %bcast_20, %7 ", "%8 = fma %6, %bcast_20, %6 "), "math"),
    ("promote_kernel", "module constant rounded to another f16", lambda t: sub(t, "<f16: 4.470830e-02>", "<f16: 4.467770e-02>"), "constant"),
    ("promote_kernel", "int extent converted unsigned", lambda t: sub(t, "%6 = itof %assume signed", "%6 = itof %assume unsigned"), "cast"),
    ("promote_kernel", "ct.minimum of scalars -> maximum", lambda t: sub(t, "%2 = mini %1, %blockId_x signed", "%2 = maxi %1, %blockId_x signed"), "math"),
    ("grid_axis_kernel", "ct.num_blocks(axis=ax) along y", lambda t: sub(t, "subi %gridSize_x, %cst_1_i32_3", "subi %gridSize_y, %cst_1_i32_3"), "math"),
    ("grid_axis_kernel", "ct.bid(axis=0) along z", lambda t: sub(t, "load_view_tko weak %pview[%blockId_x]", "load_view_tko weak %pview[%blockId_z]"), "memory"),
    ("tile_if_kernel", "the 0-d tile condition < -> >=", lambda t: sub(t, "cmpi less_than %5, %result, signed", "cmpi greater_than_or_equal %5, %result, signed"), "math"),
    ("tile_if_kernel", "the condition compares with the block id, not the gathered element", lambda t: sub(t, "cmpi less_than %5, %result, signed", "cmpi less_than %5, %blockId_x, signed"), "math"),
    ("int_variant_kernel", "the int32 lanes widened unsigned beside int64 ids", lambda t: sub(t, "%2 = exti %1 signed", "%2 = exti %1 unsigned"), "cast"),
    ("int_variant_kernel", "ids > lanes -> ids < lanes", lambda t: sub(t, "cmpi greater_than %tile, %2, signed", "cmpi less_than %tile, %2, signed"), "math"),
    ("i64_constexpr_kernel", "the int64 padding folded from another value", lambda t: sub(t, "%cst_1024_i64 = constant <i64: 1024>", "%cst_1024_i64 = constant <i64: 1023>"), "constant"),
    ("i64_constexpr_kernel", "the int64 addend folded from another value", lambda t: sub(t, "%cst_1024_i64_0 = constant <i64: 1024>", "%cst_1024_i64_0 = constant <i64: 1025>"), "constant"),
    ("zero_d_index_kernel", "loop bound without Python's max(0, ...)", lambda t: sub(t, "to %13,", "to %12,"), "math"),
    ("zero_d_index_kernel", "store index from the upper gathered element", lambda t: sub(t, "%14 = addi %result, %loopIdx", "%14 = addi %result_7, %loopIdx"), "math"),
    ("bool_cast_kernel", "bool -> int32 sign-extended (true = -1)", lambda t: sub(t, "exti %1 unsigned", "exti %1 signed"), "cast"),
    ("bool_cast_kernel", "t > 0 -> t >= 0", lambda t: sub(t, "cmpf greater_than ordered", "cmpf greater_than_or_equal ordered"), "math"),
    ("slice_kernel", "row offset scaled by the column extent, not the row stride", lambda t: sub(t, "%2 = muli %reshape, %assume_5 ", "%2 = muli %reshape, %assume_4 "), "math"),
    ("slice_kernel", "the view's extent start - stop", lambda t: sub(t, "%5 = subi %reshape_11, %reshape ", "%5 = subi %reshape, %reshape_11 "), "math"),
    ("slice_kernel", "the right half starts at column 0", lambda t: sub(t, "%13 = muli %cst_16_i32, %cst_1_i32_1", "%13 = muli %cst_0_i32, %cst_1_i32_1"), "constant"),
    ("slice_kernel", "the store through the right half does not wait for the left half's", lambda t: sub(t, "%pview_35[%cst_0_i32_32, %cst_0_i32_33] token = %16 ", "%pview_35[%cst_0_i32_32, %cst_0_i32_33] token = %0 "), "memory"),
    ("promote_kernel", "n / 4 -> n / 2", lambda t: sub(t, "%cst_4_f32 = constant <f32: 4.000000e+00>", "%cst_4_f32 = constant <f32: 2.000000e+00>"), "constant"),
    ("promote_kernel", "compile-time dtype branch not taken", lambda t: sub(t, "%15 = ftof %14 ", "%15 = ftof %13 "), "cast"),
    ("loop_split_kernel", "split after the bound, not at bound + 1 (`>`/`<=` read as `>=`/`<`)", lambda t: sub(sub(t, "%7 = mini %1, %6 signed", "%7 = mini %1, %5 signed"), "%8 = maxi %cst_0_i32_6, %6 signed", "%8 = maxi %cst_0_i32_6, %5 signed"), "math"),
    ("loop_split_kernel", "the loop below the split runs to the end", lambda t: sub(t, "(%cst_0_i32 to %3,", "(%cst_0_i32 to %1,"), "math"),
    ("loop_split_kernel", "split point min -> max", lambda t: sub(t, "%3 = mini %1, %2 signed", "%3 = maxi %1, %2 signed"), "math"),
    ("loop_split_kernel", "the two halves' ranges swapped (each runs the other's branch)", lambda t: sub(sub(t, "(%cst_0_i32 to %3,", "(@,"), "(%4 to %1,", "(%cst_0_i32 to %3,").replace("(@,", "(%4 to %1,"), "control_flow"),
    ("loop_split_kernel", "the upper half starts at the loop's start", lambda t: sub(t, "(%11 to %1,", "(%blockId_x to %1,"), "math"),
    ("single_trip_kernel", "the one-trip loop runs twice", lambda t: sub(t, "%cst_1_i32_2 = constant <i32: 1>", "%cst_1_i32_2 = constant <i32: 2>"), "constant"),
    ("single_trip_kernel", "the one-trip loop's only index 0 -> 1", lambda t: sub(sub(t, "%cst_1_i32_2 = constant <i32: 1>", "%cst_1_i32_2 = constant <i32: 2>"), "%cst_0_i32 = constant <i32: 0>", "%cst_0_i32 = constant <i32: 1>"), "constant"),
    ("reduce_all_kernel", "sum over every axis finishes on the max's partial result", lambda t: sub(t, "%reduce_9 = reduce %reduce_8 dim=0", "%reduce_9 = reduce %reduce dim=0"), "reduction"),
    ("reduce_all_kernel", "min over the row sums starts from -inf", lambda t: sub(t, "%reduce_12 = reduce %reduce_11 dim=0 identities=[0x7F800000 : f32]", "%reduce_12 = reduce %reduce_11 dim=0 identities=[0xFF800000 : f32]"), "reduction"),
    ("matmul_kernel", "f16 matmul accumulates from one, not zero", lambda t: sub(t, "constant <f16: 0.000000e+00> : tile<16x16xf16>", "constant <f16: 1.000000e+00> : tile<16x16xf16>"), "constant"),
    ("matmul_kernel", "tf32 matmul operands swapped", lambda t: sub(t, "mmaf %4, %6, %cst_0_f32", "mmaf %6, %4, %cst_0_f32"), "math"),
    ("matmul_kernel", "tf32 matmul result not rounded to tf32", lambda t: sub(t, "%9 = ftof %8  : tile<16x16xtf32>", "%9 = ftof %7  : tile<16x16xtf32>"), "cast"),
    ("scalar_load_kernel", "one-element load at the block index, not the element's", lambda t: sub(t, "load_view_tko weak %pview_3[%1]", "load_view_tko weak %pview_3[%blockId_x]"), "math"),
    ("scalar_load_kernel", "float test < -> >", lambda t: sub(t, "cmpf less_than ordered %2", "cmpf greater_than ordered %2"), "math"),
    ("dtype_call_kernel", "f8 padding value zero -> one", lambda t: sub(t, "constant <f8E4M3FN: 0.000000e+00>", "constant <f8E4M3FN: 1.000000e+00>"), "constant"),
    ("dtype_call_kernel", "ct.float32(2) -> 3", lambda t: sub(t, "constant <f32: 2.000000e+00>", "constant <f32: 3.000000e+00>"), "constant"),
    ("scan_axis_kernel", "cumsum along axis 0, not 1", lambda t: sub(t, "%2 = scan %1 dim=1 reverse=false", "%2 = scan %1 dim=0 reverse=false"), "reduction"),
    ("scan_axis_kernel", "reverse cumsum made forward", lambda t: sub(t, "%3 = scan %1 dim=1 reverse=true", "%3 = scan %1 dim=1 reverse=false"), "reduction"),
    ("shape_last_kernel", "cdiv of the extent rounds toward zero", lambda t: sub(t, "signed rounding<positive_inf>", "signed rounding<zero>"), "math"),
    ("fma_rebind_kernel", "the product added to the old multiply, not to its exp", lambda t: sub(t, "%4 = fma %1, %bcast, %3 ", "%4 = fma %1, %bcast, %2 "), "math"),
    ("tiled_atomic_kernel", "atomic add into the block's tile, not tile 0", lambda t: sub(t, "%pview_3[%cst_0_i32], addf", "%pview_3[%blockId_x], addf"), "memory"),
    ("tiled_atomic_kernel", "second atomic not ordered after the first", lambda t: sub(t, "addf, %4 token = %3 :", "addf, %4 token = %0 :"), "memory"),
    ("tiled_atomic_kernel", "atomic add -> atomic max", lambda t: sub(t, "%pview_3[%cst_0_i32], addf,", "%pview_3[%cst_0_i32], maxf,"), "memory"),
    ("splat_expr_kernel", "the folded BM * TILE 16384 -> 1024", lambda t: sub(t, "%10 = muli %2, %cst_16384_i32", "%10 = muli %2, %cst_1024_i32"), "constant"),
    ("splat_expr_kernel", "the splatted scalar without its bid * BM term", lambda t: sub(t, "%reshape = reshape %14 :", "%reshape = reshape %12 :"), "math"),
    ("mma_cast_kernel", "mma reads the loaded tile, not the cast one", lambda t: sub(t, "mmaf %3, %tile,", "mmaf %tile, %tile,"), "cast"),
    ("mma_cast_kernel", "exp2 dropped before the f16 cast", lambda t: sub(t, "%3 = ftof %2 ", "%3 = ftof %1 "), "cast"),
    ("helper_carry_kernel", "the loop yields scale where total is carried", lambda t: sub(t, "continue %8, %7, %6 :", "continue %8, %7, %7 :"), "control_flow"),
    ("helper_carry_kernel", "the result adds scale, not bias", lambda t: sub(t, "%2 = addf %for#2, %for#0 ", "%2 = addf %for#2, %for#1 "), "math"),
    ("boolop_kernel", "`and` drops its second operand (yields the first)", lambda t: sub(t, "    yield %19 : tile<i1> loc(#loc31)", "    yield %1 : tile<i1> loc(#loc31)"), "control_flow"),
    ("boolop_kernel", "`or` operand bid > 7 -> bid >= 7", lambda t: sub(t, "cmpi greater_than %blockId_x, %cst_7_i32", "cmpi greater_than_or_equal %blockId_x, %cst_7_i32"), "math"),
    ("boolop_kernel", "bool constant tile true -> false", lambda t: sub(t, "%true = constant <i1: true> : tile<1024xi1>", "%true = constant <i1: false> : tile<1024xi1>"), "constant"),
    ("split_loop_kernel", "first part of a split loop ends at max, not min", lambda t: sub(t, "%3 = mini %1, %2 signed", "%3 = maxi %1, %2 signed"), "math"),
    ("split_loop_kernel", "second part starts at the bound, not max(start, bound)", lambda t: sub(t, "for %loopIdx in (%14 to %1,", "for %loopIdx in (%12 to %1,"), "math"),
    ("split_loop_kernel", "split of `m < j` at m, not m + 1", lambda t: sub(t, "%13 = mini %1, %12 signed", "%13 = mini %1, %2 signed"), "control_flow"),
    ("scalar_tile_kernel", "max(tile, ...) -> min", lambda t: sub(t, "%3 = maxf %1, %bcast", "%3 = minf %1, %bcast"), "math"),
    ("scalar_tile_kernel", "if on the loaded 0-d tile: >= -> >", lambda t: sub(t, "cmpi greater_than_or_equal %6, %reshape_9", "cmpi greater_than %6, %reshape_9"), "math"),
    ("scalar_tile_kernel", "loop bound from the loaded tile rounded down", lambda t: sub(t, "%9 = divi %reshape_9, %cst_1024_i32 signed rounding<positive_inf>", "%9 = divi %reshape_9, %cst_1024_i32 signed rounding<negative_inf>"), "math"),
    ("scalar_tile_kernel", "loop split at a loaded 0-d bound: first part ends at max, not min", lambda t: sub(t, "%11 = mini %9, %10 signed", "%11 = maxi %9, %10 signed"), "math"),
    ("helper_loop_kernel", "the helper's own BM == 16 test negated", lambda t: sub(t, "cmpi equal %blockId_x, %cst_16_i32", "cmpi not_equal %blockId_x, %cst_16_i32"), "math"),
    ("helper_loop_kernel", "STEP_KIND's branch: + -> -", lambda t: sub(t, "%14 = addf %iterArg1, %13", "%14 = subf %iterArg1, %13"), "math"),
    ("helper_loop_kernel", "the carried counter not incremented", lambda t: sub(t, "continue %15, %14 :", "continue %iterArg0, %14 :"), "control_flow"),
    ("const_product_kernel", "BM * TILE folded to 8192, not 16384", lambda t: sub(t, "%cst_16384_i32 = constant <i32: 16384>", "%cst_16384_i32 = constant <i32: 8192>"), "constant"),
    ("const_product_kernel", "TILE - BM folded to BM - TILE", lambda t: sub(t, "%cst_1008_i32 = constant <i32: 1008>", "%cst_1008_i32 = constant <i32: -1008>"), "constant"),
    ("dead_yield_kernel", "the if yields t unchanged from its then branch", lambda t: sub(t, "    yield %11 : tile<1024xf32>", "    yield %1 : tile<1024xf32>"), "control_flow"),
    ("dead_yield_kernel", "the loop's if yields the carried t unchanged", lambda t: sub(t, "      yield %22 : tile<1024xf32>", "      yield %iterArg0 : tile<1024xf32>"), "control_flow"),
    # cuda.tile API kernels (tests/data/operators/api, docs/cuda-tile-api.yaml)
    ("api_math_kernel", "ct.abs -> ct.ceil", lambda t: sub(t, "%2 = absf %1 :", "%2 = ceil %1 :"), "math"),
    ("api_math_kernel", "ct.ceil -> ct.floor", lambda t: sub(t, "%3 = ceil %1 :", "%3 = floor %1 :"), "math"),
    ("api_math_kernel", "ct.floor of the abs, not of t", lambda t: sub(t, "%5 = floor %1 :", "%5 = floor %2 :"), "math"),
    ("api_math_kernel", "ct.sin -> ct.cos", lambda t: sub(t, "%7 = sin %1 :", "%7 = cos %1 :"), "math"),
    ("api_math_kernel", "ct.log2 -> ct.log", lambda t: sub(t, "%11 = log2 %6 :", "%11 = log %6 :"), "math"),
    ("api_math_kernel", "rsqrt without flush_to_zero", lambda t: sub(t, "%13 = rsqrt %6 flush_to_zero :", "%13 = rsqrt %6 :"), "math"),
    ("api_math_kernel", "exp2 without flush_to_zero", lambda t: sub(t, "%14 = exp2 %1 flush_to_zero :", "%14 = exp2 %1 :"), "math"),
    ("api_math_kernel", "sqrt rounding RZ -> RN", lambda t: sub(t, "%16 = sqrt %6 rounding<zero> flush_to_zero", "%16 = sqrt %6 flush_to_zero"), "math"),
    ("api_math_kernel", "ct.add rounding RP -> RM", lambda t: sub(t, "%17 = addf %9, %12 rounding<positive_inf>", "%17 = addf %9, %12 rounding<negative_inf>"), "math"),
    ("api_math_kernel", "ct.sub operands swapped", lambda t: sub(t, "%18 = subf %17, %15 rounding<negative_inf>", "%18 = subf %15, %17 rounding<negative_inf>"), "math"),
    ("api_math_kernel", "ct.mul without flush_to_zero", lambda t: sub(t, "%19 = mulf %18, %16  flush_to_zero :", "%19 = mulf %18, %16  :"), "math"),
    ("api_math_kernel", "ct.negative -> ct.abs", lambda t: sub(t, "%20 = negf %19 :", "%20 = absf %19 :"), "math"),
    ("api_minmax_kernel", "ct.maximum without propagate_nan", lambda t: sub(t, "%2 = maxf %1, %bcast propagate_nan :", "%2 = maxf %1, %bcast :"), "math"),
    ("api_minmax_kernel", "ct.minimum -> maximum", lambda t: sub(t, "%3 = minf %1, %bcast_9 flush_to_zero", "%3 = maxf %1, %bcast_9 flush_to_zero"), "math"),
    ("api_minmax_kernel", "ct.min over axis 0, not 1", lambda t: sub(t, "%reduce = reduce %4 dim=1", "%reduce = reduce %4 dim=0"), "reduction"),
    ("api_minmax_kernel", "ct.max reduction identity -inf -> +inf", lambda t: sub(t, "dim=0 identities=[0xFF800000 : f32]", "dim=0 identities=[0x7F800000 : f32]"), "reduction"),
    ("api_minmax_kernel", "ct.prod identity 1 -> 0", lambda t: sub(t, "identities=[1.000000e+00 : f32]", "identities=[0.000000e+00 : f32]"), "reduction"),
    ("api_bits_kernel", "bitwise_and -> bitwise_or", lambda t: sub(t, "%3 = andi %2, %cst_12_i32", "%3 = ori %2, %cst_12_i32"), "math"),
    ("api_bits_kernel", "bitwise_or constant 3 -> 2", lambda t: sub(t, "%4 = ori %2, %cst_3_i32", "%4 = ori %2, %cst_2_i32"), "constant"),
    ("api_bits_kernel", "bitwise_xor -> bitwise_and", lambda t: sub(t, "%6 = xori %2, %cst_5_i32", "%6 = andi %2, %cst_5_i32"), "math"),
    ("api_bits_kernel", "bitwise_lshift -> >>", lambda t: sub(t, "%8 = shli %7, %cst_2_i32", "%8 = shri %7, %cst_2_i32 signed"), "math"),
    ("api_bits_kernel", "bitwise_not dropped", lambda t: sub(t, "%10 = addi %8, %9 ", "%10 = addi %8, %2 "), "math"),
    ("api_bits_kernel", ">> made logical", lambda t: sub(t, "%11 = shri %7, %cst_1_i32_0 signed", "%11 = shri %7, %cst_1_i32_0 unsigned"), "math"),
    ("api_bits_kernel", "t.permute((1, 0)) dropped", lambda t: sub(t, "%18 = extract %17[", "%18 = extract %16["), "math"),
    ("api_bits_kernel", "ct.transpose(t, axis0=0, axis1=1) -> t", lambda t: sub(t, "%16 = addf %14, %15 ", "%16 = addf %14, %reshape_1 "), "math"),
    ("api_atomic_kernel", "atomic_and -> atomic_or", lambda t: sub(t, "relaxed device %9, and,", "relaxed device %9, or,"), "memory"),
    ("api_atomic_kernel", "atomic_or's block scope -> device", lambda t: sub(t, "atomic_rmw_tko acq_rel tl_blk %14, or,", "atomic_rmw_tko acq_rel device %14, or,"), "memory"),
    ("api_atomic_kernel", "atomic_xor -> xchg", lambda t: sub(t, "device %17, xor,", "device %17, xchg,"), "memory"),
    ("api_atomic_kernel", "atomic_max acquire -> relaxed", lambda t: sub(t, "atomic_rmw_tko acquire device %22, max,", "atomic_rmw_tko relaxed device %22, max,"), "memory"),
    ("api_atomic_kernel", "atomic_min system scope -> device", lambda t: sub(t, "atomic_rmw_tko release sys %27, min,", "atomic_rmw_tko release device %27, min,"), "memory"),
    ("api_atomic_kernel", "atomic_xchg writes the max's old value", lambda t: sub(t, "%32, xchg, %result_34,", "%32, xchg, %result_28,"), "memory"),
    ("api_atomic_kernel", "atomic_cas expected and desired swapped", lambda t: sub(t, "%38, %result_40, %4, %36", "%38, %4, %result_40, %36"), "memory"),
    ("api_views_kernel", "num_tiles along axis 0, not 1", lambda t: sub(t, "%6 = itof %1#1 signed", "%6 = itof %1#0 signed"), "cast"),
    ("api_views_kernel", "cumsum along axis 0", lambda t: sub(t, "%4 = scan %3 dim=1 reverse=false", "%4 = scan %3 dim=0 reverse=false"), "reduction"),
    ("api_views_kernel", "sum without keepdims broadcast along the rows", lambda t: sub(t, "%reduce = reduce %8 dim=1", "%reduce = reduce %8 dim=0"), "reduction"),
    ("api_more_kernel", "int8 cast made unsigned", lambda t: sub(t, "%5 = ftoi %tile signed  : tile<1024xf16> -> tile<1024xi8>", "%5 = ftoi %tile unsigned  : tile<1024xf16> -> tile<1024xi8>"), "cast"),
    ("api_more_kernel", "uint16 cast made signed", lambda t: sub(t, "%10 = ftoi %tile unsigned  : tile<1024xf16> -> tile<1024xi16>", "%10 = ftoi %tile signed  : tile<1024xf16> -> tile<1024xi16>"), "cast"),
    ("api_neg_kernel", "ct.negative dropped", lambda t: sub(t, "%14 = mulf %13, %bcast_13 ", "%14 = mulf %9, %bcast_13 "), "math"),
    ("api_cmp_kernel", "ct.equal -> not_equal", lambda t: sub(t, "%5 = cmpi equal %1, %bcast_4", "%5 = cmpi not_equal %1, %bcast_4"), "math"),
    ("api_cmp_kernel", "ct.not_equal -> equal", lambda t: sub(t, "%7 = cmpf not_equal unordered %tile", "%7 = cmpf equal unordered %tile"), "math"),
    ("api_cmp_kernel", "ct.less -> less_equal", lambda t: sub(t, "%3 = cmpi less_than %1", "%3 = cmpi less_than_or_equal %1"), "math"),
    ("api_cmp_kernel", "ct.less_equal -> less", lambda t: sub(t, "%9 = cmpf less_than_or_equal ordered", "%9 = cmpf less_than ordered"), "math"),
    ("api_cmp_kernel", "ct.greater -> greater_equal", lambda t: sub(t, "%2 = cmpf greater_than ordered", "%2 = cmpf greater_than_or_equal ordered"), "math"),
    ("api_cmp_kernel", "ct.greater_equal -> greater", lambda t: sub(t, "%13 = cmpi greater_than_or_equal %1", "%13 = cmpi greater_than %1"), "math"),
    ("api_neg_kernel", "scalar store of 0.0 -> 1.0", lambda t: sub(t, "constant <f16: 0.000000e+00> : tile<f16> loc(#loc24)", "constant <f16: 1.000000e+00> : tile<f16> loc(#loc24)"), "constant"),
    ("api_fold_kernel", "scalar cast to f16 dropped (shift added as f32)", lambda t: sub(sub(t, "%reshape_8 = reshape %4 : tile<f16> -> tile<1xf16>", "%reshape_8 = reshape %arg6 : tile<f32> -> tile<1xf32>"), "%bcast_9 = broadcast %reshape_8 : tile<1xf16> -> tile<1024xf16>", "%bcast_9 = broadcast %reshape_8 : tile<1xf32> -> tile<1024xf32>"), "cast"),
    ("api_fold_kernel", "folded 1 / (3 TILE) -> 1 / (2 TILE)", lambda t: sub(t, "constant <f32: 3.25520843E-4> : tile<f32>", "constant <f32: 4.88281250E-4> : tile<f32>"), "constant"),
    ("api_nested_fma_kernel", "nested loop's fma addend not negated", lambda t: sub(t, "%19 = fma %9, %bcast_17, %18 ", "%19 = fma %9, %bcast_17, %iterArg0_25 "), "math"),
    ("api_nested_fma_kernel", "first loop's second product term doubled the sum instead", lambda t: sub(t, "%19 = addf %18, %10 ", "%19 = addf %18, %18 "), "math"),
    ("api_gather_view_kernel", "gather view without its zero padding", lambda t: sub(t, "padding_value = zero, tensor_view<?x?xf16, strides=[?,1]>, sparse_dim=0> loc(#loc16)", "tensor_view<?x?xf16, strides=[?,1]>, sparse_dim=0> loc(#loc16)"), "memory"),
    ("api_gather_view_kernel", "gather view slice starting at the block id, not 0", lambda t: sub(t, "%gsview[%result, %cst_0_i32_12]", "%gsview[%result, %blockId_x]"), "memory"),
    ("api_gather_view_kernel", "gather view sparse along axis 1, not 0", lambda t: sub(t, "sparse_dim=0> loc(#loc16)", "sparse_dim=1> loc(#loc16)"), "memory"),
    ("api_more_kernel", "uint64 term dropped", lambda t: sub(t, "%18 = addf %15, %17 ", "%18 = addf %15, %14 "), "math"),
    ("api_more_kernel", "float64 -> float32 rounding RZ dropped", lambda t: sub(t, "%20 = ftof %19 rounding<zero> :", "%20 = ftof %19  :"), "cast"),
    ("api_more_kernel", "float8_e5m2 round trip dropped", lambda t: sub(t, "%24 = ftof %23  : tile<1024xf8E5M2>", "%24 = ftof %22  : tile<1024xbf16>"), "cast"),
    ("api_more_kernel", "ct.sub without flush_to_zero", lambda t: sub(t, "%26 = subf %25, %21  flush_to_zero :", "%26 = subf %25, %21  :"), "math"),
    ("api_more_kernel", "ct.mul rounding RN -> RZ", lambda t: sub(t, "%25 = mulf %21, %24  :", "%25 = mulf %21, %24 rounding<zero> :"), "math"),
    ("api_more_kernel", "atomic_and's block scope -> device", lambda t: sub(t, "atomic_rmw_tko acq_rel tl_blk %30, and,", "atomic_rmw_tko acq_rel device %30, and,"), "memory"),
    ("api_more_kernel", "atomic_or relaxed -> acq_rel", lambda t: sub(t, "atomic_rmw_tko relaxed device %36, or,", "atomic_rmw_tko acq_rel device %36, or,"), "memory"),
    ("api_more_kernel", "atomic_xor -> atomic_and", lambda t: sub(t, "device %41, xor,", "device %41, and,"), "memory"),
    ("api_more_kernel", "atomic_max -> atomic_min", lambda t: sub(t, "device %45, max,", "device %45, min,"), "memory"),
    ("api_more_kernel", "atomic_min without check_bounds=False gets a mask", lambda t: sub(t, "device %49, min, %result_25 token=%50 : tile<1024xptr<i32>>, tile<1024xi32> ->", "device %49, min, %result_25, %39 token=%50 : tile<1024xptr<i32>>, tile<1024xi32>, tile<1024xi1> ->"), "memory"),
    ("api_more_kernel", "atomic_xchg scope block -> device", lambda t: sub(t, "atomic_rmw_tko relaxed tl_blk %55, xchg,", "atomic_rmw_tko relaxed device %55, xchg,"), "memory"),
    # cuTile Python's language beyond TileGym's dialect (tests/data/operators/lang, f32 variant)
    ("np_const_kernel", "np.pi -> 3.0", lambda t: sub(t, "<f32: 3.14159274>", "<f32: 3.000000e+00>"), "constant"),
    ("np_const_kernel", "-np.inf in the where -> +inf", lambda t: sub(t, "%cst_f32_5 = constant <f32: 0xFF800000>", "%cst_f32_5 = constant <f32: 0x7F800000>"), "constant"),
    # variant dtypes f64 / f8 and e8m0 block scales (tests/data/operators/dtypes8)
    ("f64_axpy_kernel", "the f64 constant 3.0 -> 2.0", lambda t: sub(t, "<f64: 3.000000e+00>", "<f64: 2.000000e+00>"), "constant"),
    ("f64_axpy_kernel", "fma's addend not negated", lambda t: sub(t, "%2 = fma %tile, %bcast, %1 ", "%2 = fma %tile, %bcast, %bcast_4 "), "math"),
    ("f8_mm_kernel", "the B tile read at (k, bid 0), not (k, bid 1)", lambda t: sub(t, "%pview_17[%loopIdx, %blockId_y_13]", "%pview_17[%loopIdx, %blockId_x]"), "memory"),
    ("f8_mm_kernel", "the mma's operands swapped", lambda t: sub(t, "%3 = mmaf %tile, %tile_19,", "%3 = mmaf %tile_19, %tile,"), "math"),
    ("e8m0_scale_kernel", "the e8m0 scale not applied", lambda t: sub(t, "%2 = mulf %tile, %bcast ", "%2 = addf %tile, %bcast "), "math"),
    ("e8m0_scale_kernel", "float8_e8m0fnu scales read at block 0", lambda t: sub(t, "%pview_6[%blockId_x]", "%pview_6[%cst_1_i32]"), "memory"),
    ("rm_alias_kernel", "exp RM.APPROX -> the default (FULL)", lambda t: sub(t, "%1 = exp %tile rounding<approx>", "%1 = exp %tile"), "math"),
    ("rm_alias_kernel", "truediv RM.APPROX dropped", lambda t: sub(t, "%3 = divf %1, %2 rounding<approx>", "%3 = divf %1, %2"), "math"),
    ("pow_kernel", "t ** 2 -> t ** 3", lambda t: sub(t, "%cst_2_i32 = constant <i32: 2> : tile<1024xi32>", "%cst_2_i32 = constant <i32: 3> : tile<1024xi32>"), "constant"),
    ("pow_kernel", "t ** k raised to k % 3 before its sign correction", lambda t: sub(t, "%13 = fpowi %tile, %9 ", "%13 = fpowi %tile, %2 "), "math"),
    ("promote_acc_kernel", "sq + t * t adds to the other accumulator", lambda t: sub(t, "%5 = fma %tile, %tile, %iterArg1", "%5 = fma %tile, %tile, %iterArg0"), "math"),
    ("promote_acc_kernel", "acc += t -> acc *= t", lambda t: sub(t, "%4 = addf %iterArg0, %tile", "%4 = mulf %iterArg0, %tile"), "math"),
    ("fma_stmt_kernel", "the fma's addend 1.5 -> 2.5", lambda t: sub(t, "<f32: 1.500000e+00>", "<f32: 2.500000e+00>"), "constant"),
    ("fma_stmt_kernel", "v + u -> v + v", lambda t: sub(t, "%4 = addf %3, %2 ", "%4 = addf %3, %3 "), "math"),
    ("bmm3_kernel", "batched mma of t, not of its transpose", lambda t: sub(t, "%2 = mmaf %tile, %1, %cst_0_f32 ", "%2 = mmaf %tile, %tile, %cst_0_f32 "), "math"),
    ("bmm3_kernel", "batched matmul operands swapped with the mma's", lambda t: sub(t, "%3 = mmaf %tile, %tile, %cst_0_f32_16 ", "%3 = mmaf %tile, %1, %cst_0_f32_16 "), "math"),
    ("spin_lock_kernel", "the lock's atomic_cas acquire -> relaxed", lambda t: sub(t, "atomic_cas_tko acquire device %5,", "atomic_cas_tko relaxed device %5,"), "memory"),
    ("spin_lock_kernel", "the lock released before the critical section's store", lambda t: sub(t, "%16 = join_tokens %6#0, %1, %6#1, %11 :", "%16 = join_tokens %6#0, %1, %6#1 :"), "memory"),
    ("spin_lock_kernel", "the spin loop leaves while the lock is taken", lambda t: sub(t, "%18 = cmpi equal %result_16, %cst_1_i32_6,", "%18 = cmpi not_equal %result_16, %cst_1_i32_6,"), "math"),
]


def _full_shape_scale(t: str) -> str:
    # store_helper_kernel: the scalar 3.0 made at the tile's shape instead of splatted
    t = sub(t, "%cst_3_f16 = constant <f16: 3.000000e+00> : tile<f16>",
            "%cst_3_f16 = constant <f16: 3.000000e+00> : tile<1024xf16>")
    t = drop_line(t, "%reshape = reshape %cst_3_f16")
    t = drop_line(t, "%bcast = broadcast %reshape")
    return sub(t, "mulf %tile, %bcast ", "mulf %tile, %cst_3_f16 ")


def _constant_made_first(t: str) -> str:
    # static_arith_kernel: a constant of the last branch made before the load (independent)
    a = line_of(t, "%cst_5_f16 = constant <f16: 5.000000e+00>")
    b = line_of(t, "%pview = make_partition_view")
    t = sub(t, a + "\n", "")
    return sub(t, b, a + "\n" + b)


def _view_built_earlier(t: str) -> str:
    # alias_kernel: the helper's partition view made before the first load (independent ops)
    a = line_of(t, "%pview_4 = make_partition_view")
    b = line_of(t, "%tile, %result_token = load_view_tko weak %pview[")
    t = sub(t, a + "\n", "")
    return sub(t, b, a + "\n" + b)


def _rename(t: str) -> str:
    names = sorted(set(re.findall(r"%([A-Za-z_][\w]*|\d+)(?=[\s,:\[\])#])", t)), key=len, reverse=True)
    for i, n in enumerate(names):
        t = re.sub(rf"%{re.escape(n)}(?=[\s,:\[\])#])", f"%v{i}_{n}_renamed", t)
    return t


def _dup_const(t: str) -> str:
    line = line_of(t, "%cst_0_i32_8 = constant <i32: 0>")
    t = sub(t, line, line + "\n" + line.replace("%cst_0_i32_8 =", "%cst_again ="))
    return sub(t, "%pview_9[%loopIdx, %cst_0_i32_8]", "%pview_9[%loopIdx, %cst_again]")


def _sink_view(t: str) -> str:
    # the reverse of loop-invariant hoisting: build the output view inside the loop
    line = line_of(t, "%pview_9 = make_partition_view")
    t = sub(t, line + "\n", "")
    store = line_of(t, "store_view_tko weak %6, %pview_9")
    return sub(t, store, "    " + line.strip() + "\n" + store)


def _swap_independent(t: str) -> str:
    a = line_of(t, "%pview_15 = make_partition_view")
    b = line_of(t, "%cst_1_f32 = constant <f32: 1.000000e+00>")
    t = sub(t, b + "\n", "")
    return sub(t, a, b + "\n" + a)


def _assume_and_assert(t: str) -> str:
    line = line_of(t, "%blockId_x, %blockId_y, %blockId_z = get_tile_block_id")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    extra = (f"\n  %bx = assume bounded<0, ?>, %blockId_x : tile<i32>{loc}"
             f"\n  %ok = cmpi greater_than_or_equal %bx, %bx, signed : tile<i32> -> tile<i1>{loc}"
             f"\n  assert %ok, \"in bounds\" : tile<i1>{loc}")
    t = sub(t, line, line + extra)
    return sub(t, "%pview[%blockId_x]", "%pview[%bx]")


def _cse_block_ids(t: str) -> str:
    # bmm asks for the block id three times; one call is the same program
    for dup in ("%blockId_x_18, %blockId_y_19, %blockId_z_20", "%blockId_x_21, %blockId_y_22, %blockId_z_23"):
        t = drop_line(t, dup + " = get_tile_block_id")
    return t.replace("%blockId_z_23", "%blockId_z").replace("%blockId_y_19", "%blockId_y")


def _splat_constant(t: str) -> str:
    t = sub(t, "%cst_1_f32 = constant <f32: 1.000000e+00> : tile<f32>",
            "%cst_1_f32 = constant <f32: 1.000000e+00> : tile<64x64xf32>")
    t = drop_line(t, "%reshape = reshape %cst_1_f32")
    t = drop_line(t, "%bcast = broadcast %reshape")
    return sub(t, "addf %bcast, %4", "addf %cst_1_f32, %4")


def _token_per_tensor(t: str) -> str:
    line = line_of(t, "%0 = make_token : token")
    t = sub(t, line, line + "\n" + line.replace("%0 =", "%tok_out ="))
    return sub(t, "token = %0 : tile<1024xf16>", "token = %tok_out : tile<1024xf16>")


def _dead_code(t: str) -> str:
    line = line_of(t, "%1 = ftof %tile  :")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    return sub(t, line, line + f"\n  %unused = mulf %1, %1 : tile<1024xf32>{loc}"
                              f"\n  %unused_c = constant <f32: 7.000000e+00> : tile<f32>{loc}")


def _f32_constant_converted(t: str) -> str:
    # cutile's form of an f16 constant: an f32 constant converted to the element type
    line = line_of(t, "%cst_0_f16 = constant <f16: 0.000000e+00> : tile<1024xf16>")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    return sub(t, line, f"  %c32 = constant <f32: 0.000000e+00> : tile<f32>{loc}\n"
                        f"  %c16 = ftof %c32 : tile<f32> -> tile<f16>{loc}\n"
                        f"  %r = reshape %c16 : tile<f16> -> tile<1xf16>{loc}\n"
                        f"  %cst_0_f16 = broadcast %r : tile<1xf16> -> tile<1024xf16>{loc}")


def _hints_by_target(t: str) -> str:
    # cutile keys the hints it carries by the compile target, cuTile Python writes `default`
    return sub(t, "optimization_hints=<default = {}>", "optimization_hints=<sm_90 = {}, sm_80 = {occupancy = 1}>")


def _identity_broadcast(t: str) -> str:
    line = line_of(t, "%9 = subf %tile_30, %bcast_35")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    t = sub(t, line, line + f"\n    %same = broadcast %9 : tile<4x1024xf32> -> tile<4x1024xf32>{loc}")
    return sub(t, "mulf %9, %bcast_36", "mulf %same, %bcast_36")


def _mirrored_comparison(t: str) -> str:
    # idx >= 7 written as 7 <= idx
    return sub(t, "cmpi greater_than_or_equal %1, %cst_7_i32,", "cmpi less_than_or_equal %cst_7_i32, %1,")


def _select_after_load(t: str, load: str, raw_load: str, select: str) -> str:
    """``load`` (a padded load_ptr_tko line of ``t``) written as cutile's form of a padded gather:
    ``raw_load`` (the masked load without padding, into %raw) then ``select`` (the padding where
    the mask is false), both at the load's location."""
    line = line_of(t, load)
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    return sub(t, line, f"  {raw_load}{loc}\n  {select}{loc}")


def _padding_by_select(t: str) -> str:
    # rank 1 (and no make_token token)
    return _select_after_load(
        t, "%result, %result_token = load_ptr_tko weak %14, %15, %bcast_14 token=%0",
        "%raw, %result_token = load_ptr_tko weak %14, %15 optimization_hints = <sm_90 = {latency = 3}> : "
        "tile<1024xptr<f16>>, tile<1024xi1> -> tile<1024xf16>, token",
        "%result = select %15, %raw, %bcast_14 : tile<1024xi1>, tile<1024xf16>")


def _padding_by_select_2d(t: str) -> str:
    # gather2d_pad_kernel's f16 gather (rank 2), as the port wrote it before the padding tile
    return _select_after_load(
        t, "%result_37, %result_token_38 = load_ptr_tko weak %28, %25, %bcast_36 token=%0",
        "%raw, %result_token_38 = load_ptr_tko weak %28, %25 token=%0 : "
        "tile<16x1024xptr<f16>>, tile<16x1024xi1> -> tile<16x1024xf16>, token",
        "%result_37 = select %25, %raw, %bcast_36 : tile<16x1024xi1>, tile<16x1024xf16>")


def _unread_padding_dropped(t: str) -> str:
    # a load without a mask reads every lane: its padding operand is never used
    return sub(t, "load_ptr_tko weak %22, %bcast_22 token=%0 : tile<1024xptr<f16>>, tile<1024xf16> -> ",
               "load_ptr_tko weak %22 : tile<1024xptr<f16>> -> ")


def _one_widening(t: str) -> str:
    # the scatter reuses the gather's widened index instead of widening it again
    t = drop_line(t, "%10 = exti %3 signed")
    return t.replace("cmpi less_than %10,", "cmpi less_than %4,").replace("muli %10,", "muli %4,")


def _unfolded_constexpr(t: str) -> str:
    # (TILE + 7) // 8 computed on constants (cutile) instead of folded (cuTile Python), and the
    # sign test of the constant divisor computed instead of written as `false`
    line = line_of(t, "%cst_128_i32 = constant <i32: 128> : tile<i32>")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    t = sub(t, line, f"  %c7 = constant <i32: 7> : tile<i32>{loc}\n  %c8 = constant <i32: 8> : tile<i32>{loc}\n"
                     f"  %s = addi %cst_1024_i32, %c7 : tile<i32>{loc}\n"
                     f"  %cst_128_i32 = divi %s, %c8 signed rounding<negative_inf> : tile<i32>{loc}")
    line = line_of(t, "%false = constant <i1: false> : tile<i1>")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    return sub(t, line, f"  %false = cmpi less_than %cst_1024_i32, %cst_0_i32, signed : tile<i32> -> tile<i1>{loc}")


def _one_reshape(t: str) -> str:
    # t[None, :, :].reshape((BM, TILE)) as the single reshape it amounts to
    return sub(t, "%reshape_14 = reshape %reshape_13 :", "%reshape_14 = reshape %tile :").replace(
        "tile<1x16x1024xf16> -> tile<16x1024xf16>", "tile<16x1024xf16> -> tile<16x1024xf16>")


def _commuted_bitwise(t: str) -> str:
    # a | b as b | a, mask a & b as b & a
    return sub(sub(t, "%4 = ori %2, %3", "%4 = ori %3, %2"), "%12 = andi %10, %11", "%12 = andi %11, %10")


def _hoisted_out_of_regions(t: str) -> str:
    # the else branch's constant hoisted above the if, the loop step's constant sunk into the loop
    const = line_of(t, "%cst_0_i32_7 = constant <i32: 0>")
    t = sub(t, const + "\n", "")
    t = sub(t, line_of(t, "%2 = if %1 -> (tile<i32>) {"), "  " + const.strip() + "\n" + line_of(t, "%2 = if %1 -> (tile<i32>) {"))
    step = line_of(t, "%cst_1_i32_5 = constant <i32: 1>")
    t = sub(t, step + "\n", "")
    add = line_of(t, "%16 = addi %arg6, %cst_1_i32_5")
    return sub(t, add, "    " + step.strip() + "\n" + add)


def _shared_one(t: str) -> str:
    # the helper's `one` splatted once for both uses
    t = drop_line(t, "%reshape_5 = reshape %cst_1_f32")
    t = drop_line(t, "%bcast_6 = broadcast %reshape_5")
    return sub(t, "divf %bcast_6, %5", "divf %bcast_4, %5")


def _full_shape_scalar(t: str) -> str:
    # the scalar 0.0 of ct.where materialised at the tile's shape instead of splatted
    t = sub(t, "%cst_0_f16_4 = constant <f16: 0.000000e+00> : tile<f16>",
            "%cst_0_f16_4 = constant <f16: 0.000000e+00> : tile<1024xf16>")
    t = drop_line(t, "%reshape = reshape %cst_0_f16_4")
    t = drop_line(t, "%bcast = broadcast %reshape")
    return sub(t, "select %4, %3, %bcast ", "select %4, %3, %cst_0_f16_4 ")


def _swap_exp_tanh(t: str) -> str:
    a, b = line_of(t, "%3 = exp %1"), line_of(t, "%4 = tanh %1 rounding<approx>")
    return sub(sub(t, a, "@@A@@"), b, a).replace("@@A@@", b)


def _index_view_first(t: str) -> str:
    # the index array's view and load made before the data array's (independent loads)
    view = line_of(t, "%pview_11 = make_partition_view %tview_5")
    load = line_of(t, "%tile_12, %result_token_13 = load_view_tko weak %pview_11")
    t = sub(sub(t, view + "\n", ""), load + "\n", "")
    first = line_of(t, "%pview = make_partition_view %tview :")
    return sub(t, first, view + "\n" + load + "\n" + first)


def _f16_scalar_from_f32(t: str) -> str:
    # cutile's form of a Python float taking an f16 tile's dtype: an f32 constant converted
    line = line_of(t, "%cst_f16 = constant <f16: 7.500000e-01> : tile<f16>")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    return sub(t, line, f"  %c32 = constant <f32: 7.500000e-01> : tile<f32>{loc}\n"
                        f"  %cst_f16 = ftof %c32 : tile<f32> -> tile<f16>{loc}")


def _accumulator_made_first(t: str) -> str:
    # the mma's zero accumulator made before the load it does not depend on
    acc = line_of(t, "%cst_0_f32 = constant <f32: 0.000000e+00> : tile<16x16xf32>")
    t = sub(t, acc + "\n", "")
    load = line_of(t, "load_view_tko weak %pview[")
    return sub(t, load, acc + "\n" + load)


# (op, rewrite, edit) -- each keeps what the kernel computes
def _scan_through_permutes(t: str) -> str:
    # the forward scan along axis 1 written as cutile writes it: axis 1 permuted to the
    # front, scanned along axis 0, permuted back
    t = sub(t, "  %2 = scan %1 dim=1 reverse=false identities=[0.000000e+00 : f32] : tile<16x1024xf32> -> tile<16x1024xf32> ",
            "  %p = permute %1 [1, 0] : tile<16x1024xf32> -> tile<1024x16xf32>\n"
            "  %s = scan %p dim=0 reverse=false identities=[0.000000e+00 : f32] : tile<1024x16xf32> -> tile<1024x16xf32> ")
    return sub(t, "  } loc(#loc17)\n", "  } loc(#loc17)\n  %2 = permute %s [1, 0] : tile<1024x16xf32> -> tile<16x1024xf32>\n")


REWRITES = [
    ("softmax", "every SSA value renamed", _rename),
    ("matmul", "every SSA value renamed", _rename),
    ("softmax", "a constant materialised twice", _dup_const),
    ("softmax", "loop-invariant view built inside the loop", _sink_view),
    ("silu_and_mul", "independent ops reordered", _swap_independent),
    ("silu_and_mul", "operands of a commutative mulf swapped", lambda t: sub(t, "mulf %6, %2", "mulf %2, %6")),
    ("gelu", "operands of a commutative addf swapped", lambda t: sub(t, "addf %bcast_10, %7", "addf %7, %bcast_10")),
    ("relu", "an assume and a bounds-check assert added", _assume_and_assert),
    ("bmm", "duplicated block-id queries merged", _cse_block_ids),
    ("silu_and_mul", "scalar 1.0 as a full-shape constant", _splat_constant),
    ("relu", "one token per tensor", _token_per_tensor),
    ("gelu", "dead ops added", _dead_code),
    ("layer_norm", "identity broadcast inserted", _identity_broadcast),
    ("rms_norm", "debug locations stripped", lambda t: re.sub(r" loc\(#loc\d*\)", "", t)),
    ("relu", "a constant spelled as its bits", lambda t: sub(t, "<f16: 0.000000e+00>", "<f16: 0x0000>")),
    ("relu", "an f16 constant made as an f32 constant converted", _f32_constant_converted),
    ("relu", "hints keyed by the compile target (others' do not apply)", _hints_by_target),
    ("alias_kernel", "a partition view made before an independent load", _view_built_earlier),
    ("alias_kernel", "every SSA value renamed", _rename),
    ("store_helper_kernel", "a scalar operand of mulf at full shape", _full_shape_scale),
    ("static_arith_kernel", "a constant made before an independent load", _constant_made_first),
    ("launch_hints_kernel", "hints keyed by the compile target", lambda t: sub(t, "optimization_hints=<default = {num_cta_in_cga = 1, occupancy = 4}>", "optimization_hints=<sm_90 = {num_cta_in_cga = 1, occupancy = 4}, sm_100 = {occupancy = 1}>")),
    ("helper_fma_kernel", "the fma's factors commuted", lambda t: sub(t, "fma %bcast, %tile, %tile", "fma %tile, %bcast, %tile")),
    ("fma_choice_kernel", "the sum's broadcast made once for both uses", lambda t: sub(t, "%6 = fma %4, %bcast_7, %5", "%6 = fma %4, %bcast_4, %5")),
    ("numpy_dtype_kernel", "operands of a commutative mulf swapped", lambda t: sub(t, "mulf %1, %3", "mulf %3, %1")),
    ("shared_input_kernel", "operands of a commutative fma product swapped", lambda t: sub(t, "fma %tile, %tile_7, %1", "fma %tile_7, %tile, %1")),
    ("select_kernel", "a >= b written as b <= a", _mirrored_comparison),
    ("select_kernel", "a scalar operand of select at full shape", _full_shape_scalar),
    ("gather_kernel", "padding as a select after a masked load", _padding_by_select),
    ("gather_kernel", "the unread padding of an unmasked load dropped", _unread_padding_dropped),
    ("gather2d_pad_kernel", "every SSA value renamed", _rename),
    ("gather1d_kernel", "an index widened once for gather and scatter", _one_widening),
    ("intdiv_kernel", "every SSA value renamed", _rename),
    ("shapes_kernel", "a reshape of a reshape as one reshape", _one_reshape),
    ("bitwise_kernel", "operands of | and & commuted", _commuted_bitwise),
    ("control_kernel", "constants hoisted out of / sunk into regions", _hoisted_out_of_regions),
    ("helper_kernel", "a splat shared by two uses", _shared_one),
    ("rounding_kernel", "independent exp and tanh reordered", _swap_exp_tanh),
    ("aliases_kernel", "the unread padding of an unchecked gather changed", lambda t: sub(t, "%cst_0_f16 = constant <f16: 0.000000e+00> : tile<f16>", "%cst_0_f16 = constant <f16: 1.000000e+00> : tile<f16>")),
    ("scan_kernel", "scan combiner operands commuted", lambda t: sub(t, "addi %arg10, %arg11 : tile<i32>", "addi %arg11, %arg10 : tile<i32>")),
    ("atomic_kernel", "a three-way join_tokens in another order", lambda t: sub(t, "join_tokens %result_token_11, %4, %result_token_7", "join_tokens %result_token_7, %result_token_11, %4")),
    ("return_kernel", "the body in a loop that returns once", _body_in_single_pass_loop),
    ("item_kernel", "item() then a unit axis again as one reshape", lambda t: sub(t, "%reshape_13 = reshape %reshape_8 : tile<f16> -> tile<1xf16>", "%reshape_13 = reshape %tile_6 : tile<1xf16> -> tile<1xf16>")),
    ("views_kernel", "a three-way join in another order", lambda t: sub(t, "%9 = join_tokens %8, %3, %result_token_20", "%9 = join_tokens %result_token_20, %3, %8")),
    ("tokens_kernel", "join_tokens operands in the other order", lambda t: sub(t, "join_tokens %iterArg0, %result_token_25", "join_tokens %result_token_25, %iterArg0")),
    ("dtypes_kernel", "the index array loaded before the data array", _index_view_first),
    ("promote_kernel", "an f16 constant made as a converted f32 one", _f16_scalar_from_f32),
    ("single_trip_kernel", "the one-trip loop's index read as its start", lambda t: sub(t, "%6 = muli %loopIdx, %cst_1024_i32 : tile<i32> loc(#loc30)", "%6 = muli %cst_0_i32, %cst_1024_i32 : tile<i32> loc(#loc30)")),
    ("single_trip_kernel", "bounded<0, 0> assumed on the one-trip loop's index", lambda t: _assume_on_index(t, "0, 0")),
    ("single_trip_kernel", "bounded<0, 1> assumed on the two-trip loop's index", lambda t: _assume_on_index(t, "0, 1", first=False)),
    ("loop_split_kernel", "the split point's min with its operands commuted", lambda t: sub(t, "%3 = mini %1, %2 signed", "%3 = mini %2, %1 signed")),
    ("reduce_all_kernel", "max combiners' operands commuted", lambda t: sub(t, "%6 = maxf %reduce_lhs, %reduce_rhs", "%6 = maxf %reduce_rhs, %reduce_lhs", 2)),
    ("matmul_kernel", "every SSA value renamed", _rename),
    ("dtype_call_kernel", "every SSA value renamed", _rename),
    ("scan_axis_kernel", "a scan along axis 1 as permute, scan along axis 0, permute back", _scan_through_permutes),
    ("shape_last_kernel", "every SSA value renamed", _rename),
    ("fma_rebind_kernel", "every SSA value renamed", _rename),
    ("tiled_atomic_kernel", "every SSA value renamed", _rename),
    ("scalar_load_kernel", "the loop index assumed within the loop's own bounds", lambda t: sub(t, "(tile<1024xf16>) {\n    %reshape_10 = reshape %loopIdx", "(tile<1024xf16>) {\n    %lo = assume bounded<1, 1023>, %loopIdx : tile<i32>\n    %reshape_10 = reshape %lo")),
    ("grid_axis_kernel", "every SSA value renamed", _rename),
    ("tile_if_kernel", "the 0-d tile condition a < b written as b > a", lambda t: sub(t, "cmpi less_than %5, %result, signed", "cmpi greater_than %result, %5, signed")),
    ("int_variant_kernel", "every SSA value renamed", _rename),
    ("i64_constexpr_kernel", "two equal int64 constants made once", lambda t: sub(t, "addi %result, %cst_1024_i64_0", "addi %result, %cst_1024_i64")),
    ("zero_d_index_kernel", "the operands of max commuted", lambda t: sub(t, "maxi %cst_0_i32_10, %12 signed", "maxi %12, %cst_0_i32_10 signed")),
    ("bool_cast_kernel", "every SSA value renamed", _rename),
    ("slice_kernel", "every SSA value renamed", _rename),
    ("slice_kernel", "one stop - start for both row slices", lambda t: sub(t, "%assume_15 = assume bounded<0, ?>, %9 ", "%assume_15 = assume bounded<0, ?>, %5 ")),
    ("splat_expr_kernel", "operands of the commutative addi swapped", lambda t: sub(t, "%15 = addi %bcast, %1 ", "%15 = addi %1, %bcast ")),
    ("mma_cast_kernel", "the accumulator constant made before the load", _accumulator_made_first),
    ("helper_carry_kernel", "operands of a commutative addf in the loop swapped", lambda t: sub(t, "%8 = addf %iterArg0, %7 ", "%8 = addf %7, %iterArg0 ")),
    ("boolop_kernel", "every SSA value renamed", _rename),
    ("split_loop_kernel", "operands of the split's mini / maxi commuted", lambda t: sub(sub(t, "%3 = mini %1, %2 signed", "%3 = mini %2, %1 signed"), "%4 = maxi %cst_0_i32, %2 signed", "%4 = maxi %2, %cst_0_i32 signed")),
    ("scalar_tile_kernel", "operands of max(tile, ...) commuted", lambda t: sub(t, "%3 = maxf %1, %bcast", "%3 = maxf %bcast, %1")),
    ("helper_loop_kernel", "operands of the counter's addi commuted", lambda t: sub(t, "%15 = addi %iterArg0, %cst_1_i32_5", "%15 = addi %cst_1_i32_5, %iterArg0")),
    ("const_product_kernel", "every SSA value renamed", _rename),
    ("dead_yield_kernel", "every SSA value renamed", _rename),
]


# (op, mutant, edit): a hint that only changes speed, changed -- a `hint` warning (PASS_WITH_NOTES)
HINT_MUTANTS = [
    ("api_views_kernel", "load latency 3 -> 2", lambda t: sub(t, "{allow_tma = false, latency = 3}", "{allow_tma = false, latency = 2}")),
    ("api_views_kernel", "load allow_tma=False dropped", lambda t: sub(t, "{allow_tma = false, latency = 3}", "{latency = 3}")),
    ("api_more_kernel", "scatter latency 2 dropped", lambda t: sub(t, " optimization_hints = <default = {latency = 2}> : tile<1024xptr<f16>>", " : tile<1024xptr<f16>>")),
    ("api_views_kernel", "store latency 2 dropped", lambda t: sub(t, "optimization_hints = <default = {latency = 2}> : tile<16x1024xf16>", ": tile<16x1024xf16>")),
]


@pytest.mark.parametrize("op,name,edit", HINT_MUTANTS, ids=[f"{o}:{n}" for o, n, _ in HINT_MUTANTS])
def test_hint_mutant_is_a_warning(op, name, edit):
    original = ref(op)
    res = diff_ir(original, edit(original), f"{op}.ref.tileir", f"{op}.mutant.tileir", TARGET)
    assert res.verdict == "PASS_WITH_NOTES", f"{name}: {res.summary}"
    assert {f.category for f in res.findings if f.severity == "warn"} == {"hint"}, res.summary


def critical_categories(res) -> set:
    return {f.category for f in res.findings if f.severity == "critical"}


@pytest.mark.parametrize("op", OPS + sorted(p.name.split(".")[0] for p in CONSTRUCTS.glob("*.ref.tileir")))
def test_real_pairs_pass(op):
    port = ((CONSTRUCTS if op.endswith("_kernel") else DATA) / f"{op}.port.tileir").read_text()
    res = diff_ir(ref(op), port, target=TARGET)
    assert res.verdict == "PASS", res.summary


@pytest.mark.parametrize("op", ["softmax", "rms_norm", "layer_norm"])
def test_persistent_loop_ports_have_no_assert_the_reference_lacks(op):
    """The persistent-loop ports read and write through cutile's raw load_view_tko /
    store_view_tko, as the reference does: no bounds assert in their IR (a checked partition
    load/store leaves one the compiler cannot discharge in the loop, and costs device time)."""
    port = (DATA / f"{op}.port.tileir").read_text()
    assert not re.search(r"^\s*assert\b", port, re.M)
    res = diff_ir(ref(op), port)
    assert res.verdict == "PASS" and res.stats["asserts_removed"] == {"ref": 0, "port": 0}, res.summary


@pytest.mark.parametrize("op,name,edit,category", MUTANTS, ids=[f"{m[0]}:{m[1]}" for m in MUTANTS])
def test_meaning_changing_mutant_fails(op, name, edit, category):
    original = ref(op)
    mutant = edit(original)
    assert mutant != original
    res = diff_ir(original, mutant, f"{op}.ref.tileir", f"{op}.mutant.tileir", TARGET)
    assert res.verdict == "FAIL", f"{name}: {res.summary}"
    assert category in critical_categories(res), (name, critical_categories(res), res.summary)
    assert res.first_divergence is not None and res.first_divergence.severity == "critical"


@pytest.mark.parametrize("op,name,edit", REWRITES, ids=[f"{r[0]}:{r[1]}" for r in REWRITES])
def test_meaning_keeping_rewrite_passes(op, name, edit):
    original = ref(op)
    rewritten = edit(original)
    assert rewritten != original
    res = diff_ir(original, rewritten, target=TARGET)
    assert res.verdict == "PASS", f"{name}: {res.summary} {[f.message for f in res.findings if f.severity != 'info']}"


@pytest.mark.parametrize("name,old,new", [
    ("the launch's occupancy 4 -> the decorator's 2", "num_cta_in_cga = 1, occupancy = 4", "num_cta_in_cga = 1, occupancy = 2"),
    ("the decorator's num_ctas dropped", "<default = {num_cta_in_cga = 1, occupancy = 4}>", "<default = {occupancy = 4}>"),
])
def test_entry_hints_of_the_launch_are_compared(name, old, new):
    """launch_hints_kernel: hints change speed, not results -- a port without the launch's
    compiler_hints is not PASS but PASS_WITH_NOTES with a hint warning (issue 13: hints carried,
    not dropped)."""
    res = diff_ir(ref("launch_hints_kernel"), sub(ref("launch_hints_kernel"), old, new), target=TARGET)
    assert res.verdict == "PASS_WITH_NOTES" and {f.category for f in res.findings if f.severity == "warn"} == {"hint"}, name


@pytest.mark.parametrize("bounds,first", [("0, 0", False), ("1, 1", True)])
def test_an_assume_narrower_than_the_loop_range_is_a_note(bounds, first):
    """single_trip_kernel: an assume on a loop index that its range does not imply (index 1
    of a loop over 0..2 excluded, index 0 excluded) is a promise that side could break:
    PASS_WITH_NOTES with a hint warning, unlike one restating the range (a rewrite above)."""
    t = ref("single_trip_kernel")
    res = diff_ir(t, _assume_on_index(t, bounds, first), target=TARGET)
    assert res.verdict == "PASS_WITH_NOTES" and {f.category for f in res.findings if f.severity == "warn"} == {"hint"}


def test_a_product_left_uncontracted_is_a_note():
    """helper_fma_kernel: a port that leaves the helper's product and sum apart (two roundings
    where the reference's fma has one) is not PASS: PASS_WITH_NOTES, category math."""
    t = ref("helper_fma_kernel")
    line = line_of(t, "%1 = fma %bcast, %tile, %tile")
    loc = re.search(r" loc\(#loc\d+\)$", line).group(0)
    res = diff_ir(t, sub(t, line, f"  %p = mulf %bcast, %tile : tile<1024xf16>{loc}\n"
                                  f"  %1 = addf %p, %tile : tile<1024xf16>{loc}"), target=TARGET)
    assert res.verdict == "PASS_WITH_NOTES" and "fma" in res.summary + " ".join(f.message for f in res.findings)


def test_a_rank2_padding_by_select_is_a_warning():
    """gather2d_pad_kernel: a 2-D masked gather whose padding is a select after an unpadded
    load on one side and inside the load on the other has the same values (masked_loads folds
    them) but not the same speed: tileiras 13.4 then feeds the gathered mma operand from
    registers (sm_90 SASS of tg_fp8_quantization_matmul gather_swap, 0.57x on the H200).
    PASS_WITH_NOTES with a memory warning owned by the tool, located at the port's select; at
    rank 1 (gather_kernel) only an info note."""
    t = ref("gather2d_pad_kernel")
    res = diff_ir(t, _padding_by_select_2d(t), target=TARGET)
    (w,) = [f for f in res.findings if f.severity == "warn"]
    assert res.verdict == "PASS_WITH_NOTES" and (w.category, w.owner) == ("memory", "tool")
    assert "rank >= 2" in w.message and "port side only" in w.message and "select" in w.port["text"]
    res = diff_ir(_padding_by_select_2d(t), t, target=TARGET)      # and the other way round
    assert res.verdict == "PASS_WITH_NOTES" and "ref side only" in res.summary + " ".join(f.message for f in res.findings)
    g = ref("gather_kernel")
    res = diff_ir(g, _padding_by_select(g), target=TARGET)
    assert res.verdict == "PASS" and any(f.severity == "info" and "rank <= 1" in f.message for f in res.findings)


def test_unfolded_constexpr_division_is_a_warning_not_a_failure():
    """(TILE + 7) // 8 computed on constants in the port (divi), folded in the reference: the same
    values, so no failure, but a math warning owned by the tool naming the op (neither cutile nor
    tileiras 13.4 folds it; a loop it bounds got another pipeline on sm_90, tg_mamba2 2026-12-02)."""
    t = ref("intdiv_kernel")
    res = diff_ir(t, _unfolded_constexpr(t), target=TARGET)
    warnings = [f for f in res.findings if f.severity == "warn"]
    assert res.verdict == "PASS_WITH_NOTES", res.summary
    assert len(warnings) == 1 and warnings[0].category == "math" and "`divi`" in warnings[0].message


def test_catch_rate():
    """The figures for the report: every mutant caught, no false alarm."""
    caught = sum(diff_ir(ref(op), e(ref(op)), target=TARGET).verdict == "FAIL" for op, _, e, _ in MUTANTS)
    false_alarms = sum(diff_ir(ref(op), e(ref(op)), target=TARGET).verdict != "PASS" for op, _, e in REWRITES)
    print(f"\nmutation suite: {caught}/{len(MUTANTS)} meaning-changing mutants caught, "
          f"{false_alarms}/{len(REWRITES)} false alarms on meaning-keeping rewrites")
    assert len(MUTANTS) >= 30 and len(REWRITES) >= 10
    assert {m[0] for m in MUTANTS} >= set(OPS), "mutants come from all eight operators"
    construct_kernels = yaml.safe_load((Path(__file__).parent / "data" / "operators" / "constructs"
                                        / "manifest.yaml").read_text())["kernels"]
    for k in construct_kernels:       # and from every construct kernel, both ways
        assert k in {m[0] for m in MUTANTS} and k in {r[0] for r in REWRITES}, k
    assert caught == len(MUTANTS) and false_alarms == 0


def _constant_trip_loop(t: str, hi: int | None) -> str:
    """split_loop_kernel's last loop run over a constant range 0..64; with ``hi``, the loop
    index read through ``assume bounded<0, hi>`` (as cutile's frontend writes it)."""
    t = sub(t, "%cst_0_i32_11 = constant <i32: 0> : tile<i32> loc(#loc55)",
            "%cst_0_i32_11 = constant <i32: 0> : tile<i32> loc(#loc55)\n"
            "  %cst_64_stop = constant <i32: 64> : tile<i32> loc(#loc55)")
    t = sub(t, "(%cst_0_i32_11 to %1, step", "(%cst_0_i32_11 to %cst_64_stop, step")
    if hi is None:
        return t
    line = line_of(t, "%17 = cmpi less_than_or_equal %loopIdx, %2")
    t = sub(t, line, f"    %li = assume bounded<0, {hi}>, %loopIdx : tile<i32> loc(#loc57)\n" + line)
    return sub(t, "cmpi less_than_or_equal %loopIdx, %2", "cmpi less_than_or_equal %li, %2")


@pytest.mark.parametrize("hi,verdict", [(63, "PASS"), (100, "PASS"), (31, "PASS_WITH_NOTES")])
def test_an_assume_of_the_loops_own_range_is_no_difference(hi, verdict):
    """An ``assume bounded<lo, hi>`` on a for loop's index that the loop's constant start and
    stop already imply (cutile writes one, cuTile Python does not) promises nothing new: PASS.
    A tighter bound is a promise of its own: a hint warning."""
    t = _constant_trip_loop(ref("split_loop_kernel"), None)
    res = diff_ir(t, _constant_trip_loop(ref("split_loop_kernel"), hi), target=TARGET)
    assert res.verdict == verdict, res.summary
