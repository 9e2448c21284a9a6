"""The single-box (non-composing) path-server (thesis 6.3.1).

Tokens may be wasted only when the server's own queue is within ``epsilon`` bytes of empty:
A - L <= S + epsilon. One such box cannot keep a standing queue while the sender is below the
link rate, because unused tokens force it to drain. It models a single network element, not a
cascade: two of these in series can do things one cannot, so it is not a sound stand-in for a
whole path.
"""

from __future__ import annotations

from ccac.encode.encoding import Cond
from ccac.models.path_server import PathServer, PathVars


class SingleBoxServer(PathServer):
    name = "single-box"
    summary = "waste only when the server's queue is within epsilon of empty (does not compose; thesis 6.3.1)"

    def waste_allowed(self, v: PathVars, t: int) -> Cond:
        return v.admitted(t) <= v.S[t] + v.net.epsilon


MODEL = SingleBoxServer()
