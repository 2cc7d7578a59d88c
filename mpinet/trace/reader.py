"""Read a trace without MPI: attributes, tables by column or in chunks, checks.

A split trace (see :mod:`mpinet.trace`) reads through its virtual datasets; the reader
first checks that every part file is where the master says, because HDF5 would silently
return the fill value for a missing one. Opening also checks the structure (every column
of a table as long as the rows its ranks wrote). Every read verifies the fletcher32
checksums of the chunks it touches (HDF5 does it); a failure, like any unreadable data,
raises :class:`~mpinet.errors.CorruptTraceError` naming the dataset and the rows.
:meth:`Trace.verify` reads what has not been read yet.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import h5py
import numpy as np

from mpinet import __version__
from mpinet.errors import CorruptTraceError, TraceError
from mpinet.trace.writer import LAYOUT_VERSION

DEFAULT_CHUNK_ROWS = 1 << 20
#: rows per block read by :meth:`Trace.verify` (at most this many x the row size in memory)
VERIFY_ROWS = 1 << 18


def _py(value: Any) -> Any:
    """An HDF5 attribute value as plain Python (str, int, float, bool, list)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return [_py(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _major(version: str) -> int:
    return int(str(version).split(".")[0])


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if "filter returned failure" in text:
        return "checksum mismatch or undecodable chunk"
    return text


def open_trace(path: str | os.PathLike, verify: bool = False) -> Trace:
    """Open the trace at ``path`` for reading (:class:`Trace`; use it as a context manager).

    ``verify=True`` also reads every dataset once (:meth:`Trace.verify`).

    Raises
    ------
    TraceError
        Missing file, not an mpinet trace, unknown layout major version, missing parts.
    CorruptTraceError
        Damaged data: a truncated file, a column of the wrong length, a failed checksum.
    """
    tr = Trace(path)
    if verify:
        try:
            tr.verify()
        except BaseException:
            tr.close()
            raise
    return tr


class Trace:
    """A trace opened for reading.

    Parameters
    ----------
    path : str or os.PathLike
        The trace file (the master file of a split trace).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise TraceError(f"trace file {self.path} does not exist")
        if os.path.isdir(self.path) or not h5py.is_hdf5(self.path):
            raise TraceError(f"{self.path} is not an mpinet trace (not an HDF5 file)")
        self._read_ok: set[str] = set()  # datasets read in full: their checksums held
        try:
            self._f = h5py.File(self.path, "r")
        except Exception as exc:
            raise CorruptTraceError(
                f"cannot open trace {self.path}: the file is truncated or damaged "
                f"({_one_line(exc)})"
            ) from None
        try:
            try:
                self._attrs = {k: _py(v) for k, v in self._f.attrs.items()}
            except Exception as exc:
                raise CorruptTraceError(
                    f"trace {self.path}: the root attributes cannot be read ({_one_line(exc)})"
                ) from None
            self._check_version()
            self._check_parts()
            self._check_structure()
        except BaseException:
            self._f.close()
            raise

    def _check_version(self) -> None:
        version = self._attrs.get("layout_version")
        if version is None or "mpinet_version" not in self._attrs:
            raise TraceError(
                f"{self.path} is not an mpinet trace (no layout_version/mpinet_version attributes)"
            )
        try:
            major = _major(version)
        except ValueError:
            raise TraceError(f"{self.path} has a bad layout_version {version!r}") from None
        if major != _major(LAYOUT_VERSION):
            raise TraceError(
                f"{self.path} has trace layout version {version}, but this mpinet "
                f"({__version__}) reads layout version {LAYOUT_VERSION} "
                f"(major {_major(LAYOUT_VERSION)}); use an mpinet that writes {version}"
            )

    def _check_parts(self) -> None:
        if self._attrs.get("layout") != "split":
            return
        parts = os.path.join(os.path.dirname(os.path.abspath(self.path)), self._attrs["parts_dir"])
        names = [f"rank{r:05d}.h5" for r in range(int(self._attrs["nparts"]))]
        missing = [n for n in names if not os.path.isfile(os.path.join(parts, n))]
        if missing:
            raise CorruptTraceError(
                f"split trace {self.path} reads its data from {parts}, which lacks "
                f"{len(missing)} of {len(names)} part files (e.g. {missing[0]}); "
                "keep the file and that directory side by side"
            )

    def _check_structure(self) -> None:
        """Every column of a table has the rows its ranks wrote (a cut column does not)."""
        for name in [*self.tables, "checks"]:
            try:
                if name not in self._f:
                    continue
                g = self._f[name]
                lengths = {c: (g[c].shape or (0,))[0] for c in g}
                expected = g.attrs.get("rank_rows")
            except Exception as exc:
                raise CorruptTraceError(
                    f"trace {self.path}: table /{name} cannot be read ({_one_line(exc)})"
                ) from None
            if expected is not None:
                want = int(np.sum(expected))
            else:
                want = next(iter(lengths.values()), 0)
            for c, n in lengths.items():
                if n != want:
                    raise CorruptTraceError(
                        f"trace {self.path}: dataset /{name}/{c} has {n:,} rows, its table "
                        f"{want:,}; the column is truncated or damaged"
                    )

    def _read(self, ds: h5py.Dataset, start: int | None = None, stop: int | None = None) -> Any:
        """``ds[start:stop]`` (all of it by default), or :class:`CorruptTraceError`."""
        try:
            if start is None:
                return ds[()]
            return ds[start:stop]
        except Exception as exc:
            rows = "" if start is None else f", rows {start:,}..{stop - 1:,}"
            raise CorruptTraceError(
                f"trace {self.path}: dataset {ds.name} is damaged{rows} ({_one_line(exc)})"
            ) from None

    def verify(self) -> dict[str, Any]:
        """Read every dataset not yet read in full, verifying its checksums.

        Returns
        -------
        dict
            ``datasets``: how many were checked; ``unchecked``: datasets without a checksum
            (layout ``parallel``, or traces of layout 1.0), whose damage HDF5 cannot see.

        Raises
        ------
        CorruptTraceError
            The first dataset that cannot be read, named with its rows.
        """
        names: list[str] = []
        self._f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        unchecked = []
        for n in names:
            ds = self._f[n]
            if ds.size and not ds.fletcher32 and not ds.is_virtual:
                unchecked.append(ds.name)
            if ds.name in self._read_ok:
                continue
            n_rows = ds.shape[0] if ds.shape else 1
            step = max(1, (ds.chunks[0] if ds.chunks else VERIFY_ROWS) * 16)
            if not ds.shape:
                self._read(ds)
            for start in range(0, n_rows if ds.shape else 0, step):
                self._read(ds, start, min(n_rows, start + step))
            self._read_ok.add(ds.name)
        return {"datasets": len(names), "unchecked": unchecked}

    @property
    def job(self) -> dict[str, Any] | None:
        """The job of the run (attribute ``job``: JSON; a Python repr in layout 1.0)."""
        text = self._attrs.get("job")
        if text is None:
            return None
        try:
            return json.loads(text)
        except (TypeError, ValueError):
            pass
        try:
            return ast.literal_eval(str(text))  # layout 1.0 wrote repr(job)
        except (ValueError, SyntaxError):
            raise CorruptTraceError(f"trace {self.path}: attribute job is not JSON") from None

    def column_info(self, table: str) -> dict[str, dict[str, str]]:
        """``{column: {"units": ..., "description": ...}}`` of ``table`` (empty strings
        in traces older than layout 1.1)."""
        out = {}
        for c, ds in self._group(table).items():
            out[c] = {k: str(_py(ds.attrs.get(k, ""))) for k in ("units", "description")}
        return out

    # -- context manager -------------------------------------------------------------------
    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._f.id.valid:
            self._f.close()

    def __enter__(self) -> Trace:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<mpinet Trace {self.path!r} layout={self._attrs.get('layout')} {self.tables}>"

    # -- metadata --------------------------------------------------------------------------
    @property
    def attrs(self) -> dict[str, Any]:
        """Root attributes as plain Python values (a copy)."""
        return dict(self._attrs)

    @property
    def tables(self) -> list[str]:
        """Names of the tables, in the order they were written."""
        return [k for k, v in self._f.items() if isinstance(v, h5py.Group) and k != "checks"]

    def _group(self, table: str) -> h5py.Group:
        if table not in self.tables:
            raise TraceError(f"trace {self.path} has no table {table!r}; it has {self.tables}")
        return self._f[table]

    def columns(self, table: str) -> list[str]:
        """Column names of ``table``, in the order they were written."""
        return list(self._group(table))

    def nrows(self, table: str) -> int:
        """Number of rows of ``table`` (over all ranks)."""
        g = self._group(table)
        return int(g[next(iter(g))].shape[0])

    def rank_rows(self, table: str) -> np.ndarray:
        """Rows of ``table`` written by each rank, in rank order."""
        return np.asarray(self._group(table).attrs["rank_rows"], dtype=np.int64)

    def _datasets(self, table: str, columns: list[str] | None) -> dict[str, h5py.Dataset]:
        g = self._group(table)
        names = list(g) if columns is None else list(columns)
        if bad := [c for c in names if c not in g]:
            raise TraceError(f"table {table!r} has no column {bad[0]!r}; it has {list(g)}")
        return {c: g[c] for c in names}

    # -- data ------------------------------------------------------------------------------
    def table(self, name: str, columns: list[str] | None = None) -> dict[str, np.ndarray]:
        """Read ``columns`` (default: all) of table ``name`` into memory."""
        out = {c: self._read(ds) for c, ds in self._datasets(name, columns).items()}
        self._read_ok.update(f"/{name}/{c}" for c in out)
        return out

    def column(self, table: str, col: str) -> np.ndarray:
        """Read one column into memory."""
        return self.table(table, [col])[col]

    def iter_chunks(
        self, table: str, columns: list[str] | None = None, chunk_rows: int = DEFAULT_CHUNK_ROWS
    ) -> Iterator[dict[str, np.ndarray]]:
        """Yield ``{column: rows}`` for consecutive blocks of ``chunk_rows`` rows.

        Memory stays bounded by ``chunk_rows`` rows of the chosen columns.
        """
        if int(chunk_rows) < 1:
            raise TraceError(f"chunk_rows must be >= 1, got {chunk_rows}")
        dsets = self._datasets(table, columns)
        n = self.nrows(table)
        for start in range(0, n, int(chunk_rows)):
            stop = min(n, start + int(chunk_rows))
            yield {c: self._read(ds, start, stop) for c, ds in dsets.items()}
        self._read_ok.update(ds.name for ds in dsets.values())

    @property
    def checks(self) -> list[dict[str, Any]]:
        """The checks as a list of dicts (``[]`` if none were written)."""
        if "checks" not in self._f:
            return []
        g = self._f["checks"]
        json_cols = set(_py(g.attrs.get("json_columns", np.zeros(0))))
        cols: dict[str, list] = {}
        for k, ds in g.items():
            raw = self._read(ds).tolist()
            self._read_ok.add(ds.name)
            if k in json_cols:
                try:
                    cols[k] = [json.loads(v.decode()) for v in raw]
                except ValueError:
                    raise CorruptTraceError(
                        f"trace {self.path}: dataset {ds.name} holds text that is not JSON"
                    ) from None
            elif ds.dtype.kind == "S":
                cols[k] = [v.decode() for v in raw]
            else:
                cols[k] = raw
        n = len(next(iter(cols.values()), []))
        return [{k: v[i] for k, v in cols.items()} for i in range(n)]

    def to_pandas(self, table: str, columns: list[str] | None = None) -> Any:
        """``table`` as a pandas DataFrame; a 2-D column ``c`` becomes ``c_0, c_1, ...``."""
        try:  # here, not at the top: no command needs pandas, every trace command opens traces
            import pandas as pd
        except ImportError:
            raise TraceError(
                'Trace.to_pandas needs pandas: pip install "mpinet[analysis]" '
                "(or pip install pandas)"
            ) from None
        data: dict[str, np.ndarray] = {}
        for c, a in self.table(table, columns).items():
            if a.ndim == 1:
                data[c] = a
            else:
                flat = a.reshape(len(a), -1)
                data.update({f"{c}_{j}": flat[:, j] for j in range(flat.shape[1])})
        return pd.DataFrame(data)
