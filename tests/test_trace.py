"""Trace files, serially: round trips, layouts, refusal to overwrite, crash safety.

The same under MPI, and the parallel-h5py path, are tests/test_trace_mpi.py.
"""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_helpers import ATTRS, CHECKS, LAYOUTS, assert_tables_equal, listing, make_tables

import mpinet.trace as trace
from mpinet.errors import MpinetError, TraceError
from mpinet.trace import datasets, writer


# -- serial ----------------------------------------------------------------------------------
@pytest.mark.parametrize("consolidate", LAYOUTS)
def test_round_trip(tmp_path, consolidate):
    tables = make_tables(1000)
    path = tmp_path / "run.h5"
    out = trace.write_trace(
        path, None, attrs=ATTRS, tables=tables, checks=CHECKS, consolidate=consolidate
    )
    assert out == str(path)
    with trace.open(path) as t:
        assert_tables_equal(t, tables)
        attrs = t.attrs
        assert {k: attrs[k] for k in ATTRS} == ATTRS
        assert type(attrs["flag"]) is bool and type(attrs["N"]) is int
        assert attrs["layout_version"] == trace.LAYOUT_VERSION
        assert attrs["layout"] == ("split" if consolidate is False else "single")
        assert t.checks == CHECKS
        assert t.nrows("packets") == 1000 and list(t.rank_rows("links")) == [1000]
        assert t.column("links", "load").shape == (1000, 3)
        assert list(t.table("packets", columns=["hops", "id"])) == ["hops", "id"]


def test_single_file_is_chunked_and_gzipped(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "COMPRESS_MIN_BYTES", 1)
    trace.write_trace(tmp_path / "t.h5", None, attrs={}, tables=make_tables(50))
    with h5py.File(tmp_path / "t.h5") as f:
        ds = f["links/load"]
        assert ds.compression == "gzip" and ds.shuffle and ds.chunks == (50, 3)


def test_small_columns_are_not_compressed(tmp_path):
    trace.write_trace(tmp_path / "t.h5", None, attrs={}, tables=make_tables(50))
    with h5py.File(tmp_path / "t.h5") as f:
        assert f["links/load"].compression is None and f["links/load"].fletcher32
    big = {"packets": {"id": np.arange(200_000, dtype=np.int64)}}  # 1.6 MB: compressed
    trace.write_trace(tmp_path / "b.h5", None, attrs={}, tables=big)
    with h5py.File(tmp_path / "b.h5") as f:
        assert f["packets/id"].compression == "gzip"


def test_many_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "CHUNK_BYTES", 64)  # 8 int64 rows a chunk: ~20 blocks
    tables = make_tables(1237)
    trace.write_trace(tmp_path / "t.h5", None, attrs={}, tables=tables)
    with trace.open(tmp_path / "t.h5") as t:
        assert_tables_equal(t, tables)


@pytest.mark.parametrize("consolidate", LAYOUTS)
def test_zero_rows(tmp_path, consolidate):
    tables = make_tables(0)
    trace.write_trace(
        tmp_path / "t.h5", None, attrs={}, tables=tables, checks=[], consolidate=consolidate
    )
    with trace.open(tmp_path / "t.h5") as t:
        assert_tables_equal(t, tables)
        assert t.nrows("links") == 0 and t.column("links", "load").shape == (0, 3)
        assert list(t.iter_chunks("packets")) == [] and t.checks == []


def test_no_checks_and_absent_tables(tmp_path):
    trace.write_trace(tmp_path / "t.h5", None, attrs={}, tables={"steps": make_tables(4)["steps"]})
    with trace.open(tmp_path / "t.h5") as t:
        assert t.tables == ["steps"] and t.checks == []
        with pytest.raises(TraceError, match="no table 'hops'"):
            t.table("hops")
        with pytest.raises(TraceError, match="no column 'x'"):
            t.table("steps", columns=["x"])


@pytest.mark.parametrize("old,new", [(None, False), (False, None), (False, False)])
def test_refuse_then_force(tmp_path, old, new):
    path = tmp_path / "t.h5"
    trace.write_trace(path, None, attrs={"v": 1}, tables=make_tables(10), consolidate=old)
    before = listing(tmp_path)
    with pytest.raises(TraceError, match=r"t\.h5 exists; use --force") as err:
        trace.write_trace(path, None, attrs={"v": 2}, tables=make_tables(3), consolidate=new)
    assert isinstance(err.value, MpinetError) and str(path) in str(err.value)
    assert listing(tmp_path) == before
    with trace.open(path) as t:
        assert t.attrs["v"] == 1 and t.nrows("packets") == 10
    trace.write_trace(
        path, None, attrs={"v": 2}, tables=make_tables(3), consolidate=new, force=True
    )
    with trace.open(path) as t:
        assert t.attrs["v"] == 2 and t.nrows("packets") == 3
        parts = t.attrs["parts_dir"]
    # the old parts are gone, no temporaries remain
    assert listing(tmp_path) == sorted(["t.h5", parts] if parts else ["t.h5"])


