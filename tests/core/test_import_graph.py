"""No import cycle among sweeper's modules, no import from a lower floor to a higher one,
and each module imports on its own.

The static check reads every ``import`` in ``sweeper/**/*.py`` with ``ast``, those inside
functions too (a cycle hidden in a function still ties the two modules together) and
those under ``if TYPE_CHECKING:`` (they never run, but a module that names another's type
still depends on it: a leaf that does so is no leaf). ``from pkg import name`` is an
edge to ``pkg.name`` when that is a module, else to ``pkg``; a submodule's implicit import
of its parent package is no edge. Loading an implementation by a dotted string through
``importlib`` (a lazy registry) is no edge either: that is the sanctioned way for a plug
point to reach its plugins.

The floor check gives each module the floor of its first name under ``sweeper`` (``FLOORS``,
the floor plan of DESIGN.md, top down) and fails on any import of a module on a higher floor
than the importer's; modules on one floor may import each other (the cycle check still
holds them).

The dynamic check imports each module first, in one fresh interpreter that forgets every
``sweeper`` module before the next, so a module that only imports because some other
module happened to be imported first fails here.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sweeper"


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package``."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement in ``tree``: at the top, in functions, under ``if TYPE_CHECKING:``."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _targets(module: str, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The package's modules one import statement of ``module`` loads by name."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in modules}
    base = node.module or ""
    if node.level:
        package = module.split(".") if modules[module].name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    out = set()
    for alias in node.names:
        if f"{base}.{alias.name}" in modules:
            out.add(f"{base}.{alias.name}")
        elif base in modules:
            out.add(base)
    return out


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in its body)."""
    modules = module_files(package)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        deps: set[str] = set()
        for node in _imports(tree):
            deps |= _targets(name, node, modules)
        graph[name] = deps - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
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
                    found.append(sorted(component))
    return sorted(found)


# The floor plan, top down: a module imports its own floor and those below it, never one
# above. Each entry names the first part of a module's name under ``sweeper``; "" is the
# package itself (its version, and the import traps it installs from libraries/).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("cli", "__main__"),
    ("runner",),
    ("report", "executors", "storage"),
    ("checks", "sources"),
    ("libraries", ""),
    ("devices", "hub"),
    ("settings",),
    ("records", "diagnostics"),
    ("redact",),
    ("machine_paths",),
)


def floor_of(module: str, floors: tuple[tuple[str, ...], ...] = FLOORS) -> int | None:
    """How high ``module`` (``sweeper.checks.stages``) sits: 0 is the bottom floor; None
    when the floor plan does not place it."""
    part = module.split(".")[1] if "." in module else ""
    for depth, names in enumerate(floors):
        if part in names:
            return len(floors) - 1 - depth
    return None


def upward_imports(graph: dict[str, set[str]], floors: tuple[tuple[str, ...], ...] = FLOORS) -> list[str]:
    """``importer (floor) -> imported (floor)`` for every import that reaches a higher floor."""
    out = []
    for module in sorted(graph):
        here = floor_of(module, floors)
        for target in sorted(graph[module]):
            there = floor_of(target, floors)
            if here is not None and there is not None and there > here:
                out.append(f"{module} ({here}) -> {target} ({there})")
    return out


def _one_edge_per_cycle(component: list[str], graph: dict[str, set[str]]) -> str:
    """``a -> b -> ... -> a``: one concrete loop through the component, to start the fix."""
    members = set(component)
    path, seen = [component[0]], {component[0]}
    while True:
        nxt = sorted(graph[path[-1]] & members)
        back = [m for m in nxt if m == component[0]]
        if back and len(path) > 1:
            return " -> ".join([*path, component[0]])
        fresh = [m for m in nxt if m not in seen]
        if not fresh:
            return " -> ".join([*path, nxt[0]])
        path.append(fresh[0])
        seen.add(fresh[0])


