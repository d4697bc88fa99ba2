"""PyTorch semantics of TileGym's dropout (tilegym.ops.cutile.dropout).

The keep mask is a hash of the element index, not torch's RNG: with every step wrapping to a
signed int32, h = i * 1103515245 + SEED, h ^= h >> 16, h ^= h << 8, h ^= h >> 4 (arithmetic
right shifts), and element i is kept where float32(h & 0x7fffffff) / 2147483647 > P. Kept
values are x * (1 / (1 - P)) with the factor rounded to x's dtype (0 for P >= 1), the others 0.
P and SEED reach these functions as keywords (the variant's constexprs)."""
import torch
import torch.nn.functional as F


def _i32(v: torch.Tensor) -> torch.Tensor:
    """Wrap an int64 tensor to the signed int32 range (two's complement), kept as int64."""
    return ((v + 2 ** 31) % 2 ** 32) - 2 ** 31


def keep_mask(n: int, P: float, SEED: int, device) -> torch.Tensor:
    """The bool mask (n,) of kept elements."""
    h = _i32(torch.arange(n, dtype=torch.int64, device=device) * 1103515245 + SEED)
    h = h ^ (h >> 16)
    h = _i32(h ^ _i32(h << 8))
    h = h ^ (h >> 4)
    u = (h & 0x7FFFFFFF).to(torch.float32) / torch.tensor(2147483647.0, dtype=torch.float32)
    return u > torch.tensor(P, dtype=torch.float32)


def reference(x: torch.Tensor, *, P: float, SEED: int) -> torch.Tensor:
    """output (N,) from x (N,), f16/bf16/f32."""
    scale = torch.tensor(0.0 if P >= 1.0 else 1.0 / (1.0 - P), dtype=x.dtype, device=x.device)
    return torch.where(keep_mask(x.numel(), P, SEED, x.device).view(x.shape), x * scale, torch.zeros_like(x))


def torch_impl(x, *, P, SEED):
    """PyTorch's own dropout in the native dtype: a timing baseline only (its RNG mask differs
    from the kernel's hash)."""
    return F.dropout(x, p=P, training=True)
