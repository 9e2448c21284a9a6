"""ccac: a performance verifier for congestion control algorithms.

The public API: :func:`load_query` / :func:`parse_query` to get a :class:`Query`,
:func:`solve` to answer it (a :class:`Result` with ``.answer``, ``.trace``, ``.validated``
and ``.plot()``).
"""

from pathlib import Path as _Path

# In a source checkout the subpackages ccac.models, ccac.ccas, ccac.senders, ccac.queries and ccac.proofs
# live in top-level folders (pyproject.toml maps them into this namespace when installing).
# When this package is imported from the checkout itself (e.g. `python -m ccac.bench` in the
# repository root), look for them there too, so both ways import the same modules.
_checkout = _Path(__file__).resolve().parent.parent
if (_checkout / "models" / "__init__.py").is_file() and not (_Path(__file__).parent / "models").exists():
    __path__.append(str(_checkout))  # noqa: F821 (a package's __path__)

from ccac.errors import CcacError  # noqa: E402
from ccac.query import Query, load_query, parse_query  # noqa: E402
from ccac.solve import Result, solve  # noqa: E402

__all__ = ["CcacError", "Query", "Result", "load_query", "parse_query", "solve"]
__version__ = "0.1.0"
