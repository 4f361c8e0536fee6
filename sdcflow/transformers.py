"""The masking methods as scikit-learn-style transformers on a DataFrame, for notebooks.

>>> from sdcflow import MDAV, ConstrainedFuzzy
>>> released = MDAV(k=5).fit_transform(df[cols])                       # doctest: +SKIP
>>> edited = ConstrainedFuzzy(k=5, constraints=["c == a + b"]).fit_transform(df[cols])

Every class is generated from the method registry (:data:`sdcflow.methods.METHODS`):
its parameters are the method's spec parameters (plus ``random_state``), validated by the
same pydantic model as ``method:`` in a release spec, and ``fit`` calls the same masking
code as a release (:func:`~sdcflow.methods.blocks.mask_quasi_identifiers`). Nothing is
re-implemented here, so errors are the command line's: an
:class:`~sdcflow.errors.InputError` with its ``code``.

What ``fit`` / ``transform`` mean for microaggregation: a masking method does not learn a
model that applies to other records; it releases *the records it was fitted on*, each
replaced by a group's mean (MDAV, PS), a drawn centre (Fuzzy, ConstrainedFuzzy) or a box
(Box), with the guarantee counted over those records. So

* ``fit(X)`` masks ``X`` and keeps the release (``released_``, the ``MaskResult`` in
  ``result_``, the method's figures in ``details_``);
* ``transform(X)`` returns that release when ``X`` is the fitted data, and raises
  ``ParameterError`` for any other data (masking new records with the fitted groups would
  publish them without the k-anonymity their own groups need: fit on them instead);
* ``fit_transform(X)`` is the release of ``X``.

A DataFrame gives a DataFrame with the same index (point methods: the same columns, integer
columns released as integers as a release publishes them; Box: ``<q>_lo``, ``<q>_hi``,
``box_id`` and ``weight``); an array gives an array, or a DataFrame after
``set_output(transform="pandas")`` (``get_feature_names_out`` names the columns).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from pydantic import ValidationError
from scipy import sparse

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.rounding import round_keeping_equalities
from sdcflow.core.validation import check_random_state
from sdcflow.errors import DataError, ParameterError, Reason
from sdcflow.methods import (
    METHODS,
    MaskResult,
    MethodParams,
    box,
    fuzzy,
    heterogeneous,
    microaggregation,
    perturbation,
    suppression,
)
from sdcflow.methods.blocks import mask_quasi_identifiers
from sdcflow.methods.keys import Key, SuppressionSettings
from sdcflow.methods.microaggregation import released_loss_details
from sdcflow.methods.mixed import mask_keys
from sdcflow.methods.recoding import Recoding as _Rule
from sdcflow.methods.recoding import check_recoding, recode
from sdcflow.spec.schema import _join_errors, error_field

__all__ = [
    "MDAV",
    "PS",
    "Box",
    "ConstrainedFuzzy",
    "Fuzzy",
    "Heterogeneous",
    "LocalSuppression",
    "MethodTransformer",
    "Noise",
    "Pram",
    "RankSwap",
    "Recoding",
    "Shuffle",
    "TopBottomCoding",
]

SDCMICRO_DEFAULTS: dict[str, dict[str, Any]] = {
    # microaggregation(aggr = 3); localSuppression(k = 2) (sdcMicro 5.8)
    microaggregation.MDAV.name: {"k": 3},
    microaggregation.PS.name: {"k": 3},
    fuzzy.FUZZY.name: {"k": 3},
    fuzzy.CONSTRAINED_FUZZY.name: {"k": 3},
    box.BOX.name: {"k": 3},
    heterogeneous.HETEROGENEOUS.name: {"k": 3},
    suppression.LOCAL_SUPPRESSION.name: {"k": 2},
}
"""The transformers' defaults where sdcMicro has one and the spec has none (a spec names its
k; a notebook's first try need not)."""

_SPARSE = (
    "Sparse data was passed for X, but dense data is required. Use '.toarray()' to convert to "
    "a dense numpy array."
)


