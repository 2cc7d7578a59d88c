"""Loading a kernel from numba's on-disk cache without parsing the IR it will not need.

numba caches a kernel as its object code and, beside it, its LLVM bitcode, kept "for
further inlining with other libraries": a kernel compiled later that calls this one links
that bitcode in. numba's loader parses the bitcode at every load, whether or not anything
will ever link it, only to list the symbols the library defines. Measured on a fresh
``mpinet run`` of hypercube:8 (docs/performance.md, "A fresh run's fixed cost"): parsing
took 84 ms of the 88 ms that loading ``chunk.run_steps`` took (363 KB of bitcode: every
kernel it inlines), and most of the engine's time in a small run.

Here a cached library keeps its bitcode unparsed: it is parsed (and its symbols listed, as
numba does) the first time a kernel links it, or when numba asks whether a symbol is
defined and the symbols read from the object code's own symbol table do not answer yes.
Those are the externally visible symbols the object defines: a subset of numba's list,
so a yes is numba's yes, and a no is answered by numba's list itself. Nothing of numba's
behaviour changes but when the parsing happens. Each load is also told to
:data:`LOAD_LISTENERS` (``mpinet run --json``: ``load_seconds``).

numba's loader also sets up the whole target first (``Cache.load_overload`` calls
``target_context.refresh()``): it imports some forty modules of lowering and typing
registries (``numba.np.arraymath``, ``linalg``, ``npyimpl``, ``numba.cpython.unicode`` ...),
installs them and compiles its runtime's LLVM functions, 0.10-0.11 s of CPU at the first
kernel a process loads, which a load does not use: a loaded kernel is object code, and all
it needs of the process is the symbols it calls. Here (:func:`_lean_loader`) a load names
the runtime's C functions as symbols (the first half of numba's ``rtsys.initialize``), reads
the cache entry as numba does, and rebuilds it with numba's own ``rebuild`` when every
symbol its object code leaves undefined is known (:func:`_resolvable`: numba's helpers,
Python's C API, libc, the engine's other libraries); otherwise, or for any target but
numba's CPU one, numba's whole set-up runs first, as numba does. A compilation sets the
target up itself (numba's compiler refreshes the contexts), so nothing else changes.

:func:`install` patches numba once per process; it leaves numba as it is (and returns
False) when numba's codegen lacks the internals it replaces (another numba version).
"""

from __future__ import annotations

import struct
import time
import weakref
from typing import Any

from llvmlite import binding as ll
from numba.core import caching, codegen, config, cpu
from numba.core.runtime import nrt

#: the cached libraries whose bitcode is not parsed yet (their symbols: numba's list later)
_PENDING: weakref.WeakSet = weakref.WeakSet()
#: ``(object code, symbol table)`` read by :func:`_resolvable`, by ``id`` of the object
#: code, for ``_unserialize`` (not read twice)
_TABLES: dict[int, tuple] = {}
#: called with ``(start, end)`` (``perf_counter`` seconds) of every kernel loaded from the
#: cache: numba announces compilations, not loads (``engine.compile_clock.CompileClock``)
LOAD_LISTENERS: list = []


