"""PyTorch semantics of TileGym's fused Linear + GLU-activation stage
(tilegym.ops.cutile.linear_gluact_linear, kernel _linear_gluact_fwd_kernel).

act_in = rnd(x @ Wa^T), noact = rnd(x @ Wn^T) (fp32 products, rnd = rounding to x's dtype);
act = rnd(f(act_in)) with f computed in fp32 (ACT_TYPE 0 SiLU, 1 ReLU, 2 tanh GELU);
mul = rnd(act * noact). Returns (act, noact, mul), the kernel's three outputs.
"""
import torch
import torch.nn.functional as F


def _act(x: torch.Tensor, act_type: int) -> torch.Tensor:
    if act_type == 0:
        return F.silu(x)
    if act_type == 1:
        return torch.relu(x)
    if act_type == 2:
        return F.gelu(x, approximate="tanh")
    return x


def reference(Input, Weight_act, Weight_noact, *, ACT_TYPE: int):
    """Input (M, K), Weight_act / Weight_noact (N1, K) -> three (M, N1) tensors in Input's dtype.
    ``ACT_TYPE`` is the variant's constexpr (the harness passes keyword-only parameters by name)."""
    dt = Input.dtype
    act_in = (Input.float() @ Weight_act.float().T).to(dt)
    noact = (Input.float() @ Weight_noact.float().T).to(dt)
    act = _act(act_in.float(), ACT_TYPE).to(dt)
    return act, noact, (act.float() * noact.float()).to(dt)


def torch_impl(Input, Weight_act, Weight_noact, *, ACT_TYPE: int):
    """PyTorch's native-dtype path: two F.linear (cuBLAS) and the activation in the input dtype."""
    act_in = F.linear(Input, Weight_act)
    noact = F.linear(Input, Weight_noact)
    act = _act(act_in, ACT_TYPE)
    return act, noact, act * noact
