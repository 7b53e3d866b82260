"""The language server: a thin adapter over the engine (``horovodize serve``).

``server`` holds the state (documents, options, analyses by (uri, version)), ``handlers``
one function per LSP method, ``convert`` findings <-> lsprotocol, ``text`` exact
positions in the negotiated encoding, ``options`` the initialization options.
"""
