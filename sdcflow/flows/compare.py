"""Risk-utility comparison: run method variants without publishing and map risk against loss.

``sdcflow compare SPEC --methods mdav fuzzy --k 3 5 10`` runs the release flow of
:mod:`sdcflow.flows.release` once per (method, k) with ``publish=False`` and the spec's
``method`` block replaced, so every variant goes through the same ingest, masking and checks as
a real release and is recorded in ``audit.runs``; nothing is published. The source is read and
the edit rules parsed once, by one preflight shared by every variant. A variant whose checks
fail is still measured (its outcome rides on ``ChecksFailed``); a run refused before masking
(raw records violating edit rules under ``on_violation: fail``) re-raises ``ChecksFailed``.

The figures of each variant are the ones its gates compute (asked for without a threshold
where the spec does not gate them), on the quasi-identifiers that went into masking, except
IL, which is measured against the file as ingested (before any repair), so that methods that
repair first and methods that edit while masking are compared on the same file:

* ``il`` — IL = 100 SSE/SST against the raw file (``max_information_loss``; x axis of the
  map);
* ``record_linkage`` — distance-based record linkage, % (``max_record_linkage``);
* ``transparency_reidentification`` — % re-identified by the intruder who knows the method
  and its parameters (``max_transparency_reidentification``); for randomized methods the
  ``manifest`` intruder by default (cheap), ``--intruder refit`` for the gate's own;
* ``interval_disclosure`` — rank-based interval disclosure, % (``max_interval_disclosure``);
* ``pil`` — average probabilistic information loss, % (``max_pil``);
* ``k_achieved`` — k of the released keys (``k_anonymity``): the smallest class of identical
  released rows, a missing value being a value of its own (the run report also gives
  sdcMicro's count, where a missing value matches any value, for comparison).

The map (``risk_utility.png``) has one point per method and k, two panels (record linkage and
the transparency intruder against IL); ``report.html`` beside it shows the map and the table.
Only figures are written, never a record value.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from pydantic import ValidationError

from sdcflow.errors import ChecksFailed, InputError, Reason
from sdcflow.flows.release import release
from sdcflow.flows.runners import with_runner
from sdcflow.methods import METHODS
from sdcflow.preflight.plan import plan_release
from sdcflow.report.html import REPORT_NAME, write_report
from sdcflow.report.sections import Section, Table, fmt, table_of
from sdcflow.spec.load import load_spec
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.warehouse.private import private_folder
from sdcflow.warehouse.publish import check_writable_folder, enclosing_release

COLUMNS = [
    "method",
    "k",
    "params",
    "il",
    "record_linkage",
    "transparency_reidentification",
    "interval_disclosure",
    "pil",
    "k_achieved",
    "checks_passed",
    "run_id",
]


# Column of the table -> the gate that computes it.
FIGURES = {
    "il": "max_information_loss",
    "record_linkage": "max_record_linkage",
    "transparency_reidentification": "max_transparency_reidentification",
    "interval_disclosure": "max_interval_disclosure",
    "pil": "max_pil",
    "k_achieved": "k_anonymity",
}

Intruder = Literal["manifest", "refit"]


def variant_method(
    spec: ReleaseSpec, name: str, k: int, params: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``method`` block of one variant.

    Starts from the spec's own method parameters that the variant's method also has (so
    m1, m2, restarts, guarantee carry over between ``fuzzy`` and ``constrained_fuzzy``), then
    ``params`` (``--param key=value``, applied where the method has that field), then ``k``.
    What neither gives takes the method's own defaults, as in a release (fuzzy methods:
    ``m1 = m2 = 1.1``, see :class:`~sdcflow.methods.FuzzyParams`).
    """
    if name not in METHODS:
        raise InputError(
            f"unknown method {name!r}; choose from {', '.join(sorted(METHODS))}",
            code=Reason.PARAMETER,
        )
    fields = METHODS[name].params.model_fields
    own = spec.method.model_dump(mode="json", exclude={"name"})
    block = {key: v for key, v in own.items() if key in fields and v is not None}
    block.update({key: v for key, v in (params or {}).items() if key in fields})
    return {**block, "name": name, "k": int(k)}


