"""sqlanon's modules import one another without cycles: the import graph over sqlanon/ (every import
statement, those inside functions too, except the ones under `if TYPE_CHECKING:`) is acyclic, so every
module can be imported first, in any order."""
from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sqlanon"


def module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under `if TYPE_CHECKING:` (they never run)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for stmt in node.body:
                skip.update(id(n) for n in ast.walk(stmt))
    return skip


def imported(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The sqlanon modules `name` imports -> the line of the first import. `from package import x` is an
    import of package.x when that is a module, else of the package itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_only(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]
        for target in targets:
            if target in modules and target != name:
                out.setdefault(target, node.lineno)
    return out


@functools.cache
def import_graph() -> nx.DiGraph:
    modules = module_names()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for target, line in imported(name, path, modules).items():
            graph.add_edge(name, target, line=line)
    return graph


def test_the_graph_sees_imports_inside_functions_and_skips_type_checking_ones():
    graph = import_graph()
    assert graph.has_edge("sqlanon.anonymizer", "sqlanon.report")       # inside Anonymization.report
    assert graph.has_edge("sqlanon.cli.main", "sqlanon.cli.common")
    assert not graph.has_edge("sqlanon.report", "sqlanon.anonymizer")   # under `if TYPE_CHECKING:` only
    assert len(graph) > 60


def test_no_import_cycles():
    graph = import_graph()
    cycles = list(nx.simple_cycles(graph))
    shown = ["; ".join(f"{a} -> {b} (line {graph.edges[a, b]['line']})" for a, b in zip(c, c[1:] + c[:1]))
             for c in cycles[:5]]
    assert not cycles, "import cycles:\n" + "\n".join(shown)


def test_every_module_imports_first_in_a_fresh_interpreter():
    """Each module imported first: one interpreter, sqlanon's modules dropped from sys.modules before each
    import, so a module that only imports after another one was imported fails here."""
    names = sorted(n for n in module_names() if not n.endswith("__main__"))
    code = ("import importlib, sys\n"
            "base = set(sys.modules)\n"
            "for name in sys.argv[1:]:\n"
            "    for loaded in [m for m in sys.modules if m == 'sqlanon' or m.startswith('sqlanon.')]:\n"
            "        del sys.modules[loaded]\n"
            "    importlib.import_module(name)\n")
    r = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr[-2000:]