def test_refuse_directory_and_missing_folder(tmp_path):
    with pytest.raises(TraceError, match="is a directory"):
        trace.write_trace(tmp_path, None, attrs={}, tables={}, force=True)
    with pytest.raises(TraceError, match="does not exist"):
        trace.write_trace(tmp_path / "no" / "t.h5", None, attrs={}, tables={})


@pytest.mark.parametrize("consolidate", LAYOUTS)
@pytest.mark.parametrize("existing", [False, True])
def test_failed_write_leaves_nothing(tmp_path, monkeypatch, consolidate, existing):
    path = tmp_path / "t.h5"
    if existing:
        trace.write_trace(path, None, attrs={"v": 1}, tables=make_tables(5))
    before = listing(tmp_path)
    calls = []

    def boom(ds, pieces, failed=bool):
        calls.append(ds.name)
        if len(calls) == 3:
            raise OSError("disk full")
        real_fill(ds, pieces, failed)

    real_fill = writer.fill_column
    monkeypatch.setattr(writer, "fill_column", boom)
    with pytest.raises(TraceError, match="failed on rank 0: disk full"):
        trace.write_trace(
            path, None, attrs={"v": 2}, tables=make_tables(100), force=True, consolidate=consolidate
        )
    assert listing(tmp_path) == before
    if existing:
        with trace.open(path) as t:
            assert t.attrs["v"] == 1


def test_failed_commit_of_split_trace(tmp_path, monkeypatch):
    def boom(*args):
        raise OSError("no rename today")

    monkeypatch.setattr(writer.os, "link", boom)  # the commit: the final name appears
    with pytest.raises(TraceError, match="no rename today"):
        trace.write_trace(
            tmp_path / "t.h5", None, attrs={}, tables=make_tables(9), consolidate=False
        )
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"tables": {"p": {"a": np.zeros(3), "b": np.zeros(4)}}}, "differ in length"),
        ({"tables": {"checks": {"a": np.zeros(3)}}}, "bad table name"),
        ({"tables": {"p": {"a/b": np.zeros(3)}}}, "bad column name"),
        ({"tables": {"p": {"a": np.array(["x"], dtype=object)}}}, "must be an array"),
        ({"tables": {"p": {"a": np.int64(3)}}}, "must be an array"),
        ({"tables": {"p": {}}}, "non-empty dict"),
        ({"attrs": {"layout": "x"}}, "set by the trace writer"),
        ({"attrs": {"d": {"a": 1}}}, "attribute 'd' must be"),
        ({"attrs": {"big": 2**70}}, "attribute 'big'"),
        ({"checks": [{"name": "x", "ok": True}]}, "lacks"),
        ({"checks": [{**CHECKS[0], "ok": "yes"}]}, "'ok' must be a bool"),
        ({"checks": [{**CHECKS[0], "expected": object()}]}, "cannot be stored"),
    ],
)
def test_bad_input(tmp_path, kwargs, match):
    args = {"attrs": {}, "tables": make_tables(3)} | kwargs
    with pytest.raises(TraceError, match=match):
        trace.write_trace(tmp_path / "t.h5", None, **args)
    assert listing(tmp_path) == []


def test_extra_check_keys_and_numpy_values(tmp_path):
    checks = [{**CHECKS[0], "measured": np.int64(7), "unit": "hops", "ok": np.True_}]
    trace.write_trace(tmp_path / "t.h5", None, attrs={"n": np.int32(4)}, tables={}, checks=checks)
    with trace.open(tmp_path / "t.h5") as t:
        assert t.checks == [{**CHECKS[0], "unit": "hops"}] and t.attrs["n"] == 4


def set_attr(path, key, value):
    with h5py.File(path, "r+") as f:
        f.attrs[key] = value


def test_layout_version(tmp_path):
    path = tmp_path / "t.h5"
    trace.write_trace(path, None, attrs={}, tables=make_tables(2))
    set_attr(path, "layout_version", "1.9")  # same major: readable
    trace.open(path).close()
    set_attr(path, "layout_version", "2.0")
    current = trace.LAYOUT_VERSION.replace(".", r"\.")
    with pytest.raises(TraceError, match=rf"layout version 2\.0.*reads layout version {current}"):
        trace.open(path)
    set_attr(path, "layout_version", "new")
    with pytest.raises(TraceError, match="bad layout_version"):
        trace.open(path)


