"""Print the figures of the package's structure: lines of code, import arrows between
folders, import circles and imports made inside functions.

    python benchmarks/layout.py

Folders are the concept packages (``sdcflow.core.fuzzy``, ``sdcflow.warehouse``...); an arrow
is an ordered pair of folders with at least one import between them; a circle is a set of
modules that import each other (a strongly connected component of more than one module).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1] / "sdcflow"


def folder(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "core" and (ROOT / "core" / parts[2]).is_dir():
        return ".".join(parts[:3])
    if len(parts) >= 2 and (ROOT / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module if len(parts) < 3 else ".".join(parts[:2])


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main() -> None:
    graph = grimp.build_graph("sdcflow")
    modules = sorted(m for m in graph.modules if m.startswith("sdcflow"))
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m)} for m in modules}
    arrows = {
        (folder(a), folder(b)) for a, bs in edges.items() for b in bs if folder(a) != folder(b)
    }

    def top(module: str) -> str:
        return ".".join(module.split(".")[:2])

    top_arrows = {(top(a), top(b)) for a, bs in edges.items() for b in bs if top(a) != top(b)}
    files = sorted(ROOT.rglob("*.py"))
    inner = 0
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                inner += sum(
                    isinstance(n, ast.Import | ast.ImportFrom)
                    for n in ast.walk(node)
                    if n is not node
                )
    print(
        json.dumps(
            {
                "lines_of_code_package": sum(len(p.read_text().splitlines()) for p in files),
                "modules": len(modules),
                "folders": len({folder(m) for m in modules}),
                "import_arrows_between_folders": len(arrows),
                "import_arrows_between_top_level_folders": sorted(top_arrows),
                "import_circles": strongly_connected(edges),
                "imports_inside_functions": inner,
            }
        )
    )


if __name__ == "__main__":
    main()
