"""Where a sweep's tasks run: a local process pool, or a Dask cluster.

Both call a module-level function ``fn`` (picklable by reference) on each task, plain data in
and out, and report each outcome as it arrives, in completion order, as ``done(i, outcome)``:
``i`` the task's index, ``outcome`` what ``fn`` returned, or the Exception its worker failed
with (killed, out of memory, ...), which is not the task's fault.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable

from ccac.core.errors import CcacError

__all__ = ["Pool", "call_on_cluster", "connect", "run_dask", "run_local"]

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


def call_on_cluster(client: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on one of the cluster's workers; an error there means they cannot run ccac."""
    try:
        return client.submit(fn, *args, pure=False).result()
    except Exception as e:  # e.g. ccac is not installed on the workers
        raise CcacError(f"the cluster's workers cannot run ccac: {type(e).__name__}: {e}", "--scheduler") from None


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
