"""The publication streamed from the warehouse (issue 45, step 1 of the cell-streamed path):
the release's files read from the run's ``masked`` table a chunk at a time, in the shuffled
order, are byte for byte those the whole shuffled frame gives (``pq.write_table`` and
``write_csv``), whatever the column types; the ``published`` copy is the shuffled frame."""

from __future__ import annotations

import hashlib
import weakref

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sdcflow.warehouse.publish import Chunked, _write_data, write_csv, write_release
from sdcflow.warehouse.warehouse import ROW_ID, Warehouse

RUN = "a" * 32


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Every column type a release carries: float64 with gaps and extremes, int64, nullable
    Int64, text with gaps and characters CSV quotes, a categorical, booleans."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    x[rng.random(n) < 0.1] = np.nan
    text = rng.choice(np.array(["North", "a,b", 'q"x', "", "é"], dtype=object), n)
    text[rng.random(n) < 0.1] = None
    ints = pd.array(rng.integers(-5, 5, n), dtype="Int64")
    ints[rng.random(n) < 0.1] = pd.NA
    return pd.DataFrame(
        {
            "x": x,
            "i": rng.integers(-(2**40), 2**40, n),
            "j": ints,
            "region": pd.Series(text, dtype="string"),
            "kind": pd.Categorical(rng.choice(["b", "a", "c"], n), categories=["c", "b", "a"]),
            "flag": rng.random(n) < 0.5,
            ROW_ID: np.arange(n, dtype=np.int64),
        }
    )


def _stored(tmp_path, frame: pd.DataFrame) -> Warehouse:
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    wh.write_frame("masked", RUN, frame)
    return wh


def _typed(chunks, dtypes):
    for chunk in chunks:
        yield chunk.astype(dtypes)


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("columns", [None, ["x", "i", ROW_ID], ["region", ROW_ID]])
def test_the_streamed_release_is_the_shuffled_frame_byte_for_byte(tmp_path, columns):
    """Mixed types (pandas' CSV writer), numbers only (DuckDB's COPY), one column (pandas
    quotes an empty line): the files of ``write_release`` from the warehouse equal those of
    the whole shuffled frame written as the in-memory path wrote it."""
    frame = _frame(3000)
    if columns is not None:
        frame = frame[columns]
    wh = _stored(tmp_path, frame)
    order = np.random.default_rng(1).permutation(len(frame))
    public = frame.drop(columns=[ROW_ID]).iloc[order].reset_index(drop=True)
    reference = tmp_path / "reference"
    reference.mkdir()
    pq.write_table(pa.Table.from_pandas(public, preserve_index=False), reference / "data.parquet")
    write_csv(public, reference / "data.csv")

    dtypes = public.dtypes.to_dict()
    chunked = Chunked(lambda: _typed(wh.shuffled_chunks("masked", RUN, order, 1 << 20), dtypes))
    out = write_release(tmp_path / "out", "r", chunked, {"run_id": RUN})
    for name in ("data.parquet", "data.csv"):
        assert _sha(out / name) == _sha(reference / name), name
    # the in-memory path (a frame) writes the same bytes through the same writer
    again = write_release(tmp_path / "again", "r", public, {"run_id": RUN})
    for name in ("data.parquet", "data.csv"):
        assert _sha(again / name) == _sha(reference / name), name


