"""A kernel loaded from numba's cache keeps its bitcode unparsed until something links it
(mpinet/numba_load.py), and behaves as numba's own loader makes it behave."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import llvmlite.binding as ll
import numba
import pytest
from numba.core import codegen

from mpinet import numba_load

KERNEL = """\
import numba
from mpinet import numba_cache  # noqa: F401

@numba.njit(cache=True)
def f(x):
    return 3 * x + 1
"""

#: run in a fresh process: f loaded from the cache, then a new kernel that calls it
CHECK = """\
import numba
from numba.core import codegen
import kmod

assert kmod.f(2) == 7
lib = next(iter(kmod.f.overloads.values())).library
print("unparsed", "_mpinet_bitcode" in lib.__dict__)
engine = lib._codegen._engine
print("missing", engine.is_symbol_defined("no_such_symbol_anywhere"))
print("parsed after a miss", "_mpinet_bitcode" not in lib.__dict__)

@numba.njit
def g(x):  # compiled now: links f's bitcode
    return kmod.f(x) * 2

print("g", g(5))
"""


def _run(tmp_path, code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout  # fmt: skip


def test_a_cached_kernel_loads_unparsed_and_links_when_asked(tmp_path):
    (tmp_path / "kmod.py").write_text(KERNEL)
    _run(tmp_path, "import kmod; assert kmod.f(1) == 4")  # compiles, writes the cache
    assert list(tmp_path.glob("__pycache__/kmod.f-*.nbc"))
    out = _run(tmp_path, CHECK).split("\n")
    assert out[:4] == ["unparsed True", "missing False", "parsed after a miss True", "g 32"]


#: a fresh process: f loaded from the cache under a compile clock, the engine's mark before
CLOCK = """\
from mpinet.engine.compile_clock import CompileClock, mark_engine_start
import kmod

with CompileClock() as clock:
    mark_engine_start()
    assert kmod.f(2) == 7
print(len(clock.load_spans), clock.kernels, clock.seconds, clock.loads_in_engine > 0)
"""


def test_a_load_is_timed_apart_from_compilations(tmp_path):
    # mpinet run --json: load_seconds, engine time spent loading kernels (compile_seconds 0)
    (tmp_path / "kmod.py").write_text(KERNEL)
    _run(tmp_path, "import kmod; assert kmod.f(1) == 4")
    assert _run(tmp_path, CLOCK).split("\n")[0] == "1 [] 0.0 True"


def test_the_object_symbols_are_numbas_defined_symbols():
    # a kernel compiled here: its object code and its bitcode, as numba caches them
    @numba.njit
    def h(a):
        return a.sum() + 1

    import numpy as np

    assert h(np.arange(4)) == 7
    lib = next(iter(h.overloads.values())).library
    _, kind, (obj, bitcode) = lib.serialize_using_object_code()
    assert kind == "object"
    names = numba_load.elf_symbols(obj)
    mod = ll.parse_bitcode(bitcode)
    defined = {g.name for gs in (mod.functions, mod.global_variables) for g in gs
               if not g.is_declaration}  # fmt: skip
    fndesc = next(iter(h.overloads.values())).fndesc
    assert names and names <= defined
    assert fndesc.llvm_cpython_wrapper_name in names


@pytest.mark.parametrize("blob", [b"", b"\x7fELF" + b"\0" * 60, b"MZ" + b"\0" * 100])
def test_an_object_not_elf64_is_parsed_as_numba_does(blob):
    assert numba_load.elf_symbols(blob) is None


def test_the_loader_is_in_place_once():
    assert numba_load.install()
    assert getattr(codegen.JitEngine.is_symbol_defined, "_mpinet_lazy", False)
    assert numba_load.install()  # a second call changes nothing


def test_elf_symbols_read_a_hand_made_object():
    # an object with one global function and one internal one: only the global is listed
    code = textwrap.dedent("""
        define internal i64 @mpinet_inner(i64 %x) {
          %y = add i64 %x, 1
          ret i64 %y
        }
        define i64 @mpinet_probe(i64 %x) {
          %y = call i64 @mpinet_inner(i64 %x)
          ret i64 %y
        }
    """)
    codegen.initialize_llvm()
    mod = ll.parse_assembly(code)
    target = ll.Target.from_default_triple().create_target_machine(codemodel="jitdefault")
    assert numba_load.elf_symbols(target.emit_object(mod)) == {"mpinet_probe"}
