"""Plain-data form of the description dataclasses: ``to_plain`` / ``from_plain``.

Pure functions over the dataclasses' type hints, so every part gets the same rules: sizes,
clocks and bandwidths become strings with units ("50 MiB"), nested parts become dicts,
and reading back names the exact field (``l2.assoc``), plus the YAML file and line where
the data came from a file, when something is misspelt or of the wrong type.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

from simfront.core.errors import ConfigError
from simfront.gpu.units import QUANTITY_TYPES

# Maps a dotted field path to the line it was read from (see yamlio.field_lines).
LineLookup = Callable[[str], "int | None"]


def to_plain(obj: Any) -> Any:
    if isinstance(obj, QUANTITY_TYPES):
        return str(obj)
    if isinstance(obj, Fraction):
        # "2/3" stays exact where a float would not; a whole number stays a number
        return obj.numerator if obj.denominator == 1 else str(obj)
    if dataclasses.is_dataclass(obj):
        # a field marked omit_if_default is written only where it is set, so adding one
        # leaves every description's text and hash as it was
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not (f.metadata.get("omit_if_default") and getattr(obj, f.name) == f.default)}
    if isinstance(obj, tuple) and obj and all(isinstance(x, tuple) and len(x) == 2
                                              for x in obj):
        return {k: v for k, v in obj}
    if isinstance(obj, tuple):
        return [to_plain(x) for x in obj]
    return obj


def _fail(msg: str, path: str, source: Path | None, lines: LineLookup | None) -> ConfigError:
    line = lines(path) if lines else None
    return ConfigError(msg, path=source, line=line, field=path or None)


def from_plain(cls: type, data: Any, *, path: str = "", source: Path | None = None,
               lines: LineLookup | None = None) -> Any:
    """Build ``cls`` (a dataclass) from plain data, checking every field name and type."""
    if not isinstance(data, dict):
        raise _fail(f"expected a mapping for {cls.__name__}, got {type(data).__name__}",
                    path, source, lines)
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise _fail(f"unknown field '{unknown[0]}' in {cls.__name__}; valid fields: "
                    f"{', '.join(f.name for f in dataclasses.fields(cls))}",
                    where, source, lines)
    kwargs = {}
    for f in dataclasses.fields(cls):
        where = f"{path}.{f.name}" if path else f.name
        if f.name not in data:
            if (f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING):  # type: ignore[misc]
                raise _fail(f"missing field '{f.name}' of {cls.__name__}", where, source,
                            lines)
            continue
        kwargs[f.name] = _value(hints[f.name], data[f.name], where, source, lines)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise _fail(str(exc), path, source, lines) from exc


def _value(tp: Any, value: Any, path: str, source: Path | None,
           lines: LineLookup | None) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _value(args[0], value, path, source, lines)
    if tp in QUANTITY_TYPES:
        try:
            return tp.parse(value)
        except (ValueError, TypeError) as exc:
            raise _fail(str(exc), path, source, lines) from exc
    if dataclasses.is_dataclass(tp):
        return from_plain(tp, value, path=path, source=source, lines=lines)
    if origin is tuple:
        args = typing.get_args(tp)
        if args and typing.get_origin(args[0]) is tuple:  # key/value pairs
            if value in (None, []):
                return ()
            if not isinstance(value, dict):
                raise _fail("expected a mapping", path, source, lines)
            return tuple(sorted((str(k), _scalar_str(v)) for k, v in value.items()))
        if not isinstance(value, (list, tuple)):
            raise _fail(f"expected a list, got {value!r}", path, source, lines)
        return tuple(_value(args[0], v, f"{path}[{i}]", source, lines)
                     for i, v in enumerate(value))
    if tp is Fraction:
        try:
            if isinstance(value, bool):
                raise ValueError
            return Fraction(str(value))
        except (ValueError, ZeroDivisionError):
            raise _fail(f"expected a number or a fraction such as '2/3', got {value!r}",
                        path, source, lines) from None
    if tp is bool:
        if not isinstance(value, bool):
            raise _fail(f"expected true or false, got {value!r}", path, source, lines)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise _fail(f"expected an integer, got {value!r}", path, source, lines)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(f"expected a number, got {value!r}", path, source, lines)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _fail(f"expected a string, got {value!r}", path, source, lines)
        return value
    return value


def _scalar_str(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)
