"""Templates: CCA files with holes, the search space of ``ccac synthesize``.

A template is a CCA file (:mod:`ccac.encode.rules`) with a ``[holes]`` table. Each hole is a
name its rules use, and a finite set of what it may stand for::

    [holes]
    gain = [0.5, 1, 2]                                 # one of these numbers
    steps = { int = [0, 4] }                           # a whole number from 0 to 4
    cut = { range = [0, 1], resolution = 0.25 }        # 0, 0.25, 0.5, 0.75, 1
    congested = { one_of = ["min_qdel > 0", "bq_belief > alpha"] }   # one of these expressions

A number hole may carry ``unit = "BDP"`` or ``"C"`` as parameters do. A hole of expressions is
how a condition chooses among comparison operators or among signals: each option is a whole
expression, written as any definition is.

Filling a template gives an ordinary CCA file (:func:`fill`): its number holes become
parameters whose default is the value chosen, its expression holes definitions. So a candidate
is checked exactly as the file that is written for it is read back: one definition per
candidate, the synthesized file included.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterator

from ccac.core.errors import CcacError
from ccac.core.params import to_fraction
from ccac.encode.rules import BELIEF_DEFINITIONS, SCALED_UNITS, reached_names

#: the most values one hole may take, and the most candidates a template may have
MAX_HOLE_VALUES = 10_000
MAX_CANDIDATES = 1_000_000


@dataclass(frozen=True)
class Hole:
    """One hole: its name and its values (numbers) or its options (expressions)."""

    name: str
    values: tuple[Fraction, ...] = ()
    options: tuple[str, ...] = ()
    unit: str | None = None

    @property
    def choices(self) -> tuple[Any, ...]:
        return self.values or self.options

    def show(self, choice: Any) -> str:
        if isinstance(choice, str):
            return f"`{choice}`"
        return str(choice) + (f" {self.unit}" if self.unit else "")


@dataclass(frozen=True)
class Template:
    """A CCA file's data with its holes taken out, and the holes."""

    data: dict[str, Any]
    holes: tuple[Hole, ...]
    source: str

    @property
    def size(self) -> int:
        return math.prod(len(h.choices) for h in self.holes)

    def candidates(self) -> Iterator[dict[str, Any]]:
        """Every assignment of the holes, in the order the file lists the holes and their values
        (the last hole varies fastest)."""
        for combo in itertools.product(*(h.choices for h in self.holes)):
            yield dict(zip((h.name for h in self.holes), combo))

    def fill(self, assignment: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, Any]:
        """The CCA file (as data) this assignment makes: number holes become parameters with the
        chosen default, expression holes definitions; ``settings`` (parameter -> value) become
        those parameters' defaults."""
        data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.data.items()}
        params, definitions = dict(data.get("params", {})), dict(data.get("definitions", {}))
        for name, value in (settings or {}).items():
            params[name] = {**params[name], "default": value} if isinstance(params[name], dict) else value
        for hole in self.holes:
            choice = assignment[hole.name]
            if hole.options:
                definitions[hole.name] = choice
            else:
                params[hole.name] = {"default": _plain(choice), "description": "filled by ccac synthesize",
                                     **({"unit": hole.unit} if hole.unit else {})}
        if params:
            data["params"] = params
        if definitions:
            data["definitions"] = definitions
        return data

    def describe(self, assignment: dict[str, Any]) -> str:
        return ", ".join(f"{h.name} = {h.show(assignment[h.name])}" for h in self.holes)


def split_template(data: dict[str, Any], source: str) -> Template:
    """The template a CCA file's data holds (no holes: a template of one candidate)."""
    table = data.get("holes", {})
    if not isinstance(table, dict):
        raise CcacError("[holes] is a table: NAME = [values] or NAME = { ... }", f"{source}: holes")
    taken = set(data.get("params", {})) | set(data.get("definitions", {})) | set(data.get("state", {}))
    holes = []
    for name, spec in table.items():
        where = f"{source}: holes.{name}"
        if not name.isidentifier():
            raise CcacError("a hole is named like a parameter", where)
        if name in taken:
            raise CcacError(f"{name!r} is also a parameter, definition or state variable", where)
        holes.append(_hole(name, spec, where))
    size = math.prod(len(h.choices) for h in holes)
    if size > MAX_CANDIDATES:
        raise CcacError(f"the template has {size} candidates, more than {MAX_CANDIDATES}: make holes smaller",
                        f"{source}: holes")
    _check_read(holes, data, source)
    return Template({k: v for k, v in data.items() if k != "holes"}, tuple(holes), source)


