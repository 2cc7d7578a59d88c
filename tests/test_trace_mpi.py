"""Trace files under MPI: concatenation in rank order, split and consolidated layouts,
refusal and ``force``, a failure on one rank; and the parallel-h5py path (skipped where
h5py is serial). Serial tests: tests/test_trace.py.

MPI tests run under ``mpiexec -n R python -m pytest --with-mpi -m mpi`` and share a directory
made by rank 0; every rank passes a different number of rows (rank 1 none, rank 2 the most).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from trace_helpers import ATTRS, CHECKS, assert_tables_equal, listing, make_tables

import mpinet.trace as trace
from mpinet.errors import TraceError
from mpinet.trace import writer


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
