"""Every error sdcflow raises on purpose, each with a reason code.

Bad input, which the user must fix, is an :class:`InputError` (command line: exit 2, one
line). As pandera's ``SchemaError`` carries a ``SchemaErrorReason`` and the failing check,
each carries two structured attributes, so that callers and tests branch on them, never on
the message text:

``code``
    A :class:`Reason`: which kind of problem (``parameter``, ``spec-field``,
    ``rule-column``...).
``field``
    What is at fault, or None when nothing narrower than the input as a whole is: the spec
    field (``method.k``, ``measures.cluster_loss.clusters``, ``edits[2].severity``), the
    argument of a function of the numerical core (``k``, ``n_clusters``, ``alpha``), the column
    (``turnover``, or ``column 3`` when the array has no column names) or the edit rule's name
    (``R2``). Never a data value.

A :class:`RuleError` also says where in the rule: ``rule`` (its text), ``name`` and
``column`` (the caret's 0-based position). The command line prints
``error [<code> <field>]: <message>`` (``error [<code>]: ...`` without a field).

Messages, for people, name the field, file, column or parameter and the fix; they never carry
a data value (values may be confidential).

A release that ran but did not pass its checks is not an error of the input: it ends with a
refused outcome (command line: exit 1), see :class:`ChecksFailed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar

__all__ = [
    "ChecksFailed",
    "DataError",
    "InfeasibleRulesError",
    "InputError",
    "ParameterError",
    "Reason",
    "RuleError",
    "SdcflowError",
    "WarehouseBusy",
    "WarehouseDamaged",
]


class Reason(StrEnum):
    """Why an input was refused. The value is stable: scripts may match on it."""

    # the release spec
    SPEC_MISSING = "spec-missing"  # no spec file at that path
    SPEC_SYNTAX = "spec-syntax"  # not YAML, or not a mapping
    SPEC_FIELD = "spec-field"  # a field is unknown, missing or out of range
    SPEC_LIMIT = "spec-limit"  # larger than sdcflow accepts (size, aliases, rules...)
    SPEC_CONTRADICTION = "spec-contradiction"  # fields that cannot hold together
    # the source file
    SOURCE_MISSING = "source-missing"
    SOURCE_NOT_FILE = "source-not-file"  # a folder, a link loop, a pipe: not a readable file
    SOURCE_FORMAT = "source-format"  # unsupported, corrupt, not UTF-8, ragged
    SOURCE_EMPTY = "source-empty"
    SOURCE_COLUMNS = "source-columns"  # duplicate or reserved column names
    SOURCE_CHANGED = "source-changed"  # the file changed while it was read and hashed
    COLUMN_UNKNOWN = "column-unknown"  # the spec names a column the file lacks
    COLUMN_TYPE = "column-type"  # a column's type cannot be used in its role
    VALUES_MISSING = "values-missing"
    VALUES_NONFINITE = "values-nonfinite"
    MISSING_TOKEN = "missing-token"  # a missing-value token that is also a real level
    RECODING = "recoding"  # a recoding names an unknown level or does not fit the column
    WEIGHTS = "weights"  # sampling weights missing, not numeric or not positive
    VALUES_RANGE = "values-range"  # finite, but too large in magnitude for the computation
    TOO_FEW_RECORDS = "too-few-records"  # fewer records than k
    # the arguments of a method or measure (the numerical core)
    PARAMETER = "parameter"
    DATA = "data"  # an array that is not numeric, finite or of the right shape
    # edit rules
    RULE_SYNTAX = "rule-syntax"
    RULE_COLUMN = "rule-column"  # unknown column
    RULE_TYPE = "rule-type"  # a column used as the wrong type
    RULE_OPTION = "rule-option"  # name, severity, tolerance, rules file
    RULE_NOT_KEEPABLE = "rule-not-keepable"  # masking cannot keep the rule
    RULES_INFEASIBLE = "rules-infeasible"  # no record can satisfy them all
    RULE_EVALUATION = "rule-evaluation"  # the data do not fit the rule's types
    RULE_NOT_CHECKABLE = "rule-not-checkable"  # its columns are not released: unchecked there
    # keys with missing values that a relation ties on every record, no edit rule declaring it
    UNDECLARED_RELATION = "undeclared-relation"
    # where the run writes
    WAREHOUSE = "warehouse"  # not a DuckDB file, unreadable
    OUTPUT = "output"  # the output folder cannot hold a release
    COPY_PRUNED = "copy-pruned"  # a run's warehouse copy was dropped by the retention policy
    RUNNER = "runner"  # the task runner cannot run this release (runner: dask)
    # fuzzy mapping (sdcflow remap)
    MAPPING_MISSING = "mapping-missing"  # no stored fuzzy mapping for that release / run
    REMAP_INPUT = "remap-input"  # the rules file is missing or names no mapped interval


class SdcflowError(Exception):
    """Base of every error sdcflow raises on purpose."""


class InputError(SdcflowError, ValueError):
    """Bad input that the user must fix; ``code`` says which kind (a :class:`Reason`),
    ``field`` what is at fault.

    Parameters
    ----------
    message : str
        What is wrong and how to fix it, without any data value.
    code : Reason
        Required unless the subclass has a default.
    field : str, optional
        The spec field, function argument, column or rule name at fault (never a data value).

    Attributes
    ----------
    code : Reason
    field : str or None
    """

    default_code: ClassVar[Reason | None] = None

    def __init__(
        self, message: str, *, code: Reason | None = None, field: str | None = None
    ) -> None:
        code = code or self.default_code
        if code is None:
            raise TypeError(f"{type(self).__name__} needs a reason code")
        super().__init__(message)
        self.code = Reason(code)
        self.field = None if field is None else str(field)

    def __reduce__(self) -> tuple[Any, ...]:
        # the keyword-only arguments are not in ``args``: rebuild from the attributes
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(cls: type[InputError], args: tuple[Any, ...], state: dict[str, Any]) -> InputError:
    """Unpickle an :class:`InputError` (or subclass) without calling its ``__init__``."""
    err = cls.__new__(cls, *args)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class ParameterError(InputError):
    """A method or measure was called with an argument out of its range."""

    default_code = Reason.PARAMETER


class DataError(InputError):
    """An array handed to the numerical core is not numeric, finite or of the right shape."""

    default_code = Reason.DATA


class RuleError(InputError):
    """A malformed edit rule, an unknown column or a bad rule option.

    The message quotes the rule and puts a caret under the offending token.

    Attributes
    ----------
    rule : str
        The rule text (whitespace normalized).
    name : str or None
        The rule's name when known.
    column : int or None
        0-based position of the offending token in ``rule``.
    field : str or None
        The rule's name by default; for an option of a rule item, that option
        (``edits[0].severity``); for a rules file, ``rules_file``.
    """

    default_code = Reason.RULE_SYNTAX

    def __init__(
        self,
        message: str,
        *,
        rule: str = "",
        name: str | None = None,
        column: int | None = None,
        width: int = 1,
        hint: str = "",
        code: Reason | None = None,
        field: str | None = None,
    ) -> None:
        self.rule = rule
        self.name = name
        self.column = column
        where = f"edit rule {name!r}" if name else "edit rule"
        lines = [f"{where}: {message}"]
        if rule:
            lines.append(f"    {rule}")
            if column is not None:
                lines.append("    " + " " * column + "^" * max(1, width))
        if hint:
            lines.append(hint)
        super().__init__("\n".join(lines), code=code, field=name if field is None else field)


class InfeasibleRulesError(RuleError):
    """No record can satisfy the rule set; ``rules`` names a conflicting subset (``field`` is
    None: no one rule is at fault)."""

    default_code = Reason.RULES_INFEASIBLE

    def __init__(self, message: str, rules: Sequence[str]) -> None:
        InputError.__init__(self, message)
        self.rule, self.name, self.column = "", None, None
        self.rules = tuple(rules)


class WarehouseBusy(SdcflowError):
    """Another process holds the warehouse (a release, or a reader that did not let go) for
    longer than the run may wait: the run could not complete, nothing was published
    (command line: exit 3). Not an error of the input: trying again later succeeds."""


class WarehouseDamaged(SdcflowError):
    """The warehouse file cannot be read whole (truncated, a block that fails its checksum):
    the run stops before writing to it, nothing is published (command line: exit 3, one line
    naming the file and what to do: restore a backup or move the file aside)."""


class ChecksFailed(SdcflowError):
    """A release ran to its checks and was refused: nothing was published.

    ``outcome`` is the run's :class:`~sdcflow.flows.outcome.ReleaseOutcome` (status
    ``refused``), with every figure and verdict.
    """

    def __init__(self, message: str, outcome: Any) -> None:
        super().__init__(message)
        self.outcome = outcome
