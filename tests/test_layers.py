"""The house rule, checked: layers import downward only, and no circle of modules.

The layers are import-linter's contracts in pyproject.toml (``[tool.importlinter]``,
drawn in docs/architecture.md). import-linter checks packages against each other, not
the modules inside one, so the circles are found here: the import graph of every
``mpinet`` module built with :mod:`ast`, module-level and function-level imports alike,
must have no cycle. The one exception is ``mpinet/cli/``: its dispatcher loads a command's
module only when that command runs (``mpinet --help`` stays fast), so imports inside the
functions of ``cli`` modules are left out of the graph. Imports under
``if TYPE_CHECKING:`` never run and are left out too.

Below ``cli/`` no import sits inside a function: laziness belongs at the door (a command
imports the heavy module when it runs), so a module that needs h5py, matplotlib, mpi4py or
the numba kernels imports them at its top, and an import cannot hide a circle.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mpinet"
LAZY_OK = "mpinet.cli"  # function-local imports allowed here only
#: circles not cut yet, each to be removed from here when it is (issue 34)
KNOWN_CIRCLES: list[list[str]] = []
#: the function-local imports that stay below cli/, each with its reason
ALLOWED = {
    # pandas: an optional extra (`analysis`) that no command uses and that takes 0.2-0.3 s to
    # import; at the top of trace/reader.py it would load with every trace a command opens
    "mpinet/trace/reader.py": "import pandas as pd",
    # h5py: imported at the first HDF5 file opened, so that a command that only checks a
    # trace's path and attributes, or writes none (`mpinet booksim`), does not load it (20 ms
    # of CPU; docs/performance.md, "mpinet booksim meshconfig, end to end")
    "mpinet/trace/encode.py": "import h5py",
    "mpinet/trace/reserve.py": "import h5py",
    "mpinet/outputs/hdf5.py": "import h5py",
    # the sweep file's reader: `mpinet sweep` imports the module for its file names, and
    # without --out reads and writes no file (docs/performance.md, session 15)
    "mpinet/analysis/sweep.py": "import h5py",
}


def module_name(path: Path) -> str:
    """``mpinet/routing/walk.py`` -> ``mpinet.routing.walk`` (a package: its ``__init__``)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(mod: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement in module ``mod`` may refer to."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = mod.split(".") if is_package else mod.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    # `from pkg import name`: a submodule when one is called so, else an attribute of pkg
    return [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]


def import_graph(
    sources: dict[str, tuple[str, bool]],
) -> dict[str, dict[str, list[tuple[int, bool]]]]:
    """Edges ``module -> {imported module: [(line, function-local), ...]}`` among ``sources``.

    ``sources`` maps a module name to (its text, whether it is a package's ``__init__``).
    An imported name resolves to the longest module of ``sources`` it starts with.
    """
    edges: dict[str, dict[str, list[tuple[int, bool]]]] = {}

    def visit(mod: str, is_package: bool, node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                targets = set()
                for name in imported(mod, is_package, child):
                    while name and name not in sources:
                        name = name.rpartition(".")[0]
                    if name and name != mod:
                        targets.add(name)
                # `from pkg import sub` names the submodule, not pkg's __init__ as well
                if any(t != min(targets, key=len) for t in targets):
                    targets.discard(min(targets, key=len))
                for t in targets:
                    edges.setdefault(mod, {}).setdefault(t, []).append((child.lineno, local))
            elif isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                continue  # read by type checkers only, never imported at run time
            else:
                inner = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                visit(mod, is_package, child, inner)

    for mod, (text, is_package) in sources.items():
        visit(mod, is_package, ast.parse(text), False)
    return edges


def cycles(edges: dict[str, dict[str, list]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted(set(edges) | {t for d in edges.values() for t in d})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on_stack.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(sorted(edges.get(w, {})))))
            elif w in on_stack:
                low[v] = min(low[v], index[w])
    return found


def package_sources() -> dict[str, tuple[str, bool]]:
    return {
        module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def counted_edges(edges: dict[str, dict[str, list[tuple[int, bool]]]]) -> dict[str, dict]:
    """The graph the rule is about: cli's function-local imports left out."""
    out: dict[str, dict] = {}
    for a, targets in edges.items():
        for b, sites in targets.items():
            kept = [s for s in sites if not (s[1] and a.startswith(LAZY_OK))]
            if kept:
                out.setdefault(a, {})[b] = kept
    return out


def test_graph_finds_a_circle_hidden_in_a_function() -> None:
    sources = {
        "p": ("", True),
        "p.a": ("from p.b import f\n", False),
        "p.b": ("def f():\n    from . import c\n", False),
        "p.c": ("import p.a\nif TYPE_CHECKING:\n    import p.d\n", False),
        "p.d": ("from p import a\n", False),
    }
    edges = import_graph(sources)
    assert edges["p.b"] == {"p.c": [(2, True)]}
    assert edges["p.d"] == {"p.a": [(1, False)]}
    assert cycles(edges) == [["p.a", "p.b", "p.c"]]
    del sources["p.c"]
    assert cycles(import_graph(sources)) == []


def test_no_circles_of_modules() -> None:
    edges = counted_edges(import_graph(package_sources()))
    lines = []
    for comp in cycles(edges):
        if comp in KNOWN_CIRCLES:
            continue
        members = set(comp)
        arrows = [
            f"{a} -> {b} (line {sites[0][0]}{', in a function' if sites[0][1] else ''})"
            for a in comp
            for b, sites in sorted(edges[a].items())
            if b in members
        ]
        lines.append(" | ".join(arrows))
    assert not lines, "circles of modules:\n" + "\n".join(lines)


def test_no_module_imports_another_modules_private_names() -> None:
    """A helper two modules share is public (or lives where both can import it): no
    ``from mpinet.x import _helper``, and a ``_private`` module only from its own package."""
    bad = []
    for mod, (text, is_package) in package_sources().items():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = imported(mod, is_package, node)[-1]
            if not source.startswith("mpinet"):
                continue
            bad += [
                f"{mod}: {source}.{a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
            parts = source.split(".")
            for k, part in enumerate(parts):
                owner = ".".join(parts[:k])
                if part.startswith("_") and not mod.startswith(owner + "."):
                    bad.append(f"{mod}: private module {source}")
    assert not bad, bad


def function_local_imports(text: str) -> list[tuple[int, str]]:
    """``(line, statement)`` of every import inside a function (``TYPE_CHECKING`` blocks aside)."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                if local:
                    found.append((child.lineno, ast.unparse(child)))
            elif isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                continue
            else:
                visit(child, local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(text), False)
    return found


def test_function_local_imports_are_found() -> None:
    text = (
        "import os\n"
        "try:\n    import pandas\nexcept ImportError:\n    pandas = None\n"
        "def f():\n    if x:\n        from a import b\n"
        "class C:\n    def m(self):\n        def g():\n            import c\n"
        "    if TYPE_CHECKING:\n        import d\n"
    )
    assert function_local_imports(text) == [(8, "from a import b"), (12, "import c")]


def test_no_function_local_imports_below_cli() -> None:
    """Only ``cli/`` defers imports (a command's modules load when it runs); every other
    module imports at its top, so the import graph is the one the layers and this file see."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("mpinet/cli/"):
            continue
        bad += [
            f"{rel}:{line}: {stmt}"
            for line, stmt in function_local_imports(path.read_text())
            if ALLOWED.get(rel) != stmt
        ]
    assert not bad, "imports inside functions below cli/:\n" + "\n".join(bad)


def test_allowed_entries_exist() -> None:
    """An ALLOWED entry names a file that is there (a stale one is removed)."""
    assert all((ROOT / rel).is_file() for rel in ALLOWED)


def test_layers_contract() -> None:
    lint = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(lint).exists():
        pytest.skip("import-linter not installed (pip install -e '.[test]')")
    done = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
