"""The expression language of queries: Python expression syntax compiled into SMT terms.

Source text is parsed with :mod:`ast` and walked node by node; nothing is ``eval``ed. The same
walker evaluates an expression exactly when its names are bound to numbers instead of solver
terms, which is how a trace is checked against the query that produced it.

Values during compilation are exact numbers (``int``/``Fraction``), Python ``bool``, or z3
terms. Anything whose value depends on the solver is *symbolic*. A product of two symbolic
values, a division by one and a whole power of one (``x ** n``, |n| at most
:data:`~ccac.encode.nonlinear.MAX_EXPONENT`) are non-linear: each becomes a node of
:mod:`ccac.encode.nonlinear` (a fresh value, constrained exactly or by enclosures per the
solve's mode, ``exact`` or ``enclose``; the pipeline repairs or refines an enclosed answer until
every node is exact, :mod:`ccac.solving.refine`), except where an operand is a quantity known to
take finitely many values (:attr:`Symbols.finite`): that use is compiled once per value.
A rational power of a symbolic value is refused here: a CCA's rule (:mod:`ccac.encode.rules`)
turns it into a recorded choice before compiling; a query has no series to record it in.

Definitions (``[definitions]`` in query and proof files) are named expressions, expanded where
they are used. One that mentions ``t`` is a per-step quantity: ``NAME[k]`` is its value with
``t = k`` (and a bare ``NAME`` inside ``for t in ...`` means its value at that ``t``).

Supported: numbers, ``True``/``False``, names, indexing ``X[t]`` and ``X[n][t]`` (a negative
constant index counts from the end; an index that depends on a loop variable must stay in
range), ``+ - * / // % **`` (``//`` and ``%`` on known numbers only, ``**`` with a whole exponent
known before solving), comparisons (chains too),
``and or not``, ``a if c else b``, and the functions ``any all sum min max abs implies`` over
generator expressions ``... for t in range(a, b) if cond``.

Multi-flow helpers (all linear; windows are steps ``t1 < t2`` known before solving):
``throughput(n, t1, t2)`` is flow n's bytes served at the bottleneck per step over the window,
(S_f[n][t2] - S_f[n][t1]) / (t2 - t1); ``utilization(t1, t2)`` is (S[t2] - S[t1]) / (C (t2 - t1));
``sfair(s, t1, t2)`` holds when every flow's service over the window is at most s times every
other's; ``ratio(n, m, t1, t2)`` is flow n's over flow m's service in the window, usable only
compared with a number c known before solving, and compiled without division: ``ratio OP c``
means ``den > 0 and num OP c * den`` (num, den the two flows' bytes served in the window), so a
ratio comparison is false when flow m got nothing.

Size limits (:mod:`ccac.core.limits`), each an error naming the expression's place: one expression,
with the definitions it expands, may visit at most ``MAX_EXPANSION`` syntax nodes and loop
iterations together (a comprehension's range lengths are multiplied and checked before its first
iteration); exact numbers may have at most ``MAX_NUMBER_BITS`` bits (a power is estimated before
it is computed); syntax and definitions may nest at most ``MAX_DEPTH`` levels.

Why one file of some 650 lines: the compiler is one walk over Python's syntax nodes
(:class:`_Compiler`, one method per kind of node), whose methods share the loop scope, the
definitions being expanded and the size budget; cut in two, every method would need both halves.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterator

import z3

from ccac.core import deadline
from ccac.encode.encoding import as_real, is_symbolic, maximum, minimum, num, build_context, terms_in, truth
from ccac.core.errors import CcacError
from ccac.core.limits import MAX_DEPTH, MAX_EXPANSION, MAX_NUMBER_BITS, number_bits, power_bits, show_size
from ccac.encode import nonlinear
from ccac.encode.terms import subterms

Value = Any  # int | Fraction | bool | z3.ArithRef | z3.BoolRef


@dataclass
class Series:
    """A named per-step quantity: ``values[t]`` (1 dimension) or ``values[n][t]`` (2)."""

    name: str
    values: list[Any]
    dims: int
    missing: dict[int, str] | None = None  # flow index -> why this flow has no such series


class Symbols:
    """Names an expression may use: constants (numbers or solver terms), series, and
    definitions (named expressions, expanded where they are used)."""

    def __init__(self) -> None:
        self.constants: dict[str, Value] = {}
        self.series: dict[str, Series] = {}
        self.definitions: dict[str, str] = {}
        self.unavailable: dict[str, str] = {}  # name -> why it cannot be used here
        self.ctx = build_context()  # the z3 context its solver terms live in (None: no build's)
        # solver quantities known to take one of finitely many values: a non-linear use of one
        # is compiled once per value, the cases joined on its term (exact, no node)
        self.finite: dict[str, tuple[Any, ...]] = {}
        self.split_on: set[str] = set()  # the finite names an expression was split over (shared)

    def names(self) -> list[str]:
        return sorted(set(self.constants) | set(self.series) | set(self.definitions))

    def with_definitions(self, definitions: dict[str, str]) -> "Symbols":
        """These names with ``definitions`` added (a query's own, read on a trace), sharing
        everything else; this object is left as it is."""
        if not definitions:
            return self
        out = Symbols()
        out.constants, out.series, out.unavailable = self.constants, self.series, self.unavailable
        out.ctx, out.finite, out.split_on = self.ctx, self.finite, self.split_on
        out.definitions = {**self.definitions, **definitions}
        return out

    def fixing(self, name: str, value: Value) -> "Symbols":
        """These names with the finite quantity ``name`` bound to one of its values."""
        out = Symbols()
        out.constants = {**self.constants, name: value}
        out.series, out.unavailable, out.definitions = self.series, self.unavailable, self.definitions
        out.ctx, out.split_on = self.ctx, self.split_on
        out.finite = {k: v for k, v in self.finite.items() if k != name}
        return out


class _Budget:
    """What one expression has expanded to so far (syntax nodes visited plus loop iterations,
    across the definitions it expands), against :data:`ccac.core.limits.MAX_EXPANSION`."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.used = 0

    def left(self) -> int:
        return MAX_EXPANSION - self.used


def compile_condition(source: str, symbols: Symbols, where: str) -> Value:
    """Compile ``source`` to a boolean (a z3 BoolRef, or a Python bool if already decided)."""
    value = _compiled(source, symbols, where)
    if not _is_bool(value):
        raise CcacError(f"expression is a number, not a condition: `{source.strip()}`", where)
    return value


def compile_number(source: str, symbols: Symbols, where: str) -> Value:
    """Compile ``source`` to a number or an arithmetic term (non-linear uses become nodes:
    :mod:`ccac.encode.nonlinear`)."""
    value = _compiled(source, symbols, where)
    if _is_bool(value):
        raise CcacError(f"expression is a condition, not a number: `{source.strip()}`", where)
    if isinstance(value, _Ratio):
        raise CcacError(f"{_RATIO_USE}: `{source.strip()}`", where)
    return value


@dataclass
class StepPart:
    """One part of a condition read on a concrete trace: its text, and its value at each step of
    the loop it sits in."""

    text: str
    holds: dict[int, bool]


def step_parts(source: str, symbols: Symbols, where: str) -> list[StepPart]:
    """Where each per-step part of the condition ``source`` holds, on a trace whose names are
    bound to numbers (``Trace.symbols``): for each top-level ``and`` of ``source`` of the form
    ``any(BODY for t in range(...))`` or ``all(...)``, each top-level ``and`` of BODY with its
    value at every step ``t`` of the range (filters applied). With other loop variables too
    (``for n in range(N) for t in range(T)``) a part is read once per value of the others,
    named with them (``cwnd[n][t] > 0 [n = 1]``). Parts over the whole trace, and loops without
    ``t``, have no per-step reading and are left out."""
    return _Compiler(source, symbols, where).step_parts()


class _Split(Exception):
    """A non-linear use of the finite quantity ``name``: compile once per value instead."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _compiled(source: str, symbols: Symbols, where: str) -> Value:
    """``source`` compiled; where a non-linear use reads a finite quantity, compiled once per
    value it takes and joined on its term: ``If(term == v0, case0, If(term == v1, case1, ...
    case_last))``, exact since the term is one of the values."""
    try:
        return _Compiler(source, symbols, where).run()
    except _Split as split:
        name = split.name
    symbols.split_on.add(name)
    values = list(symbols.finite[name])
    cases = [_compiled(source, symbols.fixing(name, v), where) for v in values]
    if isinstance(cases[0], _Ratio):
        return cases[0]   # refused by the caller as a ratio used outside a comparison
    term = symbols.constants[name]
    joined = _as_z3_bool(cases[-1]) if _is_bool(cases[-1]) else as_real(cases[-1])
    for v, case in zip(reversed(values[:-1]), reversed(cases[:-1])):
        joined = z3.If(term == v, _as_z3_bool(case) if _is_bool(case) else as_real(case), joined)
    return joined


def _conjuncts(node: ast.AST) -> list[ast.AST]:
    """The operands of a top-level ``and`` (the node itself if it is not one)."""
    return list(node.values) if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) else [node]


def _step_loop(node: ast.AST) -> ast.GeneratorExp | None:
    """``node``'s loop if it is ``any(... for t in range(...))`` or ``all(...)``, over ``t`` and
    any other plain names (``for n in range(N) for t in range(T)``)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("any", "all")
            and len(node.args) == 1 and isinstance(node.args[0], ast.GeneratorExp)):
        return None
    loop = node.args[0]
    names = [g.target.id for g in loop.generators if isinstance(g.target, ast.Name)]
    return loop if len(names) == len(loop.generators) and names.count("t") == 1 else None


