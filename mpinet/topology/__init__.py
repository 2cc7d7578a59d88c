"""Topology families: one module each, pure numpy, no MPI and no files.

``from_spec("scc:5")`` builds a topology from its spec string. Spec forms:
``star:N``, ``scc:N``, ``ms:L,N``, ``ims:M,L,N`` (IMS((M), L, N); ``M`` may be
``M1+M2+...``), ``cms:C,L,N`` (CMS((C), L, N)), ``fccn:M``, ``borel:P,A,T1,T2``,
``hypercube:N``, ``ccc:N``, ``cayley:K:GENS`` (the Cayley graph of the symmetric
group S_K with position generators in cycle notation, e.g.
``cayley:5:(1 2),(1 3),(1 4),(1 5)``, which is ``star:5``), ``pancake:N``,
``bubble:N``, ``transposition:N``, ``mesh:K,N`` and ``torus:K,N`` (BookSim's
k-ary n-cubes). ``rotator:N`` is recognised and refused (a
directed graph), with its undirected ``cayley:`` form in the message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpinet.errors import SpecError
from mpinet.lazy import LazyRegistry

if TYPE_CHECKING:  # a family's module imports it (numpy): `mpinet --help` lists the forms only
    from mpinet.topology.base import Topology

#: every family by its spec name, imported at its first lookup (mpinet.lazy): a run
#: imports its own family's module only. ``spec_form`` and ``listed`` are read without
#: importing (``--help``, the messages that list the forms); the test holds them to the class.
FAMILIES: LazyRegistry = LazyRegistry(
    (fam, f"mpinet.topology.{mod}", cls, {"spec_form": form, "listed": listed})
    for fam, mod, cls, form, listed in (
        ("star", "star", "Star", "star:N", True),
        ("scc", "scc", "SCC", "scc:N", True),
        ("ms", "macrostar", "MacroStar", "ms:L,N", True),
        ("ims", "ims", "IncompleteMacroStar", "ims:M,L,N", True),
        ("cms", "cms", "ClusteredMacroStar", "cms:C,L,N", True),
        ("fccn", "fccn", "FCCN", "fccn:M", True),
        ("borel", "borel", "Borel", "borel:P,A,T1,T2", True),
        ("hypercube", "hypercube", "Hypercube", "hypercube:N", True),
        ("ccc", "ccc", "CCC", "ccc:N", True),
        ("cayley", "cayley", "Cayley", "cayley:K:GENS", True),
        ("pancake", "cayley", "Pancake", "pancake:N", True),
        ("bubble", "cayley", "Bubble", "bubble:N", True),
        ("transposition", "cayley", "Transposition", "transposition:N", True),
        ("rotator", "cayley", "Rotator", "rotator:N", False),
        ("mesh", "kncube", "Mesh", "mesh:K,N", True),
        ("torus", "kncube", "Torus", "torus:K,N", True),
    )
)

__all__ = ["FAMILIES", "from_spec", "spec_forms"]


def spec_forms() -> list[str]:
    """The accepted spec forms, e.g. ``["star:N", "scc:N", ...]``."""
    return [
        FAMILIES.fact(fam, "spec_form") for fam in FAMILIES if FAMILIES.fact(fam, "listed", True)
    ]


def from_spec(spec: str) -> Topology:
    """Build a topology from a spec string such as ``"ms:3,2"``.

    A family with a ``from_params(params)`` classmethod parses its own
    parameters (``cayley:K:GENS``, whose generators hold commas and colons);
    the others get ``params`` split on commas.

    Raises
    ------
    SpecError
        Unknown family or wrong number of parameters.
    TopologyError
        A parameter out of its valid range (the message names it).
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise SpecError(
            f"topology spec must look like FAMILY:PARAMS, one of {', '.join(spec_forms())}; "
            f"got {spec!r}"
        )
    fam, _, params = spec.strip().partition(":")
    fam = fam.strip().lower()
    cls = FAMILIES.get(fam)
    if cls is None:
        raise SpecError(f"unknown topology family {fam!r}; known: {', '.join(spec_forms())}")
    own = getattr(cls, "from_params", None)
    if own is not None:
        return own(params)
    args = [a.strip() for a in params.split(",")] if params.strip() else []
    nwant = cls.spec_form.count(",") + 1
    if len(args) != nwant:
        raise SpecError(f"{fam} takes {nwant} parameter(s): {cls.spec_form}; got {spec!r}")
    return cls(*args)
