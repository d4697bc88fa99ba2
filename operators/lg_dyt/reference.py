"""PyTorch semantics of Liger's Dynamic Tanh (tilegym.suites.liger.cutile.dyt):
y = tanh(alpha * x) * gamma + beta over the last dim, and its backward as the suite's kernel
splits it into per-block partial sums (block row s takes rows s, s + NUM_SMS, ...)."""
import torch


def reference(x, alpha, gamma, beta, *, HAVE_BETA):
    """y (M, N) from x (M, N), alpha (1,), gamma (N,), beta (N,) or a 1-element dummy."""
    y = torch.tanh(alpha.float() * x.float()) * gamma.float()
    if HAVE_BETA:
        y = y + beta.float()
    return y.to(x.dtype)


def torch_impl(x, alpha, gamma, beta, *, HAVE_BETA):
    """The same in native-dtype ATen ops (the benchmark's torch baseline)."""
    y = torch.tanh(alpha * x) * gamma
    return y + beta if HAVE_BETA else y


def _by_block_row(t, num_blocks):
    """(M, ...) -> (num_blocks, ...): the sum of rows r with r % num_blocks == s, per s."""
    m = t.shape[0]
    pad = (-m) % num_blocks
    t = torch.cat([t, t.new_zeros((pad,) + tuple(t.shape[1:]))]) if pad else t
    return t.reshape(-1, num_blocks, *t.shape[1:]).sum(0)


def dyt_backward_reference(dy, x, alpha, gamma, *, NUM_SMS, BLOCK_N):
    """dx (M, N) in x's dtype, and the fp32 partials: d_alpha (NUM_SMS, cdiv(N, BLOCK_N)),
    d_gamma and d_beta (NUM_SMS, N); summing each over dim 0 gives the parameter gradients."""
    xf, dyf, g = x.float(), dy.float(), gamma.float()
    a = alpha.float()
    t = torch.tanh(a * xf)
    tmp = (1.0 - t * t) * dyf * g
    dx = (a * tmp).to(x.dtype)
    n = x.shape[1]
    blocks = -(-n // BLOCK_N)
    pad = blocks * BLOCK_N - n
    xt = torch.nn.functional.pad(xf * tmp, (0, pad)).reshape(x.shape[0], blocks, BLOCK_N).sum(-1)
    da = _by_block_row(xt, NUM_SMS)
    dg = _by_block_row(dyf * t, NUM_SMS)
    db = _by_block_row(dyf, NUM_SMS)
    return dx, da, dg, db


def dyt_backward_torch(dy, x, alpha, gamma, *, NUM_SMS, BLOCK_N):
    """The gradients through torch.autograd in the native dtype, shaped as the partials (the
    full sums in row 0, zeros elsewhere): a timing baseline, not the oracle."""
    xr, ar, gr = x.detach().requires_grad_(), alpha.detach().requires_grad_(), gamma.detach().requires_grad_()
    br = torch.zeros_like(gr, requires_grad=True)
    y = torch.tanh(ar * xr) * gr + br
    dx, da, dg, db = torch.autograd.grad(y, (xr, ar, gr, br), dy)
    blocks = -(-x.shape[1] // BLOCK_N)
    pa = torch.zeros(NUM_SMS, blocks, dtype=torch.float32, device=x.device)
    pa[0, 0] = da.float().sum()
    pg = torch.zeros(NUM_SMS, x.shape[1], dtype=torch.float32, device=x.device)
    pb = pg.clone()
    pg[0], pb[0] = dg.float(), db.float()
    return dx, pa, pg, pb