def test_chunks_of_a_large_release_give_the_bytes_of_the_whole(tmp_path):
    """A release of several chunks (here of 1000 records; 1 Mi in the flow): the CSV is the
    whole frame's, the Parquet file the whole frame's cut in row groups of the chunk size,
    the records in the shuffled order, none lost or repeated."""
    frame = _frame(3500, seed=2)
    wh = _stored(tmp_path, frame)
    order = np.random.default_rng(3).permutation(len(frame))
    public = frame.drop(columns=[ROW_ID]).iloc[order].reset_index(drop=True)
    dtypes = public.dtypes.to_dict()
    chunks = list(_typed(wh.shuffled_chunks("masked", RUN, order, 1000), dtypes))
    assert [len(c) for c in chunks] == [1000, 1000, 1000, 500]
    rows, columns = _write_data(iter(chunks), tmp_path / "s.parquet", tmp_path / "s.csv")
    assert (rows, columns) == (3500, list(public.columns))
    write_csv(public, tmp_path / "w.csv")
    assert (tmp_path / "s.csv").read_bytes() == (tmp_path / "w.csv").read_bytes()
    table = pa.Table.from_pandas(public, preserve_index=False)
    pq.write_table(table, tmp_path / "w.parquet", row_group_size=1000)
    assert _sha(tmp_path / "s.parquet") == _sha(tmp_path / "w.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "s.parquet"), public)


def test_the_published_copy_is_made_inside_the_warehouse_in_the_shuffled_order(tmp_path):
    frame = _frame(500, seed=4)[["x", "i", "region", ROW_ID]]
    wh = _stored(tmp_path, frame)
    order = np.random.default_rng(5).permutation(len(frame))
    wh.copy_shuffled("masked", "published", RUN, order)
    with wh.connect(read_only=True) as con:
        copy = con.sql(f'SELECT * FROM published."run_{RUN}"').df()
    expected = frame.drop(columns=[ROW_ID]).iloc[order].reset_index(drop=True)
    pd.testing.assert_frame_equal(copy, expected, check_dtype=False)
    with wh.connect(read_only=True) as con:
        recorded = con.execute(
            "SELECT count(*) FROM audit.run_tables WHERE run_id = ? AND schema_name = 'published'",
            [RUN],
        ).fetchone()[0]
    assert recorded == 1  # retention drops it with the run's other copies


def test_the_publication_holds_one_chunk_at_a_time(tmp_path):
    """Each chunk is let go before the next is read: the writer once kept the first chunk
    to the end and the reader its last while the next one's query ran, three chunks of a
    census of ten million records held at once where a million has one."""
    held: list[weakref.ref] = []

    def read():
        for i in range(4):
            alive = [j for j, ref in enumerate(held) if ref() is not None]
            assert not alive, f"chunk {i} read while chunks {alive} are still held"
            frame = _frame(50, seed=i)[["x", "i", "region"]]
            held.append(weakref.ref(frame))
            yield frame
            del frame

    out = write_release(tmp_path / "out", "r", Chunked(read), {"run_id": RUN})
    assert len(held) == 4 and pd.read_csv(out / "data.csv").shape == (200, 3)


def test_the_warehouse_reader_lets_a_chunk_go_before_reading_the_next(tmp_path, monkeypatch):
    import sdcflow.warehouse.warehouse as warehouse_module

    frame = _frame(400, seed=6)[["x", "i", "region", ROW_ID]]
    wh = _stored(tmp_path, frame)
    held: list[weakref.ref] = []
    positions = warehouse_module._positions

    def next_positions(ids):  # each chunk's query starts here
        alive = [j for j, ref in enumerate(held) if ref() is not None]
        assert not alive, f"chunk {len(held)} read while chunks {alive} are still held"
        return positions(ids)

    monkeypatch.setattr(warehouse_module, "_positions", next_positions)
    order = np.random.default_rng(7).permutation(len(frame))
    for chunk in wh.shuffled_chunks("masked", RUN, order, 100):
        held.append(weakref.ref(chunk))
        del chunk
    assert len(held) == 4


def test_an_empty_release_is_one_empty_chunk_with_its_columns(tmp_path):
    frame = _frame(0)[["x", "region", ROW_ID]]
    wh = _stored(tmp_path, frame)
    chunks = list(wh.shuffled_chunks("masked", RUN, np.arange(0), 1000))
    assert len(chunks) == 1 and len(chunks[0]) == 0
    assert list(chunks[0].columns) == ["x", "region"]
    out = write_release(tmp_path / "out", "r", Chunked(lambda: iter(chunks)), {"run_id": RUN})
    assert (out / "data.csv").read_text() == "x,region\n"
    assert pq.read_table(out / "data.parquet").num_rows == 0


def test_a_column_missing_throughout_the_first_chunk_but_not_later_is_refused(tmp_path):
    """Its Parquet type is unknown when the file starts (Arrow's null type): refused, never
    written with a type the whole frame would not have had; missing throughout, it is
    written as the whole frame writes it."""
    first = pd.DataFrame({"x": [1.0, 2.0], "s": pd.Series([None, None], dtype=object)})
    later = pd.DataFrame({"x": [3.0], "s": pd.Series(["a"], dtype=object)})
    with pytest.raises(ValueError, match="missing throughout the release's first chunk"):
        _write_data(iter([first, later]), tmp_path / "a.parquet", tmp_path / "a.csv")
    empty = pd.DataFrame({"x": [3.0], "s": pd.Series([None], dtype=object)})
    _write_data(iter([first, empty]), tmp_path / "b.parquet", tmp_path / "b.csv")
    whole = pd.concat([first, empty], ignore_index=True)
    table = pa.Table.from_pandas(whole, preserve_index=False)
    pq.write_table(table, tmp_path / "w.parquet", row_group_size=2)  # a group per chunk
    assert _sha(tmp_path / "b.parquet") == _sha(tmp_path / "w.parquet")


def test_a_memory_limit_that_is_not_an_amount_is_refused(tmp_path, monkeypatch):
    from sdcflow.errors import InputError

    monkeypatch.setenv("SDCFLOW_DUCKDB_MEMORY_LIMIT", "lots")
    with pytest.raises(InputError, match="amount of memory such as 2GB"):
        Warehouse(tmp_path / "w.duckdb").initialize()
    monkeypatch.setenv("SDCFLOW_DUCKDB_MEMORY_LIMIT", "256MiB")
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.initialize()
    with wh.connect() as con:
        limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    assert limit.replace(" ", "") == "256.0MiB"
