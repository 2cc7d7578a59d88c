"""Read a trace without MPI: attributes, tables by column or in chunks, checks.

A split trace (see :mod:`mpinet.trace`) reads through its virtual datasets; the reader
first checks that every part file is where the master says, because HDF5 would silently
return zeros for a missing one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import h5py
import numpy as np

from mpinet import __version__
from mpinet.errors import TraceError
from mpinet.trace.writer import LAYOUT_VERSION

DEFAULT_CHUNK_ROWS = 1 << 20


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


def open_trace(path: str | os.PathLike) -> Trace:
    """Open the trace at ``path`` for reading (:class:`Trace`; use it as a context manager).

    Raises
    ------
    TraceError
        Missing file, not an mpinet trace, unknown layout major version, missing parts.
    """
    return Trace(path)


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
        try:
            self._f = h5py.File(self.path, "r")
        except OSError as exc:
            raise TraceError(f"cannot open trace {self.path}: {exc}") from None
        try:
            self._attrs = {k: _py(v) for k, v in self._f.attrs.items()}
            self._check_version()
            self._check_parts()
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
            raise TraceError(
                f"split trace {self.path} reads its data from {parts}, which lacks "
                f"{len(missing)} of {len(names)} part files (e.g. {missing[0]}); "
                "keep the file and that directory side by side"
            )

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
        return {c: ds[()] for c, ds in self._datasets(name, columns).items()}

    def column(self, table: str, col: str) -> np.ndarray:
        """Read one column into memory."""
        return self._datasets(table, [col])[col][()]

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
            yield {c: ds[start:stop] for c, ds in dsets.items()}

    @property
    def checks(self) -> list[dict[str, Any]]:
        """The checks as a list of dicts (``[]`` if none were written)."""
        if "checks" not in self._f:
            return []
        g = self._f["checks"]
        json_cols = set(_py(g.attrs.get("json_columns", np.zeros(0))))
        cols: dict[str, list] = {}
        for k, ds in g.items():
            raw = ds[()].tolist()
            if k in json_cols:
                cols[k] = [json.loads(v.decode()) for v in raw]
            elif ds.dtype.kind == "S":
                cols[k] = [v.decode() for v in raw]
            else:
                cols[k] = raw
        n = len(next(iter(cols.values()), []))
        return [{k: v[i] for k, v in cols.items()} for i in range(n)]

    def to_pandas(self, table: str, columns: list[str] | None = None) -> Any:
        """``table`` as a pandas DataFrame; a 2-D column ``c`` becomes ``c_0, c_1, ...``."""
        try:
            import pandas as pd
        except ImportError:
            raise TraceError("Trace.to_pandas needs pandas: pip install pandas") from None
        data: dict[str, np.ndarray] = {}
        for c, a in self.table(table, columns).items():
            if a.ndim == 1:
                data[c] = a
            else:
                flat = a.reshape(len(a), -1)
                data.update({f"{c}_{j}": flat[:, j] for j in range(flat.shape[1])})
        return pd.DataFrame(data)
