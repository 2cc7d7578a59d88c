"""The lazy registries (mpinet.lazy): every name resolves to its registered object, the
facts read without importing are the class's own, a lookup imports its entry's module
only, and every entry names a module of its registry's own package (the layer rule,
which an import graph cannot see through ``importlib``)."""

from __future__ import annotations

import sys

import pytest
from fresh_python import run_fresh

from mpinet.jobs.engines import ENGINES
from mpinet.lazy import LazyRegistry
from mpinet.routing import ROUTERS, available_routers
from mpinet.topology import FAMILIES, from_spec, spec_forms
from mpinet.workloads.registry import WORKLOADS

#: registry -> the package its entries must live in, the name attribute of its classes, and
#: how many entries it has at least
REGISTRIES = {
    "ENGINES": (ENGINES, "mpinet.jobs", "name", 2),
    "FAMILIES": (FAMILIES, "mpinet.topology", "family", 16),
    "ROUTERS": (ROUTERS, "mpinet.routing", "name", 16),
    "WORKLOADS": (WORKLOADS, "mpinet.workloads", "names", 16),
}


@pytest.mark.parametrize("reg", sorted(REGISTRIES))
def test_every_name_resolves_to_its_class_in_its_own_package(reg):
    registry, package, attr, least = REGISTRIES[reg]
    assert len(registry) >= least
    for name in registry:
        where = registry.where(name)
        assert where is not None and where.module.startswith(package + "."), (name, where)
        cls = registry[name]
        assert cls is getattr(sys.modules[where.module], where.attr)
        assert cls.__module__ == where.module or where.module.startswith(cls.__module__)
        own = getattr(cls, attr)
        assert name in own if attr == "names" else name == own
        for key, value in where.facts.items():  # what listings read without importing
            assert getattr(cls, key, True) == value, (name, key)


def test_every_kind_of_a_class_is_registered():
    for name in WORKLOADS:
        assert set(WORKLOADS[name].names) <= set(WORKLOADS), name


def test_listings_equal_the_classes():
    assert spec_forms() == [c.spec_form for c in FAMILIES.values() if getattr(c, "listed", True)]
    for spec in ("mesh:4,2", "scc:4", "borel:7,2,0,1"):
        topo = from_spec(spec)
        want = [n for n, c in ROUTERS.items() if not c.families or topo.family in c.families]
        assert available_routers(topo) == want


def test_a_lookup_imports_its_entry_only():
    """In a fresh process: listing imports no entry; ``from_spec`` imports its family's
    module and no other family's."""
    code = (
        "import sys\n"
        "from mpinet.topology import FAMILIES, from_spec, spec_forms\n"
        "mods = lambda: {FAMILIES.where(f).module for f in FAMILIES} & set(sys.modules)\n"
        "spec_forms(); list(FAMILIES); assert 'rotator' in FAMILIES\n"
        "print(sorted(mods()))\n"
        "from_spec('hypercube:3')\n"
        "print(sorted(mods()))\n"
    )
    r = run_fresh(code)
    before, after = r.stdout.splitlines()
    assert before == "[]" and after == "['mpinet.topology.hypercube']"


def test_registry_as_a_mapping(tmp_path, monkeypatch):
    (tmp_path / "lazy_probe_mod.py").write_text("X = object()\nY = [1]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = LazyRegistry([("x", "lazy_probe_mod", "X"), ("y", "lazy_probe_mod", "Y", {"n": 1})])
    assert list(reg) == ["x", "y"] and len(reg) == 2 and "x" in reg and "z" not in reg
    assert reg.fact("y", "n") == 1 and reg.fact("x", "n", 7) == 7
    assert "lazy_probe_mod" not in sys.modules and not reg.loaded("x")
    assert reg["x"] is sys.modules["lazy_probe_mod"].X and reg.loaded("x")
    assert reg.get("z") is None
    with pytest.raises(KeyError):
        reg["z"]
    reg["z"] = obj = type("Z", (), {"n": 3})
    assert reg["z"] is obj and reg.where("z") is None and reg.fact("z", "n") == 3
    del reg["x"]
    assert list(reg) == ["y", "z"] and dict(reg) == {"y": [1], "z": obj}
