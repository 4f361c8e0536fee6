"""The reason codes stay honest: every :class:`Reason` is raised somewhere in the package, no
:class:`InputError` is raised without one, and code and field survive pickling (Prefect hands
errors between processes) and reach the command line's ``error [<code> <field>]`` line.

The scan reads the package's source (``ast``), so it sees every construction site, including
those a test does not reach; it finds them by class name, as the package writes them.
"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

import sdcflow
from sdcflow.errors import (
    DataError,
    InfeasibleRulesError,
    InputError,
    ParameterError,
    Reason,
    RuleError,
)

PACKAGE = Path(sdcflow.__file__).parent


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


ERRORS = {c.__name__: c for c in {InputError} | _subclasses(InputError)}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _reason(node: ast.expr | None) -> str | None:
    """``X`` for the expression ``Reason.X``, else None."""
    if isinstance(node, ast.Attribute) and _name(node.value) == "Reason":
        return node.attr
    return None


def _scan() -> tuple[list[tuple[str, str, str | None]], set[str], list[str]]:
    """Every construction of an InputError class in the package: ``(where, class, code)``
    with ``code`` the ``Reason`` member passed as ``code=`` (``"<expr>"`` when it is not a
    literal member, None when no code is passed); the members passed as ``code=`` to any
    other call or given as the default of a parameter called ``code`` (helpers that build
    the error, as the rule parser's); and the InputError subclasses defined outside
    ``errors.py``."""
    sites: list[tuple[str, str, str | None]] = []
    forwarded: set[str] = set()
    strays: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and path.name != "errors.py":
                if any(_name(b) in ERRORS for b in node.bases):
                    strays.append(f"{where}:{node.lineno} {node.name}")
            if isinstance(node, ast.Call):
                code = next((k.value for k in node.keywords if k.arg == "code"), None)
                if _name(node.func) in ERRORS:
                    member = None if code is None else (_reason(code) or "<expr>")
                    sites.append((f"{where}:{node.lineno}", _name(node.func), member))
                elif _reason(code):
                    forwarded.add(_reason(code))  # type: ignore[arg-type]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args.posonlyargs + node.args.args
                defaults = list(
                    zip(
                        args[len(args) - len(node.args.defaults) :], node.args.defaults, strict=True
                    )
                )
                defaults += list(zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True))
                forwarded |= {_reason(d) for a, d in defaults if a.arg == "code" and _reason(d)}
    return sites, forwarded, strays


SITES, FORWARDED, STRAYS = _scan()


def test_the_scan_sees_the_raise_sites() -> None:
    # a scan that finds nothing would pass the tests below vacuously
    assert len(SITES) > 200
    assert {"InputError", "ParameterError", "DataError", "RuleError"} <= {c for _, c, _ in SITES}
    assert STRAYS == [], "define InputError subclasses in sdcflow/errors.py, with a default code"


def test_no_input_error_is_raised_without_a_code() -> None:
    missing = [
        f"{where} {cls}"
        for where, cls, code in SITES
        if code is None and ERRORS[cls].default_code is None
    ]
    assert missing == [], "pass code=Reason.<member>"


def test_every_reason_is_raised_somewhere() -> None:
    used = {code for _, _, code in SITES if code not in (None, "<expr>")} | FORWARDED
    used |= {ERRORS[cls].default_code.name for _, cls, code in SITES if code is None}  # type: ignore[union-attr]
    unused = sorted(set(Reason.__members__) - used)
    assert unused == [], "remove the unused Reason member(s), or raise them where they apply"
    assert used <= set(Reason.__members__)  # the scan read real members, not typos


def test_a_code_is_required() -> None:
    with pytest.raises(TypeError):
        InputError("no code")
    assert ParameterError("x").code is Reason.PARAMETER and ParameterError("x").field is None
    assert DataError("x", field="turnover").code is Reason.DATA


@pytest.mark.parametrize(
    "error",
    [
        InputError("bad", code=Reason.SPEC_FIELD, field="method.k"),
        ParameterError("bad", field="k"),
        RuleError("bad", rule="a == b", name="R2", column=0, code=Reason.RULE_COLUMN),
        InfeasibleRulesError("none can hold", ["R1", "R2"]),
    ],
)
def test_code_and_field_survive_pickling(error: InputError) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert back.code is error.code and back.field == error.field
    if isinstance(error, RuleError):
        assert (back.rule, back.name, back.column) == (error.rule, error.name, error.column)
    if isinstance(error, InfeasibleRulesError):
        assert back.rules == ("R1", "R2") and back.field is None


def test_a_rule_error_names_the_rule_unless_told_otherwise() -> None:
    assert RuleError("bad", name="R2").field == "R2"
    assert RuleError("bad", name="R2", field="edits[1].severity").field == "edits[1].severity"
    assert RuleError("bad").field is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"method": {"name": "mdav", "k": 1}}, "method.k"),  # nested in the method's model
        ({"method": {"name": "nosuch", "k": 5}}, "method"),
        (
            {
                "method": {
                    "name": "box",
                    "k": 3,
                    "targets": [{"stat": "mean", "vars": ["a"], "delta0": 0}],
                }
            },
            "method.targets[0].delta0",
        ),
        ({"measures": {"cluster_loss": {"clusters": 3}}}, "measures.cluster_loss.clusters"),
        ({"quasi_identifiers": "a"}, "quasi_identifiers"),
    ],
)
def test_a_spec_error_names_its_field(tmp_path, change: dict, field: str) -> None:
    from sdcflow.spec.load import spec_from_dict

    spec = {"release": "r", "source": "data.csv", "quasi_identifiers": ["a", "b"]}
    spec["method"] = {"name": "mdav", "k": 5}
    with pytest.raises(InputError) as e:
        spec_from_dict({**spec, **change}, tmp_path)
    assert e.value.code is Reason.SPEC_FIELD and e.value.field == field


def test_the_command_line_prints_code_and_field() -> None:
    from sdcflow.cli.output import input_error as _input_error

    line = _input_error(ParameterError("k must be >= 2", field="method.k"))
    assert line.startswith(f"error [{Reason.PARAMETER} method.k]: ")
    assert _input_error(InputError("x", code=Reason.SPEC_SYNTAX)).startswith(
        f"error [{Reason.SPEC_SYNTAX}]: "
    )
