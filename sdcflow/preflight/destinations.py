"""Where a run writes, checked before it starts: the output folder, the release target,
the run reports and the warehouse."""

from __future__ import annotations

import os
from pathlib import Path

from sdcflow.errors import InputError, Reason
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.warehouse.publish import (
    check_release_paths,
    check_release_target,
    check_writable_folder,
    enclosing_release,
)
from sdcflow.warehouse.warehouse import check_warehouse_file


def check_destinations(spec: ReleaseSpec, *, force: bool = False) -> None:
    """Where the run writes, checked before it starts (``InputError``, exit 2): the output
    folder can take the release (a previous sdcflow release or nothing at ``<output>/<release>``),
    the release target holds neither the source, the warehouse, the rules nor the spec's folder
    and does not overlap the run reports, the warehouse is a DuckDB file or a new path, and
    neither the output folder, the reports nor the warehouse lies inside a published release
    (another spec's: a `check` must not write its report into a live release), and
    neither the output nor the reports folder is the root of the file system."""
    roots = (("output", spec.output_dir, "releases", "published/"),
             ("reports", spec.reports_dir, "run reports", "reports/"))  # fmt: skip
    for field_name, folder, what, example in roots:
        if folder.resolve() == Path(folder.resolve().anchor):
            raise InputError(
                f"`{field_name}:` is the root of the file system; name a folder for {what} "
                f"(`{field_name}: {example}`)",
                code=Reason.OUTPUT,
                field=field_name,
            )
    target = spec.release_dir
    check_release_paths(
        target,
        {
            "the source file": spec.source_path,
            "the warehouse": spec.warehouse_path,
            # DuckDB's write-ahead log and sdcflow's writer lock, beside the warehouse as
            # named and beside the file a symbolic link names (where they are written)
            **_companions(spec.warehouse_path),
            "the rules file": spec.path(spec.rules_file) if spec.rules_file else None,
            "the folder of the spec": spec.base_dir,
            "reports": spec.reports_dir / spec.release,
        },
    )
    check_release_target(spec.output_dir, spec.release, force=force)
    # before the run starts: a read-only reports folder failed the run after the mask (exit 3)
    check_writable_folder(spec.reports_dir / spec.release, "reports", "the run reports")
    check_warehouse_file(spec.warehouse_path)
    written = (
        ("output", spec.output_dir),
        ("reports", spec.reports_dir),
        # the run's reports go to <reports>/<release>/<run id>: that folder may be another
        # spec's live release of the same name (`reports:` set to its output folder)
        ("reports", spec.reports_dir / spec.release),
        ("warehouse", spec.warehouse_path),
    )
    for field_name, path in written:
        inside = enclosing_release(path)
        if inside is not None:  # its next publication would refuse the files it did not list
            raise InputError(
                f"`{field_name}:` {path} lies inside the published release {inside}; point "
                f"`{field_name}:` outside every release folder",
                code=Reason.OUTPUT,
                field=field_name,
            )


def _companions(warehouse: Path) -> dict[str, Path]:
    """The files written beside a warehouse: DuckDB's ``.wal`` and ``.tmp`` (its spill folder)
    and sdcflow's ``.lock``, next to the path as named and next to the file it resolves to."""
    real = Path(os.path.realpath(warehouse))
    return {
        f"the warehouse's {what}{' (beside its file)' if i else ''}": at.with_name(at.name + suffix)
        for i, at in enumerate((warehouse, real))
        for what, suffix in (("log", ".wal"), ("lock", ".lock"), ("spill folder", ".tmp"))
    }
