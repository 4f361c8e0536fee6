"""Reading a release spec: from a YAML file (:func:`load_spec`) or a mapping
(:func:`spec_from_dict`), validated into a :class:`~sdcflow.spec.schema.ReleaseSpec`.

Every problem is one :class:`~sdcflow.errors.InputError` naming the field and what to do.
"""

from __future__ import annotations

import errno
import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from sdcflow.errors import InputError, Reason
from sdcflow.limits import (
    MAX_COLUMNS,
    MAX_RULES,
    MAX_SPEC_BYTES,
    check_count,
    load_yaml,
    read_bounded,
)
from sdcflow.spec.schema import ReleaseSpec, _join_errors, error_field


def _yaml_problem(error: Exception) -> str:
    """``line 4, column 9: mapping values are not allowed here`` (1-based, as editors count),
    or the first line of the error when YAML gives no position."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    if mark is not None:
        what = problem or str(error).splitlines()[0]
        return f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}: {what}"
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"not valid YAML ({first})"


def spec_from_dict(data: Any, base_dir: str | Path, where: str = "spec") -> ReleaseSpec:
    """Validate a spec given as a mapping (paths relative to ``base_dir``); raise
    ``InputError`` as :func:`load_spec` does, naming ``where`` instead of a file."""
    if not isinstance(data, dict):
        raise InputError(
            f"{where}: the spec must be a mapping of fields (release, source...)",
            code=Reason.SPEC_SYNTAX,
        )
    edits = data.get("edits")
    if isinstance(edits, list):
        check_count(len(edits), MAX_RULES, where=f"{where}: edits", what="edit rules")
    for role in ("quasi_identifiers", "keep", "sensitive"):
        if isinstance(data.get(role), list):
            check_count(len(data[role]), MAX_COLUMNS, where=f"{where}: {role}", what="columns")
    try:
        return ReleaseSpec.model_validate({**data, "base_dir": Path(base_dir).resolve()})
    except ValidationError as e:
        raise InputError(
            f"{where}: {_join_errors(e, model=ReleaseSpec)}",
            code=Reason.SPEC_FIELD,
            field=error_field(e),
        ) from None


def _spec_file(path: Path) -> None:
    """Refuse a spec path that is not a readable regular file, naming what it is."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise InputError(f"spec file {path} does not exist", code=Reason.SPEC_MISSING) from None
    except OSError as e:
        kind = "a symbolic link loop" if e.errno == errno.ELOOP else f"unreadable ({e.strerror})"
        raise InputError(f"spec file {path} is {kind}", code=Reason.SPEC_MISSING) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(
            f"spec file {path} is a folder; name the release YAML file", code=Reason.SPEC_MISSING
        )
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"spec file {path} is not a regular file; name the release YAML file",
            code=Reason.SPEC_MISSING,
        )


def load_spec(path: str | Path) -> ReleaseSpec:
    """Read and validate a release spec; raise ``InputError`` with one line per problem.

    The file and what it describes are bounded (:mod:`sdcflow.limits`): its size, YAML
    aliases and nesting, string lengths, the number of rules and of named columns.
    """
    path = Path(path)
    _spec_file(path)
    try:
        text = read_bounded(path, MAX_SPEC_BYTES, what="spec file")
        data = load_yaml(text, where=str(path))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: {_yaml_problem(e)}", code=Reason.SPEC_SYNTAX) from e
    return spec_from_dict(data, path.resolve().parent, str(path))
