"""PyTorch semantics of Unsloth's FP8 activation quantiser (act_quant_kernel_ct of
tilegym.suites.unsloth.cutile.fp8): per 128-element block of the flattened x,
scale = max|x| / 448 (1 where the block is all zeros) and y = clamp(x / scale, -448, 448) as
float8_e4m3fn (448: e4m3fn's largest finite value)."""
import torch

BLOCK = 128
FP8_MAX = 448.0


def reference(x):
    """x (numel,) f16 / bf16 / f32, numel % 128 == 0 -> (y (numel,) float8_e4m3fn,
    s (numel / 128,) fp32)."""
    xf = x.float().view(-1, BLOCK)
    amax = xf.abs().amax(dim=1)
    s = torch.where(amax == 0.0, torch.ones_like(amax), amax / FP8_MAX)
    y = (xf / s[:, None]).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return y.view(-1), s


def torch_impl(x):
    """No fused PyTorch op: the same three eager steps (absmax, divide, cast)."""
    return reference(x)
