"""Where a program's modules are: the project root, the project's own imports of a module
(absolute and relative, resolved to files below the root), the imports out of sight
(dynamic ones), and the entries of a folder.

A name is resolved as Python resolves it when the entry runs (``python train.py`` puts the
entry's folder first on ``sys.path``; ``python -m pkg.main`` the current folder, taken as
the root): ``a/b.py`` or ``a/b/__init__.py`` below one of those bases. An import that
resolves nowhere there is a library's (installed, or missing): not the project's.

`read(path)` gives a file's text everywhere (the language server's gives its open buffers);
a reader may also offer ``read.source(path, text) -> Source``, the parsed module (the language
server's keeps the trees it already has, instead of a parse per file).

Requires: parse (Source, imports helpers), errors. Provides: `find_root`, `Layout`, `ProjectImport`,
`Module`, `project_entries`, `top_imports`, `main_block`, `runs_code`,
`first_code`, `importers`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..parse import nodes as N
from ..parse.imports import dotted_name, from_module_text, from_names, import_bindings, import_names
from ..parse.source import Source

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
# Folders that hold no project code (environments, caches, build output).
SKIPPED_DIRS = {"site-packages", "node_modules", "__pycache__", "build", "dist", "venv", "env"}
DYNAMIC = re.compile(r"\b(?:importlib\.import_module|__import__|import_module)\s*\(")


def find_root(entry: Path, folder: Path | None = None, bound: Path | None = None) -> Path:
    """The folder given, else the nearest folder above the entry with a pyproject.toml,
    setup.py, setup.cfg or .git, else the entry's own folder. `bound` (the language server's
    workspace folder holding the entry): the search stops there, and it is the root when no
    folder up to it has a marker."""
    if folder is not None:
        return folder.resolve()
    start = entry.resolve().parent
    bound = bound.resolve() if bound is not None else None
    if bound is not None and bound != start and bound not in start.parents:
        bound = None                          # (not a folder above the entry: no bound)
    for d in (start, *start.parents):
        if any((d / m).exists() for m in ROOT_MARKERS):
            return d
        if d == bound:
            return d
    return start


@dataclass
class Binding:
    """One local name an import binds to a project module (`module`; `name` None) or to a
    name defined in one (`name`)."""
    local: str
    module: Path
    name: str | None = None
    prefix: str = ""          # how the code reads the module: ``nets.`` / ``trainer.loop.`` (modules only)


@dataclass
class ProjectImport:
    """An import statement of a module that names project modules."""
    node: object              # the import_name / import_from node
    bindings: list[Binding]
    star: Path | None = None  # ``from m import *``


@dataclass
class Module:
    path: Path
    text: str
    source: Source
    imports: list[ProjectImport] = field(default_factory=list)
    outside: list[tuple[int, str]] = field(default_factory=list)     # (line, what is out of sight)

    @property
    def deps(self) -> list[Path]:
        out = []
        for imp in self.imports:
            for p in [b.module for b in imp.bindings] + ([imp.star] if imp.star else []):
                if p not in out:
                    out.append(p)
        return out


class Layout:
    """The project's modules as the entry's program sees them; `read(path)` gives a file's
    text (the language server passes its open buffers). `known`: modules an earlier layout
    of the same entry and root read, reused while their file's text is the same (the
    language server's program, re-linked after an edit of one of its modules)."""

    def __init__(self, root: Path, entry: Path, read, known: dict[Path, Module] | None = None):
        self.root, self.entry, self.read = root.resolve(), entry.resolve(), read
        self.bases = [self.entry.parent] + ([self.root] if self.root != self.entry.parent else [])
        src = self.root / "src"
        if src.is_dir() and src != self.entry.parent:
            self.bases.append(src)       # a src layout (package_dir = src): its packages import from there
        self.modules: dict[Path, Module] = {}
        self.known = known or {}

    def module(self, path: Path) -> Module:
        path = path.resolve()
        m = self.modules.get(path)
        if m is None:
            text = self.read(path)
            m = self.known.get(path)
            if m is not None and m.text == text:
                self.modules[path] = m
                return m
            parsed = getattr(self.read, "source", None)
            m = self.modules[path] = Module(path, text, parsed(path, text) if parsed else Source(text))
            self._scan(m)
        return m

    def program(self) -> list[Path]:
        """The entry and every project module it reaches, the entry first."""
        order, todo = [], [self.entry]
        while todo:
            p = todo.pop(0)
            if p in order:
                continue
            order.append(p)
            todo += self.module(p).deps
        return order

    # -- resolution ---------------------------------------------------------------------
    def file_of(self, dotted: str, base: Path | None = None) -> Path | None:
        """The file of module `dotted` below `base` (or below each base of the program)."""
        if not dotted:
            return None
        for b in [base] if base is not None else self.bases:
            stem = b.joinpath(*dotted.split("."))
            for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
                if candidate.is_file() and self._inside(candidate):
                    return candidate.resolve()
        return None

    def _inside(self, path: Path) -> bool:
        try:
            rel = path.resolve().relative_to(self.root)
        except ValueError:
            return path.resolve().parent == self.entry.parent
        return not any(part in SKIPPED_DIRS or part.startswith(".") for part in rel.parts[:-1])

    def _package_dir(self, importer: Path, level: int) -> Path:
        d = importer.parent
        for _ in range(level - 1):
            d = d.parent
        return d

    def _scan(self, m: Module) -> None:
        for node in _import_nodes(m.source.module, m.text):
            imp = self._import(m.path, node)
            if imp is not None:
                m.imports.append(imp)
        if "import_module" not in m.text and "__import__" not in m.text:
            return                                # (what DYNAMIC matches holds one of these)
        for match in DYNAMIC.finditer(m.text):
            line = m.text.count("\n", 0, match.start()) + 1
            m.outside.append((line, "a dynamic import: the module it loads is out of sight"))

    def _import(self, importer: Path, node) -> ProjectImport | None:
        out: list[Binding] = []
        star = None
        try:
            if node.type == "import_name":
                for dotted_node, alias in import_names(node):
                    dotted = dotted_name(dotted_node)
                    target = self.file_of(dotted)
                    if target is None:
                        continue
                    if alias:
                        out.append(Binding(alias, target, prefix=f"{alias}."))
                    else:       # ``import a.b``: code reads ``a.b.f``
                        out.append(Binding(dotted.split(".")[0], target, prefix=f"{dotted}."))
            else:
                text = from_module_text(node)
                level = len(text) - len(text.lstrip("."))
                dotted = text[level:]
                base = self._package_dir(importer, level) if level else None
                for name, alias in from_names(node):
                    if name == "*":
                        star = self.file_of(dotted, base) if dotted else None
                        continue
                    sub = self.file_of(f"{dotted}.{name}" if dotted else name, base)
                    if sub is not None:           # ``from pkg import mod``: a module
                        out.append(Binding(alias or name, sub, prefix=f"{alias or name}."))
                        continue
                    owner = self.file_of(dotted, base) if dotted else (
                        (base / "__init__.py").resolve() if base is not None and (base / "__init__.py").is_file() else None)
                    if owner is not None:
                        out.append(Binding(alias or name, owner, name=name))
        except (AttributeError, IndexError):      # an error-recovered import
            return None
        if not out and star is None:
            return None
        return ProjectImport(node, out, star)


