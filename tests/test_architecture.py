"""The package's shape: one direction of imports between subsystems, and no import cycle.

Read from the source (every import statement, at module level or inside a
function), so a lazy import that would close a cycle counts too.
"""

import ast
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Installed name -> folder of the repository (pyproject.toml's package-dir).
FOLDERS = {"ngramflow": "ngramflow", "ngramflow.pipeline": "pipeline", "ngramflow.transforms": "transforms",
           "ngramflow.schemas": "schemas", "ngramflow.corpus": "corpus", "ngramflow.query": "query"}
#: Which subsystems each may import (besides itself): the command line on top, then the jobs and their
#: runners, the query side beside them, the transforms below, the dataset's schemas and the errors at the bottom.
#: The package itself ("ngramflow") is the Python API, on the query side; the jobs read only its version.
ALLOWED = {
    "ngramflow.cli": {"ngramflow.lean_start", "ngramflow.pipeline", "ngramflow.query", "ngramflow.corpus",
                      "ngramflow.transforms", "ngramflow.schemas", "ngramflow.errors"},
    "ngramflow.lean_start": set(),  # what the command line sets before NumPy loads
    "ngramflow": {"ngramflow.query", "ngramflow.errors"},
    "ngramflow.pipeline": {"ngramflow", "ngramflow.transforms", "ngramflow.corpus", "ngramflow.schemas",
                           "ngramflow.errors"},
    "ngramflow.query": {"ngramflow.transforms", "ngramflow.schemas", "ngramflow.errors"},
    "ngramflow.corpus": {"ngramflow.transforms", "ngramflow.schemas", "ngramflow.errors"},
    "ngramflow.transforms": {"ngramflow.schemas", "ngramflow.errors"},
    "ngramflow.schemas": {"ngramflow.errors"},
    "ngramflow.errors": set(),
}


def modules() -> dict[str, str]:
    """{module name: file} of every module the distribution installs."""
    found = {}
    for package, folder in FOLDERS.items():
        for root, _, names in os.walk(os.path.join(REPO, folder)):
            for name in names:
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(root, name), os.path.join(REPO, folder))[:-3]
                    parts = [p for p in rel.split(os.sep) if p != "__init__"]
                    found[".".join([package, *parts])] = os.path.join(root, name)
    return found


def imports_of(module: str, path: str, known: dict) -> set[str]:
    """The project's modules that MODULE imports."""
    found = set()
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def subsystem(module: str) -> str:
    if module in ("ngramflow", "ngramflow.cli", "ngramflow.errors"):
        return module
    return ".".join(module.split(".")[:2])


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports_of(m, path, known) for m, path in known.items()}


def test_no_import_cycle(graph):
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles: {cycles}"


def test_imports_go_one_way_between_subsystems(graph):
    wrong = sorted((m, i) for m, targets in graph.items() for i in targets
                   if subsystem(i) != subsystem(m) and subsystem(i) not in ALLOWED[subsystem(m)])
    assert not wrong, f"imports against the layering: {wrong}"


def test_the_query_side_never_loads_beam(tmp_path):
    from conftest import SAMPLE, import_ok

    dataset = import_ok(os.path.join(SAMPLE, "2012"), tmp_path / "ds")
    program = ("import sys; from ngramflow.cli import main; code = main(['query', sys.argv[1], 'count', 'a']); "
               "assert code == 0; import ngramflow.query.cli; "
               "assert not [m for m in sys.modules if m.startswith('apache_beam')], 'Beam was imported'")
    subprocess.run([sys.executable, "-c", program, dataset], check=True, cwd=tmp_path, capture_output=True)
