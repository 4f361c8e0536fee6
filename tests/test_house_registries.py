"""The house rule of the registries (DESIGN.md, "The house"): a method is one module plus
one entry, a gate one entry, and no other code names either; a method added as
docs/howto/add-method.md says releases end to end."""

from __future__ import annotations

import importlib
import json
import re
import sys
import textwrap
from pathlib import Path

from survey import QIS, write_release

import sdcflow
from sdcflow.gates import GATES
from sdcflow.methods import METHODS, register_method

PACKAGE = Path(sdcflow.__file__).resolve().parent

# (file, names it may hold, why): each a name that means something else there.
EXCEPTIONS: list[tuple[str, frozenset[str], str]] = [
    ("methods/box.py", frozenset({"fuzzy"}),
     "box's weighting scheme of that name (weights: fuzzy), not the fuzzy method"),
    ("measures.py", frozenset({"k_anonymity", "l_diversity", "entropy_l_diversity"}),
     "the notebook functions of those names, listed in __all__"),
    ("tasks/mask.py", frozenset({"k_anonymity"}),
     "a figure of the manifest's disclosure summary, named like the gate"),
    ("report/release.py", frozenset({"k_anonymity"}),
     "reads that figure of the manifest's disclosure summary"),
    ("working.py",
     frozenset({"mdav", "k_anonymity", "k_anonymity_missing_matches_any", "max_individual_risk",
                "l_diversity", "entropy_l_diversity", "max_information_loss",
                "max_generic_loss_means", "max_generic_loss_variances",
                "max_generic_loss_covariances", "max_generic_loss_correlations"}),
     "the working object shows the gates' figures under the keys a spec's checks use, so "
     "that check(**thresholds) and to_spec() speak the spec's words; 'mdav' is its "
     "docstring's example"),
    ("tasks/aggregates.py",
     frozenset({"k_anonymity", "k_anonymity_missing_matches_any", "max_information_loss",
                "max_edit_violations", "max_p_dominated_groups", "max_nk_dominated_groups",
                "max_individual_risk", "max_global_risk"}),
     "the streamed path's list of the gates it computes from DuckDB aggregates and which "
     "aggregate fills each (k_anonymity is also the disclosure summary's figure, as in "
     "tasks/mask.py); to move into gate declarations (an aggregate beside Gate.compute) once "
     "the streamed path serves more than crisp microaggregation"),
    ("flows/compare.py",
     frozenset({"max_information_loss", "max_record_linkage", "max_pil", "k_anonymity",
                "max_transparency_reidentification", "max_interval_disclosure"}),
     "the compare table's columns and the gate that fills each (the command's output); "
     "to move into gate declarations with the flows restructuring"),
]  # fmt: skip


def _own_file(module: str) -> str:
    return str(Path(sys.modules[module].__file__).resolve().relative_to(PACKAGE))


def _names() -> dict[str, set[str]]:
    """Every registered name -> the files where it may appear: its own module, and for a
    gate the method modules too (a method's promises and conflicts name the gates it
    promises: that is its declaration)."""
    methods_dir = "methods/"
    allowed: dict[str, set[str]] = {}
    for name, method in METHODS.items():
        allowed.setdefault(name, set()).add(_own_file(method.params.__module__))
    for key, gate in GATES.items():
        allowed.setdefault(key, set()).update({_own_file(gate.compute.__module__), methods_dir})
    return allowed


def test_no_method_or_gate_name_outside_its_own_module():
    allowed = _names()
    pattern = re.compile(r"""(["'])(""" + "|".join(map(re.escape, allowed)) + r")\1")
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if rel.startswith("core/"):
            continue  # the core imports no registry (import-linter): its strings are its own
        excused = {n for f, names, _ in EXCEPTIONS if f == rel for n in names}
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in pattern.finditer(line):
                name = match.group(2)
                places = allowed[name]
                if rel in places or any(rel.startswith(p) for p in places if p.endswith("/")):
                    continue
                if name not in excused:
                    offenders.append(f"sdcflow/{rel}:{number}: {name!r}")
    assert not offenders, "names outside their own module:\n" + "\n".join(offenders)


TOY = '''
"""A toy method: every numeric key rounded to a grid of ``step``."""

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from sdcflow.methods import MaskResult, Method, MethodParams


class GridParams(MethodParams):
    name: Literal["toy_grid"] = "toy_grid"
    step: float = Field(1000.0, gt=0, description="grid spacing, in the keys' units")


def _mask(X, columns, params, rng, constraints):
    points = np.round(X / params.step) * params.step
    return MaskResult(masked=pd.DataFrame(points, columns=columns), points=points)


TOY_GRID = Method(
    GridParams,
    _mask,
    promises=lambda params: {},  # rounding promises no k: the spec gates what it needs
    summary="rounding of numeric keys to a grid",
    key_kinds=frozenset({"numeric"}),
    blocks=False,
)
'''


def test_a_toy_method_added_by_the_howto_releases_end_to_end(
    tmp_path, monkeypatch, request, prefect_api
):
    (tmp_path / "toy_grid_method.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path))
    toy = importlib.import_module("toy_grid_method")
    register_method(toy.TOY_GRID)  # the one entry of the how-to
    request.addfinalizer(lambda: METHODS.pop("toy_grid", None))

    spec = write_release(
        tmp_path,
        rows=40,
        quasi_identifiers=QIS,
        method={"name": "toy_grid", "step": 100},
        checks={"max_information_loss": 100},
    )
    outcome = sdcflow.release(spec)
    assert outcome.status == "published", outcome.message
    manifest = json.loads((outcome.published / "manifest.json").read_text())
    assert manifest["method"]["name"] == "toy_grid"
    assert outcome.method["name"] == "toy_grid"
