"""Closed forms and bounds from the papers, for comparison with exact values.

Nothing here is used to compute an answer: ``mpinet info`` computes every
figure by BFS and prints these beside it, flagging disagreements. Each entry
says which paper and equation it comes from, whether it claims an exact value
or a bound, and which averaging convention it uses.

Averaging conventions: ``incl`` averages the distance from one node over all N
nodes including itself (distance 0), as paper 000 does; ``excl`` averages over
the N - 1 others.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction


@dataclass(frozen=True)
class ClosedForm:
    """One paper formula evaluated for one network."""

    quantity: str  # "diameter" or "avg_distance"
    value: float
    kind: str  # "exact" (claimed equal) or "upper_bound"
    source: str  # paper and equation
    convention: str = ""  # for averages: "incl" or "excl"

    def check(self, measured: float) -> bool:
        """True when the measured value agrees with the claim."""
        if self.kind == "upper_bound":
            return measured <= self.value + 1e-9
        return abs(measured - self.value) < 5e-4 * max(1.0, abs(self.value))

    def as_dict(self) -> dict:
        return asdict(self)


def harmonic(n: int) -> Fraction:
    """The n-th harmonic number H_n, exactly."""
    return sum((Fraction(1, i) for i in range(1, n + 1)), Fraction(0))


def star_diameter(n: int) -> int:
    """Diameter of the n-star, floor(3(n-1)/2) (Akers-Krishnamurthy; paper 001)."""
    return 3 * (n - 1) // 2


def star_avg_distance(n: int) -> float:
    """Average distance of S_n incl. source: n + H_n + 2/n - 4 (paper 000 eq. 6)."""
    return float(n + harmonic(n) + Fraction(2, n) - 4)


def scc_diameter(n: int) -> int:
    """Diameter of SCC_n by paper 001 eq. 9 (= paper 000 eq. 1)."""
    if n == 3:
        return 6
    if n % 2 == 0:
        return (n * n + n - 4) // 2
    return (n * n + 3 * n - 8) // 2


def scc_diameter_eq10(n: int) -> int:
    """Diameter of SCC_n by paper 001 eq. 10 (n >= 4)."""
    return 2 * ((n - 1) // 2) ** 2 + 3 * (n - 1) // 2 + 2 * (n // 2) - 2


def _floors(n: int) -> int:
    return (n // 2) * ((n - 1) // 2)


def scc_avg_lateral(n: int) -> float:
    """Average number of lateral links, paper 000 eq. 6 (= S_n average distance)."""
    return star_avg_distance(n)


def scc_avg_mi_local(n: int) -> float:
    """Average number of MI local links, paper 000 eq. 9."""
    return (n - 1) * _floors(n) / n


def scc_avg_mb_local_random(n: int) -> float:
    """Average number of MB local links under random cycle order, paper 000 eq. 12."""
    return float(_floors(n) * ((harmonic(n) - 2) / (n - 2) + Fraction(2, n - 1)))


def scc_avg_distance_bound(n: int) -> float:
    """Upper bound on the SCC_n average distance (incl. source), paper 000 eq. 16."""
    h = harmonic(n)
    tail = 1 - Fraction(1, n) + (h - 2) / (n - 2) + Fraction(2, n - 1)
    return float(n + h + Fraction(2, n) - 4 + _floors(n) * tail)


def ms_diameter_bound(l: int, n: int) -> int:
    """Upper bound on the MS(l, n) diameter, floor(2.5nl) + 2l - 2 (paper 004 Thm 3.2)."""
    return (5 * n * l) // 2 + 2 * l - 2


def fccn_diameter(m: int) -> int:
    """FCCN diameter 2^(m+1) - 1 (paper 002 section 5)."""
    return 2 ** (m + 1) - 1


def ccc_diameter(n: int) -> int:
    """Exact CCC diameter: 2n + floor(n/2) - 2 for n >= 4, and 6 for n = 3 (both by BFS)."""
    return 6 if n == 3 else ccc_diameter_paper(n)


def ccc_diameter_paper(n: int) -> int:
    """Paper 001 sec. 6's CCC diameter 2n + floor(n/2) - 2, as printed, for every n.

    It holds for n >= 4; for n = 3 it gives 5 where the exact diameter is 6
    (docs/errata.md, E4b), so ``mpinet info ccc:3`` flags it.
    """
    return 2 * n + n // 2 - 2


def kncube_forms(family: str, k: int, n: int) -> list[ClosedForm]:
    """Diameter and all-pairs average distance of ``mesh:K,N`` / ``torus:K,N``.

    Distances add over dimensions, so each is N times a line's or a ring's: a line of K
    nodes has diameter K - 1 and mean |x - y| = (K^2 - 1) / (3K) over all ordered pairs,
    a ring floor(K/2) and floor(K^2/4) / K (the source included).
    """
    if family == "mesh":
        diam, avg = n * (k - 1), Fraction(n * (k * k - 1), 3 * k)
        src = ("k-ary n-mesh: N(K-1)", "k-ary n-mesh: N(K^2-1)/(3K)")
    else:
        diam, avg = n * (k // 2), Fraction(n * (k * k // 4), k)
        src = ("k-ary n-cube: N floor(K/2)", "k-ary n-cube: N floor(K^2/4)/K")
    return [
        ClosedForm("diameter", diam, "exact", src[0]),
        ClosedForm("avg_distance", float(avg), "exact", src[1], "incl"),
    ]


def closed_forms(family: str, params: tuple[int, ...]) -> list[ClosedForm]:
    """The papers' formulas that apply to a network, evaluated.

    Parameters
    ----------
    family : str
        Topology family of the spec (``"scc"``, ``"ms"``, ...).
    params : tuple of int
        The spec's parameters in order (``scc:5`` -> ``(5,)``).
    """
    out: list[ClosedForm] = []
    if family == "star":
        (n,) = params
        out.append(
            ClosedForm("diameter", star_diameter(n), "exact", "paper 001 sec. 4: floor(3(n-1)/2)")
        )
        out.append(
            ClosedForm(
                "diameter",
                math.ceil(3 * (n - 1) / 2),
                "exact",
                "paper 000 sec. 2.1: ceil(3(n-1)/2)",
            )
        )
        out.append(
            ClosedForm("avg_distance", star_avg_distance(n), "exact", "paper 000 eq. 6", "incl")
        )
    elif family == "scc":
        (n,) = params
        out.append(
            ClosedForm("diameter", scc_diameter(n), "exact", "paper 001 eq. 9 / paper 000 eq. 1")
        )
        if n >= 4:
            out.append(ClosedForm("diameter", scc_diameter_eq10(n), "exact", "paper 001 eq. 10"))
        out.append(
            ClosedForm(
                "avg_distance", scc_avg_distance_bound(n), "upper_bound", "paper 000 eq. 16", "incl"
            )
        )
    elif family == "ms":
        l, n = params
        out.append(
            ClosedForm("diameter", ms_diameter_bound(l, n), "upper_bound", "paper 004 Thm 3.2")
        )
        if l == 1:
            out.append(
                ClosedForm("diameter", star_diameter(n + 1), "exact", "MS(1,n) = (n+1)-star")
            )
    elif family == "fccn":
        (m,) = params
        out.append(ClosedForm("diameter", fccn_diameter(m), "exact", "paper 002 sec. 5: 2^(m+1)-1"))
    elif family == "hypercube":
        (n,) = params
        out.append(ClosedForm("diameter", n, "exact", "hypercube: n"))
        out.append(ClosedForm("avg_distance", n / 2, "exact", "hypercube: n/2", "incl"))
    elif family in ("mesh", "torus"):
        out.extend(kncube_forms(family, *params))
    elif family == "ccc":
        (n,) = params
        out.append(
            # the formula as printed (no n >= 4 condition in the paper): wrong for n = 3
            ClosedForm(
                "diameter", ccc_diameter_paper(n), "exact", "paper 001 sec. 6: 2n+floor(n/2)-2"
            )
        )
    return out
