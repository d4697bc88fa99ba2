"""Strict YAML loading for every YAML file tileport reads (config.yaml, manifests, profiles).

PyYAML, like the YAML loaders of Snakemake and yte, keeps the *last* value of a key that a
mapping repeats and says nothing: a manifest with ``dtypes: [f16, bf16, f32]`` and, further
down, ``dtypes: [f32]`` silently runs f32 only. The YAML 1.2 specification requires the keys of
a mapping to be unique (section 3.2.1.1, "Nodes"); this loader enforces it with PyYAML's own
composer and constructor: the document is composed into nodes as usual, and each mapping node's
keys are constructed and compared before the mapping is built. Merge keys (``<<: *anchor``)
keep their YAML meaning: a key written next to a merge overrides the merged one, which is not a
duplicate. One error names every repeated key of the file, each with its lines.

The same loader refuses a mapping key that YAML 1.1 turns from a word into a boolean or null
(``on:``, ``no:``, ``null:``): every key tileport and Snakemake read is a name, and ``no``
would silently become ``False``. Values are left as YAML reads them (schemas check their types).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

__all__ = ["DuplicateKeyError", "AmbiguousKeyError", "StrictSafeLoader", "load", "load_file", "check_file"]


def _and(items: list) -> str:
    """``1 and 3``, ``5, 7 and 8``."""
    words = [str(x) for x in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class DuplicateKeyError(ConstructorError):
    """Mappings repeat keys: every repeat of the file in one error. A :class:`yaml.YAMLError` (so
    callers that already report YAML errors with their line report this one too), with the file,
    the keys and their 1-based lines.

    Attributes:
        path: the file name given to :func:`load` (``<string>`` when none).
        key: the first repeated key of the file (its constructed value, e.g. ``'dtypes'`` or ``1``).
        first_line, line: the lines of its first and of its repeated occurrence.
        duplicates: ``[(key, [line of each occurrence]), ...]``, each key of each mapping once,
            in the order of their first repeat.
    """

    def __init__(self, path: str, key: Any, first_mark: yaml.Mark, mark: yaml.Mark, more: tuple | list = ()):
        repeats = sorted([(key, first_mark, mark), *more], key=lambda r: (r[2].line, r[2].column))
        groups: dict[tuple, tuple[Any, list]] = {}
        for k, first, at in repeats:
            groups.setdefault((first.line, first.column), (k, [first]))[1].append(at)
        key, first_mark, mark = repeats[0]
        self.path, self.key = path, key
        self.first_line, self.line = first_mark.line + 1, mark.line + 1
        self.duplicates = [(k, [m.line + 1 for m in marks]) for k, marks in groups.values()]
        said = [f"{k!r} at line {marks[0].line + 1}, columns {_and([m.column + 1 for m in marks])}"
                if len({m.line for m in marks}) == 1 else f"{k!r} at lines {_and([m.line + 1 for m in marks])}"
                for k, marks in groups.values()]
        super().__init__(
            context=None, context_mark=None,
            problem=(f"duplicate key {said[0]} (YAML would silently keep the last value)" if len(said) == 1 else
                     f"duplicate keys {'; '.join(said)} (YAML would silently keep the last value of each)"),
            problem_mark=mark)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.problem}"


class AmbiguousKeyError(ConstructorError):
    """A mapping key written as a plain word that YAML 1.1 (PyYAML, Snakemake) reads as a boolean
    or null: ``on:``, ``off:``, ``yes:``, ``no:``, ``null:``, ``~:``. Every key tileport and
    Snakemake read is a name, so the word was meant as a name and would silently become
    ``True``/``False``/``None``. ``str()`` is ``<path>:<line>: ...``."""

    def __init__(self, path: str, word: str, value: Any, mark: yaml.Mark):
        self.path, self.word, self.line = path, word, mark.line + 1
        super().__init__(
            context=None, context_mark=None,
            problem=(f"key {word!r} reads as {value!r} in YAML, not as the name {word!r}: "
                     f"quote it ('{word}') if a name was meant"),
            problem_mark=mark)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.problem}"


_NOT_A_NAME = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:null")


# libyaml's parser when PyYAML was built with it (its wheels are): the same nodes and marks as the
# pure-Python one, about 10x faster -- the Snakefile parses every operator's manifest at each start
_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictSafeLoader(_BASE):
    """``yaml.SafeLoader`` that raises :class:`DuplicateKeyError` on repeated mapping keys (all
    of the document in one error) and :class:`AmbiguousKeyError` on a plain key word that YAML
    reads as a boolean or null; whichever comes first (an error after a repeat: the repeats).

    ``name`` (the file name used in messages) comes from the stream as in PyYAML: pass a file
    object, or set ``loader.name`` after construction.
    """

    def __init__(self, stream):
        super().__init__(stream)
        self.repeats: list[tuple[Any, yaml.Mark, yaml.Mark]] = []   # (key, first mark, repeat's mark)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, yaml.Mark] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if (isinstance(key_node, yaml.ScalarNode) and key_node.tag in _NOT_A_NAME
                        and not key_node.style and key_node.value):
                    if not self.repeats:
                        raise AmbiguousKeyError(self.name, key_node.value, key, key_node.start_mark)
                    continue
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:       # an unhashable key: SafeConstructor reports it
                    continue
                if first is not key_node.start_mark:
                    self.repeats.append((key, first, key_node.start_mark))
        return super().construct_mapping(node, deep=deep)

    def get_single_data(self):
        try:
            data = super().get_single_data()
        except yaml.YAMLError:
            if self.repeats:        # found before this error
                raise self._repeated() from None
            raise
        if self.repeats:
            raise self._repeated()
        return data

    def _repeated(self) -> DuplicateKeyError:
        return DuplicateKeyError(self.name, *self.repeats[0], more=self.repeats[1:])


def load(text: str | bytes, path: str | Path | None = None) -> Any:
    """Parse one YAML document like ``yaml.safe_load``, rejecting repeated mapping keys.

    Args:
        text: the YAML (or JSON) text.
        path: the file it came from, for messages (``<string>`` when None).

    Returns:
        The document (dict, list, scalar, or None for an empty text).

    Raises:
        DuplicateKeyError: mappings repeat keys, all of them in one error; ``str()`` is
            ``<path>:<line>: duplicate key 'k' at lines <first> and <line> (...)``, or with several
            ``<path>:<line>: duplicate keys 'k' at lines 1 and 3; 'x' at lines 5, 7 and 8 (...)``.
        AmbiguousKeyError: a key written ``on``/``no``/``null``/... that YAML reads as a
            boolean or null.
        yaml.YAMLError: any other YAML error (``problem_mark`` gives its line).
    """
    loader = StrictSafeLoader(text)
    loader.name = str(path) if path is not None else "<string>"
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_file(path: str | Path) -> Any:
    """:func:`load` the file at ``path`` (UTF-8). Raises OSError and what :func:`load` raises."""
    return load(Path(path).read_text(encoding="utf-8"), path)


def check_file(path: str | Path) -> str | None:
    """Why the YAML file at ``path`` cannot be read strictly, as ``<path>:<line>: <cause>``, or
    None when it loads. Used where another program (Snakemake) parses the file itself and
    tileport only checks that its reading is unambiguous."""
    try:
        load_file(path)
    except OSError as exc:
        return f"{path}: cannot read: {exc.strerror}"
    except (DuplicateKeyError, AmbiguousKeyError) as exc:
        return str(exc)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        return f"{path}{line}: YAML error: {getattr(exc, 'problem', None) or exc}"
    return None
