"""The CCA library: every module here that defines an ``ALGORITHM`` (a
:class:`ccac.ccas.interface.CCA`), and every CCA file in ``rules/`` (written in the CCA
language, :mod:`ccac.ccas.language`). The subpackages hold a CCA family's machinery (``pcc/``,
``elastic/``), not CCAs: discovery does not look into them.

Adding a CCA means adding a module or a file; nothing else in ccac names CCAs.

The interface every CCA implements is :mod:`ccac.ccas.interface`.

May import: :mod:`ccac.core`, :mod:`ccac.encode`, :mod:`ccac.models`, :mod:`ccac.senders`.
"""

from __future__ import annotations

import importlib
import pkgutil

from ccac.ccas.interface import CCA
from ccac.core.errors import CcacError


def _discover() -> dict[str, CCA]:
    found: dict[str, CCA] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.ispkg:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        algorithm = getattr(module, "ALGORITHM", None)
        if isinstance(algorithm, CCA):
            found[algorithm.name] = algorithm
    from ccac.ccas.language import bundled

    for cca in bundled():
        if cca.name in found:
            raise CcacError(f"CCA {cca.name!r} is defined twice", cca.source)
        found[cca.name] = cca
    return found


CCAS: dict[str, CCA] = _discover()


def get_cca(name: str, where: str = "cca.name") -> CCA:
    if name not in CCAS:
        raise CcacError(f"unknown CCA {name!r} (known: {', '.join(sorted(CCAS))})", where)
    return CCAS[name]
