"""ccac: a performance verifier for congestion control algorithms.

The public API: :func:`load_query` / :func:`parse_query` to get a :class:`Query`,
:func:`solve` to answer it (a :class:`Result` with ``.answer``, ``.trace``, ``.validated``
and ``.plot()``), :func:`search_windows` to find a long trace window by window.

The package is a house of rooms, each a subpackage whose docstring says what it holds; a room
imports only rooms below it (``tests/test_layers.py`` enforces it), from the bottom:
:mod:`ccac.core`, :mod:`ccac.encode`, :mod:`ccac.models`, :mod:`ccac.senders`, :mod:`ccac.ccas`,
:mod:`ccac.problems`, :mod:`ccac.report`, :mod:`ccac.solving`, :mod:`ccac.testbed`,
:mod:`ccac.analysis`, :mod:`ccac.commands`. Bundled query and proof files are data in
:mod:`ccac.queries` and :mod:`ccac.proofs`. This module is the public facade above them all.
"""

from pathlib import Path as _Path

# In a source checkout the subpackages ccac.models, ccac.ccas, ccac.senders, ccac.queries and ccac.proofs
# live in top-level folders (pyproject.toml maps them into this namespace when installing).
# When this package is imported from the checkout itself (e.g. `python -m ccac.commands.bench` in the
# repository root), look for them there too, so both ways import the same modules.
_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "models" / "__init__.py").is_file() and not (_Path(__file__).parent / "models").exists():
    __path__.append(str(_checkout))  # noqa: F821 (a package's __path__)

from ccac.core import VERSION  # noqa: E402
from ccac.core.errors import CcacError  # noqa: E402
from ccac.problems.query import Query, load_query, parse_query  # noqa: E402
from ccac.solving.solve import Result, solve  # noqa: E402
from ccac.analysis.window_search import search_windows  # noqa: E402



def _show_traces_in_notebooks() -> None:
    """In IPython or Jupyter, a :class:`~ccac.encode.trace.Trace` shows itself as its interactive
    plots (:func:`ccac.report.html_page.show_traces_in`)."""
    import sys

    if "IPython" not in sys.modules:   # not in a notebook: nothing to register, nothing imported
        return
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        from ccac.report.html_page import show_traces_in

        show_traces_in(shell)


_show_traces_in_notebooks()

__all__ = ["CcacError", "Query", "Result", "load_query", "parse_query", "search_windows", "solve"]
__version__ = VERSION
