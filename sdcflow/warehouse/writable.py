"""Whether sdcflow can create a file in a folder: asked of the file system, not of ``access(2)``.

``access(2)`` answers from the permission bits, and for root it says yes to folders no file
can be made in: ``/proc`` and ``/sys`` (pseudo file systems), a folder whose file system
refuses new files for reasons the bits do not show. The preflight used it, so a release whose
reports folder lay there masked the whole file and then failed writing its report (exit 3).
:func:`cannot_create_in` makes (and removes) an empty file of its own instead.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: The probe's name starts with this: a probe a kill left behind says whose it is.
PROBE_PREFIX = ".sdcflow-probe-"


def cannot_create_in(folder: Path) -> str | None:
    """Why no file can be created in the existing ``folder`` (the system's words, e.g.
    ``Permission denied``), or None when one can: an empty file named ``PROBE_PREFIX...`` is
    created there and removed at once (sdcflow removes only that file, which it made). No
    ``access(2)`` shortcut: it would say ``Permission denied`` of a read-only file system."""
    try:
        fd, name = tempfile.mkstemp(prefix=PROBE_PREFIX, dir=folder)
    except OSError as e:
        return e.strerror or type(e).__name__
    os.close(fd)
    try:
        os.unlink(name)
    except OSError:  # made but not removable: the folder takes files, which is the question
        pass
    return None
