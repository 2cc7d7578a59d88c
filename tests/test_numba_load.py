"""A kernel loaded from numba's cache keeps its bitcode unparsed until something links it,
loads without numba's set-up of its lowering registries (mpinet/numba_load.py), and behaves
as numba's own loader makes it behave."""

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


#: kernels that use numba's runtime (an array made and returned) and raise
KERNELS = """\
import numba
import numpy as np
from mpinet import numba_cache  # noqa: F401

@numba.njit(cache=True)
def twice(n):
    return np.arange(n) * 2

@numba.njit(cache=True)
def neg(x):
    if x < 0:
        raise ValueError("negative", x)
    return x
"""

#: a fresh process: the kernels from the cache, then one compiled beside them; whether
#: numba's set-up of its lowering registries ran (one of its modules imported) is printed
LEAN = """\
import sys

import numba
import kmod
from mpinet import numba_load

if "unresolvable" in sys.argv:  # as if an object code named a symbol nothing defines yet
    numba_load._resolvable = lambda *a: False
out = [kmod.twice(3).tolist()]
try:
    kmod.neg(-2)
except ValueError as e:
    out.append(e.args)
out.append(any(m in sys.modules for m in ("numba.np.linalg", "numba.cpython.setobj")))
out.append(sum(sum(f.stats.cache_hits.values()) for f in (kmod.twice, kmod.neg)))

@numba.njit
def g(x):  # compiled now: numba's compiler sets its target up itself
    return kmod.neg(x) + 1

out.append(g(4))
print(out)
"""


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    """A directory whose kernels are in numba's cache."""
    where = tmp_path_factory.mktemp("lean")
    (where / "kmod.py").write_text(KERNELS)
    _run(where, "import kmod; kmod.twice(1); kmod.neg(1)")
    return where


@pytest.mark.parametrize("case", ["lean", "unresolvable"])
def test_cached_kernels_load_without_numbas_set_up(cached, case):
    # numba's loader imports and installs its lowering registries at the first load; the
    # lean load does not unless an object code needs a symbol nothing defines yet
    out = subprocess.run([sys.executable, "-c", LEAN, case], cwd=cached, capture_output=True,
                         text=True, check=True).stdout.strip()  # fmt: skip
    # the same results as numba's own loader, two cache hits; numba's set-up skipped (lean)
    # or run first (a symbol not resolvable); a compilation after them works either way
    assert out == f"[[0, 2, 4], ('negative', -2), {case != 'lean'}, 2, 5]"


def test_resolvable_names_what_an_object_leaves_undefined():
    # a hand-made object that calls one symbol the process has (numba's helper) and one
    # nothing defines: the lean load takes numba's whole way for it
    codegen.initialize_llvm()
    target = ll.Target.from_default_triple().create_target_machine(codemodel="jitdefault")

    def obj(callee: str) -> bytes:
        mod = ll.parse_assembly(f"""
            declare i64 @{callee}(i64)
            define i64 @mpinet_probe(i64 %x) {{
              %y = call i64 @{callee}(i64 %x)
              ret i64 %y
            }}
        """)
        return target.emit_object(mod)

    from numba.core import registry

    engine = registry.cpu_target.target_context.codegen()._engine
    missing = obj("mpinet_no_such_symbol_anywhere")
    assert numba_load.elf_symtab(missing) == ({"mpinet_probe"}, {"mpinet_no_such_symbol_anywhere"})
    data = lambda o: (("lib", "object", (o, b"")),)  # noqa: E731
    assert not numba_load._resolvable(data(missing), engine, ll.address_of_symbol)
    assert numba_load._resolvable(data(obj("numba_gil_ensure")), engine, ll.address_of_symbol)
    assert not numba_load._resolvable((("lib", "bitcode", b""),), engine, ll.address_of_symbol)
    numba_load._TABLES.clear()


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
