"""Where a command's tasks run: local processes, or a Dask cluster.

Every command that offers both (``ccac sweep``, ``ccac query --cubes``, ``ccac synthesize``)
reads ``--workers N`` and ``--scheduler ADDRESS`` through :func:`executor`, and runs its tasks
through the :class:`Executor` it gives. Tasks call a module-level function ``fn`` (picklable by
reference) on each task, plain data in and out. :meth:`Executor.run` reports each outcome as it
arrives, in completion order, as ``done(i, outcome)``: ``i`` the task's index, ``outcome`` what
``fn`` returned, or the Exception its worker failed with (killed, out of memory, ...), which is
not the task's fault. :meth:`Executor.map` returns the outcomes in task order, for rounds of
tasks that need all of them (a synthesis iteration), on a local pool kept for every round.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ccac.core.errors import CcacError
from ccac.core.machine import usable_cpus

__all__ = ["Executor", "Pool", "executor", "run_dask", "run_local"]

Done = Callable[[int, Any], None]


def run_local(fn: Callable[[Any], Any], tasks: list[Any], workers: int, done: Done) -> None:
    """Run ``fn`` on each task in a pool of at most ``workers`` processes; on any exception
    (Ctrl-C included) stop the workers, mid-task, and re-raise."""
    ctx = multiprocessing.get_context(_start_method())
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload([fn.__module__])
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=ctx,
                               initializer=_ignore_interrupts)
    try:
        futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
        for future in as_completed(futures):
            done(futures[future], _outcome(future))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()  # a solve in progress would otherwise run to its end
        raise
    pool.shutdown()


class Pool:
    """A local process pool kept for many rounds of tasks (``ccac synthesize`` runs one round
    per iteration): ``map(fn, tasks)`` returns the outcomes in task order and re-raises the
    first failure. Use it as a context manager; leaving stops the workers."""

    def __init__(self, workers: int, preload: str) -> None:
        ctx = multiprocessing.get_context(_start_method())
        if ctx.get_start_method() == "forkserver":
            ctx.set_forkserver_preload([preload])
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_ignore_interrupts)

    def map(self, fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        return list(self.pool.map(fn, tasks))

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in list((getattr(self.pool, "_processes", None) or {}).values()):
            process.terminate()


@dataclass
class Executor:
    """Where tasks run: ``workers`` local processes, or the Dask cluster behind ``client``
    (``address``). Made by :func:`executor`."""

    workers: int
    client: Any = None
    address: str | None = None
    _pool: Pool | None = None   # the local pool :meth:`map` keeps for every round

    def describe(self, tasks: int) -> str:
        """Where ``tasks`` tasks run, for the terminal."""
        if self.client is not None:
            return f"Dask scheduler {self.address}"
        count = min(self.workers, tasks)
        return f"{count} local worker{'s' if count != 1 else ''}"

    def run(self, fn: Callable[[Any], Any], tasks: list[Any], done: Done) -> None:
        """Each task's outcome to ``done`` as it arrives (see the module doc)."""
        if not tasks:
            return
        if self.client is not None:
            run_dask(self.client, fn, tasks, done)
        else:
            run_local(fn, tasks, self.workers, done)

    def map(self, fn: Callable[[Any], Any], tasks: list[Any]) -> list[Any]:
        """The outcomes in task order; a worker's failure is raised. One local worker runs the
        tasks in this process; more run them on a pool kept until :meth:`close`."""
        if self.client is not None:
            results: list[Any] = [None] * len(tasks)

            def keep(i: int, outcome: Any) -> None:
                if isinstance(outcome, BaseException):
                    raise outcome
                results[i] = outcome

            run_dask(self.client, fn, tasks, keep)
            return results
        if self.workers == 1:
            return [fn(task) for task in tasks]
        if self._pool is None:
            self._pool = Pool(self.workers, fn.__module__)
        return self._pool.map(fn, tasks)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` where the tasks run: on one of the cluster's workers (an error there
        means they cannot run ccac), else here."""
        if self.client is None:
            return fn(*args)
        try:
            return self.client.submit(fn, *args, pure=False).result()
        except Exception as e:  # e.g. ccac is not installed on the workers
            raise CcacError(f"the cluster's workers cannot run ccac: {type(e).__name__}: {e}", "--scheduler") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.__exit__()
            self._pool = None
        if self.client is not None:
            self.client.close()


@contextmanager
def executor(workers: int | None, scheduler: str | None) -> Iterator[Executor]:
    """``--workers N`` / ``--scheduler ADDRESS`` as every command reads them: the cluster at
    ``scheduler`` (as many tasks at once as ``workers``, or as it has workers), else ``workers``
    local processes (default: the CPUs this process may use). Closed on leaving."""
    if scheduler is not None:
        client = connect(scheduler)
        count = workers or max(1, len(client.scheduler_info().get("workers", {})))
        chosen = Executor(count, client, scheduler)
    else:
        chosen = Executor(workers or usable_cpus())
    try:
        yield chosen
    finally:
        chosen.close()


def connect(address: str) -> Any:
    """A ``distributed.Client`` of the Dask scheduler at ``address``."""
    try:
        from distributed import Client
    except ImportError:
        raise CcacError("needs dask.distributed: pip install 'ccac[cluster]'", "--scheduler") from None
    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError) as e:
        raise CcacError(f"cannot connect to the Dask scheduler at {address}: {e}", "--scheduler") from None


def run_dask(client: Any, fn: Callable[[Any], Any], tasks: list[Any], done: Done) -> None:
    """Run ``fn`` on each task on the cluster; the tasks not done when this returns or raises
    are cancelled."""
    from distributed import as_completed as dask_completed

    futures = client.map(fn, tasks, pure=False)
    index = {future.key: i for i, future in enumerate(futures)}
    try:
        for future in dask_completed(futures):
            done(index[future.key], _outcome(future))
    finally:
        client.cancel(futures)


def _start_method() -> str:
    # fork would copy this process's threads (tqdm's monitor) mid-state; forkserver starts
    # workers from a clean single-threaded process, spawn where forkserver does not exist
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _ignore_interrupts() -> None:
    """Pool workers leave Ctrl-C to the parent, which stops them (mid-solve, they would only
    print tracebacks)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _outcome(future: Any) -> Any:
    try:
        return future.result()
    except Exception as e:  # the worker died (killed, out of memory, ...), not the task's fault
        return e
