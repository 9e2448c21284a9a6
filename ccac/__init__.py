"""ccac: a performance verifier for congestion control algorithms.

The public API: :func:`load_query` / :func:`parse_query` to get a :class:`Query`,
:func:`solve` to answer it (a :class:`Result` with ``.answer``, ``.trace``, ``.validated``
and ``.plot()``).
"""

from ccac.errors import CcacError
from ccac.query import Query, load_query, parse_query
from ccac.solve import Result, solve

__all__ = ["CcacError", "Query", "Result", "load_query", "parse_query", "solve"]
__version__ = "0.1.0"
