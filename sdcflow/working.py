"""The statistician's working object: a release tried, measured and undone in a notebook.

In the spirit of sdcMicro's ``createSdcObj`` [1]: an :class:`SdcFrame` holds a DataFrame, its
keys (numeric, nominal, ordinal), sampling weights and sensitive columns, and the steps tried
on them. Each step (:meth:`~SdcFrame.recode`, :meth:`~SdcFrame.suppress`,
:meth:`~SdcFrame.mask`) is measured at once (:meth:`~SdcFrame.risk`,
:meth:`~SdcFrame.utility`), can be undone (:meth:`~SdcFrame.undo`), and
:meth:`~SdcFrame.to_spec` writes the release spec that reproduces the same release through
the pipeline, with the same figures.

>>> from sdcflow.working import SdcFrame
>>> sdc = SdcFrame(df, numeric=amounts, strata=["region"])       # doctest: +SKIP
>>> sdc.mask("mdav", k=5).risk()["k_anonymity"]                  # doctest: +SKIP
>>> sdc.to_spec(release="survey", source="data.csv")             # doctest: +SKIP

**One implementation.** The object has no masking, risk or loss code of its own: a release
is what ``sdcflow.methods.mixed.mask_keys`` (the pipeline's mask step) returns for the
keys, their recodings and the method, and every figure is the gate's
(:func:`sdcflow.gates.measure` on the same :class:`~sdcflow.gates.GateContext` the
pipeline's checks build), so k counts identical released rows, a missing or suppressed
value being a value of its own (sdcMicro's count, where a blank matches any value, is
reported beside it).

**What a step changes.** A release spec holds global recodings and one method, and so does
the object: :meth:`~SdcFrame.recode` adds a key's recoding, :meth:`~SdcFrame.suppress` and
:meth:`~SdcFrame.mask` set the method (a later one replaces the earlier: trying MDAV after PS
is another try, not PS then MDAV). Every step recomputes the release from the original
records, as the pipeline does, so that what is measured is what :meth:`~SdcFrame.to_spec`
releases. With categorical keys, a numeric method masks within the classes of identical
categorical rows (local suppression first brings each class to k records): sdcMicro's
``strataVar``. A stratum column is published, so it is a key an intruder may know;
``strata=`` declares it a nominal key.

**Confidentiality.** Figures only: nothing the object displays (``_repr_html_``,
:meth:`~SdcFrame.report`, messages) holds a value of a record; :attr:`~SdcFrame.released` is
the data.

References
----------
[1] M. Templ, A. Kowarik, B. Meindl, "Statistical disclosure control for micro-data using
    the R package sdcMicro", Journal of Statistical Software 67(4) (2015) 1-36,
    doi:10.18637/jss.v067.i04 (``createSdcObj``, ``undolast``, ``measure_risk``).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
from pydantic import ValidationError

from sdcflow.core.measures.risk import risk_summary
from sdcflow.errors import DataError, ParameterError, Reason
from sdcflow.gates import GateContext, measure, run_gates
from sdcflow.methods import METHODS, MaskResult, MethodParams, get_method, suppression
from sdcflow.methods.keys import Key, SuppressionSettings, encode_keys
from sdcflow.methods.mixed import mask_keys
from sdcflow.methods.perturbation import PRAM_STEP, PramStepParams, check_pram_step
from sdcflow.methods.recoding import NUMERIC_KINDS, Recoding, check_recoding, recode
from sdcflow.spec.schema import _join_errors, error_field

__all__ = ["SdcFrame", "Step"]

RISK_K = (2, 3, 5)
"""The k of the ``records_below_k`` figures (records in classes of fewer than k)."""

_LOSS_GATES = (
    "max_information_loss",
    "max_generic_loss_means",
    "max_generic_loss_variances",
    "max_generic_loss_covariances",
    "max_generic_loss_correlations",
)


@dataclass(frozen=True)
class Step:
    """One state of the object: the recodings and the method tried, and what they gave.

    Attributes
    ----------
    label : str
        What the step did, for :attr:`SdcFrame.history` (names and parameters, no value).
    recodings : mapping column -> Recoding
    method : MethodParams or None
        None: no method yet (the keys as recoded).
    suppression : SuppressionSettings
    result : MaskResult
        The keys as released (``masked``), the numeric ones as points.
    pram : PramStepParams or None
        PRAM on some categorical keys before the method (the spec's ``pram:``).
    """

    label: str
    recodings: Mapping[str, Recoding]
    method: MethodParams | None
    suppression: SuppressionSettings
    result: MaskResult
    pram: PramStepParams | None = None
    _figures: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


class SdcFrame:
    """A release being worked out on a DataFrame (module docstring).

    Parameters
    ----------
    frame : DataFrame (n records)
        The records; kept as given (the object never edits it).
    keys : list of str, optional
        The quasi-identifiers, kinds read from the column types (numbers numeric, text,
        booleans and categories nominal) unless listed in ``numeric``, ``nominal`` or
        ``ordinal``; default: those lists and ``strata``.
    numeric, nominal : list of str
        Keys of that kind.
    ordinal : mapping column -> list of categories, lowest first
        Ordinal keys and their order.
    weight : str, optional
        Column of sampling weights (positive), for the individual and global risk.
    strata : list of str
        Columns a numeric method masks within (sdcMicro's ``strataVar``): nominal keys.
    sensitive : list of str
        Confidential columns, published unchanged: l-diversity is measured on them.
    random_state : None, int, numpy Generator or RandomState
        The draw of randomized methods (fuzzy); an int reproduces it and goes to the spec's
        ``seed``.

    Raises
    ------
    InputError
        ``COLUMN_UNKNOWN`` for a column the frame lacks, ``COLUMN_TYPE`` for a numeric key
        that does not hold numbers, ``WEIGHTS`` for bad weights, ``PARAMETER`` for a key
        declared twice.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        keys: Sequence[str] | None = None,
        *,
        numeric: Sequence[str] = (),
        nominal: Sequence[str] = (),
        ordinal: Mapping[str, Sequence[Any]] | None = None,
        weight: str | None = None,
        strata: Sequence[str] = (),
        sensitive: Sequence[str] = (),
        random_state: Any = None,
    ) -> None:
        if not isinstance(frame, pd.DataFrame):
            raise ParameterError(
                f"SdcFrame takes a DataFrame, got {type(frame).__name__}; wrap an array in "
                "pd.DataFrame(X, columns=[...]) to name its columns",
                field="frame",
            )
        ordinal = dict(ordinal or {})
        declared = [*numeric, *nominal, *ordinal, *strata]
        twice = sorted({c for c in declared if declared.count(c) > 1})
        if twice:
            raise ParameterError(
                f"key(s) {twice} are declared with more than one kind; give each one kind",
                field=str(twice[0]),
            )
        names = list(dict.fromkeys([*(keys or ()), *declared]))
        if not names:
            raise ParameterError(
                "name the quasi-identifiers: keys=[...], or numeric=/nominal=/ordinal=/strata=",
                field="keys",
            )
        _known(frame, [*names, *sensitive, *([weight] if weight else [])])
        kinds = {
            **{c: "numeric" for c in numeric},
            **{c: "nominal" for c in [*nominal, *strata]},
            **{c: "ordinal" for c in ordinal},
        }
        self.frame = frame
        self.keys: list[Key] = [_key(frame[c], c, kinds.get(c), ordinal.get(c)) for c in names]
        self.weight = weight
        self.sensitive = list(sensitive)
        self.random_state = random_state
        self._weights = _weights(frame, weight)
        self._records = frame[names].reset_index(drop=True)
        self._sensitive = frame[self.sensitive].reset_index(drop=True) if sensitive else None
        self._steps: list[Step] = []
        self._steps.append(self._step("start", {}, None, SuppressionSettings()))

    # -- steps ------------------------------------------------------------------------------

    def recode(
        self,
        column: str,
        bins: Sequence[float] | None = None,
        *,
        labels: Sequence[str] | None = None,
        closed: Literal["right", "left"] = "right",
        map: Mapping[str, str] | None = None,
        top: float | None = None,
        top_value: float | None = None,
        bottom: float | None = None,
        bottom_value: float | None = None,
    ) -> SdcFrame:
        """Recode key ``column`` globally (sdcMicro's ``globalRecode`` and ``topBotCoding``,
        the spec's ``recode:``): ``bins`` edges of a numeric key (it becomes ordinal;
        ``closed`` as in :mod:`sdcflow.methods.recoding`), a ``map`` of a categorical key's
        levels, or top and bottom coding of a numeric key (values above ``top`` become
        ``top_value``, below ``bottom`` become ``bottom_value``, each by default the
        threshold; the key stays numeric, masked by the method afterwards). A second
        recoding of the same key replaces the first. Returns the object."""
        key = self._key(column)
        coding = top is not None or bottom is not None
        if (bins is not None) + (map is not None) + coding != 1:
            raise ParameterError(
                f"recode({column!r}): give bins=[edges] or top=/bottom= for a numeric key, or "
                "map={level: new} for a categorical one (one of them)",
                field=column,
            )
        if bins is not None:
            rule = Recoding(
                "bins",
                edges=tuple(float(e) for e in bins),
                labels=tuple(labels) if labels is not None else None,
                closed=closed,
            )
            what = f"bins {list(rule.edges)}"
        elif coding:
            rule = Recoding(
                "top_bottom",
                top=_number(top),
                bottom=_number(bottom),
                top_value=_number(top_value),
                bottom_value=_number(bottom_value),
            )
            check_recoding(column, rule)  # the spec's messages, before any record is read
            what = ", ".join(
                f"{side} {value:g}"
                for side, value in (("top", top), ("bottom", bottom))
                if value is not None
            )
        else:
            rule = Recoding("map", mapping=dict(map or {}))
            what = f"map of {len(map or {})}"
        numeric_rule = rule.kind in NUMERIC_KINDS
        if numeric_rule != (key.kind == "numeric"):
            want = "numeric" if numeric_rule else "categorical"
            raise DataError(
                f"recode.{column}: {rule.kind} apply to {want} keys and {column} is {key.kind}; "
                "use bins or top/bottom for numbers, map for categories",
                code=Reason.COLUMN_TYPE,
                field=f"recode.{column}",
            )
        state = self._steps[-1]
        return self._push(
            f"recode {column}: {what}",
            {**state.recodings, column: rule},
            state.method,
            state.suppression,
        )

    def top_code(self, column: str, top: float, value: float | None = None) -> SdcFrame:
        """Top-code numeric key ``column``: values above ``top`` become ``value`` (by default
        ``top``), as sdcMicro's ``topBotCoding(kind = "top")``; kept with a bottom coding
        of the same key already taken. Returns the object."""
        rule = self._steps[-1].recodings.get(column)
        bottom = rule.bottom if rule is not None and rule.kind == "top_bottom" else None
        low = rule.bottom_value if bottom is not None and rule is not None else None
        return self.recode(column, top=top, top_value=value, bottom=bottom, bottom_value=low)

    def bottom_code(self, column: str, bottom: float, value: float | None = None) -> SdcFrame:
        """Bottom-code numeric key ``column``: values below ``bottom`` become ``value`` (by
        default ``bottom``), as sdcMicro's ``topBotCoding(kind = "bottom")``; kept with a
        top coding of the same key already taken. Returns the object."""
        rule = self._steps[-1].recodings.get(column)
        top = rule.top if rule is not None and rule.kind == "top_bottom" else None
        high = rule.top_value if top is not None and rule is not None else None
        return self.recode(column, top=top, top_value=high, bottom=bottom, bottom_value=value)

    def pram(self, columns: Sequence[str], *, pd: float = 0.8, alpha: float = 0.5) -> SdcFrame:
        """PRAM the categorical keys ``columns`` before the method (the spec's ``pram:``;
        sdcMicro's ``pram`` with its invariant matrix): the method set by :meth:`mask` or
        :meth:`suppress`, now or later, masks the keys with their perturbed values (a method
        without k, ``noise``, ``rank_swap`` or ``shuffle``, masks the numeric keys and needs
        every categorical key PRAMed). Without a method yet the step waits for one. A
        second call replaces the first. Returns the object."""
        try:
            step = PramStepParams(columns=list(columns), pd=pd, alpha=alpha)
        except ValidationError as e:
            raise ParameterError(f"pram: {_join_errors(e)}", field=error_field(e)) from None
        for column in step.columns:
            self._key(column)
        state = self._steps[-1]
        return self._push(
            f"pram {', '.join(step.columns)} (pd={pd:g}, alpha={alpha:g})",
            state.recodings,
            state.method,
            state.suppression,
            step,
        )

    def suppress(
        self,
        k: int = 2,
        *,
        importance: Sequence[str] = (),
        algorithm: Literal["greedy", "exact"] = "greedy",
    ) -> SdcFrame:
        """Local suppression to k-anonymity of the categorical keys (sdcMicro's
        ``localSuppression``, default k = 2 as there; the method ``local_suppression``):
        ``importance`` lists keys from the most important (suppressed last). Every key must
        be categorical by then (bin numeric ones with :meth:`recode`). Returns the object."""
        params = self._params(suppression.LOCAL_SUPPRESSION.name, {"k": k})
        return self._push(
            f"suppress k={k}",
            self._steps[-1].recodings,
            params,
            SuppressionSettings(tuple(importance), algorithm),
        )

    def mask(
        self,
        method: str,
        *,
        importance: Sequence[str] = (),
        **params: Any,
    ) -> SdcFrame:
        """Mask the keys with the registered ``method`` and its parameters (the spec's
        ``method:`` block, validated by the same model): numeric keys within the classes of
        the categorical ones, or all keys together for ``heterogeneous``. ``importance``
        orders the categorical keys for the suppressions that make those classes k records
        large. Returns the object."""
        validated = self._params(method, params)
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return self._push(
            f"mask {method}({shown})",
            self._steps[-1].recodings,
            validated,
            SuppressionSettings(tuple(importance), self._steps[-1].suppression.algorithm),
        )

    def undo(self) -> SdcFrame:
        """Go back one step (sdcMicro's ``undolast``); the start cannot be undone."""
        if len(self._steps) == 1:
            raise ParameterError("nothing to undo: no step was taken since the start")
        self._steps.pop()
        return self

    @property
    def history(self) -> list[str]:
        """The steps taken, oldest first (names and parameters, no record value)."""
        return [s.label for s in self._steps]

    @property
    def released(self) -> pd.DataFrame:
        """The keys as released by the current step (the frame's index; a suppressed or
        missing categorical value is None, a missing number NaN), beside the sensitive and
        weight columns, published unchanged."""
        out = self._steps[-1].result.masked.reset_index(drop=True).copy()
        for column in [*self.sensitive, *([self.weight] if self.weight else [])]:
            if column not in out:
                out[column] = self.frame[column].to_numpy()
        return out.set_axis(self.frame.index, axis=0)

    @property
    def result(self) -> MaskResult:
        """The current step's :class:`~sdcflow.methods.MaskResult` (details, groups)."""
        return self._steps[-1].result

    # -- figures ----------------------------------------------------------------------------

    def risk(self) -> dict[str, Any]:
        """Risk figures of the current release over its keys (the gates' figures):

        ``k_anonymity`` (smallest class of identical released rows, a missing value a value
        of its own), ``k_anonymity_missing_matches_any`` (sdcMicro's count, for comparison),
        ``records_below_k`` for k in 2, 3, 5, ``sample_uniques``, ``max_individual_risk``,
        ``expected_reidentifications`` and ``global_risk_percent`` (weighted when the object
        has weights), and with sensitive columns ``l_diversity`` and
        ``entropy_l_diversity``."""
        state = self._steps[-1]
        return self._cached(state, "risk", lambda: self._risk(state))

    def utility(self) -> dict[str, Any]:
        """Utility figures of the current release (the gates' and the report's):
        ``information_loss`` (IL = 100 SSE/SST on standardized numeric keys), the generic
        loss of means, variances, covariances (relative, %) and correlations (absolute),
        the categorical values suppressed and changed per key, the records a recoding
        changed. Without numeric keys the numeric figures are absent."""
        state = self._steps[-1]
        return self._cached(state, "utility", lambda: self._utility(state))

    def check(self, **thresholds: float) -> pd.DataFrame:
        """The gates a release of the current step would run (the method's promises and
        ``thresholds``, the spec's ``checks:``), with figure, threshold and verdict."""
        state = self._steps[-1]
        outcomes = run_gates(self._context(state), thresholds)
        return pd.DataFrame(
            [
                {
                    "check": o.key,
                    "figure": o.figure,
                    "rule": o.rule,
                    "threshold": o.threshold,
                    "unit": o.unit,
                    "verdict": o.verdict,
                }
                for o in outcomes
            ]
        )

    def report(self) -> dict[str, Any]:
        """Every figure of the current step: the risk before (the original keys) and after,
        the utility, the method's details (as a manifest's ``method_details``) and the
        history. Counts and measures only."""
        state = self._steps[-1]
        return {
            "history": self.history,
            "records": len(self._records),
            "keys": {k.name: _released_kind(k, state.recodings) for k in self.keys},
            "risk_before": self._cached(self._steps[0], "risk", lambda: self._risk(self._steps[0])),
            "risk": self.risk(),
            "utility": self.utility(),
            "method_details": _plain(state.result.details),
        }

    def _repr_html_(self) -> str:
        """Figures only (never a record value): keys, steps, risk before and after, utility."""
        before = self._cached(self._steps[0], "risk", lambda: self._risk(self._steps[0]))
        after, util = self.risk(), self.utility()
        rows = [
            ("records", len(self._records), ""),
            ("keys", ", ".join(f"{k.name} ({k.kind})" for k in self.keys), ""),
            ("steps", " → ".join(self.history), ""),
        ]
        for name in ("k_anonymity", "k_anonymity_missing_matches_any", "sample_uniques"):
            rows.append((name, before[name], after[name]))
        for k, n in after["records_below_k"].items():
            rows.append((f"records below k={k}", before["records_below_k"][k], n))
        for name in ("max_individual_risk", "expected_reidentifications", "global_risk_percent"):
            rows.append((name, _fmt(before[name]), _fmt(after[name])))
        for name in ("l_diversity", "entropy_l_diversity"):
            if name in after:
                rows.append((name, _fmt(before[name]), _fmt(after[name])))
        for name in ("information_loss", *(g.removeprefix("max_") for g in _LOSS_GATES[1:])):
            if name in util:
                rows.append((name, "", _fmt(util[name])))
        if util.get("categorical_values_suppressed"):
            rows.append(("values suppressed", "", _fmt(util["categorical_values_suppressed"])))
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(a))}</th>"
            f"<td>{html.escape(str(b))}</td><td>{html.escape(str(c))}</td></tr>"
            for a, b, c in rows
        )
        return (
            "<table><thead><tr><th>SdcFrame</th><th>original</th><th>released</th></tr>"
            f"</thead><tbody>{body}</tbody></table>"
        )

    def __repr__(self) -> str:
        return (
            f"SdcFrame({len(self._records)} records, keys {[k.name for k in self.keys]}, "
            f"steps {self.history})"
        )

    # -- the spec ---------------------------------------------------------------------------

    def to_spec(
        self,
        release: str = "release",
        source: str = "data.csv",
        *,
        id_column: str | None = None,
        checks: Mapping[str, float] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """The release spec of the current step, as a mapping (``yaml.safe_dump`` writes it):
        ``sdcflow.release(spec)`` on ``source`` (the frame as a file) releases the same keys
        with the same figures. ``checks`` and any other spec field (``output``,
        ``keep``...) are added as given."""
        state = self._steps[-1]
        if state.method is None:
            raise ParameterError(
                "a release spec needs a method: call mask(...) or suppress(...) first",
                field="method",
            )
        spec: dict[str, Any] = {"release": release, "source": source}
        if id_column is not None:
            spec["id_column"] = id_column
        spec["quasi_identifiers"] = [_declaration(k, self.frame[k.name]) for k in self.keys]
        if self._records.isna().any().any():
            spec["missing_values"] = [""]  # how a CSV written by pandas writes them
        if self.weight:
            spec["weight_column"] = self.weight
        if state.recodings:
            spec["recode"] = {c: _recode_block(r) for c, r in state.recodings.items()}
        suppression = state.suppression
        if suppression != SuppressionSettings():
            spec["suppression"] = {
                "importance": list(suppression.importance),
                "algorithm": suppression.algorithm,
            }
        if self.sensitive:
            spec["sensitive"] = list(self.sensitive)
        if state.pram is not None:
            spec[PRAM_STEP] = state.pram.model_dump(mode="json")
        spec["method"] = state.method.model_dump(mode="json", exclude_defaults=True) | {
            "name": state.method.name
        }
        seed = _seed(self.random_state)
        if seed is not None:
            spec["seed"] = seed
        if checks:
            spec["checks"] = dict(checks)
        spec.update(fields)
        # the columns the method reads beside the keys are published unchanged (keep:)
        further = get_method(state.method.name).further_columns(state.method)
        kept = [c for c in further if c not in self.sensitive]
        if kept:
            spec["keep"] = list(dict.fromkeys([*spec.get("keep", []), *kept]))
        return spec

    # -- internals --------------------------------------------------------------------------

    def _key(self, column: str) -> Key:
        for key in self.keys:
            if key.name == column:
                return key
        raise ParameterError(
            f"{column!r} is not a key; the keys are {[k.name for k in self.keys]}", field=column
        )

    def _params(self, method: str, params: Mapping[str, Any]) -> MethodParams:
        model = get_method(method).params
        try:
            return model.model_validate({"name": method, **params})
        except ValidationError as e:
            raise ParameterError(f"{method}: {_join_errors(e)}", field=error_field(e)) from None

    def _push(
        self,
        label: str,
        recodings: Mapping[str, Recoding],
        method: MethodParams | None,
        suppression: SuppressionSettings,
        pram: PramStepParams | Literal["kept"] | None = "kept",
    ) -> SdcFrame:
        # computed before it is kept: a step that fails leaves the object as it was
        step = self._steps[-1].pram if pram == "kept" else pram
        self._steps.append(self._step(label, recodings, method, suppression, step))
        return self

    def _step(
        self,
        label: str,
        recodings: Mapping[str, Recoding],
        method: MethodParams | None,
        suppression: SuppressionSettings,
        pram: PramStepParams | None = None,
    ) -> Step:
        keys = [replace(k, recoding=recodings.get(k.name)) for k in self.keys]
        if method is None:
            result = _recoded_only(self._records, keys)
        else:
            if pram is not None:  # the preflight's refusals, before any draw
                check_pram_step(_View(method), keys, pram)
            further = list(get_method(method.name).further_columns(method))
            if further:  # columns beside the keys (shuffle's predictors): the preflight's
                self._check_further(method, keys, further, pram)
            beside = self.frame[further].reset_index(drop=True) if further else None
            rng = _generator(self.random_state)
            result = mask_keys(
                self._records,
                keys,
                method,
                rng,
                suppression=suppression,
                pram=pram,
                further=beside,
            )
        return Step(label, dict(recodings), method, suppression, result, pram)

    def _check_further(
        self,
        method: MethodParams,
        keys: Sequence[Key],
        further: Sequence[str],
        pram: PramStepParams | None,
    ) -> None:
        """The method's own preflight refusals (``check_spec``, ``check_data``) of the
        columns it reads beside the keys: the frame's other columns are those
        :meth:`to_spec` publishes unchanged (``keep:``, or ``sensitive:``)."""
        names = [k.name for k in keys]
        view = _Spec(
            quasi_identifiers=names,
            keep=[str(c) for c in self.frame.columns if c not in names + self.sensitive],
            sensitive=self.sensitive,
            weight_column=self.weight,
            method=method,
            pram=pram,
        )
        entry = get_method(method.name)
        entry.check_spec(view, keys, len(self.frame))
        present = [c for c in dict.fromkeys([*names, *further]) if c in self.frame.columns]
        entry.check_data(view, _arrow(self.frame[present]), keys)

    def _context(self, state: Step) -> GateContext:
        result = state.result
        columns = list(result.point_columns or [])
        return GateContext(
            original=self._records[columns].to_numpy(dtype=np.float64, na_value=np.nan),
            columns=columns,
            result=result,
            method=state.method,
            sensitive=self._sensitive,
            weights=self._weights,
        )

    def _cached(self, state: Step, name: str, compute: Any) -> Any:
        if name not in state._figures:
            state._figures[name] = compute()
        return state._figures[name]

    def _risk(self, state: Step) -> dict[str, Any]:
        ctx = self._context(state)
        released = state.result.released_identifiers.reset_index(drop=True)
        summary = ctx.cached("key_risk", lambda: risk_summary(released, self._weights))
        wanted = ["k_anonymity", "k_anonymity_missing_matches_any", "max_individual_risk"]
        if self._sensitive is not None:
            wanted += ["l_diversity", "entropy_l_diversity"]
        figures = measure(ctx, wanted)
        out: dict[str, Any] = {
            "k_anonymity": int(figures["k_anonymity"]),
            "k_anonymity_missing_matches_any": int(figures["k_anonymity_missing_matches_any"]),
            "records_below_k": {k: int((summary.fk < k).sum()) for k in RISK_K},
            "sample_uniques": int((summary.fk == 1).sum()),
            "max_individual_risk": figures["max_individual_risk"],
            "expected_reidentifications": summary.expected_reidentifications,
            "global_risk_percent": summary.global_risk_percent,
            "weighted": summary.weighted,
        }
        for name in ("l_diversity", "entropy_l_diversity"):
            if name in figures:
                out[name] = figures[name]
        return out

    def _utility(self, state: Step) -> dict[str, Any]:
        ctx = self._context(state)
        out: dict[str, Any] = {}
        if ctx.columns:
            figures = measure(ctx, list(_LOSS_GATES))
            out["information_loss"] = figures["max_information_loss"]
            for gate in _LOSS_GATES[1:]:
                out[gate.removeprefix("max_")] = figures[gate]
        details = state.result.details
        for name in ("categorical_values_suppressed", "categorical_values_changed"):
            if name in details:
                out[name] = dict(details[name])
        if "recoding" in details:
            out["recoded_records"] = {
                c: v["records_changed"] for c, v in details["recoding"].items()
            }
        return out


# -- helpers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Spec:
    """The release spec :meth:`SdcFrame.to_spec` writes, as a method's checks read it
    (``sdcflow.methods.base.ReleaseView``)."""

    quasi_identifiers: list[str]
    keep: list[str]
    sensitive: list[str]
    weight_column: str | None
    method: MethodParams
    pram: PramStepParams | None
    blocks: tuple[()] = ()
    checks: Mapping[str, float] = field(default_factory=dict)
    suppression: Any = None


def _arrow(frame: pd.DataFrame) -> pa.Table:
    """``frame`` as the source reader gives it to a method's ``check_data`` (Arrow); a
    column of mixed objects as text."""
    columns = {}
    for name in frame.columns:
        try:
            columns[str(name)] = pa.array(frame[name], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            columns[str(name)] = pa.array(frame[name].astype(str))
    return pa.table(columns)


@dataclass(frozen=True)
class _View:
    """What :func:`~sdcflow.methods.perturbation.check_pram_step` reads of a spec: its
    method."""

    method: MethodParams


def _known(frame: pd.DataFrame, names: Sequence[str]) -> None:
    unknown = [c for c in names if c not in frame.columns]
    if unknown:
        raise DataError(
            f"the frame has no column(s) {unknown}; its columns are "
            f"{[str(c) for c in frame.columns]}",
            code=Reason.COLUMN_UNKNOWN,
            field=str(unknown[0]),
        )


def _key(column: pd.Series, name: str, kind: str | None, order: Sequence[Any] | None) -> Key:
    """The key as the pipeline's preflight resolves it from a column of that type: numbers
    numeric (integers published as integers), anything else nominal, unless declared."""
    numbers = pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(
        column.dtype
    )
    if kind is None:
        kind = "numeric" if numbers else "nominal"
    if kind == "numeric" and not numbers:
        raise DataError(
            f"key {name} is declared numeric but does not hold numbers; convert it "
            "(pd.to_numeric) or declare it nominal",
            code=Reason.COLUMN_TYPE,
            field=name,
        )
    if kind == "ordinal":
        levels = tuple(str(v) for v in order or ())
        if not levels:
            raise ParameterError(
                f"ordinal key {name} needs its categories, lowest first: ordinal={{{name!r}: "
                "[...]}}",
                field=name,
            )
        return Key(name, "ordinal", order=levels)
    if kind == "numeric":
        integer = pd.api.types.is_integer_dtype(column.dtype)
        return Key(name, "numeric", decimals=0 if integer else None, integer=integer)
    return Key(name, "nominal")


def _weights(frame: pd.DataFrame, weight: str | None) -> np.ndarray | None:
    """The sampling weights, refused as ``weight_column:`` is (``Reason.WEIGHTS``): not
    numbers, missing, not positive or not finite."""
    if weight is None:
        return None
    column = frame[weight]
    if pd.api.types.is_bool_dtype(column.dtype) or not pd.api.types.is_numeric_dtype(column.dtype):
        raise DataError(
            f"weights {weight} are not numbers; give sampling weights as positive numbers",
            code=Reason.WEIGHTS,
            field=weight,
        )
    w = column.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = int((~(np.isfinite(w) & (w > 0))).sum())
    if bad:
        raise DataError(
            f"weights {weight} have {bad} missing, non-positive or infinite value(s); every "
            "record needs a positive sampling weight (as weight_column: in a release)",
            code=Reason.WEIGHTS,
            field=weight,
        )
    return w


def _released_kind(key: Key, recodings: Mapping[str, Recoding]) -> str:
    rule = recodings.get(key.name)
    return "ordinal" if rule is not None and rule.kind == "bins" else key.kind


def _recoded_only(records: pd.DataFrame, keys: Sequence[Key]) -> MaskResult:
    """The keys with their recodings and no method: what is measured before masking."""
    out = records.copy()
    numeric = []
    details: dict[str, Any] = {}
    for key in keys:
        if key.recoding is not None:
            done = recode(key.name, records[key.name], key.recoding)
            out[key.name] = done.values
            details.setdefault("recoding", {})[key.name] = {
                "kind": key.recoding.kind,
                "records_changed": done.changed,
                **done.coded,
            }
            if key.recoding.kind == "bins":
                continue
        if key.kind == "numeric":
            numeric.append(key.name)
    points = encode_keys(out, [k for k in keys if k.name in numeric]).numeric
    return MaskResult(masked=out, points=points, point_columns=numeric, details=details)


def _declaration(key: Key, column: pd.Series) -> str | dict[str, Any]:
    """The key as the spec writes it: its name when the preflight reads its kind from the
    file as the object did, else a mapping with the declared type (and order)."""
    numbers = pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(
        column.dtype
    )
    if key.kind == "ordinal":
        return {"name": key.name, "type": "ordinal", "order": list(key.order or ())}
    if (key.kind == "numeric") == numbers:
        return key.name
    return {"name": key.name, "type": key.kind}


def _recode_block(rule: Recoding) -> dict[str, Any]:
    if rule.kind == "bins":
        block: dict[str, Any] = {"bins": [float(e) for e in rule.edges]}
        if rule.labels is not None:
            block["labels"] = list(rule.labels)
        if rule.closed != "right":
            block["closed"] = rule.closed
        return block
    if rule.kind == "top_bottom":
        sides = {
            "top": rule.top,
            "top_value": rule.top_value,
            "bottom": rule.bottom,
            "bottom_value": rule.bottom_value,
        }
        return {name: float(v) for name, v in sides.items() if v is not None}
    return {"map": dict(rule.mapping)}


def _number(value: Any) -> float | None:
    """A threshold or replacement as a float (None stays None); anything else refused."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"{value!r} is not a number; give thresholds as numbers")
    return float(value)


def _generator(random_state: Any) -> np.random.Generator:
    """A fresh Generator for every step, so that a step redone gives the same release."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.get_state()[1])
    if isinstance(random_state, np.random.Generator):
        return random_state
    from sdcflow.core.validation import check_random_state

    return check_random_state(random_state)


def _seed(random_state: Any) -> int | None:
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    return None


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items() if v)
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def methods() -> list[str]:
    """The names :meth:`SdcFrame.mask` takes (the registry's)."""
    return sorted(METHODS)
