"""The package's rooms and the layer rule, read from the source (no import is run).

Every module of ccac lives in a room (a subpackage: ``ccac/<room>/`` or one of the top-level
folders mapped into the namespace), a room imports only rooms at or below its floor, no module
imports the public facade (``ccac`` itself), and no set of modules imports itself in a circle,
counting imports inside functions too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: the rooms from the bottom floor up
FLOORS = ("core", "encode", "models", "senders", "ccas", "problems", "report", "solving", "testbed",
          "analysis", "synthesis", "commands")
#: rooms whose folder sits at the top of the checkout (pyproject.toml maps them into ccac)
TOP_LEVEL = ("models", "senders", "ccas")


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (data-only rooms included: they import nothing)."""
    found: dict[str, Path] = {}
    folders = [(f"ccac.{room}", ROOT / room) for room in TOP_LEVEL + ("queries", "proofs")]
    folders += [(f"ccac.{d.name}", d) for d in (ROOT / "ccac").iterdir() if (d / "__init__.py").is_file()]
    for package, folder in folders:
        for path in folder.rglob("*.py"):   # subpackages too (ccas/pcc/, ...)
            dotted = ".".join((package, *path.relative_to(folder).with_suffix("").parts))
            found[dotted.removesuffix(".__init__")] = path
    found["ccac"] = ROOT / "ccac" / "__init__.py"
    return found


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The ccac modules (or packages) ``path`` imports anywhere in its body."""
    out: set[str] = set()
    package = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name == "ccac" or a.name.startswith("ccac.")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base != "ccac" and not base.startswith("ccac."):
                continue
            for alias in node.names:   # `from ccac.x import y` imports module ccac.x.y if there is one
                out.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return out


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_is_in_a_room_on_a_floor() -> None:
    found = modules()
    flat = [name for name in found if name != "ccac" and room(name) not in FLOORS + ("queries", "proofs")]
    assert flat == [], f"modules outside every room: {flat}"
    assert not [p for p in (ROOT / "ccac").glob("*.py") if p.name != "__init__.py"], "ccac/ holds rooms only"


def test_no_room_imports_a_higher_one_or_the_facade() -> None:
    found = modules()
    assert len(graph_of(found)["ccac.solving.solve"]) >= 5   # the reading sees the imports
    assert layer_violations(found) == [], "\n".join(layer_violations(found))


def test_no_import_circles() -> None:
    circles = import_circles(graph_of(modules()))
    assert circles == [], f"import circles: {circles}"


def graph_of(found: dict[str, Path]) -> dict[str, set[str]]:
    known = set(found)
    return {name: {t for t in imports(path, name, known) if t in known and t != name} for name, path in found.items()}


def layer_violations(found: dict[str, Path]) -> list[str]:
    known = set(found)
    wrong = []
    for name, path in found.items():
        if name == "ccac":
            continue
        own = FLOORS.index(room(name)) if room(name) in FLOORS else -1
        for target in imports(path, name, known):
            if target == "ccac":
                wrong.append(f"{name} imports the facade ccac (import from the room that defines it)")
            elif room(target) in FLOORS and FLOORS.index(room(target)) > own:
                wrong.append(f"{name} (floor {room(name)}) imports {target} (floor {room(target)})")
    return wrong


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return circles


def test_the_layer_check_sees_a_violation(tmp_path: Path) -> None:
    """The checks themselves, on made-up sources: a lazy upward import, an import of the facade
    and a circle of two modules through a lazy import are all caught."""
    low, high = tmp_path / "low.py", tmp_path / "high.py"
    low.write_text("def f():\n    from ccac.commands.cli import main\nfrom ccac import solve\n")
    high.write_text("from ccac.core.low import f\n")
    found = {"ccac.core.low": low, "ccac.commands.cli": high, "ccac": low}
    wrong = layer_violations(found)
    assert any("ccac.core.low (floor core) imports ccac.commands.cli" in w for w in wrong)
    assert any("imports the facade" in w for w in wrong)
    assert import_circles(graph_of(found)) != []


def test_a_periodic_answer_is_decided_by_one_rule() -> None:
    """A periodic query asks two formulas (settled, and loose without the settling conditions),
    and how their outcomes make its answer is soundness-critical. Only ``problems/problem.py``
    (and the periodic encoding itself) names the settling conditions; every module that asks
    the loose formula decides through ``ccac.solving.solve.periodic_answer``, which is defined
    once: a second copy of the rule would have to name the loose formula and skip the rule."""
    settling_names = {"problem", "periodic"}
    definitions = 0
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        definitions += sum(isinstance(n, ast.FunctionDef) and n.name == "periodic_answer"
                           and not any("overload" in ast.unparse(d) for d in n.decorator_list) for n in ast.walk(tree))
        if path.stem not in settling_names:
            assert "SETTLED" not in text, f"{name} names the settling conditions itself"
        asks_loose = "settled=False" in text or ".settling()" in text
        if asks_loose and name not in ("ccac.problems.problem",):
            assert "periodic_answer" in text, f"{name} asks the loose formula without periodic_answer"
    assert definitions == 1


def declared_imports(room_name: str) -> set[str]:
    """The rooms a room's ``__init__`` docstring says it may import ("May import: ..."): none
    outside itself, every room below it (core to X), every room, or the rooms it names."""
    folder = ROOT / room_name if room_name in TOP_LEVEL else ROOT / "ccac" / room_name
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    line = " ".join(doc.split("May import:", 1)[1].split()) if "May import:" in doc else ""
    assert line, f"ccac.{room_name}'s __init__ says nothing of what it may import"
    named = [part.split("`")[0] for part in line.split(":mod:`ccac.")[1:]]
    if line.startswith("nothing of ccac"):
        return set()
    if line.startswith("every room of ccac"):
        return set(FLOORS)
    if line.startswith("every room below it"):
        return set(FLOORS[:FLOORS.index(named[-1]) + 1])
    return set(named)


def test_each_room_imports_only_what_its_init_declares() -> None:
    found = modules()
    for name, path in found.items():
        here = room(name)
        if here not in FLOORS:
            continue
        allowed = declared_imports(here) | {here}
        used = {room(m) for m in imports(path, name, set(found))} - {None}
        assert used <= allowed, f"{name} imports {sorted(used - allowed)}, which ccac.{here}'s __init__ does not declare"
