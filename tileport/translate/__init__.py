"""The deterministic kernel writer: cuTile Python ``@ct.kernel`` AST -> cuTile Rust.

It translates construct by construct, never by operator name, into a ``#[cutile::module]``
with one ``#[cutile::entry()]`` function per specialisation. What Python specialises at call
time becomes generics of the entry: the array dtype is ``E: ElementType`` (a float; arrays of
an int32 / int64 variant dtype get that concrete type, one entry per dtype), every
``ct.Constant[int]`` parameter a ``const NAME: i32``; arrays become ``&Tensor<E, {[-1, ...]}>``
(rank from the manifest; an array the manifest gives a dtype of its own has that element type,
``&Tensor<f32, {[-1]}>``; a one-element array of constant shape, ``{[1]}``, where
:func:`tileport.model.frontend.unit_array` says so), f32/i32 scalars stay. Each construct family has its own module:

* :mod:`.memory` -- arrays, partition views, ``ct.load`` / ``ct.store``, ``ct.num_tiles``,
  ``Array.slice`` tensor views;
* :mod:`.tokens` -- the memory tokens ordering loads and stores (as cuTile Python's
  ``token_order`` pass threads them through loops and ``if``s);
* :mod:`.control` -- statements, assignment, ``for`` loops, compile-time ``if``, launch grid;
* :mod:`.code_motion` -- what a loop cannot change, moved before it (as cuTile Python's code
  motion moves it) once the entry is written;
* :mod:`.arith` -- operators, elementwise math, ``ct.astype``, tile constants, ``fma``;
* :mod:`.reductions` -- ``ct.sum/max/min/prod``;
* :mod:`.shape` -- ``ct.reshape`` and broadcasting;
* :mod:`.matrix` -- ``ct.mma``;
* :mod:`.hints` -- latency / TMA hints of loads and stores;
* :mod:`.dtypes` -- arrays of their own dtype, cuTile's type promotion and implicit casts,
  dtypes as compile-time values;
* :mod:`.core` -- types, names, the expression walk and the call dispatch;
* :mod:`.driver` -- the composed :class:`KernelTranslator`, entries per specialisation.

It consumes the operator's front-end model (:mod:`tileport.model.frontend`), the one the analyser
reports on: it parses nothing and loads no manifest of its own.

A construct without a rule raises :class:`Unsupported` naming ``file:line`` and the construct;
the ``write_kernel`` stage (:mod:`tileport.cpu.write_kernel`) then writes BLOCKED. Every Rust line
carries the ``kernel.py`` line it came from (the source map).
"""
from .core import Ty, Unsupported
from .driver import (
                     KernelTranslator,
                     display_path,
                     specialisation_keys,
                     translate_entries,
                     translate_entries_per_variant,
                     translate_kernel,
                     translate_model,
                     translate_per_variant,
)

__all__ = ["KernelTranslator", "Ty", "Unsupported", "display_path", "specialisation_keys",
           "translate_entries", "translate_entries_per_variant", "translate_kernel", "translate_model",
           "translate_per_variant"]