class MethodTransformer:
    """Base of the generated transformers (module docstring); ``method`` names the registry
    entry. Parameters are attributes, as in scikit-learn: ``get_params``, ``set_params``."""

    method: ClassVar[str]
    extra: ClassVar[tuple[str, ...]] = ("random_state",)

    def __init__(self, **params: Any) -> None:
        for name in self._param_names():
            setattr(self, name, self._default(name))
        self.set_params(**params)

    # -- parameters -------------------------------------------------------------------------

    @classmethod
    def _fields(cls) -> dict[str, Any]:
        return _spec_fields(cls.method)

    @classmethod
    def _param_names(cls) -> list[str]:
        return [*cls._fields(), *cls.extra]

    @classmethod
    def _default(cls, name: str) -> Any:
        if name in SDCMICRO_DEFAULTS.get(cls.method, {}):
            return SDCMICRO_DEFAULTS[cls.method][name]
        field = cls._fields().get(name)
        if field is None or field.is_required():
            return None
        return field.get_default(call_default_factory=True)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters, by name (``deep`` is accepted for scikit-learn compatibility)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> MethodTransformer:
        """Set parameters by name; an unknown name is a ``ParameterError`` listing them."""
        unknown = sorted(set(params) - set(self._param_names()))
        if unknown:
            raise ParameterError(
                f"{type(self).__name__}: unknown parameter(s) {unknown}; the parameters are "
                f"{', '.join(self._param_names())}",
                field=unknown[0],
            )
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __sklearn_tags__(self) -> Any:
        """What scikit-learn asks of an estimator it did not define (``get_tags``): a
        transformer that must be fitted, takes no target and refuses missing values. A
        ``Pipeline``'s ``transform`` reads them (``check_is_fitted``) before it calls ours;
        without them it raised an ``AttributeError`` of its own instead of our answer.
        Called by scikit-learn only, so it is imported here, never by sdcflow."""
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(
            estimator_type=None,
            target_tags=TargetTags(required=False),
            transformer_tags=TransformerTags(),
            input_tags=InputTags(),
        )

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self.get_params().items() if v != self._default(k)]
        return f"{type(self).__name__}({', '.join(shown)})"

    def method_params(self) -> MethodParams:
        """The parameters validated as the ``method:`` block of a release spec."""
        block = {k: v for k, v in self.get_params().items() if k in self._fields()}
        block = {k: v for k, v in block.items() if v is not None}
        try:
            return METHODS[self.method].params.model_validate({"name": self.method, **block})
        except ValidationError as e:
            raise ParameterError(
                f"{type(self).__name__}: {_join_errors(e)}", field=error_field(e)
            ) from None

    # -- fit / transform ----------------------------------------------------------------------

    def _constraints(self, columns: list[str]) -> LinearConstraints | None:
        return None

    def fit(self, X: Any, y: Any = None) -> MethodTransformer:
        """Mask ``X`` (n records, d quasi-identifiers) and keep the release."""
        frame = _as_frame(X)
        columns = _column_names(frame)
        k = getattr(self.method_params(), "k", None)
        if k is not None and len(frame) < k:
            raise ParameterError(
                f"n_samples = {len(frame)} is fewer than k = {k}: a release of fewer than k "
                "records has no group of k; lower k or add records",
                field="k",
            )
        result, released = self._mask(frame, columns)
        self.result_: MaskResult = result
        self.released_ = released
        self.details_ = result.details
        self.n_features_in_ = len(columns)
        self.feature_names_in_ = np.asarray(columns, dtype=object)
        self._fingerprint = _fingerprint(frame)
        return self

    def _mask(self, frame: pd.DataFrame, columns: list[str]) -> tuple[MaskResult, pd.DataFrame]:
        params = self.method_params()
        further = list(METHODS[self.method].further_columns(params))
        if further:  # columns of X the method reads beside the keys (Shuffle's predictors)
            return self._mask_beside(frame, columns, params, further)
        values = _numeric_values(frame)
        rng = _generator(self.random_state)
        constraints = self._constraints(columns)
        result = mask_quasi_identifiers(values, columns, params, rng, constraints)
        result = _integers(frame, values, columns, result, constraints)
        released = result.masked.set_axis(frame.index, axis=0)
        if list(released.columns) == columns:  # point methods: the caller's own labels back
            released = released.set_axis(frame.columns, axis=1)
        return result, released

    def _mask_beside(
        self, frame: pd.DataFrame, columns: list[str], params: MethodParams, further: list[str]
    ) -> tuple[MaskResult, pd.DataFrame]:
        """Mask the columns of X but ``further`` (the method reads those beside the keys and
        they are released unchanged, as a release publishes its ``keep:`` columns)."""
        absent = [c for c in further if c not in columns]
        if absent:
            raise ParameterError(
                f"{type(self).__name__}: {', '.join(absent)} are not columns of X; X holds the "
                "keys to mask and the columns the method reads beside them",
                field=absent[0],
            )
        at = [j for j, c in enumerate(columns) if c not in further]
        if not at:
            raise ParameterError(
                f"{type(self).__name__}: every column of X is among {', '.join(further)}; X "
                "also holds the keys to mask",
                field=further[0],
            )
        keys = frame.iloc[:, at]
        names = [columns[j] for j in at]
        values = _numeric_values(keys)
        beside = frame.set_axis(columns, axis=1)[further].reset_index(drop=True)
        rng = _generator(self.random_state)
        constraints = self._constraints(names)
        result = mask_quasi_identifiers(values, names, params, rng, constraints, None, beside)
        result = _integers(keys, values, names, result, constraints)
        released = frame.copy()
        for j, name in zip(at, names, strict=True):
            released.isetitem(j, result.masked[name].to_numpy())
        return result, released

    def transform(self, X: Any) -> Any:
        """The release of the fitted data; any other data is refused (module docstring)."""
        if not hasattr(self, "released_"):
            raise ParameterError(
                f"{type(self).__name__} is not fitted: call fit or fit_transform on the records "
                "to mask"
            )
        if _fingerprint(_as_frame(X)) != self._fingerprint:
            raise ParameterError(
                f"{type(self).__name__}.transform takes only the records it was fitted on: a "
                "masking method releases those records, and new records masked with the fitted "
                "groups would not have the k-anonymity of their own; call fit_transform on the "
                "new records",
                field="X",
            )
        if not isinstance(X, pd.DataFrame):
            return self._output(True)
        # the same records in the same order (the fingerprint): under X's own row labels
        return self._output(False).set_axis(X.index, axis=0)

    def fit_transform(self, X: Any, y: Any = None) -> Any:
        """The release of ``X``: ``fit(X)`` then its masked records."""
        return self.fit(X).transform(X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Names of the released columns (point methods: the fitted columns; Box:
        ``<q>_lo``, ``<q>_hi``, ``box_id``, ``weight``), as scikit-learn asks of a transformer
        (``Pipeline.get_feature_names_out``, ``set_output``). ``input_features``, when given,
        must be the fitted columns."""
        if not hasattr(self, "released_"):
            raise ParameterError(
                f"{type(self).__name__} is not fitted: call fit or fit_transform first"
            )
        if input_features is not None and [str(c) for c in input_features] != list(
            self.feature_names_in_
        ):
            raise ParameterError(
                f"{type(self).__name__}: input_features must be the fitted columns "
                f"{list(self.feature_names_in_)}",
                field="input_features",
            )
        return np.asarray([str(c) for c in self.released_.columns], dtype=object)

    def set_output(self, *, transform: str | None = None) -> MethodTransformer:
        """What ``transform`` returns for an array (scikit-learn's ``set_output``):
        ``"pandas"`` a DataFrame named by :meth:`get_feature_names_out`, ``"default"`` an
        array; None leaves it. A DataFrame always gives a DataFrame with its own index."""
        _check_output(type(self).__name__, transform)
        if transform is not None:
            self._sklearn_output_config = {"transform": transform}
        return self

    def _output(self, as_array: bool) -> Any:
        config = _output_config(self)
        if as_array and config != "pandas":
            return self.released_.to_numpy()
        released = self.released_.copy()
        if as_array:  # an array in, pandas asked for: the release under the released names
            released = released.set_axis(self.get_feature_names_out(), axis=1)
        return released


def _as_frame(X: Any) -> pd.DataFrame:
    """X as a DataFrame; sparse and complex input refused in scikit-learn's words (a masking
    method releases dense real records)."""
    if sparse.issparse(X) or (
        isinstance(X, pd.DataFrame) and any(isinstance(t, pd.SparseDtype) for t in X.dtypes)
    ):
        raise DataError(_SPARSE, code=Reason.DATA, field="X")
    if isinstance(X, pd.DataFrame):
        if any(pd.api.types.is_complex_dtype(t) for t in X.dtypes):
            raise DataError(_COMPLEX, code=Reason.DATA, field="X")
        return X
    array = np.asarray(X)
    if np.iscomplexobj(array):
        raise DataError(_COMPLEX, code=Reason.DATA, field="X")
    if array.ndim != 2:
        raise ParameterError(
            f"X must be 2-dimensional (records x quasi-identifiers), got {array.ndim} "
            "dimension(s); pass a DataFrame of the columns to mask",
            field="X",
        )
    return pd.DataFrame(array, columns=[f"x{j}" for j in range(array.shape[1])])


_COMPLEX = (
    "Complex data not supported: the masking methods take real numbers; pass the real and "
    "imaginary parts as columns of their own"
)


def _column_names(frame: pd.DataFrame) -> list[str]:
    """The columns as text, each once; no column or no record refused in scikit-learn's
    words."""
    for axis, what in ((1, "feature(s)"), (0, "sample(s)")):
        if frame.shape[axis] == 0:
            raise DataError(
                f"Found array with 0 {what} (shape={frame.shape}) while a minimum of 1 is "
                "required.",
                code=Reason.DATA,
                field="X",
            )
    columns = [str(c) for c in frame.columns]
    twice = sorted(c for c, n in Counter(columns).items() if n > 1)
    if twice:
        raise DataError(
            f"X has column name(s) {twice} more than once (as text); give every column "
            "its own name",
            code=Reason.SOURCE_COLUMNS,
            field="X",
        )
    return columns


def _generator(random_state: Any) -> np.random.Generator:
    """The method's generator: None, an int or a Generator as the core takes them, and a
    legacy ``RandomState`` (what scikit-learn passes) seeding one from its own stream."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max, size=4))
    return check_random_state(random_state)


def _check_output(name: str, transform: str | None) -> None:
    if transform not in (None, "default", "pandas"):
        raise ParameterError(
            f"{name}.set_output: transform must be 'default' or 'pandas', got {transform!r}",
            field="transform",
        )


def _output_config(estimator: Any) -> str:
    """The estimator's own ``set_output``, else scikit-learn's global ``transform_output``
    when scikit-learn is loaded (never imported here: sdcflow does not need it)."""
    own = getattr(estimator, "_sklearn_output_config", {}).get("transform")
    if own is not None:
        return own
    sklearn = sys.modules.get("sklearn")
    if sklearn is None:
        return "default"
    config = sklearn.get_config().get("transform_output", "default")
    _check_output(type(estimator).__name__, config)
    return config


def _numeric_values(frame: pd.DataFrame) -> np.ndarray:
    """The records as a float array, or ``DataError`` naming the column: COLUMN_TYPE for a
    text or boolean column (a transformer masks numeric keys; a release spec takes
    categorical ones too), VALUES_NONFINITE for an infinite value, VALUES_MISSING for a
    missing one (NaN, None, ``pd.NA``)."""
    if not frame.shape[1]:
        return np.empty((0, 0))
    for j, column in enumerate(frame.columns):  # booleans are nominal keys, as in a spec
        col = frame.iloc[:, j]
        if pd.api.types.is_bool_dtype(col.dtype) or (  # also True/False held as objects
            col.dtype == object and any(isinstance(v, (bool, np.bool_)) for v in col)
        ):
            raise DataError(
                f"column {column} is boolean: the transformers mask numeric keys (a mean of "
                "booleans is no boolean); release it as a categorical key with "
                "sdcflow.release (mixed keys) or drop it",
                code=Reason.COLUMN_TYPE,
                field=str(column),
            )
    try:
        values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        # Column by column: the frame's conversion fails on a pd.NA held in an object column
        # (an array of objects, a nullable column cast to object), which a column's reads as
        # missing; a column that still fails is text.
        parts = []
        for j, column in enumerate(frame.columns):
            try:
                parts.append(frame.iloc[:, j].to_numpy(dtype=np.float64, na_value=np.nan))
            except (TypeError, ValueError):
                raise DataError(
                    f"column {column} is not numeric: the transformers mask numeric keys; "
                    "release categorical keys with sdcflow.release (mixed keys) or drop it",
                    code=Reason.COLUMN_TYPE,
                    field=str(column),
                ) from None
        values = np.column_stack(parts)
    # Infinite first, then missing, as the preflight of a release refuses them, each with the
    # release's reason: an infinite value is VALUES_NONFINITE, a missing one (NaN, None,
    # pd.NA) VALUES_MISSING, as sdcflow.measures and a release without missing_values: say.
    infinite = np.isinf(values).sum(axis=0)
    if infinite.any():
        j = int(np.flatnonzero(infinite)[0])
        raise DataError(
            f"column {frame.columns[j]} has {int(infinite[j])} infinite value(s): replace them "
            "with a number, or drop those records",
            code=Reason.VALUES_NONFINITE,
            field=str(frame.columns[j]),
        )
    holes = np.isnan(values).sum(axis=0)
    if holes.any():
        j = int(np.flatnonzero(holes)[0])
        raise DataError(
            f"column {frame.columns[j]} has {int(holes[j])} missing value(s) (NaN): the "
            "transformers "
            "mask complete records; drop those records (X.dropna()) or release the file with "
            "sdcflow.release and `missing_values:` (a release masks around missing values)",
            code=Reason.VALUES_MISSING,
            field=str(frame.columns[j]),
        )
    return values


def _integers(
    frame: pd.DataFrame,
    values: np.ndarray,
    columns: list[str],
    result: MaskResult,
    constraints: LinearConstraints | None,
) -> MaskResult:
    """Integer columns released as integers, as a release publishes them (its precision
    step: :func:`~sdcflow.core.linear.rounding.round_keeping_equalities`, equalities kept,
    a value that is not 0 never 0), so that a figure measured on the transformer's release
    is the manifest's. Box releases intervals: left as they are."""
    integer = [pd.api.types.is_integer_dtype(frame.iloc[:, j].dtype) for j in range(frame.shape[1])]
    if not any(integer) or list(result.masked.columns) != columns:
        return result
    decimals = [0 if whole else None for whole in integer]
    done = round_keeping_equalities(result.points, columns, decimals, constraints)
    masked = pd.DataFrame(done.values, columns=columns)
    for j, column in enumerate(columns):
        if integer[j] and column not in done.off_precision:
            masked[column] = masked[column].astype(np.int64)
    precision = {
        "decimals": dict(zip(columns, decimals, strict=True)),
        "derived_from_equalities": done.derived,
        "off_precision": done.off_precision,
    }
    return replace(
        result,
        masked=masked,
        points=done.values,
        details=released_loss_details(
            {**result.details, "precision": precision}, values, done.values, columns
        ),
    )


def _fingerprint(frame: pd.DataFrame) -> str:
    """Identifies the fitted data (shape, names and values) without keeping it."""
    digest = hashlib.sha256(repr((frame.shape, list(map(str, frame.columns)))).encode())
    try:
        values = frame.to_numpy(dtype=np.float64)
    except (TypeError, ValueError):  # categories: their hash, value by value
        values = pd.util.hash_pandas_object(frame.astype(object), index=False).to_numpy()
    digest.update(np.ascontiguousarray(values).tobytes())
    return digest.hexdigest()


class _Edits(MethodTransformer):
    """A method that edits while it masks: ``constraints`` are linear edit rules (text, as in
    a spec's ``edits:``, over the columns of X) or a ``LinearConstraints``."""

    extra = ("random_state", "constraints")

    def _constraints(self, columns: list[str]) -> LinearConstraints | None:
        given = self.constraints  # type: ignore[attr-defined]
        if given is None or isinstance(given, LinearConstraints):
            return given
        if isinstance(given, str) or not isinstance(given, Sequence):
            raise ParameterError(
                f"{type(self).__name__}: constraints must be a list of edit rules such as "
                "['total_costs == wages + other_costs'], or a LinearConstraints",
                field="constraints",
            )
        from sdcflow.expectations.rules import parse_rules
        from sdcflow.preflight.plan import linear_constraints  # DuckDB: only when used

        rules = parse_rules(list(given), known_columns=columns, source="constraints")
        nonlinear = [r.name for r in rules if not r.is_linear]
        if nonlinear:
            raise ParameterError(
                f"{type(self).__name__}: constraints {nonlinear} are not linear; the method "
                "keeps linear edit rules only (==, <=, >= of sums of columns)",
                field="constraints",
            )
        return linear_constraints(rules, columns)


def _generated(name: str, class_name: str, base: type[MethodTransformer]) -> type:
    method = METHODS[name]
    lines = [
        f"{method.summary[0].upper()}{method.summary[1:]} as a transformer (method ``{name}``).",
        "",
        "Parameters",
        "----------",
    ]
    for key, field in _spec_fields(name).items():
        default = "required" if field.is_required() else f"default {field.default!r}"
        lines += [f"{key} : {default}", f"    {field.description or ''}"]
    lines += [
        "random_state : int, Generator or None",
        "    The generator of the method's random draw (None: fresh entropy; deterministic",
        "    methods draw nothing).",
    ]
    if "constraints" in base.extra:
        lines += [
            "constraints : list of str or LinearConstraints, optional",
            "    Linear edit rules the release satisfies (as a spec's ``edits:``).",
        ]
    lines += ["", "See :mod:`sdcflow.transformers` for what fit and transform mean."]
    cls = type(
        class_name, (base,), {"method": name, "__doc__": "\n".join(lines), "__module__": __name__}
    )
    cls.__init__ = _init(cls)  # type: ignore[misc]
    return cls


def _init(cls: type[MethodTransformer]) -> Any:
    """An ``__init__`` whose signature lists every parameter with its default (``k`` also
    by position), as scikit-learn reads it (``inspect.signature``, ``clone``)."""
    names = cls._param_names()
    first = inspect.Parameter.POSITIONAL_OR_KEYWORD
    later = inspect.Parameter.KEYWORD_ONLY
    parameters = [inspect.Parameter("self", first)] + [
        inspect.Parameter(n, first if n == "k" else later, default=cls._default(n)) for n in names
    ]
    signature = inspect.Signature(parameters)
    positional = [n for n in names if n == "k"]

    def __init__(self: MethodTransformer, *args: Any, **params: Any) -> None:
        if len(args) > len(positional):
            raise TypeError(
                f"{cls.__name__}() takes {len(positional)} positional argument(s) (k); give "
                "the others by name"
            )
        MethodTransformer.__init__(self, **dict(zip(positional, args, strict=False)), **params)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__name__}.__init__"
    return __init__


