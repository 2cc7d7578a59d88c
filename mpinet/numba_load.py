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

:func:`install` patches numba once per process; it leaves numba as it is (and returns
False) when numba's codegen lacks the internals it replaces (another numba version).
"""

from __future__ import annotations

import struct
import time
import weakref
from typing import Any

from numba.core import caching, codegen

#: the cached libraries whose bitcode is not parsed yet (their symbols: numba's list later)
_PENDING: weakref.WeakSet = weakref.WeakSet()
#: called with ``(start, end)`` (``perf_counter`` seconds) of every kernel loaded from the
#: cache: numba announces compilations, not loads (``engine.compile_clock.CompileClock``)
LOAD_LISTENERS: list = []


def elf_symbols(obj: bytes) -> set[str] | None:
    """The global and weak symbols an ELF64 little-endian object defines; None for any
    other object format (then numba's way: the bitcode is parsed at once)."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", obj, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    if shentsize != 64 or shoff + shnum * 64 > len(obj):
        return None
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * i) for i in range(shnum)]
    names: set[str] = set()
    for sec in sections:
        if sec[1] != 2 or sec[9] != 24 or sec[6] >= shnum:  # SHT_SYMTAB, 24-byte entries
            continue
        str_off, str_size = sections[sec[6]][4], sections[sec[6]][5]
        strtab = obj[str_off : str_off + str_size]
        for name, info, _, shndx, _, _ in struct.iter_unpack(
            "<IBBHQQ", obj[sec[4] : sec[4] + sec[5]]
        ):
            # defined (a section index), bound GLOBAL or WEAK, a function, object or no type
            if shndx == 0 or name == 0 or (info >> 4) not in (1, 2) or (info & 15) > 2:
                continue
            names.add(strtab[name : strtab.index(b"\0", name)].decode())
    return names


def _parse(lib: Any) -> None:
    """Parse ``lib``'s bitcode and list its symbols, as numba's loader does at once."""
    bitcode = lib.__dict__.pop("_mpinet_bitcode", None)
    _PENDING.discard(lib)
    if bitcode is not None:
        lib._shared_module = codegen.ll.parse_bitcode(bitcode)
        lib._codegen._engine._load_defined_symbols(lib._shared_module)


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
        names = elf_symbols(data[0]) if kind == "object" else None
        if names is None:
            return own_unserialize(cls, cg, state)
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

    def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
        start = time.perf_counter()
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
