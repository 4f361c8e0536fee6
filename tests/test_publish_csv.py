"""The published ``data.csv`` is ``frame.to_csv(index=False)`` byte for byte, whichever
writer makes it (``publish.write_csv``: DuckDB's COPY for frames of float64, int64 and text
columns whose values it writes as pandas does, pandas' writer otherwise)."""

from __future__ import annotations

import errno
import os

import numpy as np
import pandas as pd
import pytest

from sdcflow.warehouse.publish import _duckdb_writes, _errno_of, write_csv


def _same_bytes(frame: pd.DataFrame, tmp_path) -> None:
    path = tmp_path / "data.csv"
    write_csv(frame, path)
    assert path.read_bytes() == frame.to_csv(index=False).encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]  # nothing left beside
    path.unlink()


@pytest.mark.parametrize("seed", range(5))
def test_numeric_frames_are_written_as_pandas_writes_them(tmp_path, seed):
    """Magnitudes from 1e-320 to 1e300, integral floats (``3.0``), the exponent thresholds
    of repr (1e16, 1e-05), -0.0, inf, missing values, int64 extremes, and the row order of a
    file large enough for DuckDB to write it on several threads."""
    rng = np.random.default_rng(seed)
    n = 150_000
    a = rng.standard_normal(n) * 10.0 ** rng.integers(-320, 300, n)
    a[rng.random(n) < 0.05] = np.nan
    special = [0.0, -0.0, 1.0, 3.0, 1e15, 1e16, 1e-4, 1e-5, 1.5e-7, np.inf, -np.inf, 5e-324]
    a[: len(special)] = special
    frame = pd.DataFrame(
        {
            "a": a,
            "b": rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64),
            "c": np.round(rng.standard_normal(n), rng.integers(0, 6)),
            "d": rng.integers(0, 9, n).astype(np.float64),
            "id": np.arange(n, dtype=np.int64),
        },
        index=rng.permutation(n),  # the index is not written, whatever it is
    )
    _same_bytes(frame, tmp_path)


def test_headers_that_need_quoting_or_repeat_are_pandas_own(tmp_path):
    frame = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["a,b", 'say "x"', "a,b"])
    _same_bytes(frame, tmp_path)


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"x": [np.nan, 1.0]}),  # one column: pandas quotes the empty line
        pd.DataFrame({"s": ["", "a,b", 'q"', "#x"], "x": [1.0, 2.0, 3.0, 4.0]}),
        pd.DataFrame({"s": ["a", "b\rc"], "x": [1.0, 2.0]}),  # DuckDB quotes a CR
        pd.DataFrame({"s": ["a", 3], "x": [1.0, 2.0]}),  # text beside a number
        pd.DataFrame({"b": [True, False], "x": [1, 2]}),
        pd.DataFrame({"i": pd.array([1, None], dtype="Int64"), "x": [1.0, 2.0]}),
        pd.DataFrame({"f": np.array([0.1, 2.5], dtype=np.float32), "x": [1, 2]}),
        pd.DataFrame({"t": pd.to_datetime(["2020-01-01", None]), "x": [1, 2]}),
    ],
    ids=[
        "one-column",
        "text",
        "carriage-return",
        "mixed-object",
        "bool",
        "nullable-int",
        "float32",
        "dates",
    ],
)
def test_other_frames_are_written_by_pandas(tmp_path, frame):
    _same_bytes(frame, tmp_path)


TRICKY_TEXT = ["a,b", 'say "x"', "new\nline", "", "#x", "cr\rx", " lead", "trail ", "é 漢", "NULL"]


@pytest.mark.parametrize("tricky", [False, True])
def test_text_keys_beside_numbers_are_written_as_pandas_writes_them(tmp_path, tricky):
    """Categorical keys as the streamed release reads them (object columns of str, None where
    missing or suppressed) beside numbers, in a file large enough for DuckDB's threads; with
    ``tricky`` one column also holds values the writers quote differently."""
    rng = np.random.default_rng(7)
    n = 120_000
    region = np.array([f"region_{j}" for j in range(12)], dtype=object)[rng.integers(0, 12, n)]
    region[rng.random(n) < 0.01] = None
    activity = np.array(["a b", "c-d", "1.0", "nan", "é"], dtype=object)[rng.integers(0, 5, n)]
    if tricky:
        activity[rng.integers(0, n, 50)] = rng.choice(np.array(TRICKY_TEXT, dtype=object), 50)
    frame = pd.DataFrame(
        {
            "x": rng.standard_normal(n),
            "region": region,
            "activity": activity,
            "sex": pd.Series(np.where(rng.random(n) < 0.5, "f", "m"), dtype=object),
            "id": np.arange(n, dtype=np.int64),
        }
    )
    assert _duckdb_writes(frame, tmp_path / "data.csv.body") is not tricky
    _same_bytes(frame, tmp_path)


def test_a_quote_in_the_path_is_written_where_asked(tmp_path):
    folder = tmp_path / "it's"
    folder.mkdir()
    frame = pd.DataFrame({"a": [1.5, 2.0], "b": [1, 2]})
    write_csv(frame, folder / "data.csv")
    assert (folder / "data.csv").read_bytes() == b"a,b\n1.5,1\n2.0,2\n"


@pytest.mark.parametrize("step", [slice(None, None, -1), slice(4, 0, -2)], ids=["::-1", "4:0:-2"])
def test_a_reversed_view_is_written_as_pandas_writes_it(tmp_path, step):
    """Columns laid out backwards in memory: DuckDB's scan fails on them with
    ``std::bad_cast``, so the frame is copied first."""
    frame = pd.DataFrame({"id": np.arange(5, dtype=np.int64), "x": np.arange(5.0) / 3})
    _same_bytes(frame.iloc[step], tmp_path)


def test_a_relative_folder_named_tilde_is_written_there_and_nothing_in_home(tmp_path, monkeypatch):
    """DuckDB expands a leading ``~`` of a path; Python does not: the file went to $HOME."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    os.mkdir("~")
    frame = pd.DataFrame({"a": [1.5, 2.0], "b": [1, 2]})
    write_csv(frame, "~/data.csv")  # a str path too
    assert sorted(os.listdir(home)) == []
    assert (tmp_path / "~" / "data.csv").read_bytes() == b"a,b\n1.5,1\n2.0,2\n"


def test_a_read_only_folder_is_an_oserror_with_the_systems_errno(tmp_path):
    from adversarial import read_only_disk

    frame = pd.DataFrame({"a": [1.5, 2.0], "b": [1, 2]})
    with read_only_disk(tmp_path / "ro") as folder:
        with pytest.raises(OSError) as e:
            write_csv(frame, folder / "data.csv")
        with pytest.raises(OSError) as by_pandas:
            frame.to_csv(folder / "data.csv", index=False)
        assert e.value.errno == by_pandas.value.errno == errno.EROFS
        assert os.listdir(folder) == []


def test_errno_is_read_from_duckdbs_message():
    assert _errno_of('IO Error: Could not write file "x": No space left on device') == 28
    assert _errno_of('{"exception_type":"IO","errno":"30"}') == 30
    assert _errno_of("IO Error: Cannot open file: Permission denied") == errno.EACCES
    assert _errno_of("IO Error: something else") == errno.EIO
