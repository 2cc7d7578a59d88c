"""An index of numba's cache that names a class no longer there (mpinet upgraded, a bundle
moved) reads as obsolete: the kernel compiles again instead of every run dying."""

from __future__ import annotations

import pickle
import sys

import numba
from numba.core import caching
from numba.core.caching import IndexDataCacheFile

from mpinet import numba_cache


class _Moved:  # stands for a named-tuple bundle pickled in a kernel's signature
    pass


def _index(tmp_path, overloads, stamp=("stamp", 1)):
    cache = IndexDataCacheFile(str(tmp_path), "kernel-1.py", stamp)
    with open(cache._index_path, "wb") as fh:
        pickle.dump(numba.__version__, fh, protocol=-1)
        fh.write(pickle.dumps((stamp, overloads), protocol=-1))
    return cache


def test_an_index_naming_a_moved_class_is_obsolete(tmp_path, monkeypatch):
    monkeypatch.setattr(numba_cache, "_Moved", _Moved, raising=False)
    _Moved.__module__, _Moved.__qualname__ = numba_cache.__name__, "_Moved"
    cache = _index(tmp_path, {(_Moved(), "sig"): "kernel-1.1.nbc"})
    monkeypatch.delattr(numba_cache, "_Moved")  # the class has moved away
    assert numba_cache.guard()
    assert cache._load_index() == {}
    # numba writes a fresh index over it, readable again
    cache.save(("sig",), b"code")
    assert list(cache._load_index()) == [("sig",)]
    assert cache.load(("sig",)) == b"code"


def test_a_readable_index_is_numbas_as_before(tmp_path):
    cache = _index(tmp_path, {("sig",): "kernel-1.1.nbc"})
    assert cache._load_index() == {("sig",): "kernel-1.1.nbc"}
    stale = IndexDataCacheFile(str(tmp_path), "kernel-1.py", ("other", 2))
    assert stale._load_index() == {}  # another source: numba's own stale rule


def test_the_guard_is_in_place_once_a_kernel_module_is_imported():
    import mpinet.rng  # noqa: F401

    assert getattr(IndexDataCacheFile._load_index, "_mpinet_guard", False)
    assert numba_cache.guard()  # a second call changes nothing


def _kernel_stamp(path):
    """numba's source stamp for a function defined in ``path`` (what its cache index keeps)."""
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    locator = caching.InTreeCacheLocator.from_function(ns["kernel"], str(path))
    return locator.get_source_stamp()


def test_a_kernel_is_stamped_with_every_file_that_uses_numba(tmp_path, monkeypatch):
    # mpinet's kernels inline kernels of other files: a change to the callee's file alone
    # must make the caller's cache stale, which numba's own stamp (one file) does not
    monkeypatch.setattr(numba_cache, "_PACKAGE", tmp_path)
    monkeypatch.setattr(numba_cache, "_stamp", None)
    caller = tmp_path / "caller.py"
    caller.write_text("import numba\n\ndef kernel():\n    return 1\n")
    callee = tmp_path / "callee.py"
    callee.write_text("from numba import njit\n\nX = 1\n")
    (tmp_path / "words.py").write_text('"""says numba in prose only"""\n')
    assert [row[0] for row in numba_cache.package_stamp()] == ["callee.py", "caller.py"]
    before = _kernel_stamp(caller)
    assert before[1] == numba_cache.package_stamp()
    callee.write_text("from numba import njit\n\nX = 22\n")  # only the callee changes
    monkeypatch.setattr(numba_cache, "_stamp", None)  # a new process
    assert _kernel_stamp(caller) != before
    assert _kernel_stamp(caller)[0] == before[0]  # numba's own stamp did not see it


def test_the_engine_kernels_carry_the_package_stamp():
    from mpinet.engine.flit import chunk

    stamp = chunk.run_steps._cache._cache_file._source_stamp
    names = {row[0] for row in stamp[1]}
    assert {"engine/flit/chunk.py", "engine/flit/port_choice.py", "engine/flit/layout.py"} <= names
    assert not any(n.startswith("cli/") for n in names)  # the CLI holds no kernel


def _load(path, name):
    """Import ``path`` as module ``name`` (a new module object each call: a new process's)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_kernels_cache_is_built_at_its_first_call(tmp_path, monkeypatch):
    # numba builds a kernel's cache (its locator, a probe file written in __pycache__, the
    # stamps) at decoration: 0.1 ms each, 25 ms for the ~200 kernels a run imports and
    # mostly never calls; mpinet's are built at their first call, and save and load as before
    monkeypatch.setattr(numba_cache, "_PACKAGE", tmp_path / "pkg")
    monkeypatch.setattr(numba_cache, "_stamp", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # __pycache__: numba's alone
    (tmp_path / "pkg").mkdir()
    text = "import numba\n\n@numba.njit(cache=True)\ndef kernel(x):\n    return x + 1\n"
    inside, outside = tmp_path / "pkg" / "lazy_probe.py", tmp_path / "lazy_outside.py"
    inside.write_text(text)
    outside.write_text(text)
    assert isinstance(_load(outside, "lazy_outside").kernel._cache, caching.FunctionCache)
    first = _load(inside, "lazy_probe").kernel
    assert isinstance(first._cache, numba_cache._LazyCache) and first._cache._real is None
    assert not (tmp_path / "pkg" / "__pycache__").exists()  # nothing built, nothing probed
    assert first(1) == 2 and first.stats.cache_misses  # compiled, and saved:
    assert isinstance(first._cache._real, caching.FunctionCache)
    again = _load(inside, "lazy_probe").kernel  # as a new process would
    assert again(41) == 42 and again.stats.cache_hits and not again.stats.cache_misses