def test_the_static_graph_counts_every_import_and_only_imports(tmp_path: Path) -> None:
    """The checker itself, on a package made for it."""
    files = {
        "__init__.py": "",
        "a.py": "def f():\n    from pkg import b  # a lazy import is still an edge\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a  # type-only: still an edge\nfrom pkg.c import X\n",
        "c.py": "import importlib\nX = 1\ndef load():\n    return importlib.import_module('pkg.a')  # by name: no edge\n",
        "d.py": "from . import c\nfrom .c import X\ndef g():\n    import pkg.a\n",
    }
    (tmp_path / "pkg").mkdir()
    for name, text in files.items():
        (tmp_path / "pkg" / name).write_text(text)
    graph = import_graph(tmp_path / "pkg")
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a", "pkg.c"}, "pkg.c": set(),
                     "pkg.d": {"pkg.a", "pkg.c"}}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]  # a type-only import closes a circle too
    graph["pkg.b"].discard("pkg.a")
    assert cycles(graph) == []
    graph["pkg.c"].add("pkg.a")  # what `from pkg import a` in c.py would add
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert _one_edge_per_cycle(["pkg.a", "pkg.b", "pkg.c"], graph) == "pkg.a -> pkg.b -> pkg.c -> pkg.a"


def test_the_floor_check_flags_an_import_that_reaches_up_and_only_that() -> None:
    """The checker itself, on a graph made for it."""
    floors = (("top",), ("mid", ""), ("low",))
    graph = {"pkg": {"pkg.mid.a"}, "pkg.top": {"pkg.mid.a", "pkg.low"}, "pkg.mid.a": {"pkg.mid.b", "pkg.low"},
             "pkg.mid.b": {"pkg"}, "pkg.low": {"pkg.mid.b", "pkg.top"}}
    assert [floor_of(m, floors) for m in ("pkg.top", "pkg.mid.a", "pkg", "pkg.low", "pkg.other")] == [2, 1, 1, 0, None]
    assert upward_imports(graph, floors) == ["pkg.low (0) -> pkg.mid.b (1)", "pkg.low (0) -> pkg.top (2)"]


def test_every_module_has_a_floor() -> None:
    unplaced = [m for m in sorted(module_files()) if floor_of(m) is None]
    assert not unplaced, "modules the floor plan (FLOORS) does not place:\n" + "\n".join(unplaced)


def test_no_import_reaches_a_higher_floor() -> None:
    found = upward_imports(import_graph())
    assert not found, "imports from a lower floor to a higher one:\n" + "\n".join(found)


def test_no_import_cycle() -> None:
    graph = import_graph()
    found = cycles(graph)
    lines = [f"{len(c)} modules: {_one_edge_per_cycle(c, graph)}\n    {', '.join(c)}" for c in found]
    assert not found, "import cycles among sweeper's modules:\n" + "\n".join(lines)


# The interpreter imports the heavy third-party packages once, then forks a child per
# module: each child starts with no sweeper module loaded, and process-wide registrations
# (trnsim names PrivateUse1 and registers a serialisation tag) happen once per child, as
# in a real process. A module that importing one of its packages already loaded is not
# tried again: importing it first runs the very same imports (its packages come first).
_ISOLATED = """
import contextlib, importlib, json, os, sys, traceback
for heavy in ("torch", "torch._dynamo", "transformers", "pandas", "matplotlib.pyplot", "huggingface_hub", "typer", "ray"):
    with contextlib.suppress(Exception):
        importlib.import_module(heavy)
failed, covered = {}, set()
for name in sorted(json.loads(sys.argv[1])):
    if name in covered:
        continue
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        answer = {"error": "", "loaded": []}
        try:
            importlib.import_module(name)
            answer["loaded"] = [m for m in sys.modules if m.startswith(name + ".")]
        except BaseException as exc:
            answer["error"] = traceback.format_exception_only(type(exc), exc)[-1].strip()
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = json.loads(pipe.read() or b'{"error": "", "loaded": []}')
    _, status = os.waitpid(pid, 0)
    if answer["error"] or status:
        failed[name] = answer["error"] or f"child exited with status {status}"
    covered.update(answer["loaded"])
print(json.dumps(failed))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the isolated imports fork a child per module")
def test_each_module_imports_on_its_own() -> None:
    names = sorted(module_files())
    done = subprocess.run(
        [sys.executable, "-c", _ISOLATED, json.dumps(names)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    failed = json.loads(done.stdout.strip().splitlines()[-1])
    assert not failed, "modules that do not import on their own:\n" + "\n".join(f"{k}: {v}" for k, v in failed.items())