def _described(spec: ReleaseSpec, method: Mapping[str, Any]) -> str:
    """``m1=1.1 m2=2``: the variant's parameters that differ from the method's declared
    defaults (filled-in fuzzifiers included), other than name and k, for the table."""
    params = spec.variant(dict(method)).method
    shown = params.model_dump(mode="json", exclude={"name", "k"}, exclude_defaults=True)
    return " ".join(f"{key}={fmt(shown[key])}" for key in sorted(shown))


def _validated(spec: ReleaseSpec, method: dict[str, Any]) -> None:
    try:
        spec.variant(method)
    except ValidationError as e:
        first = e.errors()[0]
        raise InputError(
            f"method {method['name']!r} with k = {method['k']}: {first['msg']}; "
            "check the method name and its parameters",
            code=Reason.PARAMETER,
        ) from None


def figure_png(fig: Figure, *, dpi: int = 110) -> bytes:
    """Render a matplotlib Figure to PNG bytes with the Agg canvas (no pyplot, no global
    backend: safe in worker threads)."""
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def risk_utility_figure(table: pd.DataFrame) -> Figure:
    """Two panels, record linkage and transparency re-identification against IL; one marker
    per method, each point labelled with its k, points of a method joined in k order. The IL
    axis turns logarithmic when the losses span more than a factor 20."""
    fig = Figure(figsize=(10, 4.4))
    axes = fig.subplots(1, 2, sharex=True)
    risks = [
        ("record_linkage", "record linkage, %"),
        ("transparency_reidentification", "transparency intruder, % re-identified"),
    ]
    markers = "osD^vP*X"
    for ax, (col, label) in zip(axes, risks, strict=True):
        for i, (method, rows) in enumerate(table.sort_values("k").groupby("method", sort=False)):
            ax.plot(rows["il"], rows[col], marker=markers[i % len(markers)], label=str(method))
            for _, r in rows.iterrows():
                ax.annotate(f"k={int(r['k'])}", (r["il"], r[col]), textcoords="offset points",
                            xytext=(4, 4), fontsize=8)  # fmt: skip
        il = table["il"].to_numpy(dtype=float)
        if il.size and il.min() > 0 and il.max() > 20 * il.min():  # spans decades: log axis
            ax.set_xscale("log")
            ax.set_xlabel("information loss IL = 100 SSE/SST (log scale)")
        else:
            ax.set_xlabel("information loss IL = 100 SSE/SST")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(title="method")
    fig.suptitle("Risk-utility map (lower left is better)")
    fig.tight_layout()
    return fig


WRITTEN = ("risk_utility.png", "risk_utility.csv", REPORT_NAME)


def _check_out(folder: Path) -> None:
    """Refuse (``InputError``, exit 2) an ``--out`` folder inside a published release (its
    next publication would refuse the files it did not list) or one that already holds a file
    of the names written (sdcflow never replaces a file it did not create), or one it could
    neither create nor write into."""
    inside = enclosing_release(folder)
    if inside is not None:
        raise InputError(
            f"--out {folder} lies inside the published release {inside}; give a folder outside "
            "every release folder",
            code=Reason.OUTPUT,
            field="out",
        )
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--out {folder} is not a folder", code=Reason.OUTPUT, field="out")
    # before any variant runs (a read-only --out failed after all of them, exit 3)
    check_writable_folder(folder, "out", "the comparison", "--out")
    there = [name for name in WRITTEN if (folder / name).exists() or (folder / name).is_symlink()]
    if there:
        raise InputError(
            f"--out {folder} already holds {', '.join(there)}, which the comparison would "
            "replace; give a new or empty folder",
            code=Reason.OUTPUT,
            field="out",
        )