def _spec_fields(name: str) -> dict[str, Any]:
    """The spec parameters of method ``name`` (its pydantic fields but ``name``)."""
    return {k: f for k, f in METHODS[name].params.model_fields.items() if k != "name"}


MDAV = _generated(microaggregation.MDAV.name, "MDAV", MethodTransformer)
PS = _generated(microaggregation.PS.name, "PS", MethodTransformer)
Fuzzy = _generated(fuzzy.FUZZY.name, "Fuzzy", MethodTransformer)
ConstrainedFuzzy = _generated(fuzzy.CONSTRAINED_FUZZY.name, "ConstrainedFuzzy", _Edits)
Box = _generated(box.BOX.name, "Box", MethodTransformer)
Noise = _generated(perturbation.NOISE.name, "Noise", MethodTransformer)
RankSwap = _generated(perturbation.RANK_SWAP.name, "RankSwap", MethodTransformer)
Shuffle = _generated(perturbation.SHUFFLE.name, "Shuffle", MethodTransformer)


class _KeysTransformer(MethodTransformer):
    """A method that masks categorical keys (and numeric ones beside them) through the
    pipeline's :func:`~sdcflow.methods.mixed.mask_keys`: columns of numbers are numeric keys
    (integers released as integers), any other column a nominal key; missing values are
    released as missing (a value of its own when k is counted)."""

    numeric_keys: ClassVar[bool] = True

    def _keys(self, frame: pd.DataFrame, columns: list[str]) -> list[Key]:
        keys = []
        for j, name in enumerate(columns):
            dtype = frame.iloc[:, j].dtype
            numbers = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
            if numbers and self.numeric_keys:
                whole = pd.api.types.is_integer_dtype(dtype)
                keys.append(Key(name, "numeric", decimals=0 if whole else None, integer=whole))
            else:
                keys.append(Key(name, "nominal"))
        return keys

    def _settings(self, columns: list[str]) -> SuppressionSettings:
        return SuppressionSettings()

    def _mask(self, frame: pd.DataFrame, columns: list[str]) -> tuple[MaskResult, pd.DataFrame]:
        params = self.method_params()
        records = frame.set_axis(columns, axis=1).reset_index(drop=True)
        numeric = [k.name for k in self._keys(frame, columns) if k.kind == "numeric"]
        if numeric and np.isinf(records[numeric].to_numpy(dtype=np.float64)).any():
            raise DataError(
                "X has infinite value(s): replace them with a number, or drop those records",
                code=Reason.VALUES_NONFINITE,
                field="X",
            )
        result = mask_keys(
            records,
            self._keys(frame, columns),
            params,
            _generator(self.random_state),
            suppression=self._settings(columns),
        )
        released = self._released(records, result.masked[columns])
        return result, released.set_axis(frame.index, axis=0).set_axis(frame.columns, axis=1)

    def _released(self, records: pd.DataFrame, masked: pd.DataFrame) -> pd.DataFrame:
        return masked

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a missing key is released as missing
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags


