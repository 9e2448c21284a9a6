"""A template's rules evaluated for many candidates at once, in floating point.

The sieve (:mod:`ccac.synthesis.sieve`) plays a template's candidates on a counterexample's path
together while they decide alike. At each step they read the same observations and hold the
same state, and differ only in their holes: so their rules are evaluated once, over arrays of
the holes' values (number holes) and choices (expression holes), with numpy. The values are
floats, and only group candidates: a candidate's played run is computed exactly by the player,
and nothing the sieve says is a claim until :func:`ccac.solving.validate.validate` has checked a
candidate's own run (see :mod:`ccac.synthesis.cegis`). The expressions are the template's own
rule texts, walked node by node (nothing is ``eval``ed); rules that use syntax this walk does
not know (indexing, comprehensions, open choices) make the template unsupported, and the sieve
then plays each candidate on its own.

Imports: numpy, :mod:`ccac.encode` (expr, rules, templates).
"""

from __future__ import annotations

import ast
import functools
import operator
from typing import Any, Callable, cast

import numpy as np

from ccac.encode.expr import syntax_tree
from ccac.encode.rules import Definition, unit_scale
from ccac.encode.templates import Template

Value = Any   # a float, a bool, or an array of them (one per candidate)


class Unsupported(Exception):
    """The template's rules use syntax the vector walk does not evaluate."""


_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne}


class VectorRules:
    """The rules of a template's candidates (``definition``: any one candidate's, for the rule
    texts, which all candidates share), evaluated over arrays of hole values."""

    def __init__(self, template: Template, definition: Definition) -> None:
        if any(s.choices for s in definition.state):
            raise Unsupported("open choices")
        self.holes = {h.name: h for h in template.holes}
        self.state = [(s.name, _parse(s.rule)) for s in definition.state]
        self.rate = _parse(definition.rate) if definition.rate is not None else None
        self.window = _parse(definition.window) if definition.window is not None else None
        self.options = {h.name: [_parse(o) for o in h.options] for h in template.holes if h.options}
        self.definitions = {name: _parse(text) for name, text in definition.definitions.items()
                            if name not in self.options}

    def hole_arrays(self, indices: dict[str, np.ndarray], C: Any, R: int) -> dict[str, np.ndarray]:
        """The candidates' holes as arrays, from each hole's choice ``indices``: a number hole's
        values in bytes (scaled by its unit, as the rules read it), an expression hole's option
        index."""
        out: dict[str, np.ndarray] = {}
        for h in self.holes.values():
            if h.options:
                out[h.name] = indices[h.name]
            else:
                scale = float(unit_scale(h.unit or "", C, R))
                out[h.name] = np.array([float(v) for v in h.values])[indices[h.name]] * scale
        return out

    def decide(self, context: dict[str, Any], holes: dict[str, np.ndarray], paced: bool,
               inflight: Any) -> np.ndarray:
        """One row per candidate: its new state values, then its rate (NaN if not paced) and
        window, with ``context`` (constants, observations, the state before) shared."""
        size = len(next(iter(holes.values()))) if holes else 1
        env = _Env(self, {k: _scalar(v) for k, v in context.items()}, holes)
        new = {name: env.value(tree) for name, tree in self.state}
        after = _Env(self, {**env.context, **new}, holes)
        rate = after.value(self.rate) if paced and self.rate is not None else np.nan
        window = after.value(self.window) if self.window is not None else float(inflight) + (0.0 if not paced else rate)
        columns = [*new.values(), rate, window]
        return np.column_stack([np.broadcast_to(np.asarray(c, dtype=float), (size,)) for c in columns])


class _Env:
    """One evaluation: the shared context, the holes, and the definitions evaluated so far."""

    def __init__(self, rules: VectorRules, context: dict[str, Any], holes: dict[str, np.ndarray]) -> None:
        self.rules, self.context, self.holes = rules, context, holes
        self.memo: dict[str, Value] = {}

    def value(self, node: ast.AST) -> Value:
        if type(node) is ast.Constant:
            # a rule's constants are numbers; float() takes whatever else as it always did
            return node.value if isinstance(node.value, bool) else float(cast(Any, node.value))
        if type(node) is ast.Name:
            return self.name(node.id)
        if type(node) is ast.BinOp and type(node.op) in _ARITHMETIC:
            with np.errstate(all="ignore"):
                return _ARITHMETIC[type(node.op)](self.value(node.left), self.value(node.right))
        if type(node) is ast.UnaryOp:
            inner = self.value(node.operand)
            if isinstance(node.op, ast.USub):
                return -inner
            if isinstance(node.op, ast.UAdd):
                return inner
            if isinstance(node.op, ast.Not):
                return np.logical_not(inner)
        if type(node) is ast.Compare:
            left, parts = self.value(node.left), []
            for op, right_node in zip(node.ops, node.comparators):
                if type(op) not in _COMPARE:
                    raise Unsupported(type(op).__name__)
                right = self.value(right_node)
                parts.append(_COMPARE[type(op)](left, right))
                left = right
            return functools.reduce(np.logical_and, parts)
        if type(node) is ast.BoolOp:
            combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            return functools.reduce(combine, [self.value(v) for v in node.values])
        if type(node) is ast.IfExp:
            test = self.value(node.test)
            if np.ndim(test) == 0:
                return self.value(node.body if test else node.orelse)
            return np.where(test, self.value(node.body), self.value(node.orelse))
        if type(node) is ast.Call and isinstance(node.func, ast.Name) and not node.keywords:
            args = [self.value(a) for a in node.args]
            if node.func.id in ("max", "min") and len(args) >= 2:
                return functools.reduce(np.maximum if node.func.id == "max" else np.minimum, args)
            if node.func.id == "abs" and len(args) == 1:
                return np.abs(args[0])
        raise Unsupported(type(node).__name__)

    def name(self, name: str) -> Value:
        if name in self.memo:
            return self.memo[name]
        rules = self.rules
        if name in rules.options:   # the option each candidate chose
            chosen = self.holes[name]
            if chosen.size and (chosen == chosen[0]).all():
                value = self.value(rules.options[name][int(chosen[0])])
            else:
                taken = np.unique(chosen)
                values = np.stack([np.broadcast_to(np.asarray(self.value(rules.options[name][int(k)])), chosen.shape)
                                   for k in taken])
                value = values[np.searchsorted(taken, chosen), np.arange(chosen.size)]
        elif name in self.holes:
            value = self.holes[name]
        elif name in rules.definitions:
            value = self.value(rules.definitions[name])
        elif name in self.context:
            value = self.context[name]
        else:
            raise Unsupported(f"name {name}")
        self.memo[name] = value
        return value


def _parse(text: str) -> ast.AST:
    """An expression's syntax tree, as the expression language reads it (once per text)."""
    return syntax_tree(text.strip(), "template").body


def _scalar(value: Any) -> Any:
    """A context value as a float (numbers) or a bool; None stays (an observation not there yet)."""
    if isinstance(value, bool) or value is None:
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return value
