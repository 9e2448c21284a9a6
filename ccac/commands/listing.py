"""``ccac list``: the models, the CCAs with their parameters and state, and the bundled
queries and proofs (lines composed in :mod:`ccac.report.listing_lines`)."""

from __future__ import annotations

import click


@click.command("list")
def list_cmd() -> None:
    """Show the models, the CCAs with their parameters, and the bundled queries."""
    from ccac.analysis.proof import bundled_proofs, load_proof
    from ccac.problems.query import bundled_queries, load_query
    from ccac.report.listing_lines import catalog_lines

    queries = []
    for name, path in sorted(bundled_queries().items()):
        q = load_query(str(path))
        queries.append((name, q.expect, q.description.splitlines()[0] if q.description else ""))
    proofs = []
    for name, path in sorted(bundled_proofs().items()):
        proof = load_proof(str(path))
        proofs.append((name, proof.expect, proof.description))
    for line in catalog_lines(queries, proofs):
        click.echo(line)
