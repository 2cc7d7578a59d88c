"""Write a trace collectively (see :mod:`mpinet.trace` for the file layout and the rules).

Every rank validates its tables, rank 0 the target, attrs and checks; one ``allgather``
shares the outcome, so all ranks raise alike. Then each step (mkdir, parts, master and
commit; or the ``mpio`` file and commit) ends with an exchange of every rank's outcome.

The parallel path (:meth:`_Writer.parallel_file`) creates all metadata on every rank alike,
as parallel HDF5 requires, and writes raw data with independent I/O: each rank its own rows
in blocks of at most ``MPIO_BLOCK_BYTES`` (HDF5 1.10's ``mpio`` driver fails a single write
of 2 GiB or more with "can't convert from size to size_i"), rank 0 alone the checks. Before
closing, every rank flushes, which syncs the file (``MPI_File_sync``) on every rank: the
commit's ``fsync`` on rank 0 covers only the data cached on rank 0's node.

Names come from a :class:`~mpinet.trace.reserve.Reservation` (the CLI makes it before the
run; without one, :func:`write_trace` makes it first): every file is created under its
lock, and the commit publishes the final name exclusively.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import h5py
import numpy as np

from mpinet import __version__
from mpinet.engine.comm import resolve
from mpinet.errors import TraceError
from mpinet.outputs import GuardedFile, os_error_text
from mpinet.trace.columns import TABLES, column_meta
from mpinet.trace.datasets import StoppedError, create_column, fill_column, fsync_path, missing_fill
from mpinet.trace.encode import (
    attr_value,
    check_attrs,
    encode_checks,
    local_tables,
    same_schema,
)
from mpinet.trace.reserve import Reservation, reserve
from mpinet.values import env_number

LAYOUT_VERSION = "1.2"
CONSOLIDATE_MIB = 64.0
MPIO_BLOCK_BYTES = 1 << 28  # parallel path: bytes per write call, well below 2 GiB


def select_parallel(parallel: bool | None, size: int, h5py_mpi: bool) -> bool:
    """Whether to write one file with ``driver="mpio"`` (the parallel path).

    ``None`` (auto): when h5py was built with MPI and there is more than one rank. ``False``:
    never. ``True``: demands an MPI h5py (else :class:`TraceError`); one rank still writes
    serially, which gives the same file.
    """
    if parallel is None:
        return bool(h5py_mpi) and size > 1
    if parallel and not h5py_mpi:
        raise TraceError(
            "parallel=True needs h5py built with MPI (h5py.get_config().mpi is False); "
            "use parallel=None or False to write per-rank parts"
        )
    return bool(parallel) and size > 1


def select_layout(consolidate: bool | None, size: int, total_bytes: int, limit: float) -> str:
    """``"single"`` or ``"split"`` for serial h5py (see the module docstring)."""
    if consolidate is None:
        return "single" if size == 1 or total_bytes < limit * 2**20 else "split"
    return "single" if consolidate else "split"


def write_trace(
    path: str | os.PathLike,
    comm: Any,
    *,
    attrs: dict,
    tables: dict[str, dict[str, np.ndarray]],
    checks: list[dict] | None = None,
    force: bool = False,
    parallel: bool | None = None,
    consolidate: bool | None = None,
    meta: dict[str, dict[str, tuple[str, str]]] | None = None,
    reservation: Reservation | None = None,
) -> str:
    """Write a trace; collective over ``comm`` (``None``: serial).

    Parameters
    ----------
    path : str or os.PathLike
        Final file name; must not exist unless ``force`` (see
        :func:`~mpinet.trace.reserve.check_target` for every refusal).
    comm : mpi4py communicator or None
    attrs : dict
        Root attributes (str, int, float, bool or lists of one of those); rank 0's are used.
    tables : dict of dict of numpy.ndarray
        ``tables[table][column]``: this rank's rows; the file holds the concatenation over
        ranks in rank order. Every rank passes the same tables, columns, dtypes and trailing
        shapes; a rank may pass 0 rows.
    checks : list of dict, optional
        Rank 0's list of ``{name, expected, measured, ok, detail}`` (extra keys are kept).
    force : bool
        Replace an existing mpinet trace at ``path`` (atomically); never another file.
    parallel : bool or None
        See :func:`select_parallel`.
    consolidate : bool or None
        See :func:`select_layout`; ``None`` consolidates traces below the threshold.
    meta : dict, optional
        ``meta[table][column] = (units, description)``; defaults from
        :data:`mpinet.trace.columns.COLUMNS`.
    reservation : Reservation, optional
        Names reserved before the run by :func:`~mpinet.trace.reserve.reserve` for the
        same ``path`` (its ``force`` applies); the caller discards it.

    Returns
    -------
    str
        The absolute path of the trace.

    Raises
    ------
    TraceError
        On every rank alike: refused path, bad tables or attrs, or a failed write (the
        temporaries are removed and an existing trace is untouched).
    """
    comm = resolve(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    mine: dict[str, Any] = {"err": None}
    arrays: dict[str, dict[str, np.ndarray]] = {}
    try:
        arrays, mine["schema"], mine["rows"] = local_tables(tables)
        mine["nbytes"] = sum(a.nbytes for cols in arrays.values() for a in cols.values())
        if rank == 0:
            mine.update(_root_plan(path, attrs, checks, meta, reservation))
            mine["parallel"] = select_parallel(parallel, size, h5py.get_config().mpi)
    except TraceError as exc:
        mine["err"] = str(exc)
    plans = comm.allgather(mine)
    for r, p in enumerate(plans):
        if p["err"] is not None:
            raise TraceError(p["err"] if r == 0 else f"rank {r}: {p['err']}")
    plan = plans[0]
    for r, p in enumerate(plans[1:], 1):
        same_schema(plan["schema"], p["schema"], r)
    plan["rank_rows"] = {t: [p["rows"][t] for p in plans] for t in plan["schema"]}
    total = sum(p["nbytes"] for p in plans)
    layout = select_layout(consolidate, size, total, plan["limit"])
    res = reservation if reservation is not None else reserve(path, comm, force=force)
    try:
        _write(_Writer(comm, plan, res), arrays, layout, total)
    finally:
        if reservation is None:
            res.discard(final_parts=rank == 0)  # a no-op once committed
    return res.path


def _write(w: _Writer, arrays: dict, layout: str, total: int) -> None:
    """The steps of one write (see the module docstring)."""
    comm, rank, size, plan = w.comm, w.rank, w.comm.Get_size(), w.plan
    if plan["parallel"]:
        w.step(lambda: w.parallel_file(arrays))
        w.step(lambda: w.commit("parallel"))
    elif layout == "single" and (size == 1 or total < plan["limit"] * 2**20):
        # small: every rank's rows go to rank 0 in memory, no part files to copy
        gathered = {
            t: {c: comm.gather(a, root=0) for c, a in cols.items()} for t, cols in arrays.items()
        }
        w.step(lambda: rank == 0 and w.commit(w.master(lambda t, c: gathered[t][c])))
    else:
        w.step(lambda: rank == 0 and w.mkdir_parts())
        w.step(lambda: w.part(arrays, durable=layout == "split"))
        w.step(lambda: w.commit(w.from_parts(layout, size)))
    if rank != 0:
        w.res.mark_committed()


def _root_plan(
    path: Any, attrs: Any, checks: Any, meta: Any, reservation: Reservation | None
) -> dict[str, Any]:
    """Rank 0's decisions: attrs, checks and metadata validated, the consolidation limit."""
    if reservation is not None and os.path.abspath(os.fspath(path)) != reservation.path:
        raise TraceError(f"trace path {path} is not the reserved {reservation.path}")
    check_attrs(attrs)
    encode_checks(checks)  # validate now; encoded where written
    if meta is not None and not isinstance(meta, dict):
        raise TraceError(f"meta must be a dict of dicts of (units, description), got {meta!r:.60}")
    # validated before any work (cli.get_comm): a bad value never surfaces after the run
    limit = env_number("MPINET_TRACE_CONSOLIDATE_MIB", CONSOLIDATE_MIB)
    checks = None if checks is None else list(checks)
    return dict(attrs=attrs, checks=checks, meta=meta, limit=limit)