def test_not_a_trace(tmp_path):
    with pytest.raises(TraceError, match="does not exist"):
        trace.open(tmp_path / "missing.h5")
    (tmp_path / "text.h5").write_text("hello")
    with pytest.raises(TraceError, match="not an HDF5 file"):
        trace.open(tmp_path / "text.h5")
    with pytest.raises(TraceError, match="not an HDF5 file"):
        trace.open(tmp_path)
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = 1
    with pytest.raises(TraceError, match="not an mpinet trace"):
        trace.open(tmp_path / "other.h5")


def test_split_trace_moves_with_its_parts(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    tables = make_tables(20)
    name = "t 100%b.h5"  # HDF5 reads % in virtual source names as a pattern: escaped
    trace.write_trace(tmp_path / "a" / name, None, attrs={}, tables=tables, consolidate=False)
    os.rename(tmp_path / "a", tmp_path / "b")
    os.rename(tmp_path / "b" / name, tmp_path / "b" / "t.h5")  # the file alone may be renamed
    monkeypatch.chdir("/")
    with trace.open(tmp_path / "b" / "t.h5") as t:
        assert_tables_equal(t, tables)
        parts = tmp_path / "b" / t.attrs["parts_dir"]
    os.remove(parts / "rank00000.h5")
    with pytest.raises(TraceError, match="lacks 1 of 1 part files"):
        trace.open(tmp_path / "b" / "t.h5")


@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 10**6])
def test_iter_chunks_equals_full_read(tmp_path, chunk_rows):
    trace.write_trace(tmp_path / "t.h5", None, attrs={}, tables=make_tables(64), consolidate=False)
    with trace.open(tmp_path / "t.h5") as t:
        full = t.table("links") | t.table("packets", columns=["id"])
        pieces = list(t.iter_chunks("packets", ["id"], chunk_rows=chunk_rows))
        assert all(len(p["id"]) <= chunk_rows for p in pieces)
        np.testing.assert_array_equal(np.concatenate([p["id"] for p in pieces]), full["id"])
        loads = [p["load"] for p in t.iter_chunks("links", chunk_rows=chunk_rows)]
        np.testing.assert_array_equal(np.concatenate(loads), full["load"])
        with pytest.raises(TraceError, match="chunk_rows"):
            next(t.iter_chunks("links", chunk_rows=0))


def test_to_pandas(tmp_path):
    trace.write_trace(tmp_path / "t.h5", None, attrs={}, tables=make_tables(5))
    with trace.open(tmp_path / "t.h5") as t:
        try:
            import pandas  # noqa: F401
        except ImportError:
            with pytest.raises(TraceError, match="pip install pandas"):
                t.to_pandas("links")
        else:
            df = t.to_pandas("links")
            assert list(df.columns) == ["load_0", "load_1", "load_2"] and len(df) == 5


def test_select_parallel_and_layout():
    sel = trace.select_parallel
    assert sel(None, 2, True) and sel(True, 4, True)
    assert not sel(None, 1, True) and not sel(None, 8, False) and not sel(False, 8, True)
    assert not sel(True, 1, True)
    with pytest.raises(TraceError, match="h5py built with MPI"):
        sel(True, 2, False)
    lay = trace.select_layout
    assert lay(None, 1, 10**12, 64) == "single" and lay(None, 4, 64 * 2**20 - 1, 64) == "single"
    assert lay(None, 4, 64 * 2**20, 64) == "split" and lay(False, 1, 0, 64) == "split"
    assert lay(True, 4, 10**12, 64) == "single"


@pytest.mark.skipif(h5py.get_config().mpi, reason="h5py here is built with MPI")
def test_parallel_true_needs_mpi_h5py(tmp_path):
    with pytest.raises(TraceError, match="h5py built with MPI"):
        trace.write_trace(tmp_path / "t.h5", None, attrs={}, tables={}, parallel=True)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(0, 300),
    dtype=st.sampled_from(["i1", "u2", "i4", "i8", "f4", "f8", "?", "S3"]),
    trail=st.sampled_from([(), (2,), (2, 3)]),
    consolidate=st.sampled_from(LAYOUTS),
)
def test_round_trip_property(tmp_path, n, dtype, trail, consolidate):
    a = (np.arange(n * int(np.prod(trail))) % 5).astype(dtype).reshape((n, *trail))
    trace.write_trace(
        tmp_path / "p.h5",
        None,
        attrs={},
        tables={"t": {"c": a}},
        force=True,
        consolidate=consolidate,
    )
    with trace.open(tmp_path / "p.h5") as t:
        got = t.column("t", "c")
        assert got.dtype == a.dtype and got.shape == a.shape and (got == a).all()
