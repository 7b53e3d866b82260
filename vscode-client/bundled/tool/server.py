"""Starts the horovodize language server bundled in the extension.

The extension runs ``<interpreter> bundled/tool/server.py [serve args]`` with the user's
interpreter: ``bundled/libs`` (horovodize, pygls, lsprotocol, parso and their
dependencies, put there at package time) goes first on ``sys.path``, so the server never
depends on what that interpreter has installed.
"""

import os
import sys

if sys.version_info < (3, 10):
    sys.stderr.write("horovodize: the language server needs Python >= 3.10, not %d.%d (%s); "
                     "select another interpreter\n" % (sys.version_info[0], sys.version_info[1], sys.executable))
    sys.exit(3)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "libs"))

from horovodize.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
