"""Read the command line's one-line error, ``sdcflow: error [<code> <field>]: <message>``, as
a script would: tests assert on the code (and field), not on the message text."""

from __future__ import annotations

import re

from sdcflow.errors import Reason

# the field may hold brackets (edits[0].severity): it ends at the first "]: "
ERROR_LINE = re.compile(
    r"^(?:sdcflow: )?error \[(?P<code>[a-z-]+)(?: (?P<field>.+?))?\]: ", re.MULTILINE
)


def cli_error(err: str) -> tuple[Reason, str | None]:
    """``(code, field)`` of the error line in ``err`` (field None when the line has none)."""
    found = ERROR_LINE.search(err)
    assert found is not None, f"no 'error [<code>]: ...' line in {err!r}"
    return Reason(found["code"]), found["field"]
