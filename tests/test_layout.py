"""The package's layout holds: no import cycle between its modules (imports inside
functions included), each stage imports only the stages below it, and no module grows past
~800 lines. docs/architecture.md explains the stages; this test is what keeps them true.

Imports under ``if TYPE_CHECKING:`` are left out: they are annotations, never executed
(env's helpers name `Env` in their signatures while env imports them).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "horovodize"
# The stages, lowest first: a module may import its own stage and the ones before it.
# (`errors`, `native` and the package's `__version__` import nothing else of it: every stage
# may use them.)
STAGES = [
    ("errors", "native", "__init__"),     # (__init__: the version, and the compiled modules' finder)
    ("parse",),
    ("incremental",),
    ("analysis",),
    ("rules",),
    ("codes", "engine"),
    ("project",),
    ("app",),
    ("lsp",),
    ("cli", "__main__"),
]
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        if "_native" in path.parts:
            continue
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        out[".".join(parts)] = path
    return out


def _type_checking(node) -> bool:
    test = node.test
    return isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                         or getattr(test, "attr", None) == "TYPE_CHECKING")


def _imports(name: str, path: Path, modules) -> set[str]:
    """The package's modules that `name` imports, anywhere in the file."""
    package = name.split(".")[:-1]          # (a package's __init__ is "x.__init__": same base)
    found = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for inner in child.orelse:
                    visit(inner)
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[:len(package) - (child.level - 1)]
                    target = base + (child.module.split(".") if child.module else [])
                elif (child.module or "").split(".")[0] == "horovodize":
                    target = child.module.split(".")[1:]
                else:
                    continue
                for alias in child.names:
                    dotted = ".".join(target + [alias.name])
                    found.add(dotted if dotted in modules else ".".join(target) or "__init__")
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "horovodize":
                        found.add(".".join(alias.name.split(".")[1:]) or "__init__")
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    resolved = set()
    for target in found:
        if target not in modules and f"{target}.__init__" in modules:
            target = f"{target}.__init__"
        if target in modules and target != name:
            resolved.add(target)
    return resolved


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def _stage(name: str) -> int:
    top = name.split(".")[0]
    for i, names in enumerate(STAGES):
        if top in names:
            return i
    raise AssertionError(f"{name}: in no stage of tests/test_layout.py's STAGES (add it, and to docs/architecture.md)")


def test_no_import_cycle():
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_each_stage_imports_only_the_stages_below_it():
    upward = [f"{name} imports {target}" for name, targets in sorted(_graph().items())
              for target in sorted(targets) if _stage(target) > _stage(name)]
    assert upward == []


def test_function_level_imports_are_seen():
    graph = _graph()
    assert "lsp.serve" in graph["cli"]          # imported inside `_serve`: pygls only when serving


def test_no_module_over_800_lines():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_at_most_ten_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


def test_each_subpackage_says_what_it_needs_and_may_import():
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "May import" in doc, init