class LocalSuppression(_KeysTransformer):
    """Local suppression of the fewest values as a transformer (method ``local_suppression``,
    sdcMicro's ``localSuppression``, default k = 2 as there).

    Every column is a categorical key (numbers too: as sdcMicro's factors); the release is X
    with the suppressed values missing (NaN, None), every class of identical released rows
    holding at least k records (a blank equal only to a blank).

    Parameters
    ----------
    k : int, default 2
        Smallest class of identical released rows.
    importance : list of column names, optional
        Most important first: suppressed last (the spec's ``suppression.importance``).
    random_state : accepted for scikit-learn (the suppression draws nothing).

    See :mod:`sdcflow.transformers` for what fit and transform mean.
    """

    method = suppression.LOCAL_SUPPRESSION.name
    extra = ("random_state", "importance")
    numeric_keys = False

    def _settings(self, columns: list[str]) -> SuppressionSettings:
        importance = tuple(self.importance or ())  # type: ignore[attr-defined]
        unknown = [c for c in importance if c not in columns]
        if unknown:
            raise ParameterError(
                f"LocalSuppression: importance names column(s) {unknown} that X lacks",
                field="importance",
            )
        return SuppressionSettings(importance)

    def _released(self, records: pd.DataFrame, masked: pd.DataFrame) -> pd.DataFrame:
        suppressed = masked.isna().to_numpy() & records.notna().to_numpy()
        return records.mask(suppressed)


