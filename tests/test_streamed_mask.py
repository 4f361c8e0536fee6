"""The streamed mask (issue 45, ``docs/concepts/scale.md``, "The mask in pieces"): the keys
masked one stratum at a time from Parquet files DuckDB writes, the released records loaded
into ``masked.run_<id>`` by DuckDB. The table equals the in-memory path's released frame
value for value where the pieces are the strata the in-memory path masks independently; a
stratum cut into pieces keeps k and loses a little more information."""

from __future__ import annotations

import pickle
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sdcflow.core.measures.anonymity import equivalence_class_sizes
from sdcflow.core.parallel import part_map
from sdcflow.methods.keys import Key, SuppressionSettings
from sdcflow.methods.mixed import mask_keys
from sdcflow.spec.schema import ReleaseSpec
from sdcflow.tasks import cells
from sdcflow.tasks.cells import mask_streamed, streamed_path
from sdcflow.tasks.mask import released_frame
from sdcflow.warehouse.cells import PIECE, _median
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

MEMORY, STREAMED = "a" * 32, "b" * 32
NUMERIC = ["x0", "x1", "x2"]


def _frame(n: int, missing: float, levels: tuple[tuple[str, int], ...], seed: int = 1):
    """Standard-normal keys (each value missing with probability ``missing``), an integer
    key ``age``, categorical keys of uniform levels (1 % missing) and a kept column."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    X[rng.random(X.shape) < missing] = np.nan
    frame = pd.DataFrame(X, columns=NUMERIC)
    frame["age"] = rng.integers(0, 90, n)
    for name, count in levels:
        values = np.array([f"{name}_{j}" for j in range(count)], dtype=object)
        values = values[rng.integers(0, count, n)]
        values[rng.random(n) < 0.01] = None
        frame[name] = values
    frame["w"] = rng.random(n)
    return frame


def _spec(
    tmp_path: Path, qi: list[str], k: int, cell_size: int, method: str = "mdav", **extra
) -> ReleaseSpec:
    return ReleaseSpec.model_validate(
        {
            "release": "t",
            "source": "data.csv",
            "quasi_identifiers": qi,
            "keep": ["w"],
            "method": {"name": method, "k": k, "cell_size": cell_size},
            "on_violation": "fail",
            "base_dir": str(tmp_path),
            **extra,
        }
    )


def _both(
    tmp_path: Path,
    frame: pd.DataFrame,
    k: int,
    cell_size: int,
    bound: int | None = None,
    method: str = "mdav",
):
    """The in-memory release (``mask_keys`` + ``released_frame``, stored) and the streamed
    one, of the same records, both read back from the warehouse."""
    cats = [c for c in frame.columns if c not in (*NUMERIC, "age", "w")]
    qi = [*NUMERIC, "age", *cats]
    keys = [Key(c, "numeric") for c in NUMERIC]
    keys += [Key("age", "numeric", decimals=0, integer=True)]
    keys += [Key(c, "nominal") for c in cats]
    spec = _spec(tmp_path, qi, k, cell_size, method)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    for run in (MEMORY, STREAMED):
        wh.ingest(pa.Table.from_pandas(frame, preserve_index=False), run)
    raw = wh.read_frame("raw", MEMORY)
    result = mask_keys(
        raw[qi].reset_index(drop=True), keys, spec.method, np.random.default_rng(0),
        suppression=SuppressionSettings(),
    )  # fmt: skip
    released = released_frame(spec, raw, result)
    wh.write_frame("masked", MEMORY, released)
    result.details["released dtypes"] = {c: str(t) for c, t in released.dtypes.items()}
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    done = mask_streamed(spec, wh, STREAMED, keys, folder, np.random.default_rng(0), bound=bound)
    assert not any(folder.iterdir()), "the pieces' files are removed once loaded"
    return wh, result, done, qi


@pytest.mark.parametrize(
    ("missing", "levels"),
    [
        (0.0, ()),  # the whole file one piece, MDAV in cells as the method runs it
        (0.05, ()),  # MDAV-generic with partial distances
        (0.0, (("sex", 2), ("region", 40), ("activity", 8))),  # local suppression, 600 strata
        (0.05, (("sex", 2), ("region", 5))),  # strata with missing numbers
    ],
    ids=["numeric", "numeric-missing", "categorical-suppressed", "categorical-missing"],
)
def test_the_streamed_table_is_the_in_memory_release(tmp_path, missing, levels):
    frame = _frame(3000, missing, levels)
    wh, result, done, _ = _both(tmp_path, frame, k=3, cell_size=100)
    memory, streamed = wh.read_frame("masked", MEMORY), wh.read_frame("masked", STREAMED)
    pd.testing.assert_frame_equal(memory, streamed)
    assert done.table == 'masked."run_' + STREAMED + '"'
    assert done.point_columns == [*NUMERIC, "age"]
    assert done.details["information_loss"] == pytest.approx(
        wh.information_loss("raw", "masked", MEMORY, done.point_columns), rel=1e-12
    )
    for figure in ("strata", "categorical_values_suppressed", "suppressed_then_restored"):
        assert done.details.get(figure) == result.details.get(figure)
    if levels == (("sex", 2), ("region", 40), ("activity", 8)):
        assert sum(done.details["categorical_values_suppressed"].values()) > 0
    assert done.details["lower_bound"]["status"].startswith("not computed")
    assert done.dtypes["age"] == "Int64" and done.dtypes["x0"] == "float64"
    in_memory = result.details["released dtypes"]
    assert done.dtypes == {c: t for c, t in in_memory.items() if c != ROW_ID}


def test_ps_in_cells_streamed_is_the_in_memory_release(tmp_path):
    """``ps`` with ``cell_size`` takes the same path (its cells and border search inside each
    stratum), record for record."""
    frame = _frame(3000, 0.0, (("sex", 2), ("region", 5)))
    wh, _, done, _ = _both(tmp_path, frame, k=3, cell_size=100, method="ps")
    pd.testing.assert_frame_equal(
        wh.read_frame("masked", MEMORY), wh.read_frame("masked", STREAMED)
    )
    assert done.details["strategy"].endswith("ps masks the numeric keys inside each stratum")


@pytest.mark.parametrize("missing", [0.0, 0.05])
def test_a_stratum_above_the_bound_is_cut_and_keeps_k(tmp_path, missing):
    """Pieces of at most 800 records out of strata of 1500: the groups cannot cross a cut,
    so the loss rises (within a third here, cells of 100 and pieces of 750: more cuts than
    a real bound of 8 cells makes), and every class of identical released rows holds k."""
    frame = _frame(3000, missing, (("sex", 2),))
    wh, _, done, qi = _both(tmp_path, frame, k=3, cell_size=100, bound=800)
    streamed = wh.read_frame("masked", STREAMED)
    figures = done.details["streamed"]
    assert figures["strata_cut"] == 2 and figures["largest_piece"] <= 800
    sizes = equivalence_class_sizes(streamed[qi])
    assert sizes.min() >= 3
    if missing == 0.0:  # one group, one class of identical rows: k..2k-1
        assert sizes.max() <= 5
    memory_il = wh.information_loss("raw", "masked", MEMORY, done.point_columns)
    assert memory_il < done.details["information_loss"] < 1.35 * memory_il


def test_strata_short_of_a_keys_values_keep_k(tmp_path):
    """Strata of 3 to 12 records with missing numbers: a set short of a key's values joins
    its stratum's sets (the file's, in memory), a key held by fewer than k records of the
    stratum is released blank there; the release keeps k and the figures say how often."""
    frame = _frame(3000, 0.05, (("sex", 2), ("region", 40), ("activity", 8)))
    wh, _, done, qi = _both(tmp_path, frame, k=3, cell_size=100)
    streamed = wh.read_frame("masked", STREAMED)
    assert equivalence_class_sizes(streamed[qi]).min() >= 3
    figures = done.details["streamed"]
    assert figures["short_sets_joined_in_their_stratum"] > 0
    assert figures["values_blanked_in_strata_short_of_k"] > 0
    memory_il = wh.information_loss("raw", "masked", MEMORY, done.point_columns)
    assert done.details["information_loss"] == pytest.approx(memory_il, rel=0.05)


def test_the_process_never_reads_the_table(tmp_path, monkeypatch):
    """200 000 records in strata of 100 000 cut into pieces of at most 30 000: nothing reads
    ``raw`` into pandas, and every piece the masking function read held at most the bound."""
    n, bound = 200_000, 30_000
    frame = _frame(n, 0.01, (("sex", 2),), seed=3)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.ingest(pa.Table.from_pandas(frame, preserve_index=False), STREAMED)

    def refuse(*args, **kwargs):
        raise AssertionError("the streamed mask read a whole table into pandas")

    monkeypatch.setattr(Warehouse, "read_frame", refuse)
    seen: list[int] = []
    piece = cells.mask_piece_file

    def counted(path, *args):
        seen.append(pq.read_metadata(next(Path(path).glob("*.parquet"))).num_rows)
        return piece(path, *args)

    monkeypatch.setattr(cells, "mask_piece_file", counted)
    keys = [Key(c, "numeric") for c in NUMERIC] + [Key("sex", "nominal")]
    spec = _spec(tmp_path, [*NUMERIC, "sex"], k=5, cell_size=2000)
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    done = mask_streamed(spec, wh, STREAMED, keys, folder, np.random.default_rng(0), bound=bound)
    assert sum(seen) == n and max(seen) <= bound and len(seen) == done.details["streamed"]["pieces"]
    assert wh.count_rows("masked", STREAMED) == n
    assert 0 < done.details["information_loss"] < 10


def test_streamed_path_says_why_not(tmp_path):
    keys = [Key(c, "numeric") for c in NUMERIC]
    spec = _spec(tmp_path, NUMERIC, k=3, cell_size=100)
    assert streamed_path(spec, keys, ()) is None
    without_cells = spec.model_copy(
        update={"method": spec.method.model_copy(update={"cell_size": None})}
    )
    assert "cell_size" in streamed_path(without_cells, keys, ())
    refined = _spec(tmp_path, NUMERIC, 3, 100)
    refined = refined.model_copy(
        update={
            "method": type(spec.method).model_validate({"k": 3, "cell_size": 100, "refine": True})
        }
    )
    assert "refine" in streamed_path(refined, keys, ())
    repairs = _spec(tmp_path, NUMERIC, 3, 100, edits=["x0 >= -1000"], on_violation="repair")
    assert streamed_path(repairs, keys, ()) is None  # repaired in ranges (test_streamed_repair)
    blocked = _spec(tmp_path, NUMERIC, 3, 100, blocks=[["x0"], ["x1", "x2"]])
    assert "blocks" in streamed_path(blocked, keys, ())


def test_a_worker_receives_the_pieces_path_not_its_records(tmp_path):
    """Under a map that ships every call to another process (as ``runner: dask`` does), each
    call pickles to a few kilobytes whatever the piece's size: the worker reads its own
    piece. The release is the one the serial map gives."""
    frame = _frame(20_000, 0.01, (("sex", 2), ("region", 3)), seed=5)
    keys = [Key(c, "numeric") for c in NUMERIC] + [Key("sex", "nominal"), Key("region", "nominal")]
    spec = _spec(tmp_path, [*NUMERIC, "sex", "region"], k=5, cell_size=1000)
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    for run in (MEMORY, STREAMED):
        wh.ingest(pa.Table.from_pandas(frame, preserve_index=False), run)
    shipped: list[int] = []

    def shipping(fn, calls, label):
        out = []
        for args in calls:
            blob = pickle.dumps((fn, args))
            if fn is cells.mask_piece_file:  # not the cells a piece's MDAV maps inside it
                shipped.append(len(blob))
            fn2, args2 = pickle.loads(blob)
            out.append(fn2(*args2))
        return out

    for run, mapper in ((MEMORY, None), (STREAMED, shipping)):
        folder = tmp_path / run
        folder.mkdir(mode=0o700)
        rng = np.random.default_rng(0)
        if mapper is None:
            mask_streamed(spec, wh, run, keys, folder, rng)
        else:
            with part_map(mapper):
                mask_streamed(spec, wh, run, keys, folder, rng)
    assert len(shipped) >= 8 and max(shipped) < 8_000
    pd.testing.assert_frame_equal(
        wh.read_frame("masked", MEMORY), wh.read_frame("masked", STREAMED)
    )


@pytest.mark.parametrize("missing", [0.0, 0.3, 0.7])
def test_the_median_record_by_quantile_is_the_sorted_one(missing):
    """The cut's median record (by value then row id, a missing value above every value) by
    ``quantile_disc`` and counts is the one ``ORDER BY ... OFFSET`` finds, ties included."""
    rng = np.random.default_rng(7)
    n = 1001
    x = rng.integers(0, 40, n).astype(np.float64)  # many ties
    x[rng.random(n) < missing] = np.nan
    table = pa.table(
        {
            "x": pa.array(x, from_pandas=True),
            ROW_ID: np.arange(n)[rng.permutation(n)],
            PIECE: np.zeros(n, np.int64),
        }
    )
    con = duckdb.connect()
    con.register("t", table)
    held = int((~np.isnan(x)).sum())
    for mid in sorted({1, 17, n // 2, held - 1, min(held, n - 1), n - 1}):
        expected = con.execute(
            f"SELECT x, {ROW_ID} FROM t ORDER BY x NULLS LAST, {ROW_ID} LIMIT 1 OFFSET {mid}"
        ).fetchall()[0]
        assert _median(con, "t", '"x"', 0, mid, held) == (expected[0], int(expected[1]))
