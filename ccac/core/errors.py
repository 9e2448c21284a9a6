"""The one exception type for bad user input.

Anything the user can get wrong (a malformed query file, an unknown CCA, name or parameter, an
out-of-range value, a non-linear expression) raises :class:`CcacError` with a message that names
the problem and where it is. The CLI prints that message on one line and exits with code 2;
anything else escaping is a bug in ccac and is allowed to show a traceback.
"""

from __future__ import annotations


class CcacError(Exception):
    """Bad input: the message says what is wrong and where (file, section, key or expression)."""

    def __init__(self, message: str, where: str | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)

    def located(self, where: str) -> "CcacError":
        """The same error with an outer location prefixed (e.g. the file name)."""
        return CcacError(str(self), where)
