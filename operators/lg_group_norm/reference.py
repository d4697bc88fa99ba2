"""PyTorch semantics of Liger's GroupNorm (tilegym.suites.liger.cutile.group_norm): rows of x
(batch x NUM_CHANNELS, H), the channels of a group (NUM_CHANNELS / NUM_GROUPS consecutive ones)
share mean and rstd = 1 / sqrt(E[x^2] - mean^2 + eps) in fp32, y = (x - mean) rstd w[c] + b[c]
rounded to x's dtype. The backward with x_hat = (x - mean) rstd and wdy = w[c] dy, per group
c1 = mean(x_hat wdy), c2 = mean(wdy): dx = (wdy - (x_hat c1 + c2)) rstd, and per batch and
channel the partials sum(dy x_hat) and sum(dy), rounded to the weight's dtype."""
import torch


def _groups(t, batch, num_groups):
    """(batch x C, H) -> (batch, NUM_GROUPS, C / NUM_GROUPS x H) in fp32."""
    return t.float().reshape(batch, num_groups, -1)


def reference(x_input, weight, bias, *, NUM_CHANNELS, NUM_GROUPS, eps):
    """(y (batch x C, H) in x's dtype, mean, rstd (batch x NUM_GROUPS,) fp32)."""
    rows, h = x_input.shape
    batch = rows // NUM_CHANNELS
    x = _groups(x_input, batch, NUM_GROUPS)
    mean = x.mean(-1)
    rstd = torch.rsqrt((x * x).mean(-1) - mean * mean + eps)
    xhat = ((x - mean[..., None]) * rstd[..., None]).reshape(rows, h)
    c = torch.arange(rows, device=x_input.device) % NUM_CHANNELS
    y = xhat * weight.float()[c][:, None] + bias.float()[c][:, None]
    return y.to(x_input.dtype), mean.reshape(-1), rstd.reshape(-1)


def torch_impl(x_input, weight, bias, *, NUM_CHANNELS, NUM_GROUPS, eps):
    """ATen's group_norm in the native dtype, and the fp32 statistics (the benchmark's baseline)."""
    rows, h = x_input.shape
    batch = rows // NUM_CHANNELS
    y = torch.nn.functional.group_norm(x_input.reshape(batch, NUM_CHANNELS, h), NUM_GROUPS, weight, bias, eps)
    x = _groups(x_input, batch, NUM_GROUPS)
    mean, var = x.mean(-1), x.var(-1, unbiased=False)
    return y.reshape(rows, h), mean.reshape(-1), torch.rsqrt(var + eps).reshape(-1)


def group_norm_bwd_reference(x_input, upstream, weight, mean_stats, rstd_stats, *, NUM_CHANNELS, NUM_GROUPS):
    """(dx (batch x C, H) in x's dtype, dw_partial, db_partial (batch, C) in weight's dtype)."""
    rows, h = x_input.shape
    batch = rows // NUM_CHANNELS
    c = torch.arange(rows, device=x_input.device) % NUM_CHANNELS
    mean = mean_stats.float().repeat_interleave(NUM_CHANNELS // NUM_GROUPS)[:, None]
    rstd = rstd_stats.float().repeat_interleave(NUM_CHANNELS // NUM_GROUPS)[:, None]
    dy = upstream.float()
    xhat = (x_input.float() - mean) * rstd
    wdy = weight.float()[c][:, None] * dy
    c1 = _groups(xhat * wdy, batch, NUM_GROUPS).mean(-1).repeat_interleave(NUM_CHANNELS // NUM_GROUPS)
    c2 = _groups(wdy, batch, NUM_GROUPS).mean(-1).repeat_interleave(NUM_CHANNELS // NUM_GROUPS)
    dx = (wdy - (xhat * c1.reshape(-1)[:, None] + c2.reshape(-1)[:, None])) * rstd
    dw = (dy * xhat).sum(-1).reshape(batch, NUM_CHANNELS)
    db = dy.sum(-1).reshape(batch, NUM_CHANNELS)
    return dx.to(x_input.dtype), dw.to(weight.dtype), db.to(weight.dtype)
