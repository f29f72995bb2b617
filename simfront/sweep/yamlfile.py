"""YAML that remembers where things are: mappings and lists carry the line of each key and
item, so a bad value in a sweep file is reported with its key *and* its line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from simfront.core.errors import SweepError


class LineDict(dict):
    """A YAML mapping; ``line`` is where it starts, ``lines[key]`` where each key is."""

    line: int = 0

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self.lines: dict[Any, int] = {}

    def line_of(self, key: Any) -> int:
        return self.lines.get(key, self.line)


class LineList(list):
    """A YAML sequence; ``line`` is where it starts, ``lines[i]`` where item ``i`` is."""

    line: int = 0

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.lines: list[int] = []

    def line_of(self, index: int) -> int:
        return self.lines[index] if 0 <= index < len(self.lines) else self.line


class _Loader(yaml.SafeLoader):
    pass


def _mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in out:
            # PyYAML keeps the last value silently; a repeated axis is almost always a mistake.
            raise SweepError(f"duplicate key '{key}' (first on line {out.lines[key]})",
                             loader.name, line, str(key))
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = line
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList()
    out.line = node.start_mark.line + 1
    for item in node.value:
        out.append(loader.construct_object(item, deep=True))
        out.lines.append(item.start_mark.line + 1)
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file into LineDict/LineList/scalars; syntax errors name the line."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")  # not the locale's: YAML is UTF-8
    except OSError as exc:
        raise SweepError(f"cannot read sweep file ({exc.strerror})", path) from None
    except UnicodeDecodeError as exc:
        raise SweepError(f"not a text file (byte {exc.start} is not UTF-8): a sweep file is "
                         f"YAML text", path) from None
    return loads_yaml(text, path)


def loads_yaml(text: str, path: str | Path = "<string>") -> Any:
    loader = _Loader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise SweepError(f"not valid YAML: {exc.problem or exc}", path, line) from None
    except yaml.YAMLError as exc:
        raise SweepError(f"not valid YAML: {exc}", path) from None
    finally:
        loader.dispose()
