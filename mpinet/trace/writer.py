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
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
import shutil
from collections.abc import Callable, Sequence
from typing import Any

import h5py
import numpy as np

from mpinet import __version__
from mpinet.engine.comm import resolve
from mpinet.errors import TraceError
from mpinet.trace.encode import _attr_value, _encode_checks, _local_tables, _same_schema

LAYOUT_VERSION = "1.0"
CONSOLIDATE_MIB = 64.0
CHUNK_BYTES = 1 << 20
COMPRESS_MIN_BYTES = 1 << 20  # smaller columns are stored plain
BLOCK_CHUNKS = 8  # rows copied per write call, in chunks
MPIO_BLOCK_BYTES = 1 << 28  # parallel path: bytes per write call, well below 2 GiB
FILTERS: dict[str, Any] = {"compression": "gzip", "compression_opts": 1, "shuffle": True}
RESERVED_ATTRS = ("layout_version", "mpinet_version", "layout", "parts_dir", "nparts")


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
) -> str:
    """Write a trace; collective over ``comm`` (``None``: serial).

    Parameters
    ----------
    path : str or os.PathLike
        Final file name; must not exist unless ``force``.
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
        Replace an existing ``path`` (atomically).
    parallel : bool or None
        See :func:`select_parallel`.
    consolidate : bool or None
        See :func:`select_layout`; ``None`` consolidates traces below the threshold.

    Returns
    -------
    str
        The absolute path of the trace.

    Raises
    ------
    TraceError
        On every rank alike: ``path`` exists, bad tables or attrs, or a failed write.
    """
    comm = resolve(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    mine: dict[str, Any] = {"err": None}
    arrays: dict[str, dict[str, np.ndarray]] = {}
    try:
        arrays, mine["schema"], mine["rows"] = _local_tables(tables)
        mine["nbytes"] = sum(a.nbytes for cols in arrays.values() for a in cols.values())
        if rank == 0:
            mine.update(_root_plan(path, force, attrs, checks))
            mine["parallel"] = select_parallel(parallel, size, h5py.get_config().mpi)
    except TraceError as exc:
        mine["err"] = str(exc)
    plans = comm.allgather(mine)
    for r, p in enumerate(plans):
        if p["err"] is not None:
            raise TraceError(p["err"] if r == 0 else f"rank {r}: {p['err']}")
    plan = plans[0]
    for r, p in enumerate(plans[1:], 1):
        _same_schema(plan["schema"], p["schema"], r)
    plan["rank_rows"] = {t: [p["rows"][t] for p in plans] for t in plan["schema"]}
    total = sum(p["nbytes"] for p in plans)
    layout = select_layout(consolidate, size, total, plan["limit"])
    w = _Writer(comm, plan)
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
        w.step(lambda: rank == 0 and os.mkdir(w.tmp_parts))
        w.step(lambda: w.part(arrays, durable=layout == "split"))
        w.step(lambda: w.commit(w.from_parts(layout, size)))
    return plan["path"]


def _root_plan(path: Any, force: bool, attrs: Any, checks: Any) -> dict[str, Any]:
    """Rank 0's decisions: the target, the token, attrs and checks, validated."""
    full = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(full)
    if not os.path.isdir(folder):
        raise TraceError(f"cannot write trace {full}: directory {folder} does not exist")
    if os.path.isdir(full):
        raise TraceError(f"cannot write trace {full}: it is a directory")
    old_parts = None
    if os.path.lexists(full):
        if not force:
            raise TraceError(f"trace {full} exists; use --force (force=True) to replace it")
        old_parts = _old_parts_dir(full)
    if not isinstance(attrs, dict):
        raise TraceError(f"attrs must be a dict, got {type(attrs).__name__}")
    for key, value in attrs.items():
        if key in RESERVED_ATTRS:
            raise TraceError(f"attribute {key!r} is set by the trace writer itself")
        _attr_value(key, value)
    token = secrets.token_hex(4)  # a clash is caught: mkdir and rename refuse existing names
    _encode_checks(checks)  # validate now; encoded where written
    limit = float(os.environ.get("MPINET_TRACE_CONSOLIDATE_MIB", CONSOLIDATE_MIB))
    checks = None if checks is None else list(checks)
    return dict(
        path=full, token=token, old_parts=old_parts, attrs=attrs, checks=checks, limit=limit
    )


def _old_parts_dir(full: str) -> str | None:
    """The parts directory of the trace at ``full`` if it is a split mpinet trace."""
    try:
        with h5py.File(full, "r") as f:
            parts = f.attrs.get("parts_dir", "")
    except Exception:
        return None
    parts = parts.decode() if isinstance(parts, bytes) else str(parts)
    name = re.escape(os.path.basename(full))
    if re.fullmatch(rf"{name}\.parts-[0-9a-f]{{8}}", parts):
        return os.path.join(os.path.dirname(full), parts)
    return None


def _create(g: h5py.Group, name: str, dtype: Any, shape: tuple, filters: bool) -> h5py.Dataset:
    """A column dataset: chunked (~1 MiB) and compressed unless empty, smaller than
    ``COMPRESS_MIN_BYTES`` (compressing it costs more time than it saves), or
    ``filters`` is off."""
    nbytes = np.dtype(dtype).itemsize * math.prod(shape)
    if not filters or nbytes < COMPRESS_MIN_BYTES:
        return g.create_dataset(name, shape=shape, dtype=dtype)
    rowbytes = np.dtype(dtype).itemsize * math.prod(shape[1:])
    rows = max(1, min(shape[0], CHUNK_BYTES // rowbytes))
    return g.create_dataset(name, shape=shape, dtype=dtype, chunks=(rows, *shape[1:]), **FILTERS)


def _fill(ds: h5py.Dataset, pieces: Sequence[Any]) -> None:
    """Write the concatenation of ``pieces`` (arrays or datasets) in whole-chunk blocks."""
    if ds.size == 0:
        return
    block = (ds.chunks[0] if ds.chunks else ds.shape[0]) * BLOCK_CHUNKS
    buf = np.empty((min(block, ds.shape[0]), *ds.shape[1:]), ds.dtype)
    off = held = 0
    for src in pieces:
        i, n = 0, src.shape[0]
        while i < n:
            k = min(len(buf) - held, n - i)
            buf[held : held + k] = src[i : i + k]
            held, i = held + k, i + k
            if held == len(buf):
                ds[off : off + held] = buf
                off, held = off + held, 0
    if held:
        ds[off : off + held] = buf[:held]


def _fsync(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Writer:
    """The names and steps of one write; rank 0 owns the master and the parts directory."""

    def __init__(self, comm: Any, plan: dict[str, Any]) -> None:
        self.comm, self.plan, self.rank = comm, plan, comm.Get_rank()
        self.path = plan["path"]
        folder, name = os.path.split(self.path)
        tok = plan["token"]
        self.folder = folder
        self.parts_name = f"{name}.parts-{tok}"
        self.parts = os.path.join(folder, self.parts_name)
        self.tmp_parts = os.path.join(folder, f".{name}.parts-{tok}.tmp")
        self.tmp = os.path.join(folder, f".{name}.tmp-{tok}")
        self.committed = False

    def step(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` here, share every rank's outcome, raise on all ranks if one failed."""
        err, exc = None, None
        try:
            fn()
        except Exception as e:
            err, exc = (str(e) if isinstance(e, TraceError) else f"{type(e).__name__}: {e}"), e
        errs = self.comm.allgather(err)
        bad = [(r, e) for r, e in enumerate(errs) if e is not None]
        if bad:
            if self.rank == 0 and not self.committed:
                for d in (self.tmp_parts, self.parts):
                    shutil.rmtree(d, ignore_errors=True)
                with contextlib.suppress(OSError):
                    os.remove(self.tmp)
            self.comm.Barrier()
            r, e = bad[0]
            raise TraceError(f"writing trace {self.path} failed on rank {r}: {e}") from exc

    def _root(self, f: h5py.File, layout: str, nparts: int, data: bool = True) -> None:
        """Root attributes and ``/checks``; ``data=False`` creates the checks unwritten."""
        for key, value in self.plan["attrs"].items():
            f.attrs[key] = _attr_value(key, value)
        f.attrs["layout_version"] = LAYOUT_VERSION
        f.attrs["mpinet_version"] = __version__
        f.attrs["layout"] = layout
        f.attrs["parts_dir"] = self.parts_name if layout == "split" else ""
        f.attrs["nparts"] = nparts
        if (checks := _encode_checks(self.plan["checks"])) is not None:
            g = f.create_group("checks", track_order=True)
            for k, col in checks.items():
                if data:
                    g.create_dataset(k, data=col)
                else:
                    g.create_dataset(k, shape=col.shape, dtype=col.dtype)
            json_cols = [k for k in checks if k not in ("name", "detail", "ok")]
            g.attrs["json_columns"] = np.array(json_cols, dtype=h5py.string_dtype())

    def _tables(self, f: h5py.File, make: Callable[[h5py.Group, str, np.dtype, tuple], Any]):
        for t, cols in self.plan["schema"].items():
            g = f.create_group(t, track_order=True)
            rows = self.plan["rank_rows"][t]
            g.attrs["rank_rows"] = np.array(rows, dtype=np.int64)
            for c, (dt, trail) in cols.items():
                make(g, c, np.dtype(dt), (sum(rows), *trail))

    def master(self, pieces: Callable[[str, str], Sequence[Any]], nparts: int = 0) -> str:
        """Write a self-contained file at the temporary name from ``pieces(table, col)``."""
        with h5py.File(self.tmp, "x", track_order=True) as f:
            self._root(f, "single", nparts)

            def make(g: h5py.Group, c: str, dt: np.dtype, shape: tuple) -> None:
                _fill(_create(g, c, dt, shape, True), pieces(g.name[1:], c))

            self._tables(f, make)
        return "single"

    def part(self, arrays: dict[str, dict[str, np.ndarray]], durable: bool) -> None:
        name = os.path.join(self.tmp_parts, f"rank{self.rank:05d}.h5")
        with h5py.File(name, "x", track_order=True) as f:
            f.attrs["rank"] = self.rank
            f.attrs["token"] = self.plan["token"]
            for t, cols in arrays.items():
                g = f.create_group(t, track_order=True)
                for c, a in cols.items():
                    _fill(_create(g, c, a.dtype, a.shape, True), [a])
        if durable:
            _fsync(name)

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
        with h5py.File(self.tmp, "x", track_order=True) as f:
            self._root(f, "split", size)

            def make(g: h5py.Group, c: str, dt: np.dtype, shape: tuple) -> None:
                if shape[0] == 0:
                    g.create_dataset(c, shape=shape, dtype=dt)
                    return
                vl = h5py.VirtualLayout(shape=shape, dtype=dt)
                off = 0
                for n, rows in zip(names, self.plan["rank_rows"][g.name[1:]], strict=True):
                    if rows:
                        src = f"{self.parts_name}/{n}".replace("%", "%%")  # HDF5 escapes %
                        vs = h5py.VirtualSource(src, f"{g.name}/{c}", (rows, *shape[1:]))
                        vl[off : off + rows] = vs
                        off += rows
                g.create_virtual_dataset(c, vl)

            self._tables(f, make)
        return layout

    def parallel_file(self, arrays: dict[str, dict[str, np.ndarray]]) -> None:
        """All ranks: one ``mpio`` file, each rank writing its slice independently.

        Collective calls (create, attributes, flush, close) run on every rank even after a
        write failed here; the failure is raised afterwards and shared by :meth:`step`.
        """
        err = None
        with h5py.File(self.tmp, "x", driver="mpio", comm=self.comm, track_order=True) as f:
            # metadata on every rank alike; the checks' bytes from rank 0 only (no overlap)
            self._root(f, "parallel", 0, data=self.rank == 0)

            def make(g: h5py.Group, c: str, dt: np.dtype, shape: tuple) -> None:
                nonlocal err
                ds = _create(g, c, dt, shape, False)
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
        """Rank 0: fsync, move the parts (split) and then the master into place."""
        if self.rank != 0:
            return
        _fsync(self.tmp)
        if layout == "split":
            _fsync(self.tmp_parts, directory=True)
            os.rename(self.tmp_parts, self.parts)
        os.replace(self.tmp, self.path)
        self.committed = True  # the rest is best effort: the new trace is in place
        with contextlib.suppress(OSError):
            _fsync(self.folder, directory=True)
        for d in (self.tmp_parts, self.plan["old_parts"]):
            if d and d != self.parts:
                shutil.rmtree(d, ignore_errors=True)