TOP_IMPORT_HEAD = re.compile(r"(?:from[ \t]+[\w.]+[ \t]+)?")


def top_level_imports_only(text: str) -> bool:
    """No import statement of `text` is below the top level: each word ``import`` starts a
    line or follows ``from X`` at its start, on a line that continues none (or is in a
    comment). A text test that may say False wrongly (the word in a string), never True."""
    at = text.find("import")
    while at != -1:
        end = at + len("import")
        if (at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")) and \
                (end == len(text) or not (text[end].isalnum() or text[end] == "_")):
            start = text.rfind("\n", 0, at) + 1
            head = text[start:at]
            if not head.lstrip().startswith("#"):
                continued = text[max(0, start - 3):start].rstrip("\r\n").endswith("\\")
                if continued or TOP_IMPORT_HEAD.fullmatch(head) is None:
                    return False
        at = text.find("import", end)
    return True


def _import_nodes(module, text: str | None = None):
    """Every import statement of the tree, nested ones included, in source order (when
    `text`, the tree's, has no import below the top level, the top-level statements only:
    a walk of a 10,000-line tree is tens of ms, and the language server links per edit)."""
    if text is not None and top_level_imports_only(text):
        return [small for stmt in module.children if stmt.type == "simple_stmt"
                for small in stmt.children if small.type in ("import_name", "import_from")]
    stack = [module]
    found = []
    while stack:
        node = stack.pop()
        if node.type in ("import_name", "import_from"):
            found.append(node)
            continue
        for child in reversed(getattr(node, "children", ())):
            if hasattr(child, "children"):
                stack.append(child)
    return found


def top_imports(source: Source, before: int | None = None) -> list[tuple[str, str, str]]:
    """(local name, full dotted target, statement code) of each module-level import (above
    offset `before`)."""
    out = []
    for stmt in source.module.children:
        if before is not None and source.offset(stmt.start_pos) >= before:
            break
        for small in (stmt.children if stmt.type == "simple_stmt" else [stmt]):
            if small.type in ("import_name", "import_from"):
                code = small.get_code(include_prefix=False)
                out += [(local, full, code) for local, full in import_bindings(small)]
    return out


def main_block(module):
    """The top-level ``if __name__ == "__main__":`` statement, or None."""
    for stmt in module.children:
        if stmt.type == "if_stmt":
            test = stmt.children[1].get_code(include_prefix=False).replace("'", '"').replace(" ", "")
            if test in ('__name__=="__main__"', '"__main__"==__name__'):
                return stmt
    return None


MAX_FILES = 3000


def package_parent(path: Path) -> Path:
    """The folder above the top package holding `path` (its own folder outside a package):
    where a script that imports it usually is."""
    d = path.resolve().parent
    while (d / "__init__.py").is_file() and d.parent != d:
        d = d.parent
    return d


def project_files(root: Path, suffixes: tuple[str, ...] = (".py",)) -> list[Path]:
    """The .py files (or those of `suffixes`) below `root` (hidden folders, environments and
    caches left out; at most MAX_FILES)."""
    import os

    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIRS
                             and not (Path(dirpath) / d / "pyvenv.cfg").exists())
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(suffixes)]
        if len(out) >= MAX_FILES:
            break
    return out[:MAX_FILES]


