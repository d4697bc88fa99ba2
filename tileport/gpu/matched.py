"""The matched reading of a benchmark config (issue 31 item 3): the cuTile Python reference
compiled under the launch facts cutile 0.5.0's launcher gives the port, so that both sides run
under the same specialisation and a ratio measures the port, not the launchers.

Each runtime specialises a kernel at launch (docs/stages-and-verdicts.md, stage runtime_ir):
cuda-tile 1.7.0's ``ct.launch`` tells the compiler an extent is divisible by 16 or nothing,
cutile 0.5.0 each extent's and stride's largest power-of-two divisor up to 16
(:func:`tileport.model.launch_facts.port_facts`). :func:`matched_kernel` wraps a ``@ct.kernel``
so that the signature ``ct.launch`` computes for a call is strengthened with the port's facts
about the very tensors of that call before cuda-tile compiles it; the launch itself (arguments,
calling convention, grid) is ``ct.launch``'s own. What cannot be matched is said, never dropped
(:attr:`MatchedKernel.notes`): cuda-tile has no divisibility constraint for a scalar (cutile hints
every integer scalar), a list of arrays keeps ``ct.launch``'s facts, and an extent or stride the
launcher makes a constant stays one.
"""
from __future__ import annotations

import dataclasses
import functools

from tileport.model import launch_facts as lf


def tensor_facts(x) -> lf.ArrayFacts | None:
    """cutile 0.5.0's launch facts about the torch tensor ``x`` (extents, strides in elements,
    ``data_ptr()`` in bytes); None for anything that is not a tensor."""
    if not (hasattr(x, "data_ptr") and hasattr(x, "stride")):
        return None
    return lf.port_facts_at(tuple(x.shape), tuple(x.stride()), int(x.data_ptr()))


def strengthen(c, f: lf.ArrayFacts):
    """``ct.launch``'s ``ArrayConstraint`` ``c`` with the divisors of ``f`` added: per extent and
    stride the larger of the two divisors (1 where ``c`` makes it a constant), the base address
    likewise (bytes). Raises ValueError when ``f`` has another rank than ``c``."""
    from cuda.tile.compilation import ArrayConstraint

    if len(f.shape_div) != c.ndim:
        raise ValueError(f"launch facts of rank {len(f.shape_div)} for an array of rank {c.ndim}")
    shape_div = [1 if k is not None else max(a, b)
                 for a, b, k in zip(c.shape_divisible_by, f.shape_div, c.shape_constant)]
    stride_div = [1 if k is not None else max(a, b)
                  for a, b, k in zip(c.stride_divisible_by, f.stride_div, c.stride_constant)]
    return ArrayConstraint(c.dtype, c.ndim, index_dtype=c.index_dtype,
                           stride_lower_bound_incl=list(c.stride_lower_bound_incl),
                           alias_groups=list(c.alias_groups), may_alias_internally=c.may_alias_internally,
                           stride_constant=list(c.stride_constant), shape_constant=list(c.shape_constant),
                           stride_divisible_by=stride_div, shape_divisible_by=shape_div,
                           base_addr_divisible_by=max(c.base_addr_divisible_by, f.base_div))


def matched_signature(signature, facts: list):
    """``signature`` (a cuda-tile ``KernelSignature`` as ``ct.launch`` built it) with each array
    parameter's constraint strengthened by ``facts`` (per parameter, :func:`tensor_facts` or
    None: left as it is); the symbol is mangled again from the new constraints."""
    from cuda.tile.compilation import ArrayConstraint, KernelSignature

    params = [strengthen(c, f) if isinstance(c, ArrayConstraint) and f is not None else c
              for c, f in zip(signature.parameters, facts)]
    return KernelSignature(params, signature.calling_convention)


@functools.cache
def _matched_class():
    """The ``ct.kernel`` subclass whose compilation step applies :func:`matched_signature`
    (made once; cuda.tile is imported only here)."""
    import cuda.tile as ct

    class MatchedKernel(ct.kernel):
        """A ``@ct.kernel`` compiled with the port's launch facts; its own JIT cache."""

        def __new__(cls, base, facts, notes):
            return super().__new__(cls, base._pyfunc, **dataclasses.asdict(base._compiler_options))

        def __init__(self, base, facts, notes):
            super().__init__(base._pyfunc, **dataclasses.asdict(base._compiler_options))
            self.facts, self.notes, self.symbols = list(facts), list(notes), []

        def _compile(self, signature, context, compute_capability=None):
            out = super()._compile(matched_signature(signature, self.facts), context, compute_capability)
            self.symbols.append(out[1])
            return out

    return MatchedKernel


def matched_kernel(kfn, args: tuple, params: list[dict]):
    """A kernel that runs ``kfn`` (a ``@ct.kernel``, hints already applied) under the port's launch
    facts about ``args`` (the reference's launch arguments, in ``params`` order: the analysis'
    parameter list). Launch it with ``ct.launch`` exactly as ``kfn``; compile once per object, so
    make one per call's tensors (a fact true of one shape is not of another).

    ``.notes``: what the reference cannot be told (integer scalars cutile hints, lists of arrays,
    extents the launcher makes constants); ``.symbols``: the mangled names it compiled (they
    encode the facts: ``cuda/tile/compilation/_name_mangling.py``)."""
    facts, notes = [], []
    for p, a in zip(params, args):
        f = tensor_facts(a) if p["kind"] == "array" and not p.get("list") else None
        facts.append(f)
        if p["kind"] == "array" and p.get("list"):
            notes.append(f"{p['name']}: a list of arrays keeps ct.launch's facts")
        elif f is not None and any(d == 1 for d in a.shape):
            notes.append(f"{p['name']}: an extent of 1 stays ct.launch's constant (cutile hints no constant)")
        elif p["kind"].startswith("scalar") and isinstance(a, int) and not isinstance(a, bool):
            d = lf.port_scalar_hint(a)
            if d > 1:
                notes.append(f"{p['name']} = {a}: cutile hints div_by<{d}>; cuda-tile 1.7.0 has no scalar "
                              "divisibility constraint")
    return _matched_class()(kfn, facts, notes)
