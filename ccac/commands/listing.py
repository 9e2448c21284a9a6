"""``ccac list``: the models, the CCAs with their parameters and state, and the bundled
queries and proofs."""

from __future__ import annotations

import click


@click.command("list")
def list_cmd() -> None:
    """Show the models, the CCAs with their parameters, and the bundled queries."""
    from ccac.ccas.interface import CCA
    from ccac.ccas import CCAS
    from ccac.ccas.language import LanguageCCA
    from ccac.models import MODELS
    from ccac.encode.network import FLOW_PATH_PARAMS, NETWORK_PARAMS
    from ccac.analysis.proof import bundled_proofs, load_proof
    from ccac.problems.query import bundled_queries, load_query

    click.echo("Models ([network] compose = true/false):")
    for m in MODELS.values():
        click.echo(f"  {m.name:12} {m.summary}")
    click.echo("\nNetwork parameters ([network]):")
    for p in NETWORK_PARAMS:
        click.echo(f"  {p.name:11} default {p.describe_default():6} {p.unit:16} {p.description}")
    click.echo("\nPer-flow paths ([[flow]] tables: name = CCA and its parameters, default [cca]; and):")
    for p in FLOW_PATH_PARAMS:
        click.echo(f"  {p.name:11} default {p.describe_default():6} {p.unit:16} {p.description}")
    click.echo("\nCCAs ([cca] name = ...):")
    for cca in CCAS.values():
        click.echo(f"  {cca.name:8} {cca.summary}")
        for p in cca.params:
            unit = f"({p.unit})" if p.unit else ""
            click.echo(f"           {p.name} = {p.describe_default()} {unit}: {p.description}")
        if cca.state:
            click.echo(f"           state: {', '.join(s.name for s in cca.state)}")
        if isinstance(cca, LanguageCCA):
            click.echo(f"           rules (CCA language): {cca.source}")
        has_sender = type(cca).concrete is not CCA.concrete
        click.echo(f"           concrete sender (ccac replay): {'yes' if has_sender else 'no (replays the trace)'}")
    click.echo("\nBundled queries (ccac query NAME):")
    for name, path in sorted(bundled_queries().items()):
        q = load_query(str(path))
        summary = q.description.splitlines()[0] if q.description else ""
        click.echo(f"  {name:34} expect {q.expect or '-':5}  {summary}")
    click.echo("\nBundled proofs (ccac prove NAME):")
    for name, path in sorted(bundled_proofs().items()):
        proof = load_proof(str(path))
        click.echo(f"  {name:34} expect {proof.expect or '-':7}  {proof.description}")
