"""A solver portfolio: z3 and cvc5 race on the same formulas; the first definitive answer wins.

On CCAC-style problems the two solvers differ by 10-100x in both directions, and which one is
faster is hard to predict from the query. The portfolio runs every member in its own forked
process (each gets the whole time limit), takes the first ``sat`` or ``unsat``, and kills the
others. If no member answers definitively, the answer is ``unknown`` with every member's reason.
The outcome names the member that answered (``z3 (portfolio)``), so a result records which
solver's answer it is; a sat model is then read back and validated like any other.

Forking (not :mod:`multiprocessing`) keeps the formulas in memory without serializing them and
works inside pool workers, which may not start child processes of their own. A child clears
any inherited alarm, answers, writes its pickled :class:`~ccac.solving.solvers.Outcome` to a pipe and
exits; the parent reads the pipes with ``select``. Both members run at once, so the portfolio
pays off on a machine with a core free for each; on one core it halves each member's speed.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from typing import Callable

import z3

from ccac.solving.solvers import Outcome

DEFAULT_PORTFOLIO = ("z3", "cvc5")   # what ``--solver portfolio`` races
DEFINITIVE = ("sat", "unsat")
MAX_MEMBERS = 8


def race(jobs: dict[str, Callable[[], Outcome]],
         decide: Callable[[dict[str, Outcome]], Outcome | None]) -> Outcome:
    """Run every job in its own forked process; after each one finishes, ``decide`` gets the
    outcomes so far (by job name) and returns the answer, or None to wait for more. Jobs still
    running when it answers are killed. ``decide`` must answer once every job has finished."""
    running: dict[int, tuple[str, int]] = {}  # read end -> (job, pid)
    try:
        for name, job in jobs.items():
            running.update(_spawn(name, job))
        received: dict[int, bytes] = {fd: b"" for fd in running}
        finished: dict[str, Outcome] = {}
        while running:
            ready, _, _ = select.select(list(running), [], [])
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    received[fd] += chunk
                    continue
                name, pid = running.pop(fd)
                os.close(fd)
                os.waitpid(pid, 0)
                finished[name] = _decode(name, received.pop(fd))
                answer = decide(finished)
                if answer is not None:
                    return answer
        raise AssertionError("decide gave no answer with every job finished")
    finally:
        for fd, (_, pid) in running.items():
            _stop(pid)
            os.close(fd)


def solve_portfolio(formulas: list[z3.BoolRef], timeout: float | None,
                    members: dict[str, Callable[[list[z3.BoolRef], float | None], Outcome]]) -> Outcome:
    """Race ``members`` (single solvers by name, :func:`ccac.solving.backends.parse_solver`) on
    ``formulas``; the first definitive answer wins."""
    start = time.perf_counter()

    def job(solve: Callable[[list[z3.BoolRef], float | None], Outcome]) -> Callable[[], Outcome]:
        return lambda: solve(formulas, timeout)

    def first_definitive(finished: dict[str, Outcome]) -> Outcome | None:
        seconds = time.perf_counter() - start
        for name, o in finished.items():
            if o.answer in DEFINITIVE:
                return Outcome(o.answer, o.reason, o.assignment, f"{name} (portfolio)", o.version, seconds)
        if len(finished) < len(members):
            return None
        reasons = "; ".join(f"{o.solver}: {o.reason}" for o in finished.values())
        versions = ", ".join(f"{o.solver} {o.version}" for o in finished.values())
        return Outcome("unknown", reasons, None, "portfolio", versions, seconds)

    return race({name: job(solve) for name, solve in members.items()}, first_definitive)


def _spawn(name: str, job: Callable[[], Outcome]) -> dict[int, tuple[str, int]]:
    """Fork a child that runs ``job`` and writes its pickled outcome to a pipe."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the parent's code
        status = 0
        try:
            os.close(read_end)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            try:
                outcome = job()
            except Exception as e:  # a job's failure is that job's unknown, not the race's
                outcome = Outcome("unknown", f"failed: {type(e).__name__}: {e}", None, name, "", 0.0)
            data = pickle.dumps(outcome)
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    return {read_end: (name, pid)}


def _decode(name: str, data: bytes) -> Outcome:
    try:
        outcome = pickle.loads(data)
    except Exception:
        return Outcome("unknown", "the solver process ended without an answer", None, name, "", 0.0)
    return outcome if isinstance(outcome, Outcome) else \
        Outcome("unknown", "the solver process sent no outcome", None, name, "", 0.0)


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