def _check_read(holes: list[Hole], data: dict[str, Any], source: str) -> None:
    """Every hole is read by what the CCA evaluates (a state's rule, initial or start, a send
    expression, or a definition those read, an expression hole's options included): a hole
    nothing reads multiplies the candidates by its values without changing one decision."""
    texts = [text for table in (data.get("state") or {}).values() if isinstance(table, dict)
             for text in (table.get("rule"), table.get("initial"), table.get("start")) if isinstance(text, str)]
    texts += [text for text in (data.get("send") or {}).values() if isinstance(text, str)]
    definitions = {**BELIEF_DEFINITIONS,
                   **{k: v for k, v in (data.get("definitions") or {}).items() if isinstance(v, str)},
                   **{h.name: ", ".join(f"({option})" for option in h.options) for h in holes if h.options}}
    reached = reached_names(texts, definitions, source)
    for hole in holes:
        if hole.name not in reached:
            raise CcacError(f"no rule reads this hole (nor a definition or send expression the rules use): its "
                            f"{len(hole.choices)} values would multiply the candidates without changing one",
                            f"{source}: holes.{hole.name}")


def _hole(name: str, spec: Any, where: str) -> Hole:
    if isinstance(spec, list):
        return Hole(name, _distinct([to_fraction(v, where) for v in spec], where))
    if not isinstance(spec, dict):
        raise CcacError("a hole is a list of values, or a table with int, range or one_of", where)
    kinds = [k for k in ("values", "int", "range", "one_of") if k in spec]
    extra = sorted(set(spec) - {"values", "int", "range", "one_of", "resolution", "unit", "description"})
    if extra:
        raise CcacError(f"unknown key {extra[0]!r} (keys: values, int, range and resolution, one_of, unit)", where)
    if len(kinds) != 1:
        raise CcacError("give exactly one of values, int, range (with resolution) or one_of", where)
    unit = spec.get("unit")
    if unit is not None and unit not in SCALED_UNITS:
        raise CcacError(f"unit is one of {', '.join(SCALED_UNITS)} (or none: bytes, steps or a plain number)", where)
    kind = kinds[0]
    if kind == "one_of":
        options = spec["one_of"]
        if not isinstance(options, list) or not options or not all(isinstance(o, str) and o.strip() for o in options):
            raise CcacError("one_of is a list of expressions (strings)", where)
        if unit is not None:
            raise CcacError("a hole of expressions has no unit", where)
        if len(set(options)) != len(options):
            raise CcacError("one_of lists an expression twice", where)
        return Hole(name, options=tuple(options))
    if kind == "values":
        if not isinstance(spec["values"], list):
            raise CcacError("values is a list of numbers", where)
        return Hole(name, _distinct([to_fraction(v, where) for v in spec["values"]], where), unit=unit)
    bounds = spec[kind]
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise CcacError(f"{kind} is [lowest, highest]", where)
    lo, hi = (to_fraction(b, where) for b in bounds)
    if lo > hi:
        raise CcacError(f"{kind}: the lowest value {lo} is above the highest {hi}", where)
    if kind == "int":
        if lo.denominator != 1 or hi.denominator != 1:
            raise CcacError("int is a range of whole numbers", where)
        step = Fraction(1)
    else:
        if "resolution" not in spec:
            raise CcacError("a range needs a resolution: the step between its values", where)
        step = to_fraction(spec["resolution"], where)
        if step <= 0:
            raise CcacError("resolution must be > 0", where)
    if ((hi - lo) / step).denominator != 1:   # whole numbers always divide; a resolution may not
        raise CcacError(f"the range from {lo} to {hi} is not a whole number of steps of {step}, so {hi} would "
                        f"be left out: make the highest value the lowest plus a multiple of the resolution", where)
    count = int((hi - lo) / step) + 1
    if count > MAX_HOLE_VALUES:
        raise CcacError(f"{count} values, more than {MAX_HOLE_VALUES} for one hole", where)
    return Hole(name, tuple(lo + i * step for i in range(count)), unit=unit)


def _distinct(values: list[Fraction], where: str) -> tuple[Fraction, ...]:
    if not values:
        raise CcacError("a hole needs at least one value", where)
    if len(values) > MAX_HOLE_VALUES:
        raise CcacError(f"{len(values)} values, more than {MAX_HOLE_VALUES} for one hole", where)
    if len(set(values)) != len(values):
        raise CcacError("a value is listed twice", where)
    return tuple(values)


def _plain(x: Fraction) -> Any:
    """A number as TOML writes it exactly: an integer, or a fraction as a string."""
    return int(x) if x.denominator == 1 else str(x)
