"""Fuzzy mapping of sensitive columns (``fuzzy_map:`` in the spec), for outsourced mining.

Each column named under ``fuzzy_map:`` must be a ``sensitive:`` attribute: it is published as
``set number + affinity`` combined by the chosen combiner
(:mod:`sdcflow.core.fuzzy_mapping`), the quasi-identifiers are masked by the spec's method as
usual, and the gates see the columns as released (l-diversity counts mapped values).

Why sensitive columns only. A deterministic combiner is a function of the value, monotone on
each piece between set boundaries and often one-to-one: a mapped quasi-identifier is as
identifying as the original, so mapping a key protects nothing that k-anonymity counts, and a
key must be masked by the method. The mapping hides a confidential value's scale from an
outside miner; it is not an anonymization.

The mapping (sets, combiner, the random pick's seed) is the data owner's secret: it is stored
in the warehouse (:mod:`sdcflow.warehouse.secrets`) and nowhere else. Logs, artifacts and the
report carry the column names and figures of similarity and order only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from prefect import get_run_logger, task

from sdcflow.core.fuzzy_mapping import FuzzyMapping
from sdcflow.core.fuzzy_mapping.similarity import rank_figures, similarity_figures
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import STEP
from sdcflow.warehouse.secrets import store_fuzzy_maps
from sdcflow.warehouse.warehouse import Warehouse

#: What each combiner releases inside a piece between set breakpoints (any set layout); the
#: report shows every row, so it does not tell which combiner a run used.
COMBINER_ORDER = {
    "arithmetic average": "a function of the value; linear on each piece (constant between "
    "peaks under the modified uniform sets): order kept, reversed or pooled",
    "normalized average": "a function of the value; quadratic over quadratic on each piece, "
    "constant where a value is in one set only",
    "weighted average": "a function of the value; quadratic over linear on each piece",
    "highest affinity": "a function of the value; set number + affinity of one set: order "
    "kept on rising, reversed on falling ramps",
    "random pick": "each record one of its candidates at random: among records that drew the "
    "same set, order kept on rising, reversed on falling ramps",
    "maximum": "a function of the value; linear on each piece: order kept on rising, reversed "
    "on falling ramps (with uniform modified sets, increasing over the whole overlap)",
    "minimum": "a function of the value; linear on each piece: order kept on rising, reversed "
    "on falling ramps",
}


def privacy_figures(x: np.ndarray, y: np.ndarray, mapping: FuzzyMapping) -> dict[str, float]:
    """Similarity (raw and rescaled over the domain and ``[1, k + 1]``) and order figures."""
    figs = similarity_figures(x, y, mapping.sets.domain, mapping.mapped_range)
    return figs | rank_figures(x, y)


@task(name="fuzzy-map", **STEP)
def map_sensitive(
    spec: ReleaseSpec,
    warehouse: Warehouse,
    run_id: str,
    frame: pd.DataFrame,
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, dict[str, dict[str, float]]]:
    """Replace the ``fuzzy_map`` columns of ``frame`` by their mapped values, store the
    mappings in the warehouse's secret store, and return the frame and each column's figures.
    A spec without ``fuzzy_map`` returns ``frame`` unchanged."""
    if not spec.fuzzy_map:
        return frame, {}
    out = frame.copy()
    secrets: dict[str, dict[str, Any]] = {}
    figures: dict[str, dict[str, float]] = {}
    logger = get_run_logger()
    for column, params in spec.fuzzy_map.items():
        x = frame[column].to_numpy(dtype=np.float64)
        seed = int(rng.integers(2**63)) if params.combiner == "random_pick" else None
        mapping = FuzzyMapping(params.build(x, column=column), params.combiner, seed)
        y = mapping.apply(x, name=column)
        out[column] = y
        secrets[column] = mapping.to_dict()
        figures[column] = privacy_figures(x, y, mapping)
        f = figures[column]
        logger.info(
            "fuzzy-mapped sensitive column %s (%d records): Pearson r %.3f, Spearman rho %.3f, "
            "mean |Kendall tau| inside a released set %.3f",
            column,
            x.size,
            f["pearson"],
            f["spearman"],
            f["within_set_kendall"],
        )
    store_fuzzy_maps(warehouse, run_id, spec.release, secrets)
    logger.info("stored the mapping of %d column(s) in the warehouse's secret store", len(secrets))
    return out, figures


def report_tables(figures: dict[str, dict[str, float]]) -> dict[str, pd.DataFrame]:
    """The report's fuzzy-mapping tables: the figures per column, and what the mapping does
    not hide (every combiner, so the table does not tell which one ran)."""
    if not figures:
        return {}
    names = {
        "pearson": "Pearson r",
        "jaccard": "Jaccard (raw)",
        "dice": "Dice (raw)",
        "cosine": "cosine (raw)",
        "n_jaccard": "Jaccard (rescaled)",
        "n_dice": "Dice (rescaled)",
        "n_cosine": "cosine (rescaled)",
        "spearman": "Spearman rho",
        "within_set_kendall": "mean |Kendall tau| inside a released set",
    }
    rows = [
        {"column": column, **{label: figs[key] for key, label in names.items()}}
        for column, figs in figures.items()
    ]
    limits = pd.DataFrame(
        {
            "what the miner's file still shows": [
                "Correlation: Pearson r near 1 means the mapped column is close to a linear "
                "rescaling of the original; the mapping hides the scale and unit, not the "
                "shape.",
                "Order: Spearman rho near +1 or -1 means the order of the records is released "
                "whole; a mean |Kendall tau| near 1 inside a released set number means that "
                "inside a set the order is kept or exactly reversed (either one leaks it).",
                "Inversion: anyone who learns the mapping, or a few original values with their "
                "mapped values on one piece, recovers the originals of that piece exactly.",
                "Not anonymity: a mapped column identifies as well as the original; sdcflow maps "
                "sensitive columns only, and k-anonymity is counted over the masked keys.",
            ]
        }
    )
    combiners = pd.DataFrame(
        {
            "combiner": list(COMBINER_ORDER),
            "inside a piece between set breakpoints": list(COMBINER_ORDER.values()),
        }
    )
    return {
        "Fuzzy mapping: similarity and order of the mapped sensitive columns": pd.DataFrame(rows),
        "Fuzzy mapping: what it does not hide": limits,
        "Fuzzy mapping: order kept by each combiner (generic, whichever ran)": combiners,
    }