LocalSuppression.__init__ = _init(LocalSuppression)  # type: ignore[misc]


class Heterogeneous(_KeysTransformer):
    """Heterogeneous microaggregation as a transformer (method ``heterogeneous``): numeric
    columns released as their group's mean, text and categorical columns as its mode.

    Parameters
    ----------
    k : int, default 3
        Minimum group size (sdcMicro's microaggregation default ``aggr = 3``).
    categorical : {"mode", "suppress"}, default "mode"
    cell_size : int, optional
    random_state : accepted for scikit-learn (the method draws nothing).

    See :mod:`sdcflow.transformers` for what fit and transform mean.
    """

    method = heterogeneous.HETEROGENEOUS.name


Heterogeneous.__init__ = _init(Heterogeneous)  # type: ignore[misc]


class Pram(_KeysTransformer):
    """PRAM as a transformer (method ``pram``, sdcMicro's ``pram`` with its invariant
    transition matrix): every column is a categorical key (numbers too, as sdcMicro's
    factors), each value replaced by a draw from its category's row of the matrix; missing
    values stay missing. No k: the release is X with some categories changed.

    Parameters
    ----------
    pd : float, default 0.8
        Lower bound of the probability that a category is kept.
    alpha : float, default 0.5
        Weight of the invariant matrix against the identity.
    random_state : int, Generator or None
        The generator of the draws.

    See :mod:`sdcflow.transformers` for what fit and transform mean.
    """

    method = perturbation.PRAM.name
    numeric_keys = False

    def _released(self, records: pd.DataFrame, masked: pd.DataFrame) -> pd.DataFrame:
        """The released labels back in each column's own type (a column of numbers stays
        numbers, as a release publishes a category coded as a number)."""
        out = masked.copy()
        for column in records.columns:
            if pd.api.types.is_numeric_dtype(records[column].dtype):
                out[column] = pd.to_numeric(masked[column]).astype(records[column].dtype)
        return out


