"""Import statements read from the tree: which local name each binds to which module or
member (``import tensorflow as tf``, ``from tensorflow.keras import layers as L``).

Requires: nothing. Provides: `import_bindings`, `import_names`, `from_module`,
`from_names`, `from_module_text`, `dotted_name`.
"""

from __future__ import annotations


def import_bindings(node) -> list[tuple[str, str]]:
    """(local name, full dotted target) of one import statement (library modules only)."""
    out = []
    try:
        if node.type == "import_name":
            for dotted_node, alias in import_names(node):
                full = dotted_name(dotted_node)
                out.append((alias, full) if alias else (full.split(".")[0], full.split(".")[0]))
        else:
            module = from_module(node)
            if module is not None:
                for name, alias in from_names(node):
                    if name != "*":
                        out.append((alias or name, f"{module}.{name}"))
    except (AttributeError, IndexError):  # an error-recovered import
        return out
    return out


def import_names(node):
    """[(dotted_name node, alias or None)] of ``import a.b as c, d``."""
    names = node.children[1]
    items = names.children if names.type == "dotted_as_names" else [names]
    out = []
    for item in items:
        if item.type == "operator":
            continue
        if item.type == "dotted_as_name":
            out.append((item.children[0], item.children[2].value))
        elif item.type in ("name", "dotted_name"):
            out.append((item, None))
    return out


def dotted_name(node) -> str:
    return node.get_code(include_prefix=False).replace(" ", "")


def from_module_text(node) -> str:
    """The module of ``from <module> import ...`` as written, leading dots included."""
    parts = []
    for child in node.children[1:]:
        if child == "import":
            break
        parts.append(child.get_code(include_prefix=False).strip())
    return "".join(parts)


def from_module(node) -> str | None:
    """The module of an absolute ``from`` import (None for a relative one: not a library)."""
    module = from_module_text(node)
    return None if not module or module.startswith(".") else module


def from_names(node):
    idx = [i for i, c in enumerate(node.children) if c == "import"]
    if not idx:
        return []
    rest = [c for c in node.children[idx[0] + 1 :] if c.type != "operator" or c.value == "*"]
    out = []
    for item in rest:
        if item.type == "import_as_names":
            for sub in item.children:
                if sub.type == "import_as_name":
                    out.append((sub.children[0].value, sub.children[2].value))
                elif sub.type == "name":
                    out.append((sub.value, None))
        elif item.type == "import_as_name":
            out.append((item.children[0].value, item.children[2].value))
        elif item.type == "name":
            out.append((item.value, None))
        elif item.type == "operator" and item.value == "*":
            out.append(("*", None))
    return out
