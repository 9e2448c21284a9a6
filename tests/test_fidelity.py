"""The fidelity table (docs/fidelity.md) (ccac beside the thesis and the papers) is what ccac ships.

Every row names shipped queries or proofs and the answer each has; each of those files must
record that answer as its expectation (which tests/test_library.py and tests/test_proof.py
then re-solve), and every row must say whether ccac agrees or differs, with a reason when it
differs. A row that drifts from the files fails here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from ccac.analysis.proof import bundled_proofs
from ccac.problems.query import bundled_queries

from conftest import doc_table

HEADER = "| source | published result | ccac | answer | verdict |"


def rows() -> list[list[str]]:
    return doc_table("fidelity.md", HEADER)


def recorded(name: str) -> str:
    queries, proofs = bundled_queries(), bundled_proofs()
    if name in queries:
        return tomllib.loads(queries[name].read_text())["query"]["expect"]
    assert name in proofs, f"{name} is neither a bundled query nor a bundled proof"
    return tomllib.loads(Path(proofs[name]).read_text())["expect"]


def test_the_table_covers_the_thesis_chapters_and_the_papers() -> None:
    sources = " ".join(row[0] for row in rows())
    for chapter in ("6.1", "6.2.1", "6.2.2 Theorem 1", "6.2.2 Theorem 2", "6.3.1", "6.3.2", "8.1", "8.2", "8.3"):
        assert chapter in sources, chapter
    for paper in ("PCC Allegro", "PCC Vivace", "PCC Proteus", "ETC"):
        assert paper in sources, paper


def test_every_row_is_what_its_files_record() -> None:
    for source, result, names, answers, verdict in rows():
        files = re.findall(r"`([a-z0-9_]+)`", names)
        said = [a.strip() for a in answers.split(",")]
        assert files and len(files) == len(said), (source, names, answers)
        for name, answer in zip(files, said):
            assert recorded(name) == answer, f"{source}: {name} records {recorded(name)}, the table says {answer}"
        assert verdict.startswith(("agrees", "**differs**")), (source, verdict)
        if verdict.startswith("**differs**"):
            assert verdict.startswith("**differs**:") and len(verdict) > 60, (source, "a difference needs its reason")
