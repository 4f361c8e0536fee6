"""The registry of publication gates: every ``checks:`` key of the spec, with its direction,
unit, the ``measures:`` option it reads and the spec fields it needs.

Adding a gate is one :class:`~sdcflow.gates.base.Gate` entry in the module of its
family (``anonymity``, ``loss``, ``risk``, ``box``, ``edits``, ``uniqueness``), with its
:class:`~sdcflow.gates.base.GateOption` beside it when it has a setting: the spec's
``measures:`` block is assembled from those declarations (:func:`options_model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, create_model

from sdcflow.gates import anonymity, box, edits, loss, risk, uniqueness
from sdcflow.gates.anonymity import RecordRisk, record_risk
from sdcflow.gates.base import Gate, GateContext, GateOption, GateOutcome
from sdcflow.gates.loss import information_loss_figures
from sdcflow.methods import MethodParams, get_method
from sdcflow.spec_model import SpecModel

GATES: dict[str, Gate] = {
    g.key: g for module in (anonymity, loss, risk, box, edits, uniqueness) for g in module.GATES
}

# Gates every release with error rules gets even when the spec does not name them, with this
# threshold (``Gate.with_edit_rules``).
ALWAYS: dict[str, float] = {
    key: gate.with_edit_rules for key, gate in GATES.items() if gate.with_edit_rules is not None
}

# Gates every release of group means over non-negative magnitudes gets, with this threshold
# (``Gate.with_group_means``).
OF_MAGNITUDES: dict[str, float] = {
    key: gate.with_group_means for key, gate in GATES.items() if gate.with_group_means is not None
}


def numeric_key_gates() -> set[str]:
    """The gates measured on numeric keys (``Gate.measures``): a release without numeric keys
    cannot be gated on them."""
    return {key for key, gate in GATES.items() if gate.measures == "numeric_keys"}


def _options() -> dict[str, GateOption]:
    out: dict[str, GateOption] = {}
    for gate in GATES.values():
        if gate.option is not None:
            out.setdefault(gate.option.key, gate.option)
    return out


OPTIONS: dict[str, GateOption] = _options()


def options_model() -> type[BaseModel]:
    """The pydantic model of the spec's ``measures:`` block: one field per declared option."""
    fields: dict[str, Any] = {
        key: (
            opt.annotation | None,
            Field(None, description=opt.description),
        )
        for key, opt in OPTIONS.items()
    }
    return create_model(
        "MeasureOptions",
        __base__=_Options,
        __doc__="Settings of the measures behind the gates (``measures:`` in the spec).",
        **fields,
    )


class _Options(SpecModel):
    """The base of ``MeasureOptions`` (``create_model`` takes a base or a config, not both):
    a YAML ``yes`` is no percentage."""

    model_config = ConfigDict(extra="forbid", frozen=True)


MeasureOptions = options_model()


def default_gates(
    method: MethodParams | None,
    *,
    blocked: bool,
    edit_rules: bool,
    promises: Mapping[str, float] | None = None,
    keep: bool = False,
    magnitudes: bool = False,
) -> dict[str, float]:
    """The gates a release gets without asking: the edit-rule gate when it has error rules,
    the magnitude dominance gate (``OF_MAGNITUDES``) when the method releases group
    means (``Method.groups``) and a numeric key it aggregates is a non-negative magnitude in
    the source (``magnitudes``; the gate judges those keys), and what its method (or the
    composition that masked it, ``MaskResult.promises``) promises: with blocks, the joint k
    over every quasi-identifier and k per block (and so for the expected group sizes of a
    random draw, ``probabilistic_k_anonymity`` over the released tuples of block groups and
    ``block_probabilistic_k_anonymity``). With ``keep`` columns, ``keep_k_anonymity`` (k if
    the intruder also knew them) at the promised k.
    """
    if promises is not None:
        promised = dict(promises)
    else:
        promised = get_method(method.name).promises(method) if method else {}
    # With keep columns the intruder may know them too: the promised k holds with them
    # (``Gate.with_keep``).
    if keep:
        for key, gate in GATES.items():
            if key in promised and gate.with_keep is not None:
                promised[gate.with_keep] = promised[key]
    # Blocks masked separately promise k per block, not for the joint tuple: a record's
    # combination of block groups may be unique. An intruder may know every
    # quasi-identifier, so the joint k stays gated at the method's k beside the per-block
    # one (``Gate.per_block``); a spec that assumes an intruder knows one block at most says
    # so explicitly (a lower k_anonymity under checks: and accept: {looser_checks:
    # [k_anonymity]}). The same for the expected group sizes of a random draw (fuzzy): each
    # block's centres hold >= k records in expectation, but the released tuple of
    # independently drawn centres may not; the joint figure is gated at k and the per-block
    # one keeps its own key.
    if blocked:
        for key, gate in GATES.items():
            if key in promised and gate.per_block is not None:
                promised[gate.per_block] = promised[key]
    defaults = dict(ALWAYS) if edit_rules else {}
    # A group mean beside what the group's other members know of themselves gives a dominant
    # contribution away (the p % rule): a release of means of magnitudes is gated on it.
    if magnitudes and method is not None and get_method(method.name).groups == "means":
        defaults.update(OF_MAGNITUDES)
    return {**defaults, **promised}


