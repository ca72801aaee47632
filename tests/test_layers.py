"""The package's shape, read from the source alone (ast; nothing is imported): no import circle
among the modules of src/skill_evals — imports inside functions and under TYPE_CHECKING
count too, since a circle hidden there is still one — and no module longer than 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "skill_evals"
MAX_LINES = 400
# Modules over the bound today, each with its length: the test fails when one grows, and when
# one shrinks to the bound (remove its entry then). Only ever remove entries.
OVER_THE_BOUND: dict[str, int] = {}


def _modules() -> dict[str, Path]:
    """Dotted module name → file, for every module of the package (a package by its __init__)."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets.add(module)
            targets.update(f"{module}.{alias.name}" for alias in node.names)
    return {target for target in targets if target in modules and target != name}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circle() -> None:
    modules = _modules()
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert _circles(graph) == []


def test_circle_finder_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_type_only_and_function_imports_count(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .a import A\n"
        "def f():\n    from ..pkg import b\n    import pkg.c\n",
        encoding="utf-8",
    )
    modules = {name: source for name in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.m")}
    assert _imported("pkg.m", source, modules) == {"pkg", "pkg.a", "pkg.b", "pkg.c"}


def test_no_module_over_the_bound() -> None:
    lengths = {
        path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in _modules().values()
    }
    over = {name: count for name, count in lengths.items() if count > MAX_LINES}
    grown = {n: c for n, c in over.items() if c > OVER_THE_BOUND.get(n, MAX_LINES)}
    assert grown == {}, f"modules over {MAX_LINES} lines: split them by job"
    shrunk = {n: lengths.get(n) for n in OVER_THE_BOUND if n not in over}
    assert shrunk == {}, "within the bound now (or gone): remove them from OVER_THE_BOUND"
