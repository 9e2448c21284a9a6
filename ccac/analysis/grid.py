"""The grid of a sweep: ``--grid KEY=V1,V2,...`` options read into axes, and the grid's points.

Each value is a TOML value or a range ``START:STOP[:STEP]`` in exact decimals (STOP included
when it lands on the grid); the grid is the cartesian product of the axes. Pure data: nothing
here reads a query or runs anything (:mod:`ccac.analysis.sweep` does).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from fractions import Fraction
from itertools import product
from typing import Any

from ccac.core.errors import CcacError
from ccac.core.params import decimal_text, exact_text

__all__ = ["MAX_AXIS", "MAX_POINTS", "Axis", "grid_points", "option_keys", "parse_grid"]

MAX_AXIS = 100_000  # values one --grid option may expand to
MAX_POINTS = 100_000  # points of the whole grid (the product of the --grid options' sizes)


@dataclass
class Axis:
    """One --grid option: a key and its values, as TOML text and as shown in the table."""

    key: str
    texts: list[str]
    shown: list[str]

    def value(self, i: int) -> Any:
        """The i-th value as TOML reads it (a bare word stays text, as ``--set`` reads it)."""
        try:
            return tomllib.loads(f"v = {self.texts[i]}")["v"]
        except tomllib.TOMLDecodeError:
            return self.texts[i]


def parse_grid(option: str) -> Axis:
    """``KEY=V1,V2,...``; each item a TOML value or a range ``a:b[:step]`` (exact decimals)."""
    where = f"--grid {option!r}"
    key, eq, values = option.partition("=")
    key = key.strip()
    section, _, name = key.partition(".")
    if not eq:
        raise CcacError("expected KEY=V1,V2,... (e.g. network.buffer=0.5,1,2 or params.util=0.1:0.5:0.1)", where)
    if not section or not name:
        raise CcacError("KEY must be SECTION.NAME, e.g. network.buffer", where)
    texts: list[str] = []
    shown: list[str] = []
    for item in _split(values, where):
        if not item:
            raise CcacError("empty value (check the commas)", where)
        if ":" in item and item[0] not in "\"'[{":
            for x in _range(item, where):
                texts.append(_toml_number(x))
                shown.append(exact_text(x))
        else:
            texts.append(item)
            shown.append(_show_value(item))
    if len(texts) > MAX_AXIS:
        raise CcacError(f"{len(texts)} values; at most {MAX_AXIS} per --grid option", where)
    return Axis(key, texts, shown)


def grid_points(axes: list[Axis]) -> list[tuple[int, ...]]:
    """The grid's points in grid order (the last axis varies fastest), each one value index per
    axis; a grid of more than MAX_POINTS points is an error."""
    count = 1
    for a in axes:
        count *= len(a.texts)
    if count > MAX_POINTS:
        sizes = " × ".join(f"{len(a.texts):,}" for a in axes)
        raise CcacError(f"the grid has {count:,} points ({sizes}), more than {MAX_POINTS:,}", "--grid")
    return list(product(*(range(len(a.texts)) for a in axes)))


def option_keys(axes: list[Axis], overrides: tuple[str, ...]) -> list[tuple[str, str]]:
    """(option, key) of every --grid and --set; a key on two axes, or on an axis and in --set,
    is ambiguous."""
    keys = [("--grid", a.key) for a in axes]
    seen: set[str] = set()
    for _, key in keys:
        if key in seen:
            raise CcacError("given twice; list all its values in one --grid", f"--grid {key}")
        seen.add(key)
    for item in overrides:
        if "=" not in item:
            raise CcacError(f"expected SECTION.KEY=VALUE, got {item!r}", "--set")
        key = item.partition("=")[0].strip()
        if key in seen:
            raise CcacError("given both in --grid and --set", f"--set {key}")
        keys.append(("--set", key))
    return keys


def _split(text: str, where: str) -> list[str]:
    """Split at the commas outside TOML strings, arrays and inline tables."""
    items, depth, quote, escaped, start = [], 0, "", False, 0
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    if quote or depth:
        raise CcacError("unbalanced quotes or brackets", where)
    items.append(text[start:].strip())
    return items


def _range(item: str, where: str) -> list[Fraction]:
    parts = item.split(":")
    if len(parts) not in (2, 3):
        raise CcacError(f"a range is START:STOP or START:STOP:STEP, got {item!r}", where)
    try:
        start, stop, step = (Fraction(p.strip()) for p in (parts + ["1"])[:3])
    except (ValueError, ZeroDivisionError):
        raise CcacError(f"range bounds and step must be numbers (e.g. 0.1:4:0.1), got {item!r}", where) from None
    if step <= 0:
        raise CcacError(f"range step must be positive, got {item!r}", where)
    if stop < start:
        raise CcacError(f"empty range {item!r} (STOP is below START)", where)
    count = int((stop - start) / step) + 1  # STOP included when it lands on the grid
    if count > MAX_AXIS:
        raise CcacError(f"range {item!r} has {count} values; at most {MAX_AXIS}", where)
    return [start + k * step for k in range(count)]


def _toml_number(x: Fraction) -> str:
    """x in TOML syntax, read back exactly by ccac (which reads a float through its decimal text)."""
    text = decimal_text(x)
    if text is not None and (x.denominator == 1 or Fraction(repr(float(text))) == x):
        return text
    return f'"{exact_text(x)}"'  # ccac reads numeric strings exactly


def _show_value(text: str) -> str:
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word: --set reads it as a string
    if isinstance(value, bool):
        return str(value).lower()
    return value if isinstance(value, str) else text
