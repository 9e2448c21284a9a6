"""What ``ccac list`` prints: the models, the network and per-flow parameters, the CCAs with
their parameters and state, and the bundled queries and proofs (each given as its name, expected
answer and one-line summary)."""

from __future__ import annotations

from ccac.ccas import CCAS
from ccac.ccas.interface import CCA
from ccac.ccas.language import LanguageCCA
from ccac.core.params import Param
from ccac.encode.network import FLOW_PATH_PARAMS, NETWORK_PARAMS
from ccac.models import MODELS


def catalog_lines(queries: list[tuple[str, str | None, str]], proofs: list[tuple[str, str | None, str]]) -> list[str]:
    """Everything ``ccac list`` shows; ``queries`` and ``proofs`` as (name, expect, summary)."""
    lines = ["Models ([network] compose = true/false):"]
    lines += [f"  {m.name:12} {m.summary}" for m in MODELS.values()]
    lines += ["\nNetwork parameters ([network]):", *map(_param_line, NETWORK_PARAMS)]
    lines += ["\nPer-flow paths ([[flow]] tables: name = CCA and its parameters, default [cca]; and):",
              *map(_param_line, FLOW_PATH_PARAMS)]
    lines.append("\nCCAs ([cca] name = ...):")
    for cca in CCAS.values():
        lines += _cca_lines(cca)
    lines.append("\nBundled queries (ccac query NAME):")
    lines += [f"  {name:34} expect {expect or '-':5}  {summary}" for name, expect, summary in queries]
    lines.append("\nBundled proofs (ccac prove NAME):")
    lines += [f"  {name:34} expect {expect or '-':7}  {summary}" for name, expect, summary in proofs]
    return lines


def _param_line(p: Param) -> str:
    return f"  {p.name:11} default {p.describe_default():6} {p.unit:16} {p.description}"


def _cca_lines(cca: CCA) -> list[str]:
    """A CCA's summary, parameters, state, source and whether it has a concrete sender."""
    lines = [f"  {cca.name:8} {cca.summary}"]
    for p in cca.params:
        unit = f"({p.unit})" if p.unit else ""
        lines.append(f"           {p.name} = {p.describe_default()} {unit}: {p.description}")
    if cca.state:
        lines.append(f"           state: {', '.join(s.name for s in cca.state)}")
    if isinstance(cca, LanguageCCA):
        lines.append(f"           rules (CCA language): {cca.source}")
    has_sender = type(cca).concrete is not CCA.concrete
    lines.append(f"           concrete sender (ccac replay): {'yes' if has_sender else 'no (replays the trace)'}")
    return lines