def project_entries(root: Path, files: list[Path], read) -> tuple[list[Path], set[Path]]:
    """(entries, files imported by another project file) of a folder: an entry is a notebook
    (`read` gives its code cells as one program), a file with a ``__main__`` block, one no other project file imports that runs code at top
    level beyond definitions and imports, or a console script's module (``[project.scripts]``
    in pyproject.toml)."""
    root = root.resolve()
    imported: set[Path] = set()
    trees = {}
    for f in files:
        m = Layout(root, f, read).module(f)
        trees[f] = m.source.module
        imported.update(p for p in m.deps if p != f.resolve())
    scripts = _console_scripts(root)
    entries = []
    for f in files:
        r = f.resolve()
        if f.name == "__init__.py" or r == root / "setup.py" or _sphinx_conf(r):
            continue                    # (setup.py builds the package, docs/conf.py its documentation)
        if f.suffix == ".ipynb":        # (`read` gives its code cells as one program): started as a whole
            entries.append(f)
            continue
        module = trees[f]
        # a script another one imports (``from train import build``) is still started on its
        # own when it has a __main__ block; top-level code alone runs at import: a library's
        if main_block(module) is not None or (r not in imported and runs_code(module)) \
                or _module_name(root, r) in scripts:
            entries.append(f)
    return entries, imported


def _sphinx_conf(path: Path) -> bool:
    """Sphinx's ``conf.py`` in a documentation folder (it imports the package for its version:
    a program that trains nothing, which a folder's conversion must not set up)."""
    return path.name == "conf.py" and any(part in ("doc", "docs", "documentation") for part in path.parts[:-1])


def runs_code(module, skip=None) -> bool:
    """Whether the module's top level runs code beyond definitions, imports and constants
    (`skip`: a statement left out, its ``__main__`` block)."""
    return first_code(module, skip) is not None


def first_code(module, skip=None):
    """The first top-level statement that runs code beyond definitions, imports and
    constants (a call), or None."""
    for stmt in module.children:
        if stmt is skip or stmt.type in ("funcdef", "classdef", "decorated", "newline", "endmarker"):
            continue
        if stmt.type == "simple_stmt" and all(
                c.type in ("import_name", "import_from", "newline", "string", "expr_stmt") for c in stmt.children):
            if not any(c.type == "expr_stmt" and next(N.calls_in(c), None) is not None for c in stmt.children):
                continue
        return stmt
    return None


def importers(root: Path, path: Path, read, transitive: bool = False, stop: frozenset = frozenset()) -> list[Path]:
    """The project's .py files below `root` that import the module `path` (``from train
    import get_model`` in evaluate.py); a file is parsed only when a line of it names the
    module after ``import``/``from``. `transitive`: also the files and notebooks (`read`
    gives their code cells as one program) that reach it through other project modules, as
    Python runs them (``import pkg``, whose ``__init__.py`` imports it), not through those
    of `stop`."""
    files = project_files(root, (".py", ".ipynb") if transitive else (".py",))
    texts: dict[Path, str] = {}
    todo, seen, out = [path.resolve()], {path.resolve()}, []
    while todo:
        target = todo.pop(0)
        for f in _direct_importers(root, target, read, files, texts):
            r = f.resolve()
            if r in seen:
                continue
            seen.add(r)
            out.append(f)
            if transitive and f.suffix == ".py" and r not in stop:
                todo.append(r)
    return out


def _direct_importers(root: Path, path: Path, read, files: list[Path], texts: dict[Path, str]) -> list[Path]:
    """The files of `files` whose own imports name the module `path` (`texts`: those read)."""
    name = path.parent.name if path.name == "__init__.py" else path.stem
    named = re.compile(rf"^[ \t]*(?:from|import)\b[^\n]*\b{re.escape(name)}\b", re.M)
    out = []
    for f in files:
        if f.resolve() == path:
            continue
        try:
            if f not in texts:
                texts[f] = read(f)
            if not named.search(texts[f]) or path not in Layout(root, f, read).module(f).deps:
                continue
        except (UserError, OSError):
            continue
        out.append(f)
    return out


def _module_name(root: Path, path: Path) -> str:
    try:
        rel = path.resolve().relative_to(root.resolve()).with_suffix("")
    except ValueError:
        return ""
    parts = list(rel.parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if len(parts) > 1 and parts[0] == "src":
        parts.pop(0)                 # a src layout's packages are named from below src/
    return ".".join(parts)


def _console_scripts(root: Path) -> set[str]:
    """The modules ``[project.scripts]`` of pyproject.toml names (``pkg.cli:main`` → ``pkg.cli``)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return set()
    try:
        import tomllib
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, ImportError):
        return set()
    scripts = data.get("project", {}).get("scripts", {}) or {}
    return {str(v).split(":")[0].strip() for v in scripts.values()}
