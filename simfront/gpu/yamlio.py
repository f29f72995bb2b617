"""Where each field of a YAML file sits, so errors can name the line."""

from __future__ import annotations

from typing import Callable

import yaml


def field_lines(text: str) -> Callable[[str], "int | None"]:
    """A lookup from a dotted field path (``l2.assoc``, ``sm.pipes.fp32.units``) to the
    1-based line of that key in ``text``; for a path deeper than the file spells out, the
    line of its deepest written ancestor."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        root = None
    table: dict[str, int] = {}

    def walk(node: yaml.Node, prefix: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = str(key.value)
                path = f"{prefix}.{name}" if prefix else name
                table[path] = key.start_mark.line + 1
                walk(value, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                path = f"{prefix}[{i}]"
                table[path] = value.start_mark.line + 1
                walk(value, path)

    if root is not None:
        walk(root, "")

    def lookup(path: str) -> "int | None":
        while path:
            if path in table:
                return table[path]
            cut = max(path.rfind("."), path.rfind("["))
            if cut <= 0:
                break
            path = path[:cut]
        return table.get(path)

    return lookup
