"""Imports at first use: a registry (:class:`LazyRegistry`) and a package's names
(:func:`package_getattr`).

mpinet's registries (topology families, routers, workload kinds) name every entry a job
may ask for. Importing every entry's module to build the table made each process import
the modules of every family, router and workload (some 190 modules, 0.09 s of a
``mpinet booksim`` run; docs/performance.md, "mpinet booksim meshconfig, end to end").
Here an entry is a name and where its object lives (module, attribute): the module is
imported when the entry is looked up, so a run imports only its own family, router and
workload. Listing names (``in``, iteration, ``len``, ``keys()``) imports nothing; the
values (``items()``, ``values()``, ``dict(registry)``) import every entry.

An entry may carry fixed facts (``spec_form`` of a topology family) that listings read
without importing it; ``tests/test_lazy_registry.py`` holds each fact, and each entry's
object, to the registered class, and each entry's module to its registry's layer.

A package whose public names come from a module with a heavy import (h5py) gets them the
same way through :func:`package_getattr` (PEP 562).

Bottom layer: imports nothing of mpinet.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, NamedTuple


class Entry(NamedTuple):
    """Where a registered object lives, and facts about it readable without importing it."""

    module: str
    attr: str
    facts: dict[str, Any]


class LazyRegistry(MutableMapping):
    """A name -> object mapping that imports an entry's module at its first lookup.

    Parameters
    ----------
    entries : iterable of (name, module, attr) or (name, module, attr, facts)
        In the registry's order (listings keep it).

    Objects set by ``registry[name] = obj`` (a ``register`` function) are held as
    they are. A lookup imports with :func:`importlib.import_module`, which an import
    graph does not see: the test checks the modules named.
    """

    def __init__(self, entries: Any = ()) -> None:
        self._where: dict[str, Entry | None] = {}
        self._done: dict[str, Any] = {}
        for e in entries:
            name, module, attr, *facts = e
            self._where[name] = Entry(module, attr, facts[0] if facts else {})

    def __getitem__(self, name: str) -> Any:
        try:
            return self._done[name]
        except KeyError:
            pass
        entry = self._where[name]  # KeyError for an unknown name, as a dict
        obj = getattr(importlib.import_module(entry.module), entry.attr)
        self._done[name] = obj
        return obj

    def __setitem__(self, name: str, obj: Any) -> None:
        self._where[name] = None
        self._done[name] = obj

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._done.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __repr__(self) -> str:
        return f"LazyRegistry({list(self._where)})"

    def where(self, name: str) -> Entry | None:
        """Entry ``name``'s module, attribute and facts (None: an object set directly)."""
        return self._where[name]

    def fact(self, name: str, key: str, default: Any = None) -> Any:
        """A fact of entry ``name`` without importing it (an object set directly: its attribute).

        Raises
        ------
        KeyError
            An unknown name.
        """
        entry = self._where[name]
        if entry is None:
            return getattr(self._done[name], key, default)
        return entry.facts.get(key, default)

    def loaded(self, name: str) -> bool:
        """Whether entry ``name``'s object is at hand (imported, or set directly)."""
        return name in self._done


def package_getattr(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A package's module ``__getattr__`` (PEP 562) importing each public name at first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    where : dict
        Public name -> its submodule, or ``"submodule:attr"`` where the attribute is named
        otherwise (``mpinet.trace.open`` is ``reader.open_trace``).

    A name found is set in the package, so it is imported once; another name raises
    :class:`AttributeError`, as a module does.
    """

    def lookup(name: str) -> Any:
        try:
            module, _, attr = where[name].partition(":")
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(f"{package}.{module}"), attr or name)
        setattr(sys.modules[package], name, value)
        return value

    return lookup
