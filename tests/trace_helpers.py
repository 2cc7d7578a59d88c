"""What the trace tests share: a deterministic trace's tables, checks and attributes, and
the comparison of a trace read back with what was written."""

from __future__ import annotations

import os

import numpy as np

import mpinet.trace as trace

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
    """``t`` holds exactly ``expected``'s tables, columns, dtypes, shapes and values."""
    assert t.tables == list(expected)
    for name, cols in expected.items():
        got = t.table(name)
        assert list(got) == list(cols)
        for c, a in cols.items():
            assert got[c].dtype == a.dtype and got[c].shape == a.shape, (name, c)
            np.testing.assert_array_equal(got[c], a)


def listing(d) -> list[str]:
    """The names in directory ``d``, sorted."""
    return sorted(os.listdir(d))
