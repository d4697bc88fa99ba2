"""PyTorch semantics of TileGym's NVFP4 quantiser
(tilegym.ops.cutile.experimental.nvfp4_quantize, _nvfp4_quant_kernel).

Tiles of 128 rows x 64 columns, four 16-column groups per tile row. Per group:
scale = fp8_e4m3(max(amax / 6 * s_enc, 1.5258789e-05)) (zero for groups past the last row or
column), q = fp4_e2m1(x * s_enc / scale) (round to nearest even over {0, .5, 1, 1.5, 2, 3, 4, 6},
saturating at 6), packed two per byte with the even column in the low nibble. The scale bytes of
tile (bm, bn) fill bytes [512 t, 512 (t + 1)) of scales_out, t = bm * NUM_N_BLOCKS + bn, byte
(r % 32) * 16 + (r // 32) * 4 + g for tile row r and group g.
"""
import math

import torch

FP4_MAX = 6.0
E4M3_EPS = 1.5258789e-05
_FP4 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _fp4_codes(v: torch.Tensor) -> torch.Tensor:
    """e2m1 codes (sign bit 8) of fp32 values, round to nearest even, saturating."""
    grid = torch.tensor(_FP4, device=v.device)
    a = v.abs().clamp(max=FP4_MAX)
    d = (a.unsqueeze(-1) - grid).abs()
    best = d.min(dim=-1, keepdim=True).values
    ties = d == best
    # among equally near values take the even code (mantissa bit 0), as round-to-nearest-even does
    even = ties & (torch.arange(8, device=v.device) % 2 == 0)
    code = torch.where(even.any(-1), even.float().argmax(-1), ties.float().argmax(-1))
    return code | ((v < 0) & (code > 0)).to(code.dtype) << 3


def reference(x: torch.Tensor, s_enc: torch.Tensor):
    """x (rows, cols) bf16 / f16 / f32, s_enc (1,) fp32 -> (scales_out (tiles * 512,) uint8,
    packed_out (rows, cols // 2) uint8)."""
    rows, cols = x.shape
    nm, nn = math.ceil(rows / 128), math.ceil(cols / 64)
    xp = torch.zeros(nm * 128, nn * 64, device=x.device)
    xp[:rows, :cols] = x.float()
    g = xp.view(nm * 128, nn * 4, 16)
    scale = torch.clamp(g.abs().amax(-1) / FP4_MAX * s_enc, min=E4M3_EPS)          # (R, groups)
    valid = torch.zeros_like(scale, dtype=torch.bool)
    valid[:rows, :cols // 16] = True
    scale = torch.where(valid, scale, torch.zeros_like(scale))
    s8 = scale.to(torch.float8_e4m3fn)
    q = _fp4_codes(g * (s_enc / s8.float()).unsqueeze(-1)).view(nm * 128, nn * 64)[:rows, :cols]
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).to(torch.uint8)
    sb = s8.view(torch.uint8).view(nm, 4, 32, nn, 4)                 # (bm, r // 32, r % 32, bn, g)
    scales = sb.permute(0, 3, 2, 1, 4).reshape(-1)                  # tile-major, then the swizzle
    return scales, packed


def torch_impl(x, s_enc):
    """PyTorch has no NVFP4 quantiser: the same torch ops as reference()."""
    return reference(x, s_enc)