Pram.__init__ = _init(Pram)  # type: ignore[misc]


class Recoding:
    """Global recoding of numeric columns into bins as a transformer (sdcMicro's
    ``globalRecode``, the spec's ``recode: {column: {bins: [...]}}``).

    Unlike a masking method, a recoding is a function of each value: ``transform`` recodes
    any records with the edges learnt by ``fit``.

    Parameters
    ----------
    bins : int, list of float or mapping column -> list of float, default 5
        An int: that many equal-width bins over each column's fitted range (R's ``cut(x,
        n)``), the outer edges open (-inf, inf) so that later records fit; a list: the edges
        of every column; a mapping: each listed column's edges (the others pass unchanged).
    labels : list of str, optional
        One per bin (default ``"(a, b]"``).
    closed : {"right", "left"}, default "right"
        Which end of a bin holds its edge (``right`` as ``globalRecode``).

    Attributes
    ----------
    edges_ : dict column -> list of float
    """

    def __init__(
        self,
        bins: int | Sequence[float] | Mapping[str, Sequence[float]] = 5,
        *,
        labels: Sequence[str] | None = None,
        closed: str = "right",
    ) -> None:
        self.bins = bins
        self.labels = labels
        self.closed = closed

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"bins": self.bins, "labels": self.labels, "closed": self.closed}

    def set_params(self, **params: Any) -> Recoding:
        unknown = sorted(set(params) - {"bins", "labels", "closed"})
        if unknown:
            raise ParameterError(
                f"Recoding: unknown parameter(s) {unknown}; the parameters are bins, labels, "
                "closed",
                field=unknown[0],
            )
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        return f"Recoding(bins={self.bins!r})"

    def __sklearn_tags__(self) -> Any:
        return MethodTransformer.__sklearn_tags__(self)

    def fit(self, X: Any, y: Any = None) -> Recoding:
        """Learn every column's edges (``bins``) from ``X``."""
        frame = _as_frame(X)
        columns = _column_names(frame)
        values = _numeric_values(frame)
        if self.closed not in ("right", "left"):
            raise ParameterError(
                f"Recoding: closed must be 'right' or 'left', got {self.closed!r}", field="closed"
            )
        edges: dict[str, list[float]] = {}
        for j, name in enumerate(columns):
            if isinstance(self.bins, Mapping):
                if name in self.bins:
                    edges[name] = [float(e) for e in self.bins[name]]
            elif isinstance(self.bins, (int, np.integer)) and not isinstance(self.bins, bool):
                if self.bins < 1:
                    raise ParameterError("Recoding: bins must be at least 1", field="bins")
                if values.shape[0] == 0:
                    raise DataError(
                        "Recoding: X has no records to learn bins from",
                        code=Reason.TOO_FEW_RECORDS,
                        field="X",
                    )
                inner = np.linspace(values[:, j].min(), values[:, j].max(), int(self.bins) + 1)
                edges[name] = [-np.inf, *np.unique(inner[1:-1]).tolist(), np.inf]
            else:
                edges[name] = [float(e) for e in self.bins]  # type: ignore[union-attr]
        for name, cut in edges.items():
            _rule(name, cut, self.labels, self.closed)  # refused here, not at transform
        self.edges_ = edges
        self.n_features_in_ = len(columns)
        self.feature_names_in_ = np.asarray(columns, dtype=object)
        return self

    def transform(self, X: Any) -> Any:
        """The records of ``X`` with every binned column as its bins' labels (text)."""
        if not hasattr(self, "edges_"):
            raise ParameterError("Recoding is not fitted: call fit or fit_transform first")
        frame = _as_frame(X)
        columns = _column_names(frame)
        if columns != list(self.feature_names_in_):
            raise ParameterError(
                f"Recoding: X has columns {columns}, fitted on {list(self.feature_names_in_)}",
                field="X",
            )
        _numeric_values(frame)
        out = frame.copy().astype(object)
        for j, name in enumerate(columns):
            if name in self.edges_:
                rule = _rule(name, self.edges_[name], self.labels, self.closed)
                out.iloc[:, j] = recode(name, frame.iloc[:, j], rule).values.to_numpy()
        if isinstance(X, pd.DataFrame):
            return out
        if _output_config(self) == "pandas":
            return out.set_axis(self.get_feature_names_out(), axis=1)
        return out.to_numpy()

    def fit_transform(self, X: Any, y: Any = None) -> Any:
        return self.fit(X).transform(X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        if not hasattr(self, "edges_"):
            raise ParameterError("Recoding is not fitted: call fit or fit_transform first")
        return np.asarray(self.feature_names_in_, dtype=object)

    def set_output(self, *, transform: str | None = None) -> Recoding:
        _check_output("Recoding", transform)
        if transform is not None:
            self._sklearn_output_config = {"transform": transform}
        return self


_CODING = ("top", "top_value", "bottom", "bottom_value")


class TopBottomCoding:
    """Top and bottom coding of numeric columns as a transformer (sdcMicro's
    ``topBotCoding``, the spec's ``recode: {column: {top: ..., bottom: ...}}``): values
    strictly above ``top`` become ``top_value``, strictly below ``bottom`` become
    ``bottom_value`` (each by default its threshold), through the pipeline's function
    (:func:`sdcflow.methods.recoding.recode`).

    A function of each value, as :class:`Recoding`: ``transform`` codes any records.

    Parameters
    ----------
    top, top_value, bottom, bottom_value : float or mapping column -> float, optional
        One number for every column, or a mapping for the columns it names (the others pass
        unchanged). At least one of ``top`` and ``bottom``.
    """

    def __init__(
        self,
        top: float | Mapping[str, float] | None = None,
        *,
        top_value: float | Mapping[str, float] | None = None,
        bottom: float | Mapping[str, float] | None = None,
        bottom_value: float | Mapping[str, float] | None = None,
    ) -> None:
        self.top = top
        self.top_value = top_value
        self.bottom = bottom
        self.bottom_value = bottom_value

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _CODING}

    def set_params(self, **params: Any) -> TopBottomCoding:
        unknown = sorted(set(params) - set(_CODING))
        if unknown:
            raise ParameterError(
                f"TopBottomCoding: unknown parameter(s) {unknown}; the parameters are "
                f"{', '.join(_CODING)}",
                field=unknown[0],
            )
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        given = ", ".join(
            f"{n}={getattr(self, n)!r}" for n in _CODING if getattr(self, n) is not None
        )
        return f"TopBottomCoding({given})"

    def __sklearn_tags__(self) -> Any:
        return MethodTransformer.__sklearn_tags__(self)

    def _side(self, name: str, column: str) -> float | None:
        value = getattr(self, name)
        if isinstance(value, Mapping):
            value = value.get(column)
        return None if value is None else float(value)

    def fit(self, X: Any, y: Any = None) -> TopBottomCoding:
        """Check the thresholds against the columns of ``X`` (nothing is learnt from it)."""
        frame = _as_frame(X)
        columns = _column_names(frame)
        _numeric_values(frame)
        rules: dict[str, _Rule] = {}
        for name in columns:
            sides = {n: self._side(n, name) for n in _CODING}
            if sides["top"] is None and sides["bottom"] is None:
                continue
            rule = _Rule("top_bottom", **sides)
            check_recoding(name, rule)  # the spec's messages
            rules[name] = rule
        if not rules:
            raise ParameterError(
                "TopBottomCoding: give top and/or bottom (a number, or a mapping naming columns "
                f"of X: {columns})",
                field="top",
            )
        self.rules_ = rules
        self.n_features_in_ = len(columns)
        self.feature_names_in_ = np.asarray(columns, dtype=object)
        return self

    def transform(self, X: Any) -> Any:
        """The records of ``X`` with the coded columns' values beyond the thresholds
        replaced."""
        if not hasattr(self, "rules_"):
            raise ParameterError("TopBottomCoding is not fitted: call fit or fit_transform first")
        frame = _as_frame(X)
        columns = _column_names(frame)
        if columns != list(self.feature_names_in_):
            raise ParameterError(
                f"TopBottomCoding: X has columns {columns}, fitted on "
                f"{list(self.feature_names_in_)}",
                field="X",
            )
        values = _numeric_values(frame).copy()
        for j, name in enumerate(columns):
            if name in self.rules_:
                column = pd.Series(values[:, j])
                values[:, j] = recode(name, column, self.rules_[name]).values.to_numpy()
        if isinstance(X, pd.DataFrame) or _output_config(self) == "pandas":
            return pd.DataFrame(values, columns=columns, index=frame.index)
        return values

    def fit_transform(self, X: Any, y: Any = None) -> Any:
        return self.fit(X).transform(X)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        if not hasattr(self, "rules_"):
            raise ParameterError("TopBottomCoding is not fitted: call fit or fit_transform first")
        return np.asarray(self.feature_names_in_, dtype=object)

    def set_output(self, *, transform: str | None = None) -> TopBottomCoding:
        _check_output("TopBottomCoding", transform)
        if transform is not None:
            self._sklearn_output_config = {"transform": transform}
        return self


def _rule(name: str, edges: Sequence[float], labels: Any, closed: str) -> _Rule:
    from sdcflow.methods.recoding import check_recoding

    rule = _Rule(
        "bins",
        edges=tuple(edges),
        labels=tuple(labels) if labels is not None else None,
        closed=closed,  # type: ignore[arg-type]
    )
    check_recoding(name, rule)
    return rule
