"""Trace files: round trips, layouts, refusal to overwrite, crash safety; serial and under MPI.

MPI tests run under ``mpiexec -n R python -m pytest --with-mpi -m mpi`` and share a directory
made by rank 0; every rank passes a different number of rows (rank 1 none, rank 2 the most).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mpinet.trace as trace
from mpinet.errors import MpinetError, TraceError
from mpinet.trace import datasets, writer

CHECKS = [
    {"name": "diameter", "expected": 7, "measured": 7, "ok": True, "detail": "BFS"},
    {"name": "avg", "expected": 4.25, "measured": 4.2500001, "ok": False, "detail": "é ±"},
    {"name": "label", "expected": "1234", "measured": "1243", "ok": False, "detail": ""},
]
ATTRS = {"topology": "scc:5", "N": 480, "degree": 3, "seed": 7, "fraction": 0.5, "flag": True}
ATTRS |= {"argv": ["mpinet", "run", "--steps", "9"], "sizes": [1, 2, 3], "empty": []}
LAYOUTS = [None, False]  # consolidate: None -> one file here, False -> master + parts


def make_tables(n: int, lo: int = 0, degree: int = 3) -> dict[str, dict[str, np.ndarray]]:
    """Rows ``lo..lo+n-1`` of a deterministic global trace."""
    ids = np.arange(lo, lo + n, dtype=np.int64)
    return {
        "packets": {
            "id": ids,
            "source": ids * 7 % 101,
            "dest": ids * 13 % 97,
            "inject_step": (ids // 5).astype(np.int32),
            "deliver_step": (ids // 5 + ids % 4).astype(np.int32),
            "hops": (ids % 4).astype(np.uint8),
        },
        "steps": {"delivered": ids.astype(np.float64) / 3, "cross_rank": ids % 2 == 0},
        "links": {"load": (ids[:, None] * degree + np.arange(degree)).astype(np.int32)},
    }


def assert_tables_equal(t: trace.Trace, expected: dict) -> None:
    assert t.tables == list(expected)
    for name, cols in expected.items():
        got = t.table(name)
        assert list(got) == list(cols)
        for c, a in cols.items():
            assert got[c].dtype == a.dtype and got[c].shape == a.shape, (name, c)
            np.testing.assert_array_equal(got[c], a)


def listing(d) -> list[str]:
    return sorted(os.listdir(d))


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


# -- MPI -------------------------------------------------------------------------------------
@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.fixture
def shared_dir(comm):
    """A fresh directory made by rank 0 and shared by every rank; removed afterwards.

    (pytest's ``tmp_path`` on every rank races to prune the same base directory.)
    """
    d = Path(comm.bcast(tempfile.mkdtemp(prefix="mpinet-trace-") if comm.Get_rank() == 0 else None))
    yield d
    comm.Barrier()
    if comm.Get_rank() == 0:
        shutil.rmtree(d, ignore_errors=True)


def my_rows(comm, total: int = 101) -> tuple[int, int]:
    """This rank's uneven slice of ``total`` rows: rank 1 gets none, rank 2 twice its share."""
    size = comm.Get_size()
    weights = np.array([0 if r == 1 else 2 if r == 2 else 1 for r in range(size)])
    bounds = np.concatenate([[0], np.cumsum(weights)]) * total // weights.sum()
    r = comm.Get_rank()
    return int(bounds[r]), int(bounds[r + 1] - bounds[r])


@pytest.mark.mpi
@pytest.mark.parametrize("consolidate", [None, True, False])
def test_mpi_concatenation_in_rank_order(comm, shared_dir, consolidate):
    lo, n = my_rows(comm)
    path = shared_dir / f"mpi-{consolidate}.h5"
    out = trace.write_trace(
        path,
        comm,
        attrs=ATTRS,
        tables=make_tables(n, lo),
        checks=CHECKS,
        consolidate=consolidate,
        parallel=False,  # the serial-h5py layouts, also where h5py has MPI
    )
    assert comm.allgather(out) == [str(path)] * comm.Get_size()
    comm.Barrier()
    with trace.open(path) as t:  # every rank reads: the same logical content for any size
        assert_tables_equal(t, make_tables(101))
        assert t.checks == CHECKS and t.attrs["sizes"] == [1, 2, 3]
        assert list(t.rank_rows("packets")) == comm.allgather(n)
        split = consolidate is False
        assert t.attrs["layout"] == ("split" if split else "single")
        assert t.attrs["nparts"] == (comm.Get_size() if split else 0)
    comm.Barrier()
    expected = [path.name, t.attrs["parts_dir"]] if split else [path.name]
    assert listing(shared_dir) == sorted(expected)


@pytest.mark.mpi
def test_mpi_large_trace_is_split_by_default(comm, shared_dir, monkeypatch):
    monkeypatch.setenv("MPINET_TRACE_CONSOLIDATE_MIB", "0.001")  # ~1 KiB
    lo, n = my_rows(comm, 500)
    trace.write_trace(
        shared_dir / "t.h5", comm, attrs={}, tables=make_tables(n, lo), parallel=False
    )
    comm.Barrier()
    with trace.open(shared_dir / "t.h5") as t:
        assert t.attrs["layout"] == ("single" if comm.Get_size() == 1 else "split")
        assert_tables_equal(t, make_tables(500))
    comm.Barrier()


@pytest.mark.mpi
def test_mpi_refuse_and_force(comm, shared_dir):
    path = shared_dir / "t.h5"
    lo, n = my_rows(comm)
    trace.write_trace(
        path, comm, attrs={"v": 1}, tables=make_tables(n, lo), consolidate=False, parallel=False
    )
    with pytest.raises(TraceError, match="use --force"):  # on every rank
        trace.write_trace(path, comm, attrs={"v": 2}, tables=make_tables(n, lo))
    lo, n = my_rows(comm, 37)
    trace.write_trace(path, comm, attrs={"v": 2}, tables=make_tables(n, lo), force=True)
    comm.Barrier()
    with trace.open(path) as t:
        # one file: gathered to rank 0 (serial h5py) or written by all ranks (MPI h5py)
        assert t.attrs["v"] == 2 and t.attrs["layout"] in ("single", "parallel")
        assert_tables_equal(t, make_tables(37))
    comm.Barrier()
    assert listing(shared_dir) == ["t.h5"]  # the old parts are gone


@pytest.mark.mpi
def test_mpi_failure_on_one_rank_raises_everywhere(comm, shared_dir, monkeypatch):
    last = comm.Get_size() - 1
    if comm.Get_rank() == last:

        def boom(self, arrays, durable):
            raise OSError("quota exceeded")

        monkeypatch.setattr(writer._Writer, "part", boom)
    lo, n = my_rows(comm)
    with pytest.raises(TraceError, match=f"failed on rank {last}: quota exceeded"):
        trace.write_trace(
            shared_dir / "t.h5",
            comm,
            attrs={},
            tables=make_tables(n, lo),
            consolidate=False,
            parallel=False,
        )
    assert listing(shared_dir) == []


@pytest.mark.mpi(min_size=2)
def test_mpi_mismatched_columns_raise_everywhere(comm, shared_dir):
    tables = make_tables(3)
    if comm.Get_rank() == 1:
        tables["packets"]["hops"] = tables["packets"]["hops"].astype(np.int64)
    with pytest.raises(TraceError, match="table 'packets': rank 1 passes columns"):
        trace.write_trace(shared_dir / "t.h5", comm, attrs={}, tables=tables)
    comm.Barrier()
    assert listing(shared_dir) == []


def test_parallel_path_structure_with_one_rank(tmp_path, monkeypatch):
    """The mpio code path, run by one rank on serial h5py (driver and comm dropped)."""
    real_file = h5py.File

    def serial_file(name, mode="r", driver=None, comm=None, **kw):
        assert mode == "r" or (driver == "mpio" and comm is not None)
        return real_file(name, mode, **kw)

    monkeypatch.setattr(writer, "select_parallel", lambda *a: True)
    monkeypatch.setattr(writer.h5py, "File", serial_file)
    tables = make_tables(33)
    trace.write_trace(tmp_path / "t.h5", None, attrs=ATTRS, tables=tables, checks=CHECKS)
    monkeypatch.undo()
    with trace.open(tmp_path / "t.h5") as t:
        assert_tables_equal(t, tables)
        assert t.checks == CHECKS and t.attrs["layout"] == "parallel"
    with h5py.File(tmp_path / "t.h5") as f:
        assert f["packets/id"].chunks is None  # contiguous, uncompressed
    assert listing(tmp_path) == ["t.h5"]


# -- parallel h5py (driver="mpio"); skipped where h5py is serial (the PyPI wheel) -----------
needs_mpi_h5py = pytest.mark.skipif(
    not h5py.get_config().mpi,
    reason="h5py is built without MPI (the PyPI wheel); see docs/parallel-hdf5.md",
)


def all_kinds(n: int, lo: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """``make_tables`` plus a table of every storable kind and trailing shape."""
    ids = np.arange(lo, lo + n, dtype=np.int64)
    tables = make_tables(n, lo)
    tables["kinds"] = {
        "i1": (ids % 100 - 50).astype(np.int8),
        "u2": (ids * 3).astype(np.uint16),
        "f4": (ids / 7).astype(np.float32),
        "c16": ids + 1j * ids,
        "b": ids % 3 == 0,
        "s": np.array([b"%03d" % (i % 1000) for i in ids], dtype="S3"),
        "grid": (ids[:, None, None] * 6 + np.arange(6).reshape(2, 3)).astype(">i4"),
        "none": np.zeros((n, 0)),
    }
    return tables


def assert_same_trace(a: Path, b: Path) -> None:
    """Two traces hold the same attributes, tables (dtypes, shapes, rank_rows) and checks."""
    with trace.open(a) as x, trace.open(b) as y:
        ax = {k: v for k, v in x.attrs.items() if k != "layout"}  # the writing path differs
        ay = {k: v for k, v in y.attrs.items() if k != "layout"}
        assert ax == ay and x.tables == y.tables and x.checks == y.checks
        for name in x.tables:
            assert x.columns(name) == y.columns(name)
            np.testing.assert_array_equal(x.rank_rows(name), y.rank_rows(name))
            for c, col in x.table(name).items():
                other = y.column(name, c)
                assert col.dtype == other.dtype and col.shape == other.shape, (name, c)
                np.testing.assert_array_equal(col, other)


def assert_parallel_layout(path: Path, size: int) -> None:
    """The parallel path's file: ``layout`` parallel, no parts, contiguous uncompressed columns.

    With one rank ``parallel=True`` writes serially: chunked and gzipped.
    """
    with trace.open(path) as t:
        attrs = t.attrs
        assert (attrs["layout"], attrs["nparts"], attrs["parts_dir"]) == (
            "parallel" if size > 1 else "single",
            0,
            "",
        )
    with h5py.File(path, "r") as f:
        cols = [ds for g in f.values() for ds in g.values() if g.name != "/checks" and ds.size]
        assert cols
        for ds in cols:
            assert (ds.chunks is None and ds.compression is None) == (size > 1), ds.name


def write_both(comm, d: Path, tables: dict, **kw) -> tuple[Path, Path]:
    """The same trace by the parallel path and by the serial one (consolidated)."""
    par = trace.write_trace(d / "par.h5", comm, tables=tables, parallel=True, **kw)
    ser = trace.write_trace(
        d / "ser.h5", comm, tables=tables, parallel=False, consolidate=True, **kw
    )
    comm.Barrier()
    return Path(par), Path(ser)


@needs_mpi_h5py
def test_parallel_true_with_one_process_writes_serially(tmp_path):
    tables = all_kinds(20)
    trace.write_trace(tmp_path / "t.h5", None, attrs={}, tables=tables, parallel=True)
    assert_parallel_layout(tmp_path / "t.h5", 1)
    with trace.open(tmp_path / "t.h5") as t:
        assert_tables_equal(t, tables)


@pytest.mark.mpi
@needs_mpi_h5py
def test_mpi_parallel_equals_serial(comm, shared_dir):
    lo, n = my_rows(comm)  # uneven: rank 1 writes no rows
    par, ser = write_both(comm, shared_dir, all_kinds(n, lo), attrs=ATTRS, checks=CHECKS)
    assert_same_trace(par, ser)
    assert_parallel_layout(par, comm.Get_size())
    with trace.open(par) as t:
        assert_tables_equal(t, all_kinds(101))
        assert {k: t.attrs[k] for k in ATTRS} == ATTRS and t.checks == CHECKS
        assert list(t.rank_rows("links")) == comm.allgather(n)
        assert t.column("links", "load").shape == (101, 3)
    comm.Barrier()
    assert listing(shared_dir) == ["par.h5", "ser.h5"]


@pytest.mark.mpi
@needs_mpi_h5py
@pytest.mark.parametrize("checks", [[], None])
def test_mpi_parallel_zero_rows(comm, shared_dir, checks):
    par, ser = write_both(comm, shared_dir, all_kinds(0), attrs={}, checks=checks)
    assert_same_trace(par, ser)
    with trace.open(par) as t:
        assert_tables_equal(t, all_kinds(0))
        assert t.checks == [] and list(t.rank_rows("packets")) == [0] * comm.Get_size()
    comm.Barrier()


@pytest.mark.mpi
@needs_mpi_h5py
def test_mpi_parallel_writes_in_blocks(comm, shared_dir, monkeypatch):
    monkeypatch.setattr(writer, "MPIO_BLOCK_BYTES", 20)  # 2 int64 rows, 1 grid row a write
    synced, real_flush = [], h5py.File.flush

    def flush(f):
        synced.append(f.driver)
        real_flush(f)

    monkeypatch.setattr(h5py.File, "flush", flush)
    lo, n = my_rows(comm, 97)
    par, ser = write_both(comm, shared_dir, all_kinds(n, lo), attrs={})
    assert synced == (["mpio"] if comm.Get_size() > 1 else [])  # MPI_File_sync on every rank
    assert_same_trace(par, ser)
    with trace.open(par) as t:
        assert_tables_equal(t, all_kinds(97))
    comm.Barrier()


@pytest.mark.mpi
@needs_mpi_h5py
def test_mpi_parallel_refuse_and_force(comm, shared_dir):
    path = shared_dir / "t.h5"
    lo, n = my_rows(comm)
    trace.write_trace(path, comm, attrs={"v": 1}, tables=make_tables(n, lo), parallel=True)
    comm.Barrier()
    with pytest.raises(TraceError, match="use --force"):  # on every rank
        trace.write_trace(path, comm, attrs={"v": 2}, tables=make_tables(3), parallel=True)
    comm.Barrier()
    assert listing(shared_dir) == ["t.h5"]
    with trace.open(path) as t:
        assert t.attrs["v"] == 1 and t.nrows("packets") == 101
    comm.Barrier()
    # a split trace (master + parts) replaced by a parallel one: the old parts go
    trace.write_trace(
        path,
        comm,
        attrs={"v": 2},
        tables=make_tables(n, lo),
        force=True,
        parallel=False,
        consolidate=False,
    )
    comm.Barrier()
    assert len(listing(shared_dir)) == 2  # t.h5 and its parts
    lo, n = my_rows(comm, 37)
    trace.write_trace(
        path, comm, attrs={"v": 3}, tables=make_tables(n, lo), force=True, parallel=True
    )
    comm.Barrier()
    with trace.open(path) as t:
        assert t.attrs["v"] == 3
        assert_tables_equal(t, make_tables(37))
    assert_parallel_layout(path, comm.Get_size())
    comm.Barrier()
    assert listing(shared_dir) == ["t.h5"]


@pytest.mark.mpi
@needs_mpi_h5py
@pytest.mark.parametrize("existing", [False, True])
def test_mpi_parallel_failure_on_one_rank(comm, shared_dir, monkeypatch, existing):
    path, rank, last = shared_dir / "t.h5", comm.Get_rank(), comm.Get_size() - 1
    tables = make_tables(7, 7 * rank)  # every rank has rows to write
    if existing:
        trace.write_trace(path, comm, attrs={"v": 1}, tables=tables, parallel=True)
    comm.Barrier()
    before = listing(shared_dir)
    comm.Barrier()
    if rank == last:
        real_setitem = h5py.Dataset.__setitem__

        def boom(ds, key, value):
            if ds.name == "/packets/dest":
                raise OSError("quota exceeded")
            real_setitem(ds, key, value)

        monkeypatch.setattr(h5py.Dataset, "__setitem__", boom)
    with pytest.raises(TraceError, match=f"failed on rank {last}: quota exceeded"):
        trace.write_trace(path, comm, attrs={"v": 2}, tables=tables, force=True, parallel=True)
    monkeypatch.undo()
    comm.Barrier()
    assert listing(shared_dir) == before  # no temporaries; the old trace untouched
    if existing:
        with trace.open(path) as t:
            assert t.attrs["v"] == 1 and t.nrows("packets") == 7 * comm.Get_size()
    comm.Barrier()