def any_magnitude(X: np.ndarray) -> bool:
    """Whether some numeric key of ``X`` (n, d) is a non-negative magnitude: present somewhere
    and never negative (a missing value is NaN). A signed key (a profit) is no contribution
    and is left out of the rules; the others are judged."""
    if X.ndim != 2 or X.shape[1] == 0:
        return False
    present = ~np.isnan(X)
    return bool(np.any(present.any(axis=0) & ~(X < 0).any(axis=0)))


def _defaults(ctx: GateContext) -> dict[str, float]:
    return default_gates(
        ctx.method,
        blocked=bool(ctx.result.blocks),
        edit_rules=ctx.edit_violations is not None or bool(ctx.unchecked_rules),
        promises=ctx.result.promises,
        keep=ctx.keep is not None and ctx.keep.shape[1] > 0,
        magnitudes=any_magnitude(np.asarray(ctx.as_ingested, dtype=np.float64)),
    )


def looser_thresholds(
    defaults: Mapping[str, float], thresholds: Mapping[str, float]
) -> dict[str, tuple[float, float]]:
    """``{key: (default, threshold)}`` for every spec threshold that is looser than the
    default gate of the same key (a lower minimum, a higher maximum)."""
    out = {}
    for key, value in thresholds.items():
        if key not in defaults:
            continue
        default = float(defaults[key])
        looser = value < default if GATES[key].direction == "min" else value > default
        if looser:
            out[key] = (default, float(value))
    return out


def wanted_gates(ctx: GateContext, thresholds: Mapping[str, float]) -> dict[str, float]:
    """The gates a release runs and their thresholds: the ones every release gets, what its
    method promises, then the spec's ``thresholds``, which may tighten a default gate but
    loosen it only when the spec accepts it explicitly (``ctx.accept_looser``); otherwise the
    default threshold holds.

    The edit-rule gate runs when an error rule was evaluated on the release or could not be
    (then it reports "not checked"); without error rules it would pass vacuously and is left
    out.
    """
    defaults = _defaults(ctx)
    wanted = {**defaults, **thresholds}
    for key, (default, _) in looser_thresholds(defaults, thresholds).items():
        if key not in ctx.accept_looser:
            wanted[key] = default
    return wanted


def threshold_notes(ctx: GateContext, thresholds: Mapping[str, float]) -> dict[str, str]:
    """What the outcome of a gate says about a spec threshold looser than the default: that
    the default applied, or that the spec accepted the looser one."""
    defaults = _defaults(ctx)
    notes = {}
    for key, (default, value) in looser_thresholds(defaults, thresholds).items():
        if key in ctx.accept_looser:
            notes[key] = (
                f"looser than the default {default:g}: accepted by the spec (accept.looser_checks)"
            )
        else:
            notes[key] = (
                f"the spec's {value:g} is looser than the default {default:g}, which applies "
                "(loosening needs accept.looser_checks)"
            )
    return notes