def _is_bool(v: Value) -> bool:
    return isinstance(v, bool) or isinstance(v, z3.BoolRef)


class _Compiler:
    def __init__(self, source: str, symbols: Symbols, where: str, expanding: tuple[str, ...] = (),
                 budget: _Budget | None = None) -> None:
        self.source = source
        self.symbols = symbols
        self.where = where
        self.expanding = expanding  # definitions being expanded, outermost first
        self.budget = budget if budget is not None else _Budget(where)  # shared with expansions

    # ------------------------------------------------------------------ entry and errors
    def run(self, env: dict[str, int] | None = None) -> Value:
        if not isinstance(self.source, str) or not self.source.strip():
            raise CcacError("expected a non-empty expression string", self.where)
        self.text = self.source.strip()
        tree = syntax_tree(self.text, self.where)
        try:
            with terms_in(self.symbols.ctx):
                return self.visit(tree.body, env or {})
        except RecursionError:
            raise CcacError(f"the expression (with its definitions) nests too deeply to compile: "
                            f"`{_clip(self.text)}`", self.where) from None

    def step_parts(self) -> list[StepPart]:
        """:func:`step_parts`, on this compiler's source."""
        self.text = self.source.strip()
        out: list[StepPart] = []
        with terms_in(self.symbols.ctx):
            for part in _conjuncts(syntax_tree(self.text, self.where).body):
                loop = _step_loop(part)
                if loop is None:
                    continue
                body = [(b, " ".join((ast.get_source_segment(self.text, b) or "").split()))
                        for b in _conjuncts(loop.elt)]
                found: dict[str, StepPart] = {}
                for env in self.iterate(loop.generators, 0, {}):
                    others = ", ".join(f"{k} = {v}" for k, v in env.items() if k != "t")
                    for node, text in body:
                        label = f"{text} [{others}]" if others else text
                        value = self.visit(node, env)
                        if isinstance(value, bool):
                            found.setdefault(label, StepPart(label, {})).holds[env["t"]] = value
                out += found.values()
        return out

    def expand(self, node: ast.AST, name: str, env: dict[str, int]) -> Value:
        """The value of definition ``name`` here: its text compiled in the current bindings,
        so a definition that mentions ``t`` means its value at the step ``t`` is bound to."""
        if name in self.expanding:
            cycle = " -> ".join(self.expanding[self.expanding.index(name):] + (name,))
            raise self.fail(node, f"definitions refer to each other in a cycle: {cycle}")
        if len(self.expanding) >= MAX_DEPTH:
            raise self.fail(node, f"definitions nest more than {MAX_DEPTH} deep (ccac.core.limits.MAX_DEPTH)")
        inner = _Compiler(self.symbols.definitions[name], self.symbols, f"definitions.{name}",
                          self.expanding + (name,), self.budget)
        return inner.run(env)

    def fail(self, node: ast.AST, message: str) -> CcacError:
        snippet = ast.get_source_segment(self.text, node) or self.text
        column = getattr(node, "col_offset", 0) + 1
        detail = f" (`{_clip(snippet)}`, column {column})" if snippet != self.text else ""
        return CcacError(f"{message}{detail} in `{_clip(self.text)}`", self.where)

    def too_big(self, node: ast.AST, would: str | None = None) -> CcacError:
        """The expansion budget is exceeded (or would be: ``would`` says by what), as an error at
        the place of the whole expression, naming the definition being expanded."""
        limit = f"{MAX_EXPANSION:,} syntax nodes and loop iterations (ccac.core.limits.MAX_EXPANSION)"
        text = f"the expression expands to more than {limit}" if would is None \
            else f"{would}, more than the {limit} one expression may expand to"
        inside = f", while expanding definition `{self.expanding[-1]}`" if self.expanding else ""
        snippet = (ast.get_source_segment(self.text, node) if would else None) or self.text
        return CcacError(f"{text}{inside}, at `{_clip(snippet)}`", self.budget.where)

    def spend(self, node: ast.AST, units: int = 1) -> None:
        """Count ``units`` of expansion (a node visited, a loop iteration) against the budget;
        look at the clock now and then."""
        budget = self.budget
        budget.used += units
        if budget.used > MAX_EXPANSION:
            raise self.too_big(node)
        if budget.used % deadline.CHECK_EVERY_NODES < units:
            deadline.checkpoint(None, budget.where)

    def known_number(self, node: ast.AST, value: Value) -> Value:
        """``value``, if it is no larger than :data:`ccac.core.limits.MAX_NUMBER_BITS`."""
        if not is_symbolic(value) and not isinstance(value, bool) and isinstance(value, (int, Fraction)):
            bits = number_bits(value)
            if bits > MAX_NUMBER_BITS:
                raise self.fail(node, f"number too large: it has {bits:,} bits, more than {MAX_NUMBER_BITS:,} "
                                      f"(ccac.core.limits.MAX_NUMBER_BITS)")
        return value

    # ------------------------------------------------------------------ dispatch
    def visit(self, node: ast.AST, env: dict[str, int]) -> Value:
        self.spend(node)
        method: Callable[[Any, dict[str, int]], Value] | None = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise self.fail(node, f"unsupported syntax ({type(node).__name__})")
        return method(node, env)

    def visit_Constant(self, node: ast.Constant, env: dict[str, int]) -> Value:
        v = node.value
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return self.known_number(node, v)
        if isinstance(v, float):
            if not math.isfinite(v):
                raise self.fail(node, "number too large: a decimal literal must be below about 1.8e308")
            return self.known_number(node, Fraction(repr(v)))
        raise self.fail(node, f"unsupported constant {_clip(repr(v))}")

    def visit_Name(self, node: ast.Name, env: dict[str, int]) -> Value:
        name = node.id
        if name in env:
            return env[name]
        if name in self.symbols.definitions:
            return self.expand(node, name, env)
        if name == "t":
            raise self.fail(node, "`t` is not bound here: use it inside `for t in range(...)`, "
                                  "or index the definition that uses it, e.g. NAME[T-1]")
        if name in self.symbols.constants:
            return self.symbols.constants[name]
        if name in self.symbols.series:
            return self.symbols.series[name]
        if name in self.symbols.unavailable:
            raise self.fail(node, f"`{name}` is not available: {self.symbols.unavailable[name]}")
        raise self.fail(node, f"unknown name `{name}` (known: {', '.join(self.symbols.names())})")

    def visit_Subscript(self, node: ast.Subscript, env: dict[str, int]) -> Value:
        if isinstance(node.value, ast.Name) and node.value.id in self.symbols.definitions \
                and node.value.id not in env:
            step = _whole(self.visit(node.slice, env))
            if step is None:
                raise self.fail(node.slice, "an index must be a whole number known before solving")
            return self.expand(node, node.value.id, {**env, "t": step})
        base = self.visit(node.value, env)
        if isinstance(base, _FlowRow):
            return self.pick(node, base.values, self.index(node.slice, env, len(base.values)), base.label)
        if not isinstance(base, Series):
            raise self.fail(node, "only series such as A[t] or cwnd[n][t] can be indexed")
        if base.dims == 1:
            return self.pick(node, base.values, self.index(node.slice, env, len(base.values)), base.name)
        n = self.index(node.slice, env, len(base.values))
        if base.missing and n in base.missing:
            raise self.fail(node, f"`{base.name}[{n}]` does not exist: {base.missing[n]}")
        return _FlowRow(base.values[n], f"{base.name}[{n}]")

    def pick(self, node: ast.AST, values: list[Any], i: int, label: str) -> Value:
        return values[i]

    def index(self, node: ast.AST, env: dict[str, int], length: int) -> int:
        whole = _whole(self.visit(node, env))
        if whole is None:
            raise self.fail(node, "an index must be a whole number known before solving")
        i = whole
        bound = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & set(env)
        if -length <= i < 0 and not bound:
            return length + i
        if not 0 <= i < length:
            at = ", ".join(f"{k}={env[k]}" for k in sorted(bound))
            raise self.fail(node, f"index {_show_int(i)} out of range 0..{length - 1}" + (f" at {at}" if at else ""))
        return i

    # ------------------------------------------------------------------ arithmetic
    def visit_UnaryOp(self, node: ast.UnaryOp, env: dict[str, int]) -> Value:
        v = self.visit(node.operand, env)
        if isinstance(node.op, ast.Not):
            self.need_bool(node.operand, v)
            return (not v) if isinstance(v, bool) else z3.Not(v)
        self.need_number(node.operand, v)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        raise self.fail(node, "unsupported operator")

    def visit_BinOp(self, node: ast.BinOp, env: dict[str, int]) -> Value:
        a, b = self.visit(node.left, env), self.visit(node.right, env)
        self.need_number(node.left, a)
        self.need_number(node.right, b)
        op = node.op
        known = not is_symbolic(a) and not is_symbolic(b)
        if isinstance(op, ast.Add):
            return self.known_number(node, a + b) if known else a + b
        if isinstance(op, ast.Sub):
            return self.known_number(node, a - b) if known else a - b
        if isinstance(op, ast.Mult):
            if is_symbolic(a) and is_symbolic(b):
                cases = _by_cases(a, lambda k: num(k, b.ctx) * b)
                cases = _by_cases(b, lambda k: a * num(k, a.ctx)) if cases is None else cases
                return cases if cases is not None else self.node(node, "mul", a, b)
            return self.known_number(node, a * b) if known else a * b
        if isinstance(op, ast.Div):
            if is_symbolic(b):
                cases = _by_cases(b, lambda k: None if k == 0 else as_real(a, b.ctx) / num(k, b.ctx))
                return cases if cases is not None else self.node(node, "div", b, a)
            if b == 0:
                raise self.fail(node, "division by zero")
            return self.known_number(node, a / Fraction(b)) if not is_symbolic(a) else a / num(b)
        if isinstance(op, ast.Pow) and not known:
            return self.symbolic_power(node, a, b)
        if isinstance(op, (ast.FloorDiv, ast.Mod, ast.Pow)):
            if not known:
                raise self.fail(node, "non-linear: // and % need numbers known before solving")
            if isinstance(op, ast.Pow):
                return self.known_number(node, self.power(node, a, b))
            if b == 0:
                raise self.fail(node, "division by zero")
            result = Fraction(a) // Fraction(b) if isinstance(op, ast.FloorDiv) else Fraction(a) % Fraction(b)
            return self.known_number(node, int(result) if result.denominator == 1 else result)
        raise self.fail(node, "unsupported operator")

    def node(self, node: ast.AST, kind: str, split: Value, other: Value, exponent: int = 0) -> Value:
        """A non-linear use (:mod:`ccac.encode.nonlinear`): split into cases if it reads a finite
        quantity, else a node's fresh value."""
        self.split_finite(split, other)
        text = ast.get_source_segment(self.text, node) or self.text
        return nonlinear.make(kind, as_real(split), None if other is None else as_real(other), exponent,
                              self.where, _clip(text, 120))

    def split_finite(self, *operands: Value) -> None:
        """Raise :class:`_Split` if an operand reads a finite quantity's term."""
        if not self.symbols.finite:
            return
        terms = [v for v in operands if is_symbolic(v)]
        for name in self.symbols.finite:
            term = self.symbols.constants.get(name)
            if is_symbolic(term) and any(t.eq(term) for t in subterms(terms)):
                raise _Split(name)

    def symbolic_power(self, node: ast.BinOp, a: Value, b: Value) -> Value:
        """``a ** b`` with a solver quantity: a whole exponent known before solving, at most
        :data:`~ccac.encode.nonlinear.MAX_EXPONENT` in size (a negative one is 1 over the power);
        an exponent that is a solver quantity only if it is a finite one (split into cases)."""
        if is_symbolic(b):
            self.split_finite(b)
            raise self.fail(node, "non-linear: an exponent must be a number known before solving")
        exponent = Fraction(b)
        if exponent.denominator != 1:
            raise self.fail(node, "a rational power of a solver quantity is irrational in general: it is allowed "
                                  "in a CCA state's rule only (directly or through its definitions), where the "
                                  "trace records the root taken (a choice within a tolerance); here there is no "
                                  "trace series to record the root in: compare powers instead "
                                  "(`y ** 2 <= x` for `y <= x ** (1/2)` when y >= 0)")
        n = int(exponent)
        if abs(n) > nonlinear.MAX_EXPONENT:
            raise self.fail(node, f"exponent {_show_int(n)} of a solver quantity is beyond "
                                  f"+-{nonlinear.MAX_EXPONENT} (ccac.encode.nonlinear.MAX_EXPONENT)")
        if n == 0:
            return 1
        power = a if abs(n) == 1 else self.node(node, "pow", a, None, abs(n))
        return power if n > 0 else self.node(node, "div", power, 1)

    def power(self, node: ast.AST, a: Value, b: Value) -> Fraction:
        """``a ** b`` for known numbers, refused before it is computed if the result would have
        more than :data:`ccac.core.limits.MAX_NUMBER_BITS` bits."""
        if Fraction(b).denominator != 1:
            raise self.fail(node, "exponent must be a whole number")
        exponent = int(b)
        if a == 0 and exponent < 0:
            raise self.fail(node, "division by zero (0 to a negative power)")
        bits = power_bits(a, exponent)
        if bits > MAX_NUMBER_BITS:
            raise self.fail(node, f"power too large: the result would have about {show_size(bits)} bits, more "
                                  f"than {MAX_NUMBER_BITS:,} (ccac.core.limits.MAX_NUMBER_BITS)")
        return Fraction(a) ** exponent

    # ------------------------------------------------------------------ logic
    def visit_BoolOp(self, node: ast.BoolOp, env: dict[str, int]) -> Value:
        values = []
        for operand in node.values:
            v = self.visit(operand, env)
            self.need_bool(operand, v)
            values.append(v)
        return _conjoin(values) if isinstance(node.op, ast.And) else _disjoin(values)

    def visit_Compare(self, node: ast.Compare, env: dict[str, int]) -> Value:
        left = self.visit(node.left, env)
        parts = []
        for op, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node, env)
            parts.append(self.compare(node, op, left, right))
            left = right
        return _conjoin(parts)

    def compare(self, node: ast.AST, op: ast.cmpop, a: Value, b: Value) -> Value:
        if isinstance(a, _Ratio) or isinstance(b, _Ratio):
            return self.compare_ratio(node, op, a, b)
        if _is_bool(a) or _is_bool(b):
            if not (_is_bool(a) and _is_bool(b)) or not isinstance(op, (ast.Eq, ast.NotEq)):
                raise self.fail(node, "conditions can only be compared with == or !=")
            if isinstance(a, bool) and isinstance(b, bool):
                return (a == b) if isinstance(op, ast.Eq) else (a != b)
            za, zb = (truth(x) if isinstance(x, bool) else x for x in (a, b))
            return za == zb if isinstance(op, ast.Eq) else za != zb
        self.need_number(node, a)
        self.need_number(node, b)
        if is_symbolic(a) or is_symbolic(b):
            a, b = as_real(a), as_real(b)
        table: dict[type, Callable[[Any, Any], Any]] = {
            ast.Lt: lambda x, y: x < y, ast.LtE: lambda x, y: x <= y,
            ast.Gt: lambda x, y: x > y, ast.GtE: lambda x, y: x >= y,
            ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y,
        }
        if type(op) not in table:
            raise self.fail(node, "unsupported comparison (use < <= > >= == !=)")
        return table[type(op)](a, b)

    def compare_ratio(self, node: ast.AST, op: ast.cmpop, a: Value, b: Value) -> Value:
        """``ratio(...) OP c`` (either side) as ``den > 0 and num OP c * den``: linear, since c is
        known before solving, and multiplying by a positive denominator keeps the direction."""
        ratio, c = (a, b) if isinstance(a, _Ratio) else (b, a)
        if isinstance(c, (_Ratio, Series, _FlowRow)) or _is_bool(c) or is_symbolic(c):
            raise self.fail(node, _RATIO_USE)
        if ratio is b:  # c OP ratio: flip to ratio OP' c
            flipped = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}
            op = flipped.get(type(op), type(op))()
        scaled = c * ratio.den
        return _conjoin([self.compare(node, ast.Gt(), ratio.den, 0),
                         self.compare(node, op, ratio.num, scaled)])

    def visit_IfExp(self, node: ast.IfExp, env: dict[str, int]) -> Value:
        cond = self.visit(node.test, env)
        self.need_bool(node.test, cond)
        if isinstance(cond, bool):   # decided: the other branch is not evaluated (it may divide by 0)
            taken = self.visit(node.body if cond else node.orelse, env)
            if isinstance(taken, _Ratio):
                raise self.fail(node, _RATIO_USE)
            return taken
        a, b = self.visit(node.body, env), self.visit(node.orelse, env)
        if isinstance(a, _Ratio) or isinstance(b, _Ratio):
            raise self.fail(node, _RATIO_USE)
        if _is_bool(a) != _is_bool(b):
            raise self.fail(node, "both branches must be numbers or both conditions")
        if _is_bool(a):
            return z3.If(cond, _as_z3_bool(a), _as_z3_bool(b))
        return z3.If(cond, as_real(a), as_real(b))

    # ------------------------------------------------------------------ functions
    def visit_Call(self, node: ast.Call, env: dict[str, int]) -> Value:
        if not isinstance(node.func, ast.Name) or node.keywords:
            raise self.fail(node, f"only any, all, sum, min, max, abs, floor and implies, and the flow "
                                  f"helpers {', '.join(HELPERS)}, can be called")
        name = node.func.id
        if name in HELPERS:
            return self.flow_helper(node, name, env)
        if name == "implies":
            if len(node.args) != 2:
                raise self.fail(node, "implies takes two conditions: implies(a, b)")
            a, b = (self.visit(x, env) for x in node.args)
            self.need_bool(node.args[0], a)
            self.need_bool(node.args[1], b)
            return _disjoin([(not a) if isinstance(a, bool) else z3.Not(a), b])
        if name == "abs":
            if len(node.args) != 1:
                raise self.fail(node, "abs takes one number")
            v = self.visit(node.args[0], env)
            self.need_number(node.args[0], v)
            return abs(v) if not is_symbolic(v) else z3.If(v >= 0, v, -v)
        if name == "floor":
            return self.floor(node, env)
        if name not in ("any", "all", "sum", "min", "max"):
            raise self.fail(node, f"unknown function `{name}` (use any, all, sum, min, max, abs, floor, "
                                  f"implies, {', '.join(HELPERS)})")
        items = list(self.arguments(node, env))
        if name in ("any", "all"):
            for item_node, v in items:
                self.need_bool(item_node, v)
            values = [v for _, v in items]
            return _disjoin(values) if name == "any" else _conjoin(values)
        for item_node, v in items:
            self.need_number(item_node, v)
        values = [v for _, v in items]
        if name == "sum":
            return _sum(values, lambda v: self.known_number(node, v))
        if not values:
            raise self.fail(node, f"{name}() of nothing")
        pick = minimum if name == "min" else maximum
        result = values[0]
        for v in values[1:]:
            result = pick(result, v)
        return result

    # ------------------------------------------------------------------ multi-flow helpers
    def floor(self, node: ast.Call, env: dict[str, int]) -> Value:
        """``floor(x)``: the greatest whole number at most x, exactly (z3's to_int on a solver
        quantity: integer arithmetic, no approximation). Real stacks truncate (whole bytes,
        whole segments); a rule that truncates as they do keeps its values on a grid, where
        exact rationals would grow without bound over many ACKs."""
        if len(node.args) != 1:
            raise self.fail(node, "floor takes one number")
        v = self.visit(node.args[0], env)
        self.need_number(node.args[0], v)
        if not is_symbolic(v):
            return math.floor(Fraction(v))
        return z3.ToReal(z3.ToInt(as_real(v)))

    def flow_helper(self, node: ast.Call, name: str, env: dict[str, int]) -> Value:
        """throughput, ratio, sfair and utilization (see the module docstring)."""
        if len(node.args) != len(HELPERS[name]):
            raise self.fail(node, f"{name} takes {len(HELPERS[name])} arguments: {name}({', '.join(HELPERS[name])})")
        args = dict(zip(HELPERS[name], node.args))
        t1, t2 = self.window(node, args["t1"], args["t2"], env)
        if name == "utilization":
            served = self.symbols.series["S"].values
            return _per_step(served[t2] - served[t1], self.symbols.constants["C"] * (t2 - t1))
        if name == "sfair":
            s = self.visit(args["s"], env)
            if is_symbolic(s) or _is_bool(s) or isinstance(s, (Series, _FlowRow, _Ratio)) or s < 1:
                raise self.fail(args["s"], "sfair's factor s must be a number >= 1 known before solving")
            flows = len(self.symbols.series["S_f"].values)
            self.spend(node, flows * flows)  # one comparison per ordered pair of flows
            got = [self.served_in(f, t1, t2) for f in range(flows)]
            return _conjoin([as_real(a) <= as_real(s * b) if is_symbolic(a) or is_symbolic(b) else a <= s * b
                             for i, a in enumerate(got) for j, b in enumerate(got) if i != j])
        n = self.flow_index(args["n"], env)
        if name == "throughput":
            return _per_step(self.served_in(n, t1, t2), t2 - t1)
        return _Ratio(self.served_in(n, t1, t2), self.served_in(self.flow_index(args["m"], env), t1, t2))

    def served_in(self, n: int, t1: int, t2: int) -> Value:
        """Bytes of flow n served at the bottleneck in the window (t1, t2]."""
        row = self.symbols.series["S_f"].values[n]
        return row[t2] - row[t1]

    def flow_index(self, node: ast.AST, env: dict[str, int]) -> int:
        return self.index(node, env, len(self.symbols.series["S_f"].values))

    def window(self, node: ast.AST, a: ast.AST, b: ast.AST, env: dict[str, int]) -> tuple[int, int]:
        length = len(self.symbols.series["S"].values)
        t1, t2 = self.index(a, env, length), self.index(b, env, length)
        if t1 >= t2:
            raise self.fail(node, f"the window must have t1 < t2, got t1 = {t1}, t2 = {t2}")
        return t1, t2

    def arguments(self, node: ast.Call, env: dict[str, int]) -> Iterator[tuple[ast.AST, Value]]:
        if len(node.args) == 1 and isinstance(node.args[0], (ast.GeneratorExp, ast.ListComp)):
            gen = node.args[0]
            self.check_loops(gen, env)
            for bound in self.iterate(gen.generators, 0, env):
                yield gen.elt, self.visit(gen.elt, bound)
        elif len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
            for item in node.args[0].elts:
                yield item, self.visit(item, env)
        else:
            for item in node.args:
                yield item, self.visit(item, env)

    def check_loops(self, gen: ast.GeneratorExp | ast.ListComp, env: dict[str, int]) -> None:
        """Before the first iteration: the product of the lengths of the comprehension's ranges
        (those whose bounds do not depend on its own loop variables) must fit in what is left of
        the expansion budget. Ranges that depend on an outer loop variable of the same
        comprehension are checked as each is reached (:meth:`iterate`)."""
        bound: set[str] = set()
        total, parts = 1, []
        for g in gen.generators:
            uses = {n.id for n in ast.walk(g.iter) if isinstance(n, ast.Name)}
            if not uses & bound:
                length = _range_length(self.range_values(g.iter, env))
                total *= length
                parts.append((_clip(ast.get_source_segment(self.text, g.iter) or "range(...)", 60), length))
            if isinstance(g.target, ast.Name):
                bound.add(g.target.id)
        if total > self.budget.left():
            if len(parts) == 1:
                would = f"its loop over {parts[0][0]} would run {show_size(total)} times"
            else:
                each = " × ".join(f"{text}: {show_size(n)}" for text, n in parts)
                would = f"its nested loops would run {show_size(total)} times ({each})"
            raise self.too_big(gen, would)

    def iterate(self, generators: list[ast.comprehension], i: int, env: dict[str, int]) -> Iterator[dict[str, int]]:
        if i == len(generators):
            yield env
            return
        gen = generators[i]
        if not isinstance(gen.target, ast.Name) or gen.is_async:
            raise self.fail(gen.target, "loop variables must be plain names: for t in range(...)")
        name = gen.target.id
        if name in self.symbols.constants or name in self.symbols.series or name in self.symbols.definitions:
            raise self.fail(gen.target, f"loop variable `{name}` hides a model name or a definition")
        values = self.range_values(gen.iter, env)
        if _range_length(values) > self.budget.left():
            raise self.too_big(gen.iter, f"the loop would run {show_size(_range_length(values))} times")
        for value in values:
            self.spend(gen.iter)
            inner = {**env, name: value}
            keep = True
            for cond in gen.ifs:
                c = self.visit(cond, inner)
                if not isinstance(c, bool):
                    raise self.fail(cond, "a filter in a comprehension must be decided before solving")
                keep = keep and c
            if keep:
                yield from self.iterate(generators, i + 1, inner)

    def range_values(self, node: ast.AST, env: dict[str, int]) -> range:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"):
            raise self.fail(node, "loops must run over range(...)")
        if not 1 <= len(node.args) <= 3 or node.keywords:
            raise self.fail(node, "range takes 1 to 3 arguments")
        bounds = []
        for arg in node.args:
            v = _whole(self.visit(arg, env))
            if v is None:
                raise self.fail(arg, "range bounds must be whole numbers known before solving")
            bounds.append(v)
        if len(bounds) == 3 and bounds[2] == 0:
            raise self.fail(node, "range step must not be zero")
        return range(*bounds)

    # ------------------------------------------------------------------ type checks
    def need_bool(self, node: ast.AST, v: Value) -> None:
        if not _is_bool(v):
            raise self.fail(node, "expected a condition (true/false), got a number")

    def need_number(self, node: ast.AST, v: Value) -> None:
        if isinstance(v, _Ratio):
            raise self.fail(node, _RATIO_USE)
        if isinstance(v, (Series, _FlowRow)):
            raise self.fail(node, "a series needs an index, e.g. A[t] or cwnd[n][t]")
        if _is_bool(v):
            raise self.fail(node, "expected a number, got a condition")


