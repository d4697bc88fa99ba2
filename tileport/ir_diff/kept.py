"""Run-time IR diffs kept by content, so that a rerun does not diff the same two texts again.

``runtime_ir`` diffs each (variant, perf shape, reading)'s compiled reference and port Tile IR:
2,554 pairs for the whole corpus (2,215 distinct texts), about 70 % of the stage's time in a rerun
whose compilations all came from the caches (py-spy, 2026-12-07; docs/architecture.md#jobs-and-their-cost).
The diff is a function of the two texts, their paths (its findings name them), the kernel's
parameter list, the target, the owner and the IR diff's code (the import closure of this module:
tileport.core.closure). Its result is kept under the SHA-256 of all of them in
``<cache_root>/irdiff/`` (tileport.core.toolchain.keep / read_kept); ``TILEPORT_IRDIFF_CACHE=off``
bypasses it. An error (malformed text, no entry) is never kept: it is raised each time.
"""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from tileport.core import closure, toolchain
from tileport.core.verdict import Finding
from tileport.ir_diff.entry_facts import diff_runtime_pair

CACHE_ENV = "TILEPORT_IRDIFF_CACHE"


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 (hex) of the IR diff's code: :func:`tileport.core.closure.code_sha` of this module
    (its import closure). Raises OSError / KeyError as that function."""
    return closure.code_sha(__file__, Path(__file__).resolve().parents[1], (__name__,))


def kept_diff_runtime_pair(ref_text: str, port_text: str, params: list[dict], ref_path: str, port_path: str,
                           target: str | None = None, owner: str = "tool") -> dict:
    """:func:`tileport.ir_diff.entry_facts.diff_runtime_pair` of the same arguments (the same
    dict: ``findings`` as Finding objects), read from the cache when these texts were diffed
    before with the same code, else computed and kept. A cache entry that cannot be read is
    computed again; one that cannot be written is left out. Raises IRParseError / ValueError as
    the diff does."""
    key = hashlib.sha256(json.dumps([code_digest(), ref_text, port_text, params, str(ref_path), str(port_path),
                                     target, owner], sort_keys=True, default=str).encode()).hexdigest()
    off = toolchain.cache_off(CACHE_ENV)
    doc = None if off else toolchain.read_kept("irdiff", key)
    if doc is not None:
        try:
            return {**doc["result"], "findings": [Finding(**f) for f in doc["result"]["findings"]]}
        except (KeyError, TypeError):   # not a kept diff: diffed again
            pass
    d = diff_runtime_pair(ref_text, port_text, params, ref_path, port_path, target, owner)
    if not off:
        try:   # every value is JSON's, or nothing is kept (a hit must equal the diff)
            toolchain.keep("irdiff", key, {"result": {**d, "findings": [f.__dict__ for f in d["findings"]]}}, None)
        except TypeError:
            pass
    return d