class _Writer:
    """The steps of one write; rank 0 owns the master and the parts directory."""

    def __init__(self, comm: Any, plan: dict[str, Any], res: Reservation) -> None:
        self.comm, self.plan, self.rank, self.res = comm, plan, comm.Get_rank(), res
        self.path, self.tmp, self.tmp_parts = res.path, res.tmp, res.tmp_parts
        self._failed: Callable[[], bool] = bool

    def step(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` here, share every rank's outcome, raise on all ranks if one failed."""
        err, exc = None, None
        try:
            fn()
        except OSError as e:
            err, exc = os_error_text(e, self.path), e
        except Exception as e:
            err, exc = (str(e) if isinstance(e, TraceError) else f"{type(e).__name__}: {e}"), e
        if err is not None:
            err = " ".join(err.split())  # one line, whatever the library said
        errs = self.comm.allgather(err)
        bad = [(r, e) for r, e in enumerate(errs) if e is not None]
        if bad:
            if self.rank == 0:
                self.res.discard(final_parts=True)
            self.comm.Barrier()
            r, e = bad[0]
            raise TraceError(f"writing trace {self.path} failed on rank {r}: {e}") from exc

    def _open(self, name: str, mode: str, **kw: Any) -> h5py.File:
        """Create a file under the reservation's lock (the parallel path's ``mpio`` file)."""
        self.res.check_alive()
        with self.res.guard():
            return h5py.File(name, mode, track_order=True, **kw)

    @contextlib.contextmanager
    def _guarded(self, name: str, exclusive: bool = False) -> Iterator[h5py.File]:
        """A new HDF5 file written through a :class:`~mpinet.outputs.GuardedFile`.

        A full disk or an I/O error stops the write and raises one line after HDF5 closed
        the file normally (HDF5 2.0 crashes closing a file whose write failed).
        """
        self.res.check_alive()
        with self.res.guard():
            if exclusive:
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            guard = GuardedFile(name)
        self._failed = lambda: guard.error is not None
        try:
            with h5py.File(guard, "w", track_order=True) as f, contextlib.suppress(StoppedError):
                yield f
        finally:
            guard.close()
            self._failed = bool
        if guard.error is not None:
            raise TraceError(os_error_text(guard.error, name))

    def _describe(self, ds: h5py.Dataset, table: str, col: str) -> None:
        units, description = column_meta(table, col, self.plan["meta"])
        ds.attrs["units"] = units
        ds.attrs["description"] = description

    def _root(self, f: h5py.File, layout: str, nparts: int, data: bool = True) -> None:
        """Root attributes and ``/checks``; ``data=False`` creates the checks unwritten and
        unfiltered (the parallel path, where rank 0 alone writes them)."""
        for key, value in self.plan["attrs"].items():
            f.attrs[key] = attr_value(key, value)
        f.attrs["layout_version"] = LAYOUT_VERSION
        f.attrs["mpinet_version"] = __version__
        f.attrs["layout"] = layout
        f.attrs["parts_dir"] = self.res.parts_name if layout == "split" else ""
        f.attrs["nparts"] = nparts
        if layout == "split":  # what plain h5py cannot tell: the files the data lives in
            names = [f"{self.res.parts_name}/rank{r:05d}.h5" for r in range(nparts)]
            f.attrs["parts"] = np.array(names, dtype=h5py.string_dtype())
        if (checks := encode_checks(self.plan["checks"])) is not None:
            g = f.create_group("checks", track_order=True)
            g.attrs["description"] = TABLES["checks"]
            parallel = layout == "parallel"
            for k, col in checks.items():
                ds = create_column(g, k, col.dtype, col.shape, not parallel)
                if data:
                    ds[...] = col
                self._describe(ds, "checks", k)
            json_cols = [k for k in checks if k not in ("name", "detail", "ok")]
            g.attrs["json_columns"] = np.array(json_cols, dtype=h5py.string_dtype())

    def _tables(self, f: h5py.File, make: Callable[[h5py.Group, str, np.dtype, tuple], Any]):
        for t, cols in self.plan["schema"].items():
            g = f.create_group(t, track_order=True)
            rows = self.plan["rank_rows"][t]
            g.attrs["rank_rows"] = np.array(rows, dtype=np.int64)
            g.attrs["description"] = TABLES.get(t, "")
            for c, (dt, trail) in cols.items():
                make(g, c, np.dtype(dt), (sum(rows), *trail))
                self._describe(g[c], t, c)

    def master(self, pieces: Callable[[str, str], Sequence[Any]], nparts: int = 0) -> str:
        """Write a self-contained file at the temporary name from ``pieces(table, col)``."""
        with self._guarded(self.tmp) as f:  # the reserved (empty) file
            self._root(f, "single", nparts)

            def make(g: h5py.Group, c: str, dt: np.dtype, shape: tuple) -> None:
                fill_column(
                    create_column(g, c, dt, shape, True), pieces(g.name[1:], c), self._failed
                )

            self._tables(f, make)
        return "single"

    def mkdir_parts(self) -> None:
        self.res.check_alive()
        with self.res.guard():
            os.mkdir(self.tmp_parts)

    def part(self, arrays: dict[str, dict[str, np.ndarray]], durable: bool) -> None:
        name = os.path.join(self.tmp_parts, f"rank{self.rank:05d}.h5")
        with self._guarded(name, exclusive=True) as f:
            f.attrs["rank"] = self.rank
            f.attrs["token"] = self.res.token
            for t, cols in arrays.items():
                g = f.create_group(t, track_order=True)
                for c, a in cols.items():
                    fill_column(create_column(g, c, a.dtype, a.shape, True), [a], self._failed)
        if durable:
            fsync_path(name)

    def from_parts(self, layout: str, size: int) -> str:
        """Rank 0: the master over the finished parts, consolidated or virtual."""
        if self.rank != 0:
            return layout
        names = [f"rank{r:05d}.h5" for r in range(size)]
        if layout == "single":
            files = [h5py.File(os.path.join(self.tmp_parts, n), "r") for n in names]
            try:
                self.master(lambda t, c: [pf[t][c] for pf in files], nparts=0)
            finally:
                for pf in files:
                    pf.close()
            return layout
        with self._guarded(self.tmp) as f:
            self._root(f, "split", size)
            parts = self.res.parts_name

            def make(g: h5py.Group, c: str, dt: np.dtype, shape: tuple) -> None:
                if shape[0] == 0:
                    create_column(g, c, dt, shape, True)
                    return
                vl = h5py.VirtualLayout(shape=shape, dtype=dt)
                off = 0
                for n, rows in zip(names, self.plan["rank_rows"][g.name[1:]], strict=True):
                    if rows:
                        src = f"{parts}/{n}".replace("%", "%%")  # HDF5 escapes %
                        vs = h5py.VirtualSource(src, f"{g.name}/{c}", (rows, *shape[1:]))
                        vl[off : off + rows] = vs
                        off += rows
                # rows of a lost part read as this value in plain h5py (no error there)
                fill = missing_fill(dt)
                ds = g.create_virtual_dataset(c, vl, fillvalue=fill)
                if fill is not None:
                    ds.attrs["missing_value"] = np.array(fill, dtype=dt)

            self._tables(f, make)
        return layout

    def parallel_file(self, arrays: dict[str, dict[str, np.ndarray]]) -> None:
        """All ranks: one ``mpio`` file, each rank writing its slice independently.

        Collective calls (create, attributes, flush, close) run on every rank even after a
        write failed here; the failure is raised afterwards and shared by :meth:`step`.
        """
        err = None
        with self._open(self.tmp, "w", driver="mpio", comm=self.comm) as f:
            # metadata on every rank alike; the checks' bytes from rank 0 only (no overlap)
            self._root(f, "parallel", 0, data=self.rank == 0)

            def make(g: h5py.Group, c: str, dt: np.dtype, shape: tuple) -> None:
                nonlocal err
                ds = create_column(g, c, dt, shape, False)
                rows = self.plan["rank_rows"][g.name[1:]]
                off, n = sum(rows[: self.rank]), rows[self.rank]
                block = max(1, MPIO_BLOCK_BYTES // max(1, dt.itemsize * math.prod(shape[1:])))
                try:
                    a = arrays[g.name[1:]][c]
                    for i in range(0, n, block):
                        k = min(block, n - i)
                        ds[off + i : off + i + k] = a[i : i + k]
                except Exception as e:  # keep going: the rest is collective
                    err = err or e

            self._tables(f, make)
            f.flush()  # collective: MPI_File_sync on every rank, so the commit is durable
        if err is not None:
            raise err

    def commit(self, layout: str) -> None:
        """Rank 0: fsync, then publish the parts (split) and the file under final names."""
        if self.rank != 0:
            return
        if delay := env_number("MPINET_TEST_WRITE_DELAY", 0):
            time.sleep(delay)  # tests: a signal or a rival run during the write
        self.res.check_alive()
        fsync_path(self.tmp)
        if layout == "split":
            fsync_path(self.tmp_parts, directory=True)
        self.res.publish(split=layout == "split")
