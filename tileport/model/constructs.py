"""The cuTile Python constructs tileport understands, shared by the analyser and the translator.

Names are the ``cuda.tile`` function names (``ct.load``, ``ct.sum`` ...). Anything outside
these sets is reported as an unsupported construct with its ``file:line``.
Facts about each function come from the cuda.tile 1.7.0 API (``cuda/tile/_stub.py``).
"""
from __future__ import annotations

# memory: loads and stores through partition views (TMA-eligible)
MEMORY = {"load", "store", "gather", "scatter", "load_advanced_indexing"}
# atomics on pointer tiles (array, indices, update): ct name -> cutile atomic mode for float /
# int element types (None: cuTile Python rejects the dtype; cuda/tile/_ir/ops.py
# _ATOMIC_RMW_SPECS), and atomic_cas (array, indices, expected, desired)
ATOMIC_RMW = {"atomic_add": ("AddF", "Add"), "atomic_xchg": ("Xchg", "Xchg"),
              "atomic_max": (None, "Max"), "atomic_min": (None, "Min"),
              "atomic_and": (None, "And"), "atomic_or": (None, "Or"), "atomic_xor": (None, "Xor")}
ATOMICS = set(ATOMIC_RMW) | {"atomic_cas"}
# cuda.tile MemoryOrder / MemoryScope member -> cutile ordering / scope marker
MEMORY_ORDER = {"WEAK": "Weak", "RELAXED": "Relaxed", "ACQUIRE": "Acquire", "RELEASE": "Release",
                "ACQ_REL": "AcqRel"}
MEMORY_SCOPE = {"BLOCK": "TileBlock", "DEVICE": "Device", "SYS": "System",
                # no scope: what a weak load/store has (cutile drops the scope of a weak op)
                "NONE": "TileBlock"}
# reductions with (tile, axis=, keepdims=)
REDUCTIONS = {"sum": "reduce_sum", "max": "reduce_max", "min": "reduce_min", "prod": "reduce_prod"}
# prefix scans with (tile, axis=0, reverse=False): cuTile Python name -> combiner
SCANS = {"cumsum": "add", "cumprod": "mul"}
# elementwise unary math: cuTile Python name -> cuTile Rust call template ({x} = operand)
UNARY_MATH = {
    "exp": "exp({x})",
    "log": "log({x})",
    "log2": "log2({x})",
    "tanh": "tanh({x})",
    "sin": "sin({x})",
    "cos": "cos({x})",
    "abs": "absf({x})",
    "floor": "floor({x})",
    "ceil": "ceil({x})",
}
# unary math with rounding/flush-to-zero keywords: name -> (template, takes rounding, takes ftz)
FLAGGED_MATH = {
    "exp2": ("exp2({x}, ftz::{f})", False, True),
    "rsqrt": ("rsqrt({x}, ftz::{f})", False, True),
    "sqrt": ("sqrt({x}, rounding::{r}, ftz::{f})", True, True),
}
# unary math whose rounding_mode= (RoundingMode.FULL, the default, or APPROX; f32) selects
# cutile's `*_with_rounding` form (cutile 0.5.0 _core.rs: exp_with_rounding, tanh_with_rounding)
ROUNDED_MATH = {"exp": "exp_with_rounding({x}, rounding::{r})",
                "tanh": "tanh_with_rounding({x}, rounding::{r})"}
ROUNDED_MATH_MODES = {"FULL", "APPROX"}
# ct.negative(x): "Same as `-x`" (cuda/tile/_stub.py); both are _ir/ops.py's unary("neg", UNARY_INT_FLOAT, ...)
# on a tile (ct.negative through ops.unary_impl, -x through arithmetic_ops._neg_tensorlike_impl): negf on floats
NEGATION = {"negative"}
# ct.add/sub/mul/truediv (with rounding_mode=, flush_to_zero=) -> the operator they spell
ARITH = {"add": "+", "sub": "-", "mul": "*", "truediv": "/"}
BINARY_MATH = {"maximum": "max_tile", "minimum": "min_tile"}
# cuda.tile RoundingMode member -> cuTile Rust rounding marker (cuda/tile/_numeric_semantics.py)
ROUNDING = {"RN": "NearestEven", "RZ": "Zero", "RM": "NegativeInf", "RP": "PositiveInf",
            "RA": "NearestAway", "FULL": "Full", "APPROX": "Approx"}