def run_gates(
    ctx: GateContext, thresholds: Mapping[str, float], figures: Mapping[str, float] | None = None
) -> list[GateOutcome]:
    """Evaluate the gates of :func:`wanted_gates` on ``ctx``; ``figures``: gate key -> its
    figure computed elsewhere (the streamed path's DuckDB aggregates,
    ``sdcflow.tasks.aggregates``), used instead of ``Gate.compute``."""
    outcomes = []
    notes = threshold_notes(ctx, thresholds)
    for key, threshold in wanted_gates(ctx, thresholds).items():
        gate = GATES[key]
        unchecked = gate.not_checked(ctx) if gate.not_checked is not None else None
        if unchecked is not None:
            note, accepted = unchecked
            outcomes.append(
                GateOutcome(
                    key,
                    float("nan"),
                    float(threshold),
                    gate.direction,
                    accepted,
                    gate.description,
                    gate.unit,
                    checked=False,
                    note=note,
                )
            )
            continue
        figure = float(figures[key] if figures and key in figures else gate.compute(ctx))
        passed = gate.passes(figure, float(threshold))
        said = [notes.get(key, ""), gate.reading(ctx) if gate.reading is not None else ""]
        if not passed and gate.remedy is not None:
            said.append(gate.remedy(ctx))
        note = "; ".join(part for part in said if part)
        outcomes.append(
            GateOutcome(
                key,
                figure,
                float(threshold),
                gate.direction,
                passed,
                gate.description,
                gate.unit,
                note=note,
            )
        )
    return outcomes


def measure(ctx: GateContext, keys: list[str]) -> dict[str, float]:
    """The figures of the gates ``keys`` without thresholds (reports, comparisons); NaN for
    a figure that cannot be established on the release (``Gate.not_checked``)."""
    out = {}
    for key in keys:
        gate = GATES[key]
        unchecked = gate.not_checked(ctx) if gate.not_checked is not None else None
        out[key] = float("nan") if unchecked is not None else float(gate.compute(ctx))
    return out


def contradictions(method: MethodParams, checks: Mapping[str, float]) -> list[str]:
    """The spec's gates that its method cannot meet by construction, one line each with the
    fix: gates for other methods' releases (``Gate.only_for``), gates on released groups
    under a method releasing records (``Gate.on_groups``, ``Method.groups``), and what the
    method itself declares (``Method.conflicts``). The preflight refuses the first, before
    any work."""
    out = []
    releases = get_method(method.name).groups
    for key in checks:
        if GATES[key].on_groups and releases is None:
            out.append(
                f"checks.{key} measures released groups and method {method.name} releases "
                "records, not group aggregates; remove it, or choose a microaggregation "
                "method for a release of group means"
            )
            continue
        allowed = GATES[key].only_for
        if allowed and not isinstance(method, allowed):
            names = " or ".join(sorted(t.model_fields["name"].default for t in allowed))
            out.append(
                f"checks.{key} applies to {names} releases only and the method is "
                f"{method.name}; remove {key} from checks or use method {names}"
            )
    return out + get_method(method.name).conflicts(method, checks)


@dataclass(frozen=True)
class Evidence:
    """What the checks measured for the report and the manifest besides the gates' verdicts.

    Attributes
    ----------
    information_loss : dict
        IL against the records as ingested (``raw``, the gated figure) and, when a repair
        changed records, against the repaired ones (``repaired``); see
        :func:`~sdcflow.gates.loss.information_loss_figures`.
    record_risk : RecordRisk or None
        Per-record re-identification probabilities of the transparency intruder, reused from
        the gates when they computed them; None when they were not computed (see
        :func:`~sdcflow.gates.anonymity.record_risk`).
    """

    information_loss: dict[str, float]
    record_risk: RecordRisk | None


def gather_evidence(ctx: GateContext) -> Evidence:
    """:class:`Evidence` of a release, after its gates ran on ``ctx`` (nothing recomputed)."""
    return Evidence(information_loss_figures(ctx), record_risk(ctx))


__all__ = [
    "ALWAYS",
    "GATES",
    "OF_MAGNITUDES",
    "OPTIONS",
    "Evidence",
    "Gate",
    "GateContext",
    "GateOption",
    "GateOutcome",
    "MeasureOptions",
    "RecordRisk",
    "any_magnitude",
    "contradictions",
    "default_gates",
    "gather_evidence",
    "looser_thresholds",
    "measure",
    "numeric_key_gates",
    "options_model",
    "run_gates",
    "threshold_notes",
    "wanted_gates",
]