@dataclass
class _FlowRow:
    """``X[n]`` of a per-flow series, waiting for its time index."""

    values: list[Any]
    label: str


@dataclass
class _Ratio:
    """``ratio(n, m, t1, t2)``: kept as numerator and denominator until it is compared."""

    num: Value
    den: Value


_RATIO_USE = ("non-linear: ratio(...) can only be compared with a number known before solving, "
              "e.g. ratio(0, 1, t1, t2) >= 10 (compiled as den > 0 and num >= 10 * den)")
HELPERS: dict[str, tuple[str, ...]] = {
    "throughput": ("n", "t1", "t2"), "ratio": ("n", "m", "t1", "t2"),
    "sfair": ("s", "t1", "t2"), "utilization": ("t1", "t2"),
}


def _per_step(amount: Value, steps: Value) -> Value:
    """``amount / steps`` for a known positive ``steps``."""
    return amount / num(steps) if is_symbolic(amount) else Fraction(amount) / Fraction(steps)


def _as_z3_bool(v: Value) -> z3.BoolRef:
    return truth(v) if isinstance(v, bool) else v


def _conjoin(values: list[Value]) -> Value:
    if any(v is False for v in values):
        return False
    rest = [v for v in values if v is not True]
    return True if not rest else rest[0] if len(rest) == 1 else z3.And(*rest)


