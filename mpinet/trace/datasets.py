"""The column datasets of a trace file: layout, filters, block copies, fill values."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import h5py
import numpy as np

CHUNK_BYTES = 1 << 20
COMPRESS_MIN_BYTES = 1 << 20  # smaller columns are stored plain
BLOCK_CHUNKS = 8  # rows copied per write call, in chunks
FILTERS: dict[str, Any] = {"compression": "gzip", "compression_opts": 1, "shuffle": True}


def missing_fill(dt: np.dtype) -> Any:
    """A fill value no mpinet column holds, for rows of a split trace whose part is lost."""
    if dt.kind == "i":
        return np.iinfo(dt).min
    if dt.kind == "u":
        return np.iinfo(dt).max
    if dt.kind in "fc":
        return np.nan
    return None  # bool and bytes: HDF5's default (false, empty)


def create_column(
    g: h5py.Group, name: str, dtype: Any, shape: tuple, filters: bool
) -> h5py.Dataset:
    """A column dataset: chunked (~1 MiB) with a fletcher32 checksum per chunk, and gzip
    unless smaller than ``COMPRESS_MIN_BYTES`` (compressing it costs more time than it
    saves). ``filters=False`` (the parallel path): contiguous, no checksum."""
    dt = np.dtype(dtype)
    if not filters:
        return g.create_dataset(name, shape=shape, dtype=dt)
    if math.prod(shape) == 0:  # HDF5 wants chunk sizes >= 1; unlimited extents allow it
        chunks = tuple(max(1, n) for n in shape)
        none = (None,) * len(shape)
        return g.create_dataset(
            name, shape=shape, dtype=dt, chunks=chunks, maxshape=none, fletcher32=True
        )
    rowbytes = dt.itemsize * math.prod(shape[1:])
    rows = max(1, min(shape[0], CHUNK_BYTES // rowbytes))
    extra = FILTERS if dt.itemsize * math.prod(shape) >= COMPRESS_MIN_BYTES else {}
    return g.create_dataset(
        name, shape=shape, dtype=dt, chunks=(rows, *shape[1:]), fletcher32=True, **extra
    )


class StoppedError(Exception):
    """A write into a :class:`GuardedFile` failed: stop filling, close, then report."""


def fill_column(ds: h5py.Dataset, pieces: Sequence[Any], failed: Callable[[], bool] = bool) -> None:
    """Write the concatenation of ``pieces`` (arrays or datasets) in whole-chunk blocks.

    ``failed()`` is asked after every block; once true (the disk is full) the rest is
    skipped.
    """
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
                if failed():
                    raise StoppedError
    if held:
        ds[off : off + held] = buf[:held]


def fsync_path(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
