"""SQL text that sdcflow builds: identifiers only, never values (those travel as ``?``)."""

from __future__ import annotations


def quote_identifier(name: str) -> str:
    """A DuckDB identifier in double quotes, embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'
