"""Exact float constants: IEEE 754 encodings and conversions, and the bits of a printed Tile IR
constant (shared by the translator, which must write every constant's bits, and the IR diff).

tileirdisasm prints a float constant in decimal when that text reads back to the same bits,
else as the hexadecimal bit pattern (``<f16: -0.000000e+00>``, ``<f32: 5.99999978E-8>``,
``<f16: 0x7C00>``; MLIR's float attribute printer, seen with tileirdisasm 13.4). Two spellings
of one value must compare equal and two values must never, so the IR diff compares constants by
their bits (:func:`canonical`), and folds a conversion of a constant (``ftof``, ``bitcast``)
into the constant it computes (:func:`convert`), with IEEE 754 round-to-nearest-even.
"""
from __future__ import annotations

import math
import re

# element type -> (exponent bits, explicit mantissa bits)
FORMATS = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}


def _width(fmt: str) -> int:
    e, m = FORMATS[fmt]
    return 1 + e + m


def encode(v: float, fmt: str) -> int:
    """Bits of the ``fmt`` value nearest to the Python float ``v`` (round to nearest, ties to
    even; overflow to infinity; subnormals and the sign of zero kept). A NaN becomes the quiet
    NaN with an empty payload."""
    e_bits, m_bits = FORMATS[fmt]
    sign = (1 << (e_bits + m_bits)) if math.copysign(1.0, v) < 0 else 0
    exp_all = (1 << e_bits) - 1
    if math.isnan(v):
        return sign | (exp_all << m_bits) | (1 << (m_bits - 1))
    a = abs(v)
    if math.isinf(a):
        return sign | (exp_all << m_bits)
    if a == 0.0:
        return sign
    bias = (1 << (e_bits - 1)) - 1
    emin = 1 - bias
    _, e = math.frexp(a)               # a = m * 2**e, 0.5 <= m < 1
    u = e - 1                          # a = 1.f * 2**u
    if u < emin:                       # subnormal: a multiple of 2**(emin - m_bits)
        q = round(math.ldexp(a, m_bits - emin))       # round() ties to even; exact scaling
        return sign | q                # q == 2**m_bits is the smallest normal: same bits
    q = round(math.ldexp(a, m_bits - u))
    if q == 1 << (m_bits + 1):         # rounded up to the next binade
        q, u = q >> 1, u + 1
    if u > bias:
        return sign | (exp_all << m_bits)
    return sign | ((u + bias) << m_bits) | (q - (1 << m_bits))


def decode(bits: int, fmt: str) -> float:
    """The Python float (exact: every format here fits in f64) of ``fmt`` bits."""
    e_bits, m_bits = FORMATS[fmt]
    sign = -1.0 if bits >> (e_bits + m_bits) & 1 else 1.0
    exp = bits >> m_bits & ((1 << e_bits) - 1)
    man = bits & ((1 << m_bits) - 1)
    bias = (1 << (e_bits - 1)) - 1
    if exp == (1 << e_bits) - 1:
        return sign * math.inf if man == 0 else math.nan
    if exp == 0:
        return sign * math.ldexp(man, 1 - bias - m_bits)
    return sign * math.ldexp(man | (1 << m_bits), exp - bias - m_bits)


def is_nan(bits: int, fmt: str) -> bool:
    e_bits, m_bits = FORMATS[fmt]
    return (bits >> m_bits & ((1 << e_bits) - 1)) == (1 << e_bits) - 1 and bits & ((1 << m_bits) - 1) != 0


def convert(bits: int, src: str, dst: str) -> int:
    """``ftof`` with round-to-nearest-even: ``src`` bits -> ``dst`` bits. A NaN keeps its sign
    and the top of its payload (quiet bit set), as APFloat converts it (f32 ``0x7FC00000`` ->
    f16 ``0x7E00``, the NaN cuTile Python writes for ``math.nan``)."""
    if is_nan(bits, src):
        se, sm = FORMATS[src]
        de, dm = FORMATS[dst]
        payload = bits & ((1 << sm) - 1)
        payload = payload >> (sm - dm) if sm >= dm else payload << (dm - sm)
        sign = (bits >> (se + sm)) & 1
        return (sign << (de + dm)) | (((1 << de) - 1) << dm) | payload | (1 << (dm - 1))
    return encode(decode(bits, src), dst)


def parse(text: str, fmt: str) -> int | None:
    """Bits of a printed ``fmt`` constant (decimal or ``0x`` bit pattern); None if unreadable."""
    t = text.strip()
    try:
        if re.fullmatch(r"-?0x[0-9A-Fa-f]+", t):
            bits = int(t.lstrip("-"), 16)
            return bits ^ (1 << (_width(fmt) - 1)) if t.startswith("-") else bits
        return encode(float(t), fmt)
    except (ValueError, OverflowError):
        return None


def canonical(fmt: str, bits: int) -> str:
    """The constant attribute as compared: value and bits (``<f16: -0.0 0x8000>``)."""
    return f"<{fmt}: {decode(bits, fmt)!r} 0x{bits:0{_width(fmt) // 4}X}>"
