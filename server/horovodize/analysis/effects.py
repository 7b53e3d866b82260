"""Effects: what a call does outside the program, recognised by what it does rather than by
the rule that asks — WRITE (opens for writing, saves, creates, moves or removes a path),
READ (of a path), PRINT, DISPLAY, COLLECTIVE (a Horovod call, or training that runs one).

A library call is classified by its qualified name through the import aliases
(``imageio.v2.imwrite``, ``PIL.Image.Image.save`` as any ``x.save(path)``, ``os.makedirs``,
``keras.utils.plot_model``) or by its method (``fig.savefig``, ``df.to_csv``). A call of the
program's own function or method has the effects of its body, following local calls (each
function is summarised once); a local class has the effects of its methods, so a
``keras.callbacks.Callback`` subclass whose ``on_epoch_end`` saves images is a writer.

Requires: env (aliases, qualified names, call targets, local classes and their methods).
Provides: `Effects` (``kind(call)``, ``calls_of(kind)``, ``of_call(call)``, ``of_function(fn)``,
``of_class(name)``, ``callback_class(name)``, ``steers(name)``), the kind constants, and
`path_of(call)` (the path a write or read names), ``shown_paths(call)`` (the files a
display-only call shows).
"""

from __future__ import annotations

import ast

from ..incremental.keep import generation
from ..parse import nodes as N
from ..parse.imports import import_bindings
from .env import Env
from .roles import canonical

WRITE, READ, PRINT, DISPLAY, COLLECTIVE = "write", "read", "print", "display", "collective"
SHOWS = "shows"         # (`Effects.calls_of`: a call that shows a file, ``IPython.display.Image(p)``)

# Module-level functions by qualified name (after the aliases; keras is tensorflow.keras).
_WRITES = {
    "numpy": ("save", "savez", "savez_compressed", "savetxt"),
    "pickle": ("dump",), "json": ("dump",), "joblib": ("dump",), "yaml": ("dump", "safe_dump"),
    "matplotlib.pyplot": ("savefig", "imsave"),
    "imageio": ("imwrite", "imsave", "mimwrite", "mimsave", "volwrite", "get_writer"),
    "imageio.v2": ("imwrite", "imsave", "mimwrite", "mimsave", "volwrite", "get_writer"),
    "imageio.v3": ("imwrite",),
    "os": ("mkdir", "makedirs", "remove", "unlink", "rename", "replace", "rmdir", "removedirs"),
    "shutil": ("copy", "copy2", "copyfile", "copytree", "move", "rmtree", "make_archive", "copyfileobj"),
    "cv2": ("imwrite",), "scipy.io": ("savemat",), "scipy.io.wavfile": ("write",),
    "tensorflow.saved_model": ("save",), "tensorflow.keras.models": ("save_model",),
    "tensorflow.keras.saving": ("save_model",), "tensorflow.io": ("write_file",),
    "tensorflow.keras.utils": ("plot_model", "save_img"),
    "tensorflow.keras.preprocessing.image": ("save_img",),
    "tensorflow.summary": ("create_file_writer", "trace_on", "trace_export"),
    # the profiler writes its trace files under the log folder it is given (start(logdir), then stop())
    "tensorflow.profiler.experimental": ("start", "stop", "Profile"),
}
_READS = {
    "numpy": ("load", "loadtxt", "genfromtxt"), "pickle": ("load",), "json": ("load",), "joblib": ("load",),
    "glob": ("glob", "iglob"), "os": ("listdir", "scandir"),
    "imageio": ("imread", "mimread", "get_reader"), "imageio.v2": ("imread", "mimread", "get_reader"),
    "imageio.v3": ("imread",), "PIL.Image": ("open",), "cv2": ("imread",), "matplotlib.pyplot": ("imread",),
    "pandas": ("read_csv", "read_json", "read_pickle"),
    "tensorflow.keras.models": ("load_model",), "tensorflow.keras": ("load_model",),
    "tensorflow.keras.saving": ("load_model",), "tensorflow.saved_model": ("load",),
    "tensorflow.train": ("latest_checkpoint", "load_checkpoint"), "tensorflow.io": ("read_file",),
    "tensorflow.keras.utils": ("load_img",), "tensorflow.keras.preprocessing.image": ("load_img",),
}
_DISPLAYS = {"matplotlib.pyplot": ("show",),
             "IPython.display": ("display", "clear_output", "Image", "HTML", "Video", "Audio", "FileLink"),
             "tensorflow_docs.vis.embed": ("embed_file",)}
