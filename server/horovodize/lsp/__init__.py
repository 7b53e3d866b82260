"""The language server: a thin adapter over the engine (``horovodize serve``).

``server`` holds the state (documents, options, analyses by (uri, version)), ``handlers``
one function per LSP method, ``doctor`` the stack doctor's request, ``launch`` the
launch recipe command, ``serve`` starts it
with every feature registered, ``convert`` findings <-> lsprotocol, ``text`` exact
positions in the negotiated encoding, ``options`` the initialization options, ``notebooks``
a notebook's code cells as one program with diagnostics and edits per cell.

Needs first: the engine. May import: parse, incremental, the engine, codes, errors, app;
pygls and lsprotocol. Nothing below the engine imports it.
"""
