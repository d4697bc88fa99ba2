"""Structural comparison of two Tile IR texts: the cuTile Python reference and the cuTile Rust port.

Both sides are printed by the same disassembler (``tileirdisasm``), so spelling is
uniform; what differs between the two frontends is *how* they build the same
computation (SSA names, op order, hoisting, duplicated constants, asserts, assumes,
fused multiply-adds, stride specialisation ...).  This package, step by step:

1. :mod:`.parse` parses the text (:func:`parse_tileir`) into :class:`Module` /
   :class:`Entry` / :class:`Op` / :class:`Region`, rejecting malformed input with
   :class:`IRParseError` (the op vocabulary is in :mod:`.ops`);
2. :mod:`.normalise` normalises each side (rules below, each with the reason it is sound);
3. :mod:`.graph_diff` gives every op a *structural signature*: a hash of its opname,
   attributes, result types and its operands' signatures (so it depends on dataflow only,
   never on SSA names, print order or which region it sits in), compares the multisets of
   signatures and reports the *frontier* of the difference: unmatched ops whose inputs all
   match, i.e. where the two programs first part ways (:func:`diff_ir`);
4. :mod:`.locations` attaches to each finding the source line (``kernel.py`` / the generated
   ``.rs``) its op came from; :mod:`.stage`'s :func:`run` writes the stage verdict.

Normalisation rules (applied to both sides; see the functions named in brackets):

* SSA names, entry symbol names, ``di_*`` names are ignored: signatures are built from
  dataflow, entry arguments are identified by position and type.  [_Sig]
* ``assume`` is transparent, its result aliases its operand: an assume only hands the
  optimiser a fact (bounds, divisibility); the value is unchanged.  Differences in
  assumes are reported as ``info`` at most.  [_Normaliser.assumes]
* ``assert`` ops are removed: an assert computes no value another op reads, it can only
  abort a launch that would otherwise access out of bounds; removing it leaves every value
  of a successful run unchanged.  Their count is reported as ``info``.  The translator's
  ports have none (they use cutile's raw ``load_view_tko`` / ``store_view_tko``, as the
  reference does); the rule is for ports written by an LLM or by hand, where cutile's
  idiomatic checked ``Partition::load`` / ``store`` add partition bounds checks that the
  Python frontend never emits.  [_Normaliser.asserts]
* A ``bitcast`` whose result type is its operand's type is its operand (the same bits read as
  the same type; cutile writes one to use an int64 tile as its ``u64``, the same Tile IR
  ``i64``).  [_Normaliser.identity_bitcasts]
* Dead pure ops are removed (liveness from side effects): an op whose results nobody
  reads and that has no effect cannot change the kernel's outputs.  Loads are kept
  (counted as memory traffic) even when dead.  [_Normaliser.dce]
* Pure ops with identical signatures are one op (common-subexpression merge): a pure op
  is a function of its operands and attributes, so two copies compute the same value.
  ``make_token`` takes no operand and is pure: all tokens it makes are equivalent.
  Pure ops therefore compare as a *set*, side-effecting ops as a *multiset*.  [_compare]
* ``broadcast``/``reshape`` whose input type equals its output type is the identity; a
  ``reshape`` of a ``reshape`` is one ``reshape`` (row-major order is kept).
* Splats: any chain of ``reshape``/``broadcast`` starting from a rank-0 value ``x`` is
  ``splat(x, T)`` (every element equals ``x``); a splat of a rank-0 ``constant`` is that
  constant at type ``T``.  Frontends differ in how they materialise scalars.
* ``fma a, b, negf(c)`` is ``subf(mulf(a, b), c)`` (IEEE 754 defines x - y as x + (-y)); the
  Python frontend contracts ``a*b - c`` that way. Likewise ``addf(x, negf(y))`` (either operand
  order) is ``subf(x, y)``.
* ``fma a, b, c`` is ``addf(mulf(a, b), c)`` carrying the fma's rounding / flush-to-zero
  flags: the Python frontend contracts ``a*b+c`` itself, the Rust frontend leaves the
  contraction to the translator; an unfused pair rounds twice and tileiras does not
  always contract it, so a difference is reported as ``warn`` (math, kernel).
* A ``loop`` without carried values or results whose body ends in ``return`` and has no
  ``continue``/``break`` of its own runs once and ends the kernel: it is its body, what follows
  it is unreachable.  [_Normaliser.single_pass_loops]  (A port of a kernel that returns early
  runs in one: cutile lowers ``return`` only inside a ``loop``.)
* In the kernel's tail (its top-level body before the final ``return``, and the branches of
  an ``if`` rewritten so), ``if c { A; return } else { B }; rest`` with no ``if`` results is
  ``if c { A } else { B; rest }``: a guard clause as cuTile Python writes it and as the port
  does (``rest`` runs only where ``c`` is false).  [_Normaliser.guard_returns]
* An ``if`` result that every branch going on past the ``if`` yields as the same value is that
  value (a branch ending in ``return`` yields nothing), innermost ``if`` first so an outer
  branch yielding a nested ``if``'s forwarded result forwards it too (cutile carries every
  loop-carried value through an ``if`` in a loop); an empty ``yield`` is a branch's
  implicit end.  [_Normaliser.if_forwarding]  An ``if`` whose branch returns is an effect.
* ``join_tokens`` is an unordered set; ``make_token`` operands of a join are dropped
  (a fresh token carries no ordering) and a join of one token is that token; a memory op's
  ``token=`` from ``make_token`` is dropped too (it orders the op after nothing).
* A masked ``load_ptr_tko`` whose only user is ``select(mask, load, pad)`` with the same mask
  is the load with padding ``pad`` (masked-off lanes are undefined, the select gives them
  ``pad``; cutile has no scalar of a generic element type to pass as padding); the padding of
  a load without a mask is never read and is dropped.  [_Normaliser.masked_loads]  The two
  forms compile differently: a select folded on one side only is a ``memory`` warning (owner
  ``tool``) where the load has rank >= 2 (tileiras 13.4 then feeds a gathered mma operand
  from registers: sm_90 SASS of tg_fp8_quantization_matmul, 0.57x), an info note below.
* ``get_index_space_shape`` of a partition view reads only the tensor view and the
  tile shape, never the padding value (the index space is ``ceil(shape / tile)``), so
  it is rewritten to read the tensor view directly with the padding erased.
* Stride specialisation: where one side builds a tensor view with a static stride
  (``strides = [%s, 1]``) and the other reads that stride at run time, the dynamic side
  is specialised to the constant.  This equals the reference exactly when the run-time
  stride has that value, which the port's host launcher must guarantee (the Rust
  launcher is compiled for declared strides); it is reported as ``info`` (memory, host).
  ``strides=[...]`` is then erased from the *types* of all ops: the strides are carried
  by the ``make_tensor_view`` op that every user of the view reaches through dataflow.
* ``cmpi``/``cmpf`` ``greater_than[_or_equal] a, b`` is ``less_than[_or_equal] b, a``
  (same signedness / ordering).  [_Normaliser.comparisons]
* Float constants compare by their bits; ``ftof`` (nearest even) and ``bitcast`` of a
  constant are the constant they compute (cutile makes an f16/bf16 constant as a converted
  f32 one).  Integer ops whose operands are all constants are the constant they compute
  (exact two's complement arithmetic with the op's signedness and rounding; not folded:
  division by zero, an overflow the op flags as poison), and a ``select`` on a constant
  condition is the chosen operand: cuTile Python folds constexpr arithmetic (``(T + 7) //
  8``), cutile emits the ops on constants.  [_Normaliser.constants]  A ``divi`` / ``remi`` so
  folded on one side only is a ``math`` warning (owner ``tool``) naming the op and its line:
  neither cutile nor tileiras 13.4 folds it, and a loop it bounds is not unrolled (tg_mamba2,
  11 % slower).  [_Differ._unfolded_ints]
* The induction variable of a ``for`` with constant bounds that runs exactly once (start <
  stop <= start + step) is the constant ``start``: it takes no other value.  cutile knows
  the range and folds ``j * TILE`` to 0 there; cuTile Python keeps the ``muli``.
  [_Normaliser._single_trip]
* A ``for`` with constant bounds, stop <= start and a positive step never runs its body: its
  results are its init values and it has no effect (Tile IR spec 8.5.4, ``cuda_tile.for``:
  the body runs for each index in ``[lowerBound, upperBound)``, the results are the carried
  variables' last values, the op has an effect only through its region).  cuTile Python
  keeps ``range(0)`` of a constexpr; cutile 0.5.0 cannot write it (it assumes the index in
  ``[0, -1]``), so the port leaves it out.  A removal on one side only is an ``info`` note.
  [_Normaliser.zero_trip_loops]
* Commutative ops (addf, mulf, maxf, minf, addi, muli, maxi, mini, andi, ori, xori)
  compare their two operands as an unordered pair; everything else keeps order.
* Loop-invariant code motion does not matter: an op's signature does not depend on the
  region it sits in, only on its operands; a region's block arguments are signed from
  the owning op's *header* (opname, attributes, operand signatures), the index and the
  type, and a region op (for/loop/if/reduce/scan) is signed from its header plus the
  multiset of signatures of its body's side effects and terminators (yield/continue/
  break), which captures e.g. a reduction's combiner.  Loads are not part of that
  multiset because the Python compiler hoists invariant loads out of loops.  Where an op
  sits is compared apart (it changes what tileiras emits): a load one side runs inside more
  loops is a ``memory`` warning, another op an info note (owner ``tool``).
  [_Differ._loop_placement]
* Hints (op ``optimization_hints = <...>``, bare ``latency = N`` / ``allow_tma = b``,
  entry ``optimization_hints=<...>`` with ``num_cta_in_cga``, ``occupancy`` ...) are
  stripped from signatures and compared separately on matched ops/entries (``warn``,
  category hint).  Empty hint groups (``default = {}``) equal no hints.  Given the compile
  target, hints compare as they apply to it: the ``default`` group overridden by the
  target's group (cuTile Python's ``<default = {...}>`` and cutile's ``<sm_90 = {...}>`` are
  the same for sm_90; other architectures' groups do not apply).  [hints_for_target]
* Type comparison of entries: argument count and types by position (critical,
  category signature, owner host).

Known limits: token dataflow between memory ops is compared as written (after the
make_token/join rules), so a frontend that threads tokens through memory ops in a
different but equivalent order shows up as a memory divergence; no algebraic
rewriting beyond the rules above (``a - b`` vs ``a + (-b)`` differ).
"""
from .graph_diff import DiffResult, diff_ir
from .ops import category_of
from .parse import Arg, Entry, IRParseError, Module, Op, Region, parse_tileir
from .stage import run

__all__ = [
    "IRParseError", "Arg", "Op", "Region", "Entry", "Module", "DiffResult",
    "parse_tileir", "diff_ir", "run", "category_of",
]