# Displays that show the file at a path (``Image("img.png")``, ``embed.embed_file("anim.gif")``).
_SHOWS_FILE = {"IPython.display": ("Image", "Video", "Audio", "FileLink"), "tensorflow_docs.vis.embed": ("embed_file",)}
# Methods whatever their receiver (the receiver is rarely known: an image, a figure, a frame).
WRITE_METHODS = frozenset({"save", "save_weights", "savefig", "to_csv", "to_json", "to_pickle", "to_parquet",
                           "to_excel", "write_text", "write_bytes", "mkdir"})
READ_METHODS = frozenset({"load_weights", "restore", "read_text", "read_bytes"})
TRAIN_METHODS = frozenset({"fit", "train_on_batch", "apply_gradients", "fit_generator"})
# ``self.model.<attr>`` a callback changes to steer training (learning rate, stopping, weights).
STEER_WORDS = ("stop_training", "optimizer", "learning_rate", "set_weights", ".lr")
_CALLBACK_BASES = ("tensorflow.keras.callbacks.Callback",)


def _table(table: dict) -> dict:
    return {f"{mod}.{name}": None for mod, names in table.items() for name in names}


WRITES, READS, DISPLAYS, SHOWS_FILE = _table(_WRITES), _table(_READS), _table(_DISPLAYS), _table(_SHOWS_FILE)


def open_mode(call: N.Call) -> str | None:
    """``open(path, "w")`` -> "w"; ``open(path)`` -> "r"; a mode that is not a literal -> None."""
    mode = call.keyword("mode") or call.positional(1)
    if mode is None:
        return "r"
    if mode.value.type != "string":
        return None
    try:
        text = ast.literal_eval(mode.value.value)
    except (ValueError, SyntaxError):
        return None
    return text if isinstance(text, str) else None


def path_of(call: N.Call):
    """The expression naming the path a write or read call acts on (None when it names none)."""
    for kw in ("to_file", "filepath", "fname", "filename", "file", "path", "uri", "export_dir", "pathname",
               "profiler_outdir", "logdir", "name"):
        a = call.keyword(kw)
        if a is not None:
            return a.value
    method = call.method or call.callee_dotted() or ""
    index = 1 if method in ("dump", "imsave", "mimsave", "save_img", "write_file") and \
        (call.callee_dotted() or "").split(".")[0] in ("pickle", "json", "joblib", "yaml") else 0
    if method in ("plot_model", "savemat"):
        index = 1 if method == "plot_model" else 0
    if method in ("rename", "replace", "copy", "copy2", "copyfile", "copytree", "move", "symlink", "link") and \
            (call.callee_dotted() or "").split(".")[0] in ("os", "shutil"):
        index = 1            # (src, dst): the file made is dst
    a = call.positional(index)
    return a.value if a is not None else None



def only_return(fn):
    """The ``return`` statement that is a function's whole body, or None (a body of other
    statements, or a leaf left by error recovery)."""
    stmts = [c for c in getattr(fn.children[-1], "children", ()) if c.type not in ("newline", "indent", "dedent")]
    first = getattr(stmts[0], "children", None) if len(stmts) == 1 else None
    return first[0] if first and first[0].type == "return_stmt" else None

