"""A kernel's argument types kept on disk, and its load from numba's cache in a thread
(:mod:`mpinet.engine.flit.direct`: ``remember``, ``memo``, ``preload``): a fresh process's
first call then types nothing and loads nothing, and gets numba's own entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import namedtuple

import numpy as np
import pytest

from mpinet.engine.flit import chunk, direct, rank_loop
from mpinet.engine.flit import engine as fe

KERNEL = """\
from collections import namedtuple
import numba
from mpinet import numba_cache  # noqa: F401

Pair = namedtuple("Pair", "a b")

@numba.njit(cache=True)
def f(p, x, k):
    return p.a.sum() * k + p.b[0] + x.sum()
"""

#: a fresh process: the kept key's kernel preloaded, then called through Direct
FRESH = """\
import numpy as np
from mpinet.engine.compile_clock import CompileClock
from mpinet.engine.flit import direct
import kmod

typed = []
own = direct.arg_type
direct.arg_type = lambda a: typed.append(1) or own(a)
with CompileClock() as clock:
    direct.preload((kmod.f,))
    direct._THREAD[0].join()
    n_loaded = len(clock.load_spans)
    p = kmod.Pair(np.arange(3.0), np.ones(2, np.int64))
    out = direct.Direct(kmod.f)(p, np.arange(4), 2)
sig = next(iter(kmod.f.overloads))
print(out, n_loaded, len(typed), clock.kernels, sig == tuple(own(a) for a in (p, np.arange(4), 2)))
"""


def _run(tmp_path, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True, env=env).stdout.strip()  # fmt: skip


def _first(tmp_path) -> None:
    """The kernel compiled and called once through Direct: numba's cache and the kept key."""
    (tmp_path / "kmod.py").write_text(KERNEL)
    code = ("import numpy as np, kmod\nfrom mpinet.engine.flit import direct\n"
            "p = kmod.Pair(np.arange(3.0), np.ones(2, np.int64))\n"
            "print(direct.Direct(kmod.f)(p, np.arange(4), 2))")  # fmt: skip
    assert _run(tmp_path, code) == "13.0"  # (0 + 1 + 2) * 2 + 1 + (0 + 1 + 2 + 3)


def test_a_fresh_process_types_nothing_and_loads_in_the_thread(tmp_path):
    _first(tmp_path)
    assert list(tmp_path.glob("__pycache__/kmod.f-*.mpinet-keys"))
    # the load happened in the thread (one load, before the call), nothing typed or compiled,
    # and the entry point is numba's for the types numba's dispatch gives the arguments
    assert _run(tmp_path, FRESH) == "13.0 1 0 [] True"


def test_a_key_whose_kernel_is_not_cached_is_neither_loaded_nor_compiled(tmp_path):
    _first(tmp_path)
    for f in tmp_path.glob("__pycache__/kmod.f-*.nb[ic]"):
        f.unlink()
    # the thread finds no cached kernel: it loads and compiles nothing; the call compiles
    out = _run(tmp_path, FRESH).split(" ")
    assert out[:2] == ["13.0", "0"] and "kmod.f" in out[3]


def test_a_stale_or_unreadable_memo_is_not_used(tmp_path):
    _first(tmp_path)
    (memo,) = tmp_path.glob("__pycache__/kmod.f-*.mpinet-keys")
    memo.write_bytes(b"not a pickle")
    out = _run(tmp_path, FRESH).split(" ")
    assert out[:2] == ["13.0", "0"] and out[2] != "0"  # typed again, the file rewritten
    assert _run(tmp_path, FRESH) == "13.0 1 0 [] True"
    # an edit of the kernel's source: numba's stamp changes, the kept keys with it
    src = tmp_path / "kmod.py"
    src.write_text(KERNEL + "\n# edited\n")
    st = os.stat(src)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    out = _run(tmp_path, FRESH).split(" ")
    assert out[1] == "0" and out[2] != "0" and "kmod.f" in out[3]


Pair = namedtuple("Pair", "a b")


def test_memo_keeps_the_newest_keys_first(monkeypatch, tmp_path):
    from numba import njit

    @njit(cache=False)
    def g(p, x):
        return p.a[0] + x[0]

    path = tmp_path / "g.keys"
    monkeypatch.setattr(direct, "_memo_file", lambda fn: (str(path), ("stamp", 1)))
    args = [(Pair(np.zeros(2), np.zeros(2)), np.zeros(3, dt)) for dt in
            (np.float64, np.int64, np.int32, np.float32)]  # fmt: skip
    monkeypatch.setattr(direct, "KEEP", 3)
    for a in args:
        direct.Direct(g)(*a)
    rows = direct.memo(g)
    want = [direct.fingerprint(a) for a in args[::-1][:3]]
    assert [r[0] for r in rows] == want
    assert [r[1] for r in rows] == [tuple(direct.arg_type(x) for x in a) for a in args[::-1][:3]]
    monkeypatch.setattr(direct, "_memo_file", lambda fn: (str(path), ("stamp", 2)))
    assert direct.memo(g) == []  # another stamp: nothing


@pytest.mark.parametrize(
    ("model", "ranks", "want"),
    [
        ({"switching": "wormhole"}, 1, (chunk.run_steps,)),
        ({"vcs": 2}, 3, (rank_loop.run_block,)),
        (dict.fromkeys(fe.FLIT_KEYS), 1, None),
        ({"switching": "wormhole", "router": "iq"}, 1, None),
    ],
)
def test_the_plan_preloads_the_flit_kernel_of_its_rank_count(monkeypatch, model, ranks, want):
    seen = []
    monkeypatch.setattr(direct, "preload", seen.append)
    fe.preload_kernels(model, ranks)
    assert seen == ([] if want is None else [want])