def _disjoin(values: list[Value]) -> Value:
    if any(v is True for v in values):
        return True
    rest = [v for v in values if v is not False]
    return False if not rest else rest[0] if len(rest) == 1 else z3.Or(*rest)


def _sum(values: list[Value], check: Callable[[Fraction], Fraction] = lambda v: v) -> Value:
    """The sum of numbers and terms; ``check`` sees each partial sum of the known numbers."""
    known = Fraction(0)
    for v in values:
        if not is_symbolic(v):
            known = check(known + Fraction(v))
    symbolic = [v for v in values if is_symbolic(v)]
    if not symbolic:
        return known
    total = z3.Sum(*symbolic) if len(symbolic) > 1 else symbolic[0]
    return total + num(known) if known else total


def _by_cases(v: Any, apply: Callable[[Fraction], Any]) -> Any:
    """``apply`` on each value of ``v`` when ``v`` is a choice among numbers by conditions
    (``1.25 if phase == 0 else 1``: an if-then-else whose leaves are numerals), as the same
    choice among the results: ``c ? k1 * x : k2 * x`` for ``(c ? k1 : k2) * x``, exact and
    linear, so no non-linear node is needed. None if ``v`` is anything else, or ``apply`` gives
    None at some leaf (a division by a leaf of 0)."""
    if z3.is_app_of(v, z3.Z3_OP_TO_REAL):
        v = v.arg(0)
    if z3.is_rational_value(v) or z3.is_int_value(v):
        value = Fraction(v.as_fraction()) if z3.is_rational_value(v) else Fraction(v.as_long())
        return apply(value)
    if not z3.is_app_of(v, z3.Z3_OP_ITE):
        return None
    yes, no = _by_cases(v.arg(1), apply), _by_cases(v.arg(2), apply)
    return None if yes is None or no is None else z3.If(v.arg(0), yes, no)