class Effects:
    """Effects of calls, local functions and local classes of one program (asked lazily)."""

    def __init__(self, env: Env):
        self.env = env
        self._fn: dict[int, frozenset] = {}
        self._cls: dict[str, frozenset] = {}
        self._aliases: dict[str, str] | None = None
        # (id(node), trailer index) -> `kind`: asked by several rules; keyed by the tree's node,
        # which lives as long as the analysis (a `Call` made on the fly does not, and its id is reused)
        self._kinds: dict[tuple, str | None] = {}
        self._by_kind: dict[str, list] | None = None

    def calls_of(self, kind: str) -> list:
        """The calls of the program whose own effect is `kind` (or, for ``SHOWS``, that
        show a file: ``Image(p)``), in source order. On the keystroke path each top-level
        statement's table is kept in its piece's memo while the statement and the import
        tables are the same, so an edit classifies the calls of the statements it changed,
        not every call of the file (rank0_guards, written and the display guards ask)."""
        if self._by_kind is None:
            self._by_kind = self._tables()
        return self._by_kind.get(kind, [])

    def _tables(self) -> dict:
        env = self.env
        self.qualname_table()
        key = (tuple(sorted(self._aliases.items())), getattr(env, "_alias_items", ()),
               frozenset(n for n in ("print", "display", "clear_output") if n in env.functions))
        gen = generation(env, "effects", key)
        out: dict[str, list] = {}
        for piece in env.index.parts():
            kept = piece.memo.get("effect_calls")
            if kept is None or kept[0] is not gen:
                table: dict[str, list] = {}
                for call, _owner in piece.calls:
                    found = self.kind(call)
                    if found is not None:
                        table.setdefault(found, []).append(call)
                    if self.qualname(call) in SHOWS_FILE:
                        table.setdefault(SHOWS, []).append(call)
                kept = piece.memo["effect_calls"] = (gen, table)
            for k, calls in kept[1].items():
                out.setdefault(k, []).extend(calls)
        return out

    def qualname_table(self) -> dict:
        """Local name -> qualified name of every import (first binding wins)."""
        if self._aliases is None:
            self._aliases = {}
            for node in self.env.imports:
                for local, full in import_bindings(node):
                    self._aliases.setdefault(local, full)
        return self._aliases

    def qualname(self, call: N.Call) -> str:
        """The callee's qualified name through every import (the environment keeps only
        TensorFlow's, Keras's, os's and Horovod's)."""
        q = self.env.callee_qualname(call)
        if q:
            return q
        dotted = call.callee_dotted()
        if not dotted:
            return ""
        root, _, rest = dotted.partition(".")
        full = self.qualname_table().get(root)
        if full is None:
            return ""
        return canonical(full + ("." + rest if rest else "")) or ""

    # -- one call --------------------------------------------------------------------
    def kind(self, call: N.Call) -> str | None:
        """The effect of a library call (not following local functions)."""
        key = (id(call.node), call.index)
        if key in self._kinds:
            return self._kinds[key]
        found = self._kinds[key] = self._kind(call)
        return found

    def _kind(self, call: N.Call) -> str | None:
        env = self.env
        dotted = call.callee_dotted() or ""
        q = self.qualname(call)
        if dotted in ("open", "io.open") or q in ("io.open", "tensorflow.io.gfile.GFile"):
            mode = open_mode(call)
            if mode is None:
                return None      # a mode in a variable: reading or writing, it cannot tell
            return WRITE if any(c in mode for c in "wax+") else READ
        if dotted == "print" and "print" not in env.functions:
            return PRINT
        if dotted in ("display", "clear_output") and dotted not in env.functions:
            return DISPLAY
        if q.startswith("horovod"):
            return COLLECTIVE if not q.endswith((".rank", ".size", ".local_rank", ".local_size", ".init")) else None
        if q in WRITES:
            return WRITE
        if q in READS:
            return READ
        if q in DISPLAYS:
            return DISPLAY
        if q:
            return None          # another library function (tf.image.resize, np.mean)
        if "." not in dotted and dotted:
            return None          # a bare name that is not an import: a local function or class
        method = call.method
        if method in TRAIN_METHODS:
            return COLLECTIVE
        if method in WRITE_METHODS and (call.args or method not in ("save", "mkdir")):
            return WRITE
        if method in ("write",) and call.args and call.is_whole() and N.is_statement(call.node):
            return WRITE         # `f.write(text)`, `checkpoint.write(prefix)` (not `ta = ta.write(i, v)`)
        if method in READ_METHODS and call.args:
            return READ
        if method == "show" and dotted.endswith(("plt.show", "fig.show")):
            return DISPLAY
        return None

    def _data(self, arg) -> bool:
        """``Audio(x[0], rate=16000)`` / ``Audio(waveform)``: the samples, not a file's path (a
        subscript, or a name every binding of which is a subscript or a TensorFlow/numpy call)."""
        def data(value) -> bool:
            value = N.unparen(value)
            if value.type in ("atom_expr", "power") and value.children[-1].type == "trailer" \
                    and value.children[-1].children[0] == "[":
                return True
            call = N.as_call(value)
            return call is not None and (call.callee_dotted() or "").split(".")[0] in ("tf", "np", "numpy", "librosa")
        if arg.type == "name":
            found = [b for b in self.env.bindings if b.name == arg.value and b.value is not None]
            return bool(found) and all(data(b.value) for b in found)
        return data(arg)

    def shown_paths(self, call: N.Call) -> list:
        """The paths a display-only call shows: ``Image(p)``, ``embed.embed_file(p)``,
        ``display(Image(p))``, ``display(PIL.Image.open(p))`` ([] for any other call: one
        whose arguments compute something else is not display-only)."""
        q = self.qualname(call)
        if q in SHOWS_FILE:
            p = path_of(call)
            return [p] if p is not None and not self._data(p) else []
        if self.kind(call) is None and self.env.may_call_local(call):
            return self._returned_read(call)
        if self.kind(call) != DISPLAY or (call.callee_dotted() or "").split(".")[-1] != "display":
            return []
        out = []
        for arg in call.args:
            inner = N.as_call(arg.value)
            if inner is None:
                return []
            shown = self.shown_paths(inner)
            if not shown and self.kind(inner) == READ and path_of(inner) is not None:
                shown = [path_of(inner)]
            if not shown:
                return []
            out += shown
        return out

    def _returned_read(self, call: N.Call) -> list:
        """A local function whose body only returns a file it reads (``def display_image(n):
        return PIL.Image.open(f"image_at_epoch_{n:04d}.png")``): the paths it reads, which a
        bare call shows (a notebook cell's value) and nothing else uses."""
        fn = self.env.call_target(call)
        ret = only_return(fn) if fn is not None and fn.type == "funcdef" else None
        if ret is None:
            return []
        inner = N.as_call(ret.children[1]) if len(ret.children) > 1 else None
        if inner is None or inner.node is not ret.children[1]:
            return []
        shown = self.shown_paths(inner)
        if not shown and self.kind(inner) == READ and path_of(inner) is not None:
            shown = [path_of(inner)]
        return shown

    def of_call(self, call: N.Call) -> frozenset:
        """Every effect a call has: its own, or its local target's body (followed once)."""
        own = self.kind(call)
        if own is not None:
            return frozenset((own,))
        env = self.env
        if not env.may_call_local(call):
            return frozenset()
        callee = call.callee_dotted()
        if callee in env.all_classes:
            return frozenset()   # building an instance: its methods act when they are called
        target = env.call_target(call)
        return self.of_function(target) if target is not None and target.type == "funcdef" else frozenset()

    # -- the program's own code --------------------------------------------------------
    def of_function(self, fn) -> frozenset:
        key = id(fn)
        if key in self._fn:
            return self._fn[key]
        self._fn[key] = frozenset()          # a recursive call adds nothing more
        out: set = set()
        for call in N.calls_in(fn):
            out |= self.of_call(call)
        self._fn[key] = frozenset(out)
        return self._fn[key]

    def callback_class(self, name: str | None) -> bool:
        """A local class deriving ``keras.callbacks.Callback`` (through local bases too)."""
        env = self.env
        seen: set = set()
        todo = [name] if name else []
        while todo:
            cls = todo.pop()
            if cls in seen or cls not in env.all_classes:
                continue
            seen.add(cls)
            node = env.all_classes[cls]
            for base in _bases(node):
                q = env.qualname(base)
                if q in _CALLBACK_BASES or (q is None and N.dotted(base) == "Callback"):
                    return True
                if N.dotted(base) in env.all_classes:
                    todo.append(N.dotted(base))
        return False

    def of_class(self, name: str) -> frozenset:
        """The effects of a local class's methods (its own and its local bases')."""
        if name in self._cls:
            return self._cls[name]
        self._cls[name] = frozenset()
        env = self.env
        out: set = set()
        for cls in env._mro(name):
            for fn in env._class_methods().get(id(cls), {}).values():
                out |= self.of_function(fn)
        self._cls[name] = frozenset(out)
        return self._cls[name]

    def steers(self, name: str) -> bool:
        """A callback class that changes training (stops it, sets the rate or the weights)."""
        env = self.env
        for cls in env._mro(name):
            code = cls.get_code(include_prefix=False)
            if any(w in code for w in STEER_WORDS):
                return True
        return False

    def writing_callback(self, name: str | None) -> bool:
        """A local Keras callback class whose methods write files and that neither steers
        training nor makes a collective call: it belongs on rank 0 only."""
        if not name or not self.callback_class(name):
            return False
        kinds = self.of_class(name)
        return WRITE in kinds and COLLECTIVE not in kinds and not self.steers(name)


def _bases(classdef) -> list:
    """The base class expressions of a ``classdef``."""
    out = []
    for child in classdef.children:
        if child.type == "arglist":
            out += [c for c in child.children if c.type not in ("operator",) and c.type != "argument"]
        elif child.type in ("name", "power", "atom_expr") and child is not classdef.name:
            out.append(child)
    return out
