"""Errors a user can act on, shared by every layer.

The command line prints a :class:`NmtlibError` as one line, ``nmtlib <command>: error: …``, with
exit code 2 and no traceback; library callers catch it (or ``ValueError``, for input errors)
without importing the command line.
"""

from __future__ import annotations


class NmtlibError(Exception):
    """An error the user can act on: printed as one line, no traceback, exit code 2."""


class InputError(NmtlibError, ValueError):
    """A file that cannot be used as given: missing, unreadable, not UTF-8, not line-parallel,
    empty. The message names the file (and the line, where there is one)."""
