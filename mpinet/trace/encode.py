"""Validation and encoding of what a trace stores (tables, attributes, checks).

Split from :mod:`mpinet.trace.writer`: every rank validates its own tables
before anything is written; attributes and checks are encoded for HDF5 here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from mpinet.errors import TraceError

CHECK_KEYS = ("name", "expected", "measured", "ok", "detail")
#: root attributes only the writer sets
RESERVED_ATTRS = ("layout_version", "mpinet_version", "layout", "parts_dir", "nparts", "parts")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_KINDS = "biufcS"

Schema = dict[str, dict[str, tuple[str, tuple[int, ...]]]]


def local_tables(tables: Any) -> tuple[dict, Schema, dict[str, int]]:
    if not isinstance(tables, dict):
        raise TraceError(f"tables must be a dict of dicts of arrays, got {type(tables).__name__}")
    arrays: dict[str, dict[str, np.ndarray]] = {}
    schema: Schema = {}
    rows: dict[str, int] = {}
    for t, cols in tables.items():
        if not isinstance(t, str) or not _NAME.fullmatch(t) or t == "checks":
            raise TraceError(f"bad table name {t!r} (letters, digits, _.-; not 'checks')")
        if not isinstance(cols, dict) or not cols:
            raise TraceError(f"table {t!r} must be a non-empty dict of column arrays")
        arrays[t], schema[t] = {}, {}
        for c, val in cols.items():
            if not isinstance(c, str) or not _NAME.fullmatch(c):
                raise TraceError(f"bad column name {c!r} in table {t!r}")
            a = np.asarray(val)
            if a.ndim == 0 or a.dtype.kind not in _KINDS:
                raise TraceError(
                    f"column {t}/{c} must be an array of numbers, bools or bytes with >= 1 "
                    f"dimension, got dtype {a.dtype} shape {a.shape}"
                )
            if len(a) != len(next(iter(arrays[t].values()), a)):
                raise TraceError(f"columns of table {t!r} differ in length ({c!r}: {len(a)})")
            arrays[t][c], schema[t][c] = a, (a.dtype.str, a.shape[1:])
        rows[t] = len(a)
    return arrays, schema, rows


def same_schema(ref: Schema, other: Schema, r: int) -> None:
    if list(ref) != list(other):
        raise TraceError(f"rank {r} passes tables {list(other)}, rank 0 passes {list(ref)}")
    for t, cols in ref.items():
        if cols != other[t]:
            raise TraceError(
                f"table {t!r}: rank {r} passes columns {other[t]}, rank 0 passes {cols} "
                "(names, dtypes and trailing shapes must agree)"
            )


def check_attrs(attrs: Any) -> None:
    """Raise :class:`TraceError` unless every root attribute in ``attrs`` can be stored.

    Run before the work starts (``mpinet.jobs.run_plan.plan``), so that a value the trace
    cannot hold (an int outside 64 bits, a dict) is refused before any result exists.
    """
    if not isinstance(attrs, dict):
        raise TraceError(f"attrs must be a dict, got {type(attrs).__name__}")
    for key, value in attrs.items():
        if key in RESERVED_ATTRS:
            raise TraceError(f"attribute {key!r} is set by the trace writer itself")
        attr_value(key, value)


def attr_value(key: Any, value: Any) -> Any:
    """``value`` as stored in HDF5, or :class:`TraceError`."""
    if not isinstance(key, str) or not key:
        raise TraceError(f"attribute names must be non-empty strings, got {key!r}")
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        a = np.asarray(value)
        if a.dtype == object:
            raise TraceError(
                f"attribute {key!r}: {value!r} does not fit 64 bits "
                f"(integers from {-(2**63)} to {2**64 - 1})"
            )
        return a[()]
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
        if items and all(isinstance(v, str) for v in items):
            import h5py  # here: checking a job's attributes needs none of it

            return np.array(items, dtype=h5py.string_dtype())
        a = np.asarray(items if items else np.zeros(0))
        if a.ndim == 1 and a.dtype.kind in "biuf":
            return a
    raise TraceError(
        f"attribute {key!r} must be a str, int, float, bool or a list of one of those, "
        f"got {value!r:.60}"
    )


def _json(value: Any) -> str:
    def default(o: Any) -> Any:
        if isinstance(o, (np.generic, np.ndarray)):
            return o.tolist()
        raise TypeError(f"{type(o).__name__} is not JSON serializable")

    try:
        return json.dumps(value, default=default)
    except (TypeError, ValueError) as exc:
        raise TraceError(f"check value {value!r:.60} cannot be stored: {exc}") from None


def encode_checks(checks: Any) -> dict[str, np.ndarray] | None:
    if checks is None:
        return None
    if not isinstance(checks, (list, tuple)) or not all(isinstance(c, dict) for c in checks):
        raise TraceError("checks must be a list of dicts")
    keys = list(CHECK_KEYS)
    for c in checks:
        if missing := [k for k in CHECK_KEYS if k not in c]:
            raise TraceError(f"check {c.get('name', c)!r} lacks {missing}")
        keys += [k for k in c if k not in keys]
    out: dict[str, np.ndarray] = {}
    for k in keys:
        vals = [c.get(k) for c in checks]
        if k == "ok":
            if not all(isinstance(v, (bool, np.bool_)) for v in vals):
                raise TraceError("check field 'ok' must be a bool")
            out[k] = np.array(vals, dtype=bool)
            continue
        if k in ("name", "detail") and not all(isinstance(v, str) for v in vals):
            raise TraceError(f"check field {k!r} must be a str")
        text = [(v if k in ("name", "detail") else _json(v)).encode() for v in vals]
        import h5py  # here: checking a job's attributes needs none of it

        out[k] = np.array(text, dtype=h5py.string_dtype("utf-8", max([1, *map(len, text)])))
    return out