def compare(
    spec_path: str | Path,
    methods: Sequence[str],
    ks: Sequence[int],
    *,
    params: Mapping[str, Any] | None = None,
    intruder: Intruder = "manifest",
    out_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Run every (method, k) without publishing and draw the risk-utility map.

    Parameters
    ----------
    spec_path : path of the release spec
    methods : method names of the registry (``mdav``, ``fuzzy``...)
    ks : minimum group sizes
    params : further method parameters for every variant whose method has them
        (``{"m1": 1.5, "m2": 2}``); see :func:`variant_method`
    intruder : {"manifest", "refit"}
        Transparency intruder for fuzzy methods (module docstring); crisp methods: 1/|group|.
    out_dir : folder for ``risk_utility.png``, ``risk_utility.csv`` and ``report.html``;
        default ``<reports>/<release>/compare-<UTC time>``

    Returns
    -------
    DataFrame with one row per variant and the columns of :data:`COLUMNS`; its ``attrs``
    hold the paths written (``png``, ``csv``, ``report``).
    """
    if not methods or not ks:
        raise InputError("give at least one method and one k", code=Reason.PARAMETER)
    spec_path = Path(spec_path).resolve()
    spec = load_spec(spec_path)
    if out_dir is not None:
        _check_out(Path(out_dir))
    blocks = [variant_method(spec, name, k, params) for name in methods for k in ks]
    for block in blocks:
        _validated(spec, block)
    plan = plan_release(spec)  # one read of the source and the rules for every variant
    for block in blocks:  # every variant's keys and method checked before any of them runs
        plan.variant(block)
    # categorical keys only (local_suppression): no numbers to measure loss or linkage on
    numeric = any(k.kind == "numeric" and k.recoding is None for k in plan.resolved_keys)
    figures = {c: key for c, key in FIGURES.items() if numeric or key == "k_anonymity"}
    rows = []
    for block in blocks:
        try:
            outcome = with_runner(release, spec)(  # runner: dask runs each variant there
                str(spec_path),
                publish=False,
                method=block,
                figures=list(figures.values()),
                measures={"transparency": {"intruder": intruder}},
                plan=plan,
                kind="compare",
            )
        except ChecksFailed as e:
            outcome = e.outcome
            if not outcome.figures:  # refused before masking (edit rules, on_violation: fail)
                raise
        rows.append(
            {
                "method": block["name"],
                "k": block["k"],
                "params": _described(spec, block),
                **{col: outcome.figures.get(key, float("nan")) for col, key in FIGURES.items()},
                "checks_passed": outcome.success,
                "run_id": outcome.run_id,
            }
        )
    table = pd.DataFrame(rows, columns=COLUMNS)

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    if out_dir is not None:
        _check_out(Path(out_dir))  # again: the variants took a while
    folder = Path(out_dir) if out_dir else spec.reports_dir / spec.release / f"compare-{stamp}"
    private_folder(folder)  # figures about the confidential records: their owner's only
    png = figure_png(risk_utility_figure(table))
    (folder / "risk_utility.png").write_bytes(png)
    table.to_csv(folder / "risk_utility.csv", index=False)
    summary = {
        "release": spec.release,
        "variants": len(table),
        "methods": ", ".join(methods),
        "k": ", ".join(str(k) for k in ks),
        "published": "nothing (comparison runs)",
    }
    report = write_report(
        folder,
        [
            Section("Summary").table(table_of(summary)),
            Section("Risk-utility map").plot(
                png, "risk against information loss, one point per variant", "No variant ran."
            ),
            Section("Figures of every variant").table(Table.from_frame(table.round(4))),
        ],
        title=f"Risk-utility comparison: {spec.release}",
    )
    table.attrs.update(
        png=str(folder / "risk_utility.png"),
        csv=str(folder / "risk_utility.csv"),
        report=str(report),
    )
    return table
