"""A kernel's argument types kept on disk, and its load from numba's cache in a thread
(:mod:`mpinet.engine.flit.direct`: ``remember``, ``memo``, ``preload``): a fresh process's
first call then types nothing and loads nothing, and gets numba's own entry point; the
same for a kernel given C functions (the several ranks' blocks: their MPI calls), checked
under mpiexec too, where step 0 runs in a block (no step-by-step kernel called)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import namedtuple

import numpy as np
import pytest

from mpinet.engine.flit import chunk, direct, rank_loop
from mpinet.engine.flit import engine as fe

#: a kernel that calls C functions passed in a tuple (as rank_loop.run_block's MPI calls)
CKERNEL = """\
import ctypes
import numba
from mpinet import numba_cache  # noqa: F401

PROTO = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long)
LIBC = ctypes.CDLL(None)

def fns():
    addr = lambda name: ctypes.cast(getattr(LIBC, name), ctypes.c_void_p).value
    return (PROTO(addr("labs")), PROTO(addr("labs")))

@numba.njit(cache=True)
def g(fns, x):
    return fns[0](x[0]) + 10 * fns[1](x[1])
"""

#: a fresh process: the C functions' kernel preloaded, then called through Direct
CFRESH = """\
import numpy as np
from mpinet.engine.compile_clock import CompileClock
from mpinet.engine.flit import direct
import cmod

typed = []
own = direct.arg_type
direct.arg_type = lambda a: typed.append(1) or own(a)
with CompileClock() as clock:
    direct.preload((cmod.g,))
    direct._THREAD[0].join()
    n_loaded = len(clock.load_spans)
    out = direct.Direct(cmod.g)(cmod.fns(), np.array([-3, -4]))
print(out, n_loaded, len(typed), clock.kernels)
"""

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


def test_c_functions_are_kept_by_prototype_and_preloaded(tmp_path):
    """C functions (ctypes pointers) key by their prototype, not their address, and their
    kept types (numba's, naming the prototype's class) are read back by a fresh process."""
    import ctypes

    proto = ctypes.CFUNCTYPE(ctypes.c_int)
    libc = ctypes.CDLL(None)
    one, two = (proto(ctypes.cast(getattr(libc, n), ctypes.c_void_p).value)
                for n in ("getpid", "getppid"))  # fmt: skip
    addr = ctypes.cast(libc.abs, ctypes.c_void_p).value
    other = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(addr)
    assert direct.fingerprint((one,)) == direct.fingerprint((two,)) is not None
    assert direct.fingerprint((one,)) != direct.fingerprint((other,))
    assert direct.arg_type(one) == direct.arg_type(two) != direct.arg_type(other)
    (tmp_path / "cmod.py").write_text(CKERNEL)
    first = "import numpy as np, cmod\nfrom mpinet.engine.flit import direct\n"
    first += "print(direct.Direct(cmod.g)(cmod.fns(), np.array([-3, -4])))"
    assert _run(tmp_path, first) == "43"  # |-3| + 10 * |-4|
    assert list(tmp_path.glob("__pycache__/cmod.g-*.mpinet-keys"))
    # loaded in the thread (one load), nothing typed, nothing compiled
    assert _run(tmp_path, CFRESH) == "43 1 0 []"


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


@pytest.fixture
def comm():
    from mpi4py import MPI

    return MPI.COMM_WORLD


@pytest.mark.mpi
def test_the_blocks_kernel_is_kept_by_key_and_step_0_runs_in_a_block(comm, monkeypatch):
    """On several ranks: run_block's entry point is kept by key (its MPI calls included),
    and on disk, so the preload applies; step 0 runs in the block, the step-by-step
    routing of heads (route_heads.inject) never called, with the same packets delivered as
    on one rank (packets injected at step 0, some at their own source)."""
    from dataclasses import replace

    from mpi4py import MPI
    from test_flit_ranks import Packets

    from mpinet.engine.flit import route_heads
    from mpinet.engine.models import parse_model
    from mpinet.netfile import load_topology
    from mpinet.routing import make_router
    from mpinet.routing.vc_policies import make_vc_policy

    if comm.Get_size() == 1:
        pytest.skip("the blocks run on several ranks")
    topo = load_topology("star:4")
    router = make_router("shortest", topo)
    m = replace(parse_model("all-port", dict.fromkeys(topo.port_classes, 2)), flit=True,
                switching="wormhole", flits=4, vcs=2, vc_buffer=4, vc_policy="any")  # fmt: skip
    rows = [(i, i % 24, (i * 5 + i // 24) % 24, i // 48) for i in range(96)]
    assert any(r[1] == r[2] and r[3] == 0 for r in rows)  # delivered at step 0, at home
    got = []
    for c in (comm, MPI.COMM_SELF):
        if c is comm:
            monkeypatch.setattr(route_heads, "inject", None)  # a call would raise
        eng = fe.FlitEngine(topo, router, m, make_vc_policy("any", topo, 2), c)
        rec = eng.run(Packets(rows))
        monkeypatch.undo()
        assert eng.calls_path == "blocks of steps"
        pk = np.concatenate(c.allgather(rec.packets))
        got.append(pk[np.argsort(pk[:, 0])])
    assert np.array_equal(got[0], got[1]) and got[0].shape[0] == 96
    keys = [k for fn, k in direct._ENTRIES if fn is rank_loop.run_block]
    assert keys, "run_block's entry point was not found by its key"
    assert any(row[0] in keys for row in direct.memo(rank_loop.run_block))


def test_prime_finds_the_entry_without_calling_and_compiles_only_if_asked():
    """``Direct.prime``: the entry point of the arguments' types, found without a call (the
    engine's set-up); ``compile=False`` leaves a kernel numba's cache does not hold to the
    first call, which compiles it."""
    import numba

    @numba.njit(cache=False)
    def add(x, y):
        return x[0] + y

    d = direct.Direct(add)
    assert not d.prime(np.arange(3), 2, compile=False) and d.entry is None
    assert not add.overloads  # nothing compiled
    assert d.prime(np.arange(3), 2) and d.entry is not None and len(add.overloads) == 1
    assert d(np.arange(5, 8), 4) == 9
    e = direct.Direct(add)  # the same types: the entry kept for the process, no cache asked
    assert e.prime(np.arange(4), 7, compile=False) and e.entry is d.entry
    assert not direct.Direct(add).prime((1, object()), 2)  # a kind not keyed: left to the call