def _clip(text: str, limit: int = 300) -> str:
    """``text`` shortened for a one-line message."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def _show_int(i: int) -> str:
    return str(i) if abs(i) < 10**30 else f"about {'-' if i < 0 else ''}10^{len(str(abs(i))) - 1}"


@functools.lru_cache(maxsize=4096)
def _parse_checked(text: str) -> ast.Expression | CcacError:
    """The syntax tree of ``text``, or the error it gives (without its place), parsed once: a rule
    or a query condition is compiled at every step of every trace, with the same text. The tree
    is only read."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        return CcacError(f"syntax error at column {e.offset}: `{_clip(text)}`")
    except (RecursionError, MemoryError):  # the parser's own nesting limits
        return CcacError(f"the expression is nested too deeply to parse (at most {MAX_DEPTH} levels): `{_clip(text)}`")
    depth = _depth(tree.body)
    if depth > MAX_DEPTH:
        return CcacError(f"the expression nests {depth} levels deep, more than {MAX_DEPTH} "
                         f"(ccac.core.limits.MAX_DEPTH): `{_clip(text)}`")
    return tree


def syntax_tree(text: str, where: str) -> ast.Expression:
    """``text``'s syntax tree, checked as every expression is (syntax, nesting depth), read once
    per text; an error names ``where``. The tree is shared: only read it."""
    found = _parse_checked(text)
    if isinstance(found, CcacError):
        raise CcacError(str(found), where)
    return found


def _depth(root: ast.AST) -> int:
    """The nesting depth of a syntax tree (without recursion, so any depth can be measured)."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _whole(v: Value) -> int | None:
    """``v`` as an int if it is a whole number known before solving, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, Fraction)) or Fraction(v).denominator != 1:
        return None
    return int(v)


def _range_length(r: range) -> int:
    """``len(r)``, also when it exceeds what ``len`` can return."""
    if r.step > 0:
        return max(0, (r.stop - r.start + r.step - 1) // r.step)
    return max(0, (r.start - r.stop - r.step - 1) // -r.step)
