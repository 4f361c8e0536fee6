"""Whether the spec's method fits the release: its gates, the keys' kinds, blocks, cells,
missing numbers and the source's values, each asked of the method's registry entry
(:class:`~sdcflow.methods.base.Method`) and of the gates' (``Gate.measures``); no method
is named here. Every refusal is one ``InputError`` (exit 2) before a run exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sdcflow.core.validation import check_cell_size
from sdcflow.errors import InputError, Reason
from sdcflow.gates import contradictions, numeric_key_gates
from sdcflow.methods import get_method
from sdcflow.methods.keys import Key, binned, masked_as
from sdcflow.methods.perturbation import check_pram_step
from sdcflow.spec.schema import ReleaseSpec


def check_contradictions(spec: ReleaseSpec) -> None:
    """Refuse a spec whose gates its method cannot meet by construction (a box-only gate
    under another method, a crisp k gate under a probabilistic-only guarantee...), before
    anything is read: one line, reason ``SPEC_CONTRADICTION``."""
    found = contradictions(spec.method, spec.checks)
    if found:
        raise InputError(found[0], code=Reason.SPEC_CONTRADICTION)


def check_keys_fit_method(spec: ReleaseSpec, keys: Sequence[Key], rows: int = 0) -> None:
    """The method, blocks and checks can handle the keys' kinds (after recoding: binned
    numeric keys are categorical): what the method declares (``key_kinds``, ``blocks``,
    ``cells``, ``mask_keys``), then its own ``check_spec``. Raises ``InputError``
    (SPEC_CONTRADICTION)."""
    numeric, categorical = masked_as(keys)
    bins = binned(keys)
    name = spec.method.name
    method = get_method(name)
    strata = method.mask_keys is None  # categorical keys are strata around the method

    def refuse(message: str) -> None:
        raise InputError(message, code=Reason.SPEC_CONTRADICTION)

    if categorical and strata and not numeric:
        refuse(
            f"every key is categorical and method {name} masks numeric keys; use "
            "`method: {name: local_suppression, k: ...}` (or heterogeneous)"
        )
    check_pram_step(spec, keys, spec.pram)
    method.check_spec(spec, keys, rows)
    kinds = {k.name: ("ordinal" if k.name in bins else k.kind) for k in keys}
    # keys PRAMed before the method reach it as categories it stratifies by, or, without k,
    # are released as PRAM left them
    pramed = set(spec.pram.columns) if spec.pram else set()
    unaccepted = [
        key for key, kind in kinds.items() if kind not in method.key_kinds and key not in pramed
    ]
    if unaccepted:
        refuse(
            f"method {name} masks {' and '.join(sorted(method.key_kinds))} keys, and "
            f"{', '.join(unaccepted)} are not; declare or recode them, or choose another method"
        )
    if spec.blocks and categorical and strata:
        refuse("blocks split numeric keys; with categorical keys remove `blocks:`")
    if spec.blocks and not method.blocks:
        refuse(f"method {name} masks every quasi-identifier together; remove `blocks:`")
    cell_size = getattr(spec.method, "cell_size", None) if method.cells else None
    if cell_size is not None:
        ordered = [k for k in keys if k.kind == "ordinal" or k.name in bins]
        if not numeric and not ordered:
            refuse(
                "cell_size cuts cells along numeric or ordinal keys and every key is nominal; "
                "remove cell_size (or use local_suppression for categorical keys)"
            )
        try:
            check_cell_size(cell_size, spec.method.k)
        except InputError as e:
            raise InputError(str(e), code=Reason.SPEC_FIELD, field="method.cell_size") from None
    if not numeric:
        wrong = sorted(set(spec.checks) & numeric_key_gates())
        if wrong:
            refuse(f"check(s) {wrong} measure numeric keys and this release has none; remove them")


def check_missing_numbers_fit_method(
    spec: ReleaseSpec, keys: Sequence[Key], missing: Mapping[str, int]
) -> None:
    """Numeric keys with missing values: the release groups those records with MDAV-generic
    on the values they have (``mixed.mask_keys``; with categorical keys, in every stratum
    where a number is missing; within spatial cells with ``cell_size``), unless the method
    masks the keys itself, so a method or an option that would not be applied is refused
    rather than named in the manifest and the report (``Method.missing_numbers``). Raises
    ``InputError`` (SPEC_CONTRADICTION)."""
    numeric, _ = masked_as(keys)
    gaps = [f"{c} ({missing[c]} missing)" for c in numeric if missing.get(c)]
    if not gaps:
        return
    what = get_method(spec.method.name).unapplied_with_missing_numbers(spec.method)
    if what is None:
        return
    raise InputError(
        f"numeric key(s) {', '.join(gaps)} have missing values, which sdcflow masks with "
        f"MDAV-generic on the values each record has; {what} would not be applied: use "
        "`method: {name: mdav, k: ...}` (with cell_size: N for a large file) without those "
        "options, or heterogeneous",
        code=Reason.SPEC_CONTRADICTION,
    )


def check_data_fits_method(spec: ReleaseSpec, data: Any, keys: Sequence[Key]) -> None:
    """The values the method cannot release (its ``check_data``: box magnitudes, fuzzy
    resolution...), refused here, before the run starts, rather than in the mask step. Keys
    are of the kinds it takes and complete where it needs them by then
    (:func:`check_keys_fit_method`, :func:`check_missing_numbers_fit_method`). ``data``: an
    Arrow table or a :class:`~sdcflow.warehouse.sources.SourceData`, of which a check reads
    the key columns it needs (``key_numbers``: 8 bytes a record for each)."""
    get_method(spec.method.name).check_data(spec, data, keys)
