"""Path-server model variants, one file each, found by their ``MODEL`` attribute.

May import: :mod:`ccac.core`, :mod:`ccac.encode`.
"""

from __future__ import annotations

from ccac.models.composing import MODEL as _composing
from ccac.models.path_server import FlowSetup, PathServer, PathVars
from ccac.models.single_box import MODEL as _single_box

MODELS: dict[str, PathServer] = {m.name: m for m in (_composing, _single_box)}

__all__ = ["MODELS", "FlowSetup", "PathServer", "PathVars"]