TILE_CREATION = {"full", "zeros", "ones", "arange"}
# elementwise selection and comparison (Python's comparison operators on tiles)
SELECTION = {"where"}
# integer arithmetic calls (Python's //, % and min/max on ints are translated as operators)
INT_ARITH = {"cdiv", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_lshift",
             "bitwise_rshift", "bitwise_not"}
# Python builtins a kernel may call (cuTile Python evaluates them on its values)
BUILTINS = {"range", "min", "max"}
# ast comparison operator -> cutile predicate marker (cmpi / cmpf); cuTile Python compares
# floats `ordered` except `!=`, which is `unordered` (NaN != x is true)
COMPARISONS = {"Lt": "LessThan", "LtE": "LessThanOrEqual", "Gt": "GreaterThan",
               "GtE": "GreaterThanOrEqual", "Eq": "Equal", "NotEq": "NotEqual"}
SHAPE_OPS = {"reshape", "astype", "mma", "expand_dims", "broadcast_to", "permute", "transpose",
             "extract", "cat", "item"}
GRID = {"bid", "num_blocks", "num_tiles"}
# compile-time checks: evaluated when a variant is compiled, emit nothing
STATIC = {"static_assert"}

# methods of a cuTile Tile that spell a ct function with the tile as first argument
# (``t.astype(ct.float32)`` is ``ct.astype(t, ct.float32)``; cuda/tile/_stub.py class Tile)
TILE_METHODS = {"astype", "reshape", "permute", "transpose", "extract", "item", "insert"}

SUPPORTED_CALLS = (MEMORY | ATOMICS | STATIC | set(REDUCTIONS) | set(SCANS) | set(UNARY_MATH) | set(FLAGGED_MATH)
                   | set(ARITH) | NEGATION | set(BINARY_MATH) | TILE_CREATION | SHAPE_OPS | GRID | SELECTION
                   | INT_ARITH)

PADDING = {
    # cuda.tile PaddingMode member -> cuTile Rust padding marker
    "UNDETERMINED": "padding::None",
    "ZERO": "padding::Zero",
    "NEG_ZERO": "padding::NegZero",
    "NAN": "padding::Nan",
    "POS_INF": "padding::PosInf",
    "NEG_INF": "padding::NegInf",
}

# cuda.tile dtype attribute -> (manifest dtype code, Rust element type)
DTYPE_ATTRS = {
    "float16": ("f16", "f16"),
    "bfloat16": ("bf16", "bf16"),
    "float32": ("f32", "f32"),
    "int32": ("i32", "i32"),
    "int64": ("i64", "i64"),
    "bool_": ("bool", "bool"),
    "float64": ("f64", "f64"),
    "int8": ("i8", "i8"),
    "int16": ("i16", "i16"),
    "uint8": ("u8", "u8"),
    "uint16": ("u16", "u16"),
    "uint32": ("u32", "u32"),
    "uint64": ("u64", "u64"),
    "float8_e4m3fn": ("f8e4m3fn", "f8e4m3fn"),
    "float8_e5m2": ("f8e5m2", "f8e5m2"),
    "float8_e8m0fnu": ("f8e8m0fnu", "f8e8m0fnu"),
    # tf32 has no manifest code (no array holds it): a compute type of ct.astype / ct.mma
    "tfloat32": (None, "tf32"),
}
# manifest dtype code -> Rust element type name used as generic argument
RUST_DTYPE = {"f16": "f16", "bf16": "bf16", "f32": "f32"}

# element types the frontend treats as unrestricted floats (fma contraction applies); 'E' is
# the variant dtype, always one of f16/bf16/f32 here (an f64 or f8 variant's arrays get their
# concrete element type instead: tileport.translate.driver.CONCRETE_VARIANT_DTYPES)
FLOAT_TILE_DTYPES = {"E", "f16", "bf16", "f32", "f64"}

RUST_KEYWORDS = {"as", "break", "const", "continue", "crate", "else", "enum", "extern", "false",
                 "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
                 "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true",
                 "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "box",
                 "abstract", "become", "do", "final", "macro", "override", "priv", "typeof",
                 "unsized", "virtual", "yield", "try", "gen"}
# kernel names that would collide with the generated crate's own files (src/main.rs, lib.rs,
# irdump.rs) or its `port` module
RESERVED_KERNEL_NAMES = RUST_KEYWORDS | {"main", "lib", "irdump", "port", "core", "std", "cutile"}


def rust_ident(name: str) -> str:
    """The Rust identifier the translator gives a Python name (keywords and ``__`` names get a
    trailing ``_``); the stride spec of the IR dump must use the same spelling."""
    return name + "_" if name in RUST_KEYWORDS or name.startswith("__") else name
