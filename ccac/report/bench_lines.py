"""What ``ccac bench`` prints: one table row per query and horizon with its totals, and for
``--scaling`` one row per point with each case's fitted growth exponents."""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("query", "T", "answer", "expected", "validated", "build s", "solve s", "rounds", "note")


@dataclass
class Row:
    """One query at one horizon, as its cells show it."""

    query: str
    T: str
    answer: str
    expected: str = "-"
    validated: str = "-"
    build: str = "-"
    solve: str = "-"
    rounds: str = "-"   # an enclosed answer's refinement rounds (:func:`rounds_cell`)
    note: str = ""
    failed: bool = False  # a definite answer against expectation, or a trace that fails validation

    def cells(self) -> tuple[str, ...]:
        return (self.query, self.T, self.answer, self.expected, self.validated, self.build,
                self.solve, self.rounds, self.note)


def seconds_cell(seconds: float) -> str:
    return f"{seconds:.3f}"


def rounds_cell(nonlinear: str | None, refinements: int, repaired: bool) -> str:
    """How an answer's non-linear uses were made exact (:mod:`ccac.solving.refine`): ``-`` when
    the formula has none (or the time limit stopped it before an answer), ``exact`` in z3's
    non-linear arithmetic, else the enclosure's refinement rounds, ``repaired`` when its trace
    was found with operands pinned."""
    if nonlinear is None:
        return "-"
    if nonlinear == "exact":
        return "exact"
    return f"{refinements}, repaired" if repaired else str(refinements)


class Table:
    """The bench table's columns, wide enough for every query name and horizon it will show."""

    def __init__(self, names: list[str], horizons: list[int]) -> None:
        widths = [len(c) for c in COLUMNS]
        widths[0] = max(widths[0], *(len(n) for n in names))
        widths[1] = max(widths[1], *(len(str(T)) for T in horizons))
        widths[2:7] = [max(w, 8) for w in widths[2:7]]
        widths[7] = max(widths[7], len(rounds_cell("enclose", 99, True)))
        self.widths = widths

    def line(self, cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, self.widths)).rstrip()

    def heading(self) -> list[str]:
        """The column names and the rule under them."""
        return [self.line(COLUMNS), self.line(tuple("-" * w for w in self.widths[:-1]) + ("-" * 4,))]


def totals_line(queries: int, runs: int, solver: str, failures: int) -> str:
    return (f"\n{queries} queries, {runs} runs with {solver}; "
            f"{failures} failed (answer against expectation or trace not validated)")


def scaling_heading() -> str:
    return f"{'query':36}  {'T':>4}  {'R':>2}  {'answer':8}  {'build s':>8}  {'solve s':>8}"


def scaling_row(case: str, T: int, R: int | None, answer: str, build: float, solve: float, note: str) -> str:
    """One point of the scaling yardstick (``R`` None: the case's R is not grown)."""
    shown = "-" if R is None else R
    return (f"{case:36}  {T:>4}  {shown:>2}  {answer:8}  {build:8.3f}  {solve:8.3f}"
            + (f"  {note}" if note else ""))


EXPONENTS_HEADING = ("\ngrowth exponent k (time ~ T^k, least squares; solve: answered points, build: every "
                     "point built):")


def exponent_line(case: str, build: float | None, solve: float | None, what: str) -> str:
    """A case's fitted growth exponents (None: too few points to fit)."""
    shown = ["-" if k is None else f"{k:.2f}" for k in (build, solve)]
    return f"  {case:36}  build {shown[0]:>5}  solve {shown[1]:>5}   {what}"
