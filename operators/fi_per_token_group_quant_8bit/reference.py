"""PyTorch semantics of FlashInfer's per-token-group 8-bit quantisation
(tilegym.suites.flashinfer.cutile.per_token_group_quant_8bit), float8_e4m3fn output: per group
of 128 consecutive elements of a row, scale = max(max|x|, eps) / 448, and the group scaled by
1 / scale (row-major kernel) or divided by scale (column-major kernel), clamped to +-448 and
rounded to e4m3."""
import torch

GROUP = 128
EPS = 1e-10
FP8_MAX = 448.0       # torch.finfo(torch.float8_e4m3fn).max


def _groups(y_input):
    T, H = y_input.shape
    yf = y_input.float().view(T, H // GROUP, GROUP)
    scale = torch.clamp(yf.abs().amax(dim=-1), min=EPS) / FP8_MAX
    return yf, scale


def rowmajor_reference(y_input):
    """y_input (T, H) f16 / bf16 / f32 -> (y_quantized (T, H) float8_e4m3fn,
    y_scale (T, H / 128) fp32)."""
    yf, scale = _groups(y_input)
    q = (yf * (1.0 / scale)[..., None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(y_input.shape), scale


def colmajor_reference(y_input):
    """y_input (T, H) -> (y_quantized (T, H) float8_e4m3fn, y_scale (H / 128, T) fp32: the
    column-major scales' storage)."""
    yf, scale = _groups(y_input)
    q = (yf / scale[..., None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.view(y_input.shape), scale.t().contiguous()
