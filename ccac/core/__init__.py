"""The foundation every other room stands on: the one error type of bad input
(:mod:`~ccac.core.errors`), bounds on what input may cause (:mod:`~ccac.core.limits`), time
limits (:mod:`~ccac.core.deadline`, with its ``SIGALRM`` backstop :mod:`~ccac.core.backstop`
and progress line :mod:`~ccac.core.progress`), the machine's CPUs and memory
(:mod:`~ccac.core.machine`), and declared, exactly parsed parameters (:mod:`~ccac.core.params`).

May import: nothing of ccac outside this room.
"""

from importlib import metadata


def _installed_version() -> str:
    """The version pip installed (the package's metadata, from pyproject.toml): one version for a
    checkout installed with ``pip install -e .`` and for a wheel alike."""
    try:
        return metadata.version("ccac")
    except metadata.PackageNotFoundError:   # run from a source tree that was never installed
        return "0+unknown"


VERSION = _installed_version()
