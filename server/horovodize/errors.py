"""Errors every layer may raise for the user: the one-line error the CLI prints (exit 2)
and the server reports. Imports nothing of the package, so any stage may use it.
"""

from __future__ import annotations


class UserError(Exception):
    """A one-line error for the user (exit 2).

    Printed as ``horovodize: <message>``, except errors located in a source file
    (``path:line:col: syntax error: …``), which start with the location like a compiler's.
    """

    def __init__(self, message: str, located: bool = False):
        super().__init__(message)
        self.located = located

    def line(self) -> str:
        return str(self) if self.located else f"horovodize: {self}"
