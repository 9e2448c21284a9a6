"""Declared parameters: name, default, unit, range, and exact parsing of user values.

The network and every CCA declare their parameters with :class:`Param`. The same declarations
drive validation of query files and ``--set`` overrides, ``ccac list``, and the docs, so a
parameter is described in exactly one place.

Numbers are kept as exact :class:`fractions.Fraction` values. A TOML float such as ``0.1`` is
read through its decimal text, so it becomes exactly 1/10 rather than the nearest binary double.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, localcontext
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping

from ccac.core.errors import CcacError


POSITIVE: dict[str, Any] = dict(minimum=Fraction(0), exclusive_minimum=True)
"""``Param(..., **POSITIVE)``: the value must be > 0."""
NONNEG: dict[str, Any] = dict(minimum=Fraction(0))
"""``Param(..., **NONNEG)``: the value must be >= 0."""


def to_fraction(value: Any, where: str) -> Fraction:
    """Parse an int, float, Fraction or numeric string exactly; reject anything else."""
    if isinstance(value, bool):
        raise CcacError(f"expected a number, got {value!r}", where)
    if isinstance(value, (int, Fraction)):
        return Fraction(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise CcacError(f"expected a finite number, got {value!r}", where)
        return Fraction(repr(value))
    if isinstance(value, str):
        exponent = _EXPONENT.search(value)
        if exponent and (len(exponent.group(1).lstrip("+-")) > 5 or abs(int(exponent.group(1))) > MAX_EXPONENT):
            raise CcacError(f"number out of range: exponent {_clip(exponent.group(1))} (at most {MAX_EXPONENT} "
                            f"in magnitude)", where)
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            pass
    raise CcacError(f"expected a number, got {_clip(repr(value))}", where)


MAX_EXPONENT = 3000
"""Largest decimal exponent a number written as text may have (``"1e3000"``): Fraction would
compute 10 to that power exactly, so ``"1e999999999"`` would take minutes."""
_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)")


def decimal_text(x: Fraction) -> str | None:
    """The exact decimal text of x, or None if it has no finite decimal expansion (of at most
    60 digits)."""
    digits, scale = 0, 1
    while (x * scale).denominator != 1:
        digits, scale = digits + 1, scale * 10
        if digits > 60:
            return None
    n = abs(x.numerator * scale // x.denominator)
    sign = "-" if x < 0 else ""
    if digits == 0:
        return f"{sign}{n}"
    whole, frac = divmod(n, scale)
    return f"{sign}{whole}.{frac:0{digits}d}".rstrip("0").rstrip(".")


def exact_text(x: Fraction) -> str:
    """x exactly: its decimal expansion when finite (bisection of decimals keeps it so), else p/q."""
    return decimal_text(x) or f"{x.numerator}/{x.denominator}"


def approximate(x: Fraction | int) -> float:
    """x as the nearest float, for figures and tables only (exact values stay Fractions): beyond
    the float range (about 1.8e308; a trace's values grow as large as its assumptions make them)
    it is plus or minus infinity, never an OverflowError."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def rounded_text(x: Fraction, digits: int = 4) -> str:
    """x for the eye, in tables and figures: a whole number exactly, else ``digits`` significant
    digits, in scientific notation beyond the float range (exact values are in the JSON and CSV
    outputs)."""
    if x.denominator == 1:
        return str(x.numerator)
    if math.isinf(approximate(x)):
        with localcontext() as context:
            context.prec = digits
            return f"{Decimal(x.numerator) / Decimal(x.denominator):.{digits}g}"
    return f"{float(x):.{digits}g}"


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True)
class Param:
    """One parameter of the network or of a CCA.

    ``kind`` is ``"number"`` (exact rational), ``"int"``, ``"bool"`` or ``"choice"``.
    ``default=None`` means the parameter is optional and has no value unless given (for the
    network, several such parameters are then chosen by the solver).
    """

    name: str
    default: Any
    description: str
    unit: str = ""
    kind: str = "number"
    minimum: Fraction | None = None
    maximum: Fraction | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    special: tuple[str, ...] = field(default=())  # extra string values accepted as-is, e.g. "inf"

    def parse(self, value: Any, where: str) -> Any:
        """Check and convert a user value; raise CcacError naming ``where`` if it is invalid."""
        where = f"{where}.{self.name}" if where else self.name
        if isinstance(value, str) and value in self.special:
            return value
        if value == float("inf") and "inf" in self.special:  # TOML's bare `inf`
            return "inf"
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise CcacError(f"expected true or false, got {value!r}", where)
        if self.kind == "choice":
            if value in self.choices:
                return value
            raise CcacError(f"expected one of {', '.join(self.choices)}, got {value!r}", where)
        number: Fraction | int = to_fraction(value, where)
        if self.kind == "int":
            if number.denominator != 1:
                raise CcacError(f"expected a whole number, got {value!r}", where)
            number = int(number)
        if self.minimum is not None:
            if number < self.minimum or (self.exclusive_minimum and number == self.minimum):
                relation = ">" if self.exclusive_minimum else ">="
                raise CcacError(f"must be {relation} {_show(self.minimum)}, got {_show(number)}", where)
        if self.maximum is not None and number > self.maximum:
            raise CcacError(f"must be <= {_show(self.maximum)}, got {_show(number)}", where)
        return number

    def describe_default(self) -> str:
        if self.default is None:
            return "-"
        return _show(self.default) if isinstance(self.default, (int, Fraction)) else str(self.default)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Fraction):
        return str(value.numerator) if value.denominator == 1 else str(approximate(value))
    return str(value)


def resolve(declared: tuple[Param, ...], given: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Defaults overlaid with the given values, each parsed; unknown keys are an error."""
    by_name = {p.name: p for p in declared}
    unknown = sorted(set(given) - set(by_name))
    if unknown:
        known = ", ".join(sorted(by_name)) or "none"
        raise CcacError(f"unknown parameter {unknown[0]!r} (known: {known})", where)
    values: dict[str, Any] = {}
    for p in declared:
        if p.name in given:
            values[p.name] = p.parse(given[p.name], where)
        else:
            values[p.name] = p.parse(p.default, where) if p.default is not None else None
    return values
