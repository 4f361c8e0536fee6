"""Limits on what sdcflow reads from a user, and a YAML loader that keeps to them.

A one-kilobyte YAML file can describe gigabytes: an anchor defined once and referred to by
aliases in a nested list ("billion laughs") is stored once by the parser but becomes huge as
soon as something walks it (validation, an error message, the manifest). :func:`load_yaml`
therefore composes the document first and measures it *as expanded* — every alias counted as
the full subtree it stands for — before constructing a single Python object, and refuses it
(``InputError``, reason ``SPEC_LIMIT``, one line) when it is too deep, too large, uses too
many aliases, is recursive or holds a string that is too long.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sdcflow.errors import InputError, Reason

__all__ = [
    "MAX_ALIASES",
    "MAX_COLUMNS",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_RULES",
    "MAX_RULES_FILE_BYTES",
    "MAX_SOURCE_COLUMNS",
    "MAX_SPEC_BYTES",
    "MAX_STRING",
    "check_count",
    "load_yaml",
    "read_bounded",
]

MAX_SPEC_BYTES = 1 << 20  # a release spec
MAX_RULES_FILE_BYTES = 8 << 20  # a rules file (10 000 rules of ~100 characters: ~1 MB)
MAX_STRING = 10_000  # characters in any one string (a rule, a name, a description)
MAX_ALIASES = 100  # YAML aliases (*name) in one document
MAX_NODES = 500_000  # values in one document, aliases expanded
MAX_DEPTH = 64  # nesting of lists and mappings
MAX_RULES = 10_000  # edit rules, edits and rules file together
MAX_COLUMNS = 1_000  # columns the spec names (quasi-identifiers, keep, sensitive)
MAX_SOURCE_COLUMNS = 10_000  # columns of the source file


def _limit(where: str, what: str, fix: str) -> InputError:
    return InputError(f"{where}: {what}; {fix}", code=Reason.SPEC_LIMIT)


def read_bounded(path: Any, max_bytes: int, *, what: str) -> str:
    """The text of ``path`` if it has at most ``max_bytes`` bytes, else ``InputError``
    (``SPEC_LIMIT``); reads no more than ``max_bytes + 1`` bytes."""
    with open(path, "rb") as fh:
        blob = fh.read(max_bytes + 1)
    if len(blob) > max_bytes:
        raise _limit(
            str(path),
            f"the {what} is larger than {max_bytes // 1024} KiB",
            "sdcflow reads no larger file of this kind; split or shorten it",
        )
    return blob.decode("utf-8")


def check_count(count: int, limit: int, *, where: str, what: str) -> None:
    """Refuse more than ``limit`` items (``InputError``, ``SPEC_LIMIT``)."""
    if count > limit:
        raise _limit(where, f"{count} {what}, more than the limit of {limit}", "use fewer")


class _Loader(yaml.SafeLoader):
    """A safe loader that counts aliases and nesting while it composes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:  # type: ignore[override]
        if self.check_event(AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _TooBig(f"more than {MAX_ALIASES} YAML aliases")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooBig(f"lists or mappings nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:  # type: ignore[override]
        # a key written twice in one mapping: YAML says keys are unique, PyYAML keeps the
        # last one silently (`method: {k: 10}` then `method: {k: 2}` would run at k = 2).
        # Merged keys (`<<: *base`) may be overridden; only the keys written here count.
        # Keys compare as constructed: `yes` and `true`, `16` and `0x10` are one key.
        seen: set[Any] = set()
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                value = self.construct_object(key, deep=deep)
                if value in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found the key {key.value!r} twice; keep one (YAML keeps only the last)",
                        key.start_mark,
                    )
                seen.add(value)
        return super().construct_mapping(node, deep=deep)


class _TooBig(Exception):
    pass


def _expanded_size(root: Node) -> int:
    """Number of nodes of ``root`` with every alias expanded; raises ``_TooBig`` beyond
    :data:`MAX_NODES`, for a string beyond :data:`MAX_STRING` or for a recursive alias."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            total = 1 + sum(size[id(c)] for c in children)
            if total > MAX_NODES:
                raise _TooBig(f"more than {MAX_NODES} values once its aliases are expanded")
            size[key] = total
            continue
        if key in size:
            continue
        if key in on_path:
            raise _TooBig("a recursive YAML alias (a value that contains itself)")
        if isinstance(node, ScalarNode):
            if len(node.value) > MAX_STRING:
                raise _TooBig(f"a string longer than {MAX_STRING} characters")
            size[key] = 1
            continue
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in size)
    return size[id(root)]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_yaml(text: str, *, where: str) -> Any:
    """Parse one YAML document safely (``yaml.SafeLoader``), within the limits above.

    Raises
    ------
    InputError
        Reason ``SPEC_LIMIT`` when a limit is exceeded (one line naming ``where`` and the
        limit, never the content).
    yaml.YAMLError
        Not YAML (the caller words that error).
    """
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _expanded_size(node)
        except _TooBig as e:
            raise _limit(where, f"the YAML holds {e}", "write it out plainly and shorter") from None
        return loader.construct_document(node)
    finally:
        loader.dispose()
