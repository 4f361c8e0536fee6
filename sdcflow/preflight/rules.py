"""The edit rules at preflight: parsed and type-checked against the source's columns,
feasible, keepable by masking and checkable on the released records, compiled to linear
constraints; relations no rule declares between masked and unchanged columns refused."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcflow.core.linear.constraints import LinearConstraints
from sdcflow.core.linear.relations import RELATION_SAMPLE, missing_patterns, sample_rows
from sdcflow.errors import InputError, Reason, RuleError
from sdcflow.expectations.compile import linear_rows, strict_rows
from sdcflow.expectations.feasibility import FeasibilityReport, check_feasible
from sdcflow.expectations.rules import (
    Chain,
    Comparison,
    Conditional,
    InSet,
    Node,
    Rule,
    TextComparison,
    load_rules_file,
    numeric_columns,
    parse_rules,
)
from sdcflow.limits import MAX_RULES, check_count
from sdcflow.methods.keys import Key
from sdcflow.methods.mixed import refuse_undeclared_relations
from sdcflow.methods.recoding import recode
from sdcflow.preflight.keys import binned_keys
from sdcflow.preflight.source import formatted_note
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.warehouse.sources import (
    is_integer_type,
    is_numeric_type,
)


def rule_numbers(spec: ReleaseSpec) -> set[str]:
    """The columns the spec's edit rules (and rules file) use as numbers, parsed before the
    source is read; empty when a rule cannot be parsed (:func:`load_edit_rules` names it,
    after the source's own checks)."""
    if not spec.edits and spec.rules_file is None:
        return set()
    try:
        items = list(spec.edits)
        if spec.rules_file is not None:
            items += load_rules_file(spec.path(spec.rules_file))
        rules = parse_rules(items, source="edits")
    except (InputError, OSError, ValueError):
        return set()
    return {c for r in rules for c, use in column_uses(r.node) if use == "numeric"}


def column_uses(node: Node) -> Iterator[tuple[str, str]]:
    """``(column, "numeric" | "text")`` for every column a rule reads, by how it is used."""
    if isinstance(node, Conditional):
        yield from column_uses(node.condition)
        yield from column_uses(node.consequent)
    elif isinstance(node, (Comparison, Chain)):
        for column in node.columns:
            yield column, "numeric"
    elif isinstance(node, TextComparison):
        yield node.column, "text"
    elif isinstance(node, InSet):
        yield node.column, "text" if isinstance(node.values[0], str) else "numeric"


def published_decimals(types: Mapping[str, str], keys: Sequence[Key]) -> dict[str, int | None]:
    """The decimals each column is published with, where it has them: a numeric key's
    precision, 0 for a column of integers published unchanged."""
    decimals: dict[str, int | None] = {c: 0 for c, t in types.items() if is_integer_type(t)}
    decimals.update({k.name: k.decimals for k in keys if k.kind == "numeric"})
    return decimals


def load_edit_rules(
    spec: ReleaseSpec,
    types: Mapping[str, str],
    formatted: Mapping[str, int] | None = None,
    decimals: Mapping[str, int | None] | None = None,
) -> tuple[list[Rule], FeasibilityReport]:
    """Parse and check the spec's edit rules against the source's columns.

    Parameters
    ----------
    spec : ReleaseSpec
    types : mapping column -> DuckDB type
        Every column of the source (``profile_source(...)["types"]``).
    formatted : mapping column -> count, optional
        Values written as numbers with a decimal comma or separators, for text columns
        (``SourceProfile.formatted_numbers``): named when such a column is used as a number.
    decimals : mapping column -> int or None, optional
        The decimals columns are published with (:func:`published_decimals`): a strict rule
        over them must leave room for a value on their grid.

    Returns
    -------
    rules : list of Rule
        ``edits`` first, then the rules file; unnamed rules are ``R<i>`` by position in that
        combined list.
    feasibility : FeasibilityReport

    Raises
    ------
    RuleError, InfeasibleRulesError (both InputError, exit 2)
        A malformed rule, an unknown column, a type mismatch, a rule set no record can satisfy,
        or a linear rule masking could not keep.
    """
    known = list(types)
    rules = parse_rules(spec.edits, known_columns=known, source="edits")
    if spec.rules_file is not None:
        path = spec.path(spec.rules_file)
        items = load_rules_file(path)
        check_count(
            len(spec.edits) + len(items), MAX_RULES, where=str(path), what="edit rules in all"
        )
        more = parse_rules(
            items,
            known_columns=known,
            source=str(spec.rules_file),
            first_index=len(rules) + 1,
        )
        clash = sorted({r.name for r in rules} & {r.name for r in more})
        if clash:
            raise RuleError(
                f"rule name(s) {', '.join(clash)} are used both in edits and in "
                f"{spec.rules_file}; give every rule its own name",
                code=Reason.RULE_OPTION,
            )
        rules += more
    for rule in rules:
        for column, use in column_uses(rule.node):
            numeric = is_numeric_type(types[column])
            if use == "numeric" and not numeric:
                note = formatted_note((formatted or {}).get(column, 0))
                raise RuleError(
                    f"column {column!r} is {types[column]}{note}, but the rule uses it as a number",
                    rule=rule.text,
                    name=rule.name,
                    hint="compare a text column with quoted values (region == 'N', "
                    "region in ['N', 'S']) or fix the column's values",
                    code=Reason.RULE_TYPE,
                )
            if use == "text" and numeric:
                raise RuleError(
                    f"column {column!r} is {types[column]}, but the rule compares it with text",
                    rule=rule.text,
                    name=rule.name,
                    hint="write the values without quotes",
                    code=Reason.RULE_TYPE,
                )
    numeric_columns = [c for c, t in types.items() if is_numeric_type(t)]
    feasibility = check_feasible(rules, numeric_columns, decimals)
    _check_maskable(spec, rules)
    return rules, feasibility


def _check_maskable(spec: ReleaseSpec, rules: Sequence[Rule]) -> None:
    """Linear error rules must be keepable by masking: all their columns masked together or
    all released unchanged."""
    qis = set(spec.quasi_identifiers)
    kept = set(spec.keep) | set(spec.sensitive)
    if spec.weight_column and spec.weight_column not in qis:
        kept.add(spec.weight_column)  # published unchanged
    for rule in rules:
        if not rule.is_linear or rule.severity != "error":
            continue
        cols = set(rule.columns)
        masked, unmasked = sorted(cols & qis), sorted(cols & kept)
        if masked and unmasked:
            raise RuleError(
                f"the rule ties masked column(s) {', '.join(masked)} to column(s) released "
                f"unchanged ({', '.join(unmasked)}), so masking cannot keep it",
                rule=rule.text,
                name=rule.name,
                hint="add those columns to quasi_identifiers, or give the rule severity: warning",
                code=Reason.RULE_NOT_KEEPABLE,
            )
        if spec.blocks and masked:
            spanned = [b for b in spec.blocks if cols & set(b)]
            if len(spanned) > 1:
                raise RuleError(
                    "the rule spans several blocks, which are averaged over different groups, "
                    "so masking cannot keep it",
                    rule=rule.text,
                    name=rule.name,
                    hint=f"put {', '.join(sorted(cols))} in one block",
                    code=Reason.RULE_NOT_KEEPABLE,
                )


def check_rules_checkable(spec: ReleaseSpec, rules: Sequence[Rule]) -> None:
    """Every error rule must be checkable on the released records: all its columns released
    (quasi-identifiers, ``keep``, ``sensitive``), unless the spec accepts it unchecked
    (``accept: unchecked_rules``); reason ``RULE_NOT_CHECKABLE``."""
    names = {r.name for r in rules}
    unknown = sorted(set(spec.accept.unchecked_rules) - names)
    if unknown:
        raise RuleError(
            f"accept.unchecked_rules names unknown rule(s) {', '.join(unknown)}; use the rule "
            "names (R1, R2... for unnamed rules)",
            code=Reason.RULE_OPTION,
        )
    # a fuzzy-mapped column holds mapped values: rules on it cannot be checked after mapping
    # the weight column is published too (unchanged unless a key)
    weight = {spec.weight_column} if spec.weight_column else set()
    released = {*spec.quasi_identifiers, *spec.keep, *spec.sensitive, *weight} - set(spec.fuzzy_map)
    binned = set(binned_keys(spec))
    for rule in rules:
        if rule.severity != "error" or rule.name in spec.accept.unchecked_rules:
            continue
        labels = sorted(numeric_columns(rule.node) & binned)
        if labels:
            raise RuleError(
                f"the rule reads {', '.join(labels)} as a number, and `recode:` bins publish "
                "it as bin labels, so the rule cannot be checked on the released records",
                rule=rule.text,
                name=rule.name,
                hint="remove the bins, give the rule severity: warning, or accept it "
                f"unchecked with `accept: {{unchecked_rules: [{rule.name}]}}`",
                code=Reason.RULE_NOT_CHECKABLE,
            )
        hidden = sorted(set(rule.columns) - released)
        if hidden:
            raise RuleError(
                f"the rule reads column(s) {', '.join(hidden)}, which are not released, so it "
                "cannot be checked on the released records",
                rule=rule.text,
                name=rule.name,
                hint="release the column(s) (quasi_identifiers, keep or sensitive), give the "
                "rule severity: warning, or accept it unchecked with `accept: "
                f"{{unchecked_rules: [{rule.name}]}}`",
                code=Reason.RULE_NOT_CHECKABLE,
            )


def linear_constraints(rules: Sequence[Rule], columns: Sequence[str]) -> LinearConstraints:
    """The feasible set of the linear, unconditional rules that involve only ``columns``.

    Equalities go to ``A x = b``; ``a <= x <= b`` gives two rows of ``G x <= h``; ``>=`` rows
    are negated; strict inequalities are flagged (``ineq_strict``). Rules that read any other
    column, conditional rules and non-linear rules are left out.

    Shapes: ``A`` (p, d), ``b`` (p,), ``G`` (q, d), ``h`` (q,) with d = len(columns), and the
    rule name of every row.
    """
    allowed = set(columns)
    rows = [
        (rule.name, *linear_rows(rule), strict_rows(rule))
        for rule in rules
        if rule.is_linear and set(rule.columns) <= allowed
    ]
    return LinearConstraints.from_rows(rows, columns)


def check_undeclared_relations(
    spec: ReleaseSpec,
    data: Any,
    keys: Sequence[Key],
    constraints: LinearConstraints | None,
    missing: Mapping[str, int] | None = None,
) -> None:
    """Refuse (``undeclared-relation``, exit 2) numeric keys with missing values, or columns
    published as they are, that a linear relation no error rule declares ties to the masked
    keys: found on the records as read, before a run exists. The mask step makes the same
    check on the records after repair, which moves only the records that break a rule.

    ``data``: an Arrow table or a :class:`~sdcflow.warehouse.sources.SourceData`;
    ``missing``: column -> missing values (the profile's; counted on ``data`` when None).
    The search needs every record of those columns at once (medians, concentration steps:
    :func:`~sdcflow.core.linear.relations.undeclared_relations`), so only they are read, a
    batch at a time, into one float matrix: 8 bytes a record for each numeric key and
    published column (the search's own working copies come on top), for a uniform sample
    of ``RELATION_SAMPLE`` records of a larger file (fixed seed: the same file, the same
    verdict). Which columns have a missing value, and whether a record holds some of a
    relation's columns but not all, are read on every record (the file's patterns of
    missing values): one such record gives its combination away."""
    numbers = [k.name for k in keys if k.kind == "numeric"]
    weight = [spec.weight_column] if spec.weight_column else []
    as_is = [c for c in (*spec.keep, *spec.sensitive) if c not in spec.fuzzy_map]
    published = [c for c in dict.fromkeys([*as_is, *weight]) if c in data.column_names]
    if missing is None:
        missing = {c: data.column(c).null_count for c in numbers}
    if not numbers or (not published and not any(missing.get(c, 0) for c in numbers)):
        return
    # the numeric keys as the mask encodes them (recoded; binned ones are categories then),
    # then the published columns as numbers (check_relations' frame, without the frames)
    masked = [k for k in keys if k.kind == "numeric" and not _binned(k)]
    names = [k.name for k in masked]
    columns = [*names, *published]
    recodings = {k.name: k.recoding for k in masked}
    read = list(dict.fromkeys([*numbers, *published]))
    rng = np.random.default_rng(0)
    parts: list[np.ndarray] = []
    patterns: np.ndarray | None = None
    for batch in _batches(data, read):
        B = np.empty((batch.num_rows, len(columns)), dtype=np.float64)
        for j, name in enumerate(columns):
            values = batch.column(read.index(name)).to_pandas()
            recoding = recodings.get(name) if j < len(names) else None
            if recoding is not None:
                values = pd.Series(recode(name, values, recoding).values)
            B[:, j] = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
        patterns = missing_patterns(~np.isfinite(B), patterns)
        keep = sample_rows(rng, batch.num_rows, data.num_rows, RELATION_SAMPLE)
        parts.append(B if keep.all() else B[keep])
    X = np.vstack(parts) if parts else np.empty((0, len(columns)))
    del parts
    if patterns is None:
        return
    if patterns[:, : len(names)].any() or published:
        refuse_undeclared_relations(X, columns, len(names), constraints, patterns)


def _binned(key: Key) -> bool:
    return key.recoding is not None and key.recoding.kind == "bins"


def _batches(data: Any, columns: Sequence[str]) -> Iterator[Any]:
    """Record batches of ``columns`` of a SourceData, or of an Arrow table."""
    if hasattr(data, "batches"):
        return iter(data.batches(columns))
    return iter(data.select(list(columns)).to_batches())
