"""The composing path-server (thesis 4.2): the default model.

Tokens may be wasted only while the server holds more tokens than bytes, i.e. while the
admitted arrivals are below the token line: A - L <= C*t - W. Because the rule is stated
against the token line and not the server's own queue, a chain of such servers is again such
a server (thesis Theorems 7 and 9), which is what lets one server stand for a whole path.
"""

from __future__ import annotations

from ccac.encode.encoding import Cond
from ccac.models.path_server import PathServer, PathVars


class ComposingServer(PathServer):
    name = "composing"
    summary = "waste only while arrivals are below the token line (composes; thesis 4.2)"

    def waste_allowed(self, v: PathVars, t: int) -> Cond:
        return v.admitted(t) <= v.token_line(t)


MODEL = ComposingServer()