def elf_symtab(obj: bytes) -> tuple[set[str], set[str]] | None:
    """The global and weak symbols an ELF64 little-endian object defines, and those it uses
    without defining them; None for any other object format (then numba's way)."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", obj, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    if shentsize != 64 or shoff + shnum * 64 > len(obj):
        return None
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * i) for i in range(shnum)]
    defined: set[str] = set()
    undefined: set[str] = set()
    for sec in sections:
        if sec[1] != 2 or sec[9] != 24 or sec[6] >= shnum:  # SHT_SYMTAB, 24-byte entries
            continue
        str_off, str_size = sections[sec[6]][4], sections[sec[6]][5]
        strtab = obj[str_off : str_off + str_size]
        for name, info, _, shndx, _, _ in struct.iter_unpack(
            "<IBBHQQ", obj[sec[4] : sec[4] + sec[5]]
        ):
            # bound GLOBAL or WEAK, a function, object or no type; defined: a section index
            if name == 0 or (info >> 4) not in (1, 2) or (info & 15) > 2:
                continue
            text = strtab[name : strtab.index(b"\0", name)].decode()
            (undefined if shndx == 0 else defined).add(text)
    return defined, undefined


def elf_symbols(obj: bytes) -> set[str] | None:
    """The global and weak symbols an ELF64 little-endian object defines; None for any
    other object format (then numba's way: the bitcode is parsed at once)."""
    table = elf_symtab(obj)
    return None if table is None else table[0]


def _parse(lib: Any) -> None:
    """Parse ``lib``'s bitcode and list its symbols, as numba's loader does at once."""
    bitcode = lib.__dict__.pop("_mpinet_bitcode", None)
    _PENDING.discard(lib)
    if bitcode is not None:
        lib._shared_module = codegen.ll.parse_bitcode(bitcode)
        lib._codegen._engine._load_defined_symbols(lib._shared_module)


def _resolvable(data: Any, engine: Any, address_of: Any) -> bool:
    """True when a cached compile result's object code uses only symbols already defined:
    by the engine's libraries or in the process (numba's helpers, its runtime, libc)."""
    lib = data[0] if isinstance(data, tuple) and data else None
    if not (isinstance(lib, tuple) and len(lib) == 3 and lib[1] == "object"):
        return False
    table = elf_symtab(lib[2][0])
    if table is None:
        return False
    _TABLES[id(lib[2][0])] = (lib[2][0], table)  # read once: _unserialize takes it
    known = engine._defined_symbols
    return all(n in known or address_of(n) for n in table[1] - table[0])


def _runtime_symbols() -> Any:
    """A function that makes numba's runtime (NRT) usable by a loaded kernel, or None where
    this numba lacks what it uses: NRT's C functions named as symbols, as numba's
    ``rtsys.initialize`` does first. The rest of that initialisation compiles NRT's own LLVM
    functions (``NRT_incref`` ...), which a cached kernel's object code defines itself; one
    that does not define them is loaded after numba's whole set-up (:func:`_resolvable`)."""
    helpers = getattr(getattr(nrt, "_nrt", None), "c_helpers", None)
    if not isinstance(helpers, dict) or not hasattr(nrt.rtsys, "_init"):
        return None
    done: list = []

    def ready(tc: Any) -> None:
        if done or nrt.rtsys._init:
            return
        if config.NRT_STATS:  # numba's whole initialisation switches the statistics on
            nrt.rtsys.initialize(tc)
            return
        for py_name, address in helpers.items():
            ll.add_symbol(py_name if py_name.startswith("_") else "NRT_" + py_name, address)
        done.append(True)

    return ready


def _lean_loader() -> Any:
    """numba's ``Cache.load_overload`` without its set-up of the target's lowering and typing
    registries (the module docstring), or None where this numba lacks what it uses."""
    needed = [(caching.Cache, "_guard_against_spurious_io_errors"), (caching.Cache, "_index_key"),
              (caching, "CompileResultCacheImpl"), (ll, "address_of_symbol")]  # fmt: skip
    runtime = _runtime_symbols()
    if runtime is None or not all(hasattr(owner, name) for owner, name in needed):
        return None
    own = caching.Cache.load_overload

    def load(self: Any, sig: Any, tc: Any) -> Any:
        if type(tc) is not cpu.CPUContext:  # another target: its own set-up, numba's way
            return own(self, sig, tc)
        runtime(tc)
        with self._guard_against_spurious_io_errors():
            if not self._enabled:
                return None
            data = self._cache_file.load(self._index_key(sig, tc.codegen()))
            if data is None:
                return None
            try:
                if not _resolvable(data, tc.codegen()._engine, ll.address_of_symbol):
                    tc.refresh()  # numba's whole set-up: what defines the symbol, if anything
                return self._impl.rebuild(tc, data)
            finally:
                _TABLES.clear()
        return None

    return load


def install() -> bool:
    """Patch numba's cached-library loader as the module docstring says; True once in place."""
    lib_cls, engine_cls = codegen.CPUCodeLibrary, codegen.JitEngine
    own_unserialize = lib_cls.__dict__.get("_unserialize")
    own_linking = getattr(lib_cls, "_get_module_for_linking", None)
    own_defined = getattr(engine_cls, "is_symbol_defined", None)
    needed = (
        own_unserialize,
        own_linking,
        own_defined,
        getattr(lib_cls, "_set_compiled_object", None),
    )
    if any(f is None for f in needed):
        return False
    if getattr(own_defined, "_mpinet_lazy", False):
        return True
    own_unserialize = own_unserialize.__func__

    def _unserialize(cls: Any, cg: Any, state: Any) -> Any:
        name, kind, data = state
        kept = _TABLES.pop(id(data[0]), None) if kind == "object" else None
        table = kept[1] if kept is not None and kept[0] is data[0] else None
        if table is None and kind == "object":
            table = elf_symtab(data[0])
        if table is None:
            return own_unserialize(cls, cg, state)
        names = table[0]
        self = cg.create_library(name)
        self.enable_object_caching()
        self._set_compiled_object(data[0])
        self._mpinet_bitcode = data[1]
        self._finalize_final_module()
        cg._engine._defined_symbols |= names
        _PENDING.add(self)
        return self

    def _get_module_for_linking(self: Any) -> Any:
        if "_mpinet_bitcode" in self.__dict__:
            _parse(self)
        return own_linking(self)

    def is_symbol_defined(self: Any, name: str) -> bool:
        if own_defined(self, name):
            return True
        if not _PENDING:
            return False
        for lib in list(_PENDING):  # numba's own list, complete: then its answer
            _parse(lib)
        return own_defined(self, name)

    own_load = getattr(caching.Cache, "load_overload", None)

    lean = _lean_loader()

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        start = time.perf_counter()
        if lean is not None and type(self._impl) is caching.CompileResultCacheImpl:
            out = lean(self, sig, target_context)
        else:
            out = own_load(self, sig, target_context)
        if out is not None and LOAD_LISTENERS:
            end = time.perf_counter()
            for listener in list(LOAD_LISTENERS):
                listener(start, end)
        return out

    is_symbol_defined._mpinet_lazy = True  # type: ignore[attr-defined]
    if own_load is not None:
        caching.Cache.load_overload = load_overload
    lib_cls._unserialize = classmethod(_unserialize)
    lib_cls._get_module_for_linking = _get_module_for_linking
    engine_cls.is_symbol_defined = is_symbol_defined
    return True
