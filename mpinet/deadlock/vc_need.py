"""What a virtual-channel policy needs: its routes followed, the VCs counted.

:func:`follow` follows a router's routes with a policy's tracker
(:meth:`~mpinet.routing.vc_policies.VCPolicy.tracker`) to every destination or,
on a vertex-transitive network, to the translation targets (exact where the
router commutes with the translations, which is checked on samples; for
``negative-hop`` also where the colouring is a 2-colouring, which every
automorphism keeps or swaps). :func:`requirement` reads the VCs needed off the
hops: the highest lowest-allowed VC of a hop that does not deliver, plus one.
``negative-hop`` on a network whose colouring has more than two colours and
too many pairs to follow every route gets an upper bound instead (every hop
but the last negative), and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpinet.deadlock import analysis as da  # its limits read at each call (tests set them)
from mpinet.deadlock import channel_graph as cg
from mpinet.deadlock.analysis import check_destinations, every_pair_refused, no_translations
from mpinet.deadlock.route_enum import MAX_STATES, RouteFollower
from mpinet.deadlock.routes import (
    SAMPLES,
    Progress,
    SymmetryError,
    all_keys,
    quiet,
    spread,
    swapping_targets,
    target_keys,
)
from mpinet.errors import ResourceError, RoutingError
from mpinet.routing.vc_tracker import Tracker
from mpinet.routing.walk import default_max_hops

#: routes :func:`requirement` follows by symmetry at most (more: a sample); star:9's
#: 1.8 M routes take 6-8 s, ms:3,3's 18 M 100-350 s on this (shared) machine
MAX_FOLLOWED = 1 << 23
#: pairs :func:`requirement` samples where it cannot follow every route
SAMPLE_PAIRS = 1 << 16


@dataclass
class Followed:
    """Routes followed with a policy's tracker.

    ``keys``: hop keys at every node (``every_node``), else ``per_target``: the keys
    of the routes to each translation target; ``swapping``: per target, whether a
    translation to it swaps the colours.
    """

    f: RouteFollower
    tracker: Any
    mode: str
    keys: np.ndarray | None = None
    per_target: list[np.ndarray] | None = None
    swapping: np.ndarray | None = None


@dataclass(frozen=True)
class Requirement:
    """The VCs a policy needs for a router's routes, and how that was found."""

    policy: str
    vcs: int
    longest: int | None  # the longest route followed (hops); None: none followed
    counted: int | None  # negative-hop, dateline: most counted hops before a route's last hop
    colours: int | None  # negative-hop: colours of the colouring
    exact: bool
    how: str  # "every pair", "symmetry", "not needed", "upper bound" or "sample"
    pairs: int  # routes followed

    @property
    def why(self) -> str:
        """The reason, as the refusal and the reports give it."""
        if self.policy == "hops":
            text = f"longest route {self.longest} hops; the last hop takes no VC"
        elif self.counted is None:
            return "every VC serves every hop"
        else:
            what = {"negative-hop": "negative hops"}.get(self.policy, "dateline crossings")
            text = f"at most {self.counted} {what} before a route's last hop"
            if self.policy == "dateline-turn":  # a class, not a count
                text = "two classes per ring: VCs [0, V/2) and [V/2, V)"
            if self.colours is not None:
                text += f", {self.colours} colours"
        if self.how == "upper bound":
            text += (
                f"; an upper bound, every hop but the last of the longest route "
                f"({self.longest} hops) counted, since the translations do not keep what the "
                "policy counts and every pair is too many to follow"
            )
        elif self.how == "sample":
            text += (
                f"; estimated from {self.pairs:,} sampled routes, since every pair is too many "
                "to follow: a run stops with an error if a route needs more"
            )
        return text

    def as_dict(self) -> dict[str, Any]:
        """The fields and the reason, for ``--json``."""
        out = dict(self.__dict__)
        out["why"] = self.why
        return out


def _why_not_symmetric(policy: Any) -> str:
    if policy.name == "negative-hop":
        return f"a colouring of {policy.colours} colours"
    return "ring positions"


def plan_mode(policy: Any, destinations: str, every_node: bool) -> tuple[str, str | None]:
    """How to follow the routes, and the fallback when the symmetry check fails.

    Modes: ``all`` (every pair), ``symmetry`` (translation targets), ``bound`` (route
    lengths by symmetry: an upper bound where the translations do not keep the
    policy's count) and ``sample`` (:data:`SAMPLE_PAIRS` random pairs: a lower bound).
    The last two only for :func:`requirement` (``every_node`` False); the analysis
    refuses instead.
    """
    topo = policy.topo
    n = topo.num_nodes
    check_destinations(destinations)
    has_t = topo.translation_targets is not None
    all_ok = n * n <= da.MAX_ALL_PAIRS
    if destinations == "all":
        if not all_ok:
            raise every_pair_refused(topo, "")
        return "all", None
    if destinations == "symmetry":
        if not has_t:
            raise no_translations(topo)
        if not policy.symmetric:
            raise RoutingError(
                f"vc_policy {policy.name!r} on {topo.spec}: the translations do not keep what "
                f"it counts ({_why_not_symmetric(policy)}); use --destinations all"
            )
        return "symmetry", None
    rest = "all" if all_ok else (None if every_node else "sample")
    big = n * n > da.AUTO_ALL_PAIRS or not all_ok
    few = has_t and (every_node or routes_followed(topo, "symmetry") <= MAX_FOLLOWED)
    if few and policy.symmetric and big:
        return "symmetry", rest
    if all_ok:
        return "all", None
    if every_node:
        why = f" (the translations do not keep {_why_not_symmetric(policy)})" if has_t else ""
        raise every_pair_refused(topo, why)
    if has_t and routes_followed(topo, "symmetry") <= MAX_FOLLOWED:
        return "bound", "sample"
    return "sample", None


def _limit(policy: Any, f_args: tuple, limit: int, progress: Progress, mode: str) -> int:
    """A route limit whose tracker classes fit the 64-bit hop keys: the given one, or
    the longest route, found by following the routes once without the tracker."""
    topo = policy.topo
    n, deg = topo.num_nodes, topo.degree
    if n * (deg + 1) * deg * policy.tracker(limit).size < 1 << 62:
        return limit
    f = RouteFollower(topo, *f_args, limit, False)
    if mode == "all":
        all_keys(f, progress)
    elif mode == "sample":
        _sample_keys(f, progress)
    else:
        target_keys(f, progress)
    return max(f.max_length, 1)


def routes_followed(topo: Any, mode: str) -> int:
    """Routes one pass follows: every pair, every node to each target and check, or
    the sampled pairs."""
    n = topo.num_nodes
    if mode == "all":
        return n * (n - 1)
    if mode == "sample":
        return min(SAMPLE_PAIRS, n * (n - 1))
    return (len(topo.translation_targets) + SAMPLES) * n


def _sample_keys(f: RouteFollower, progress: Progress) -> np.ndarray:
    """Hop keys of :data:`SAMPLE_PAIRS` random pairs (seeded), in chunks."""
    n = f.topo.num_nodes
    pick = np.random.default_rng(0)
    total = routes_followed(f.topo, "sample")
    acc = np.empty(0, dtype=np.int64)
    for lo in range(0, total, MAX_STATES):
        m = min(MAX_STATES, total - lo)
        s = pick.integers(0, n, m)
        d = (s + pick.integers(1, n, m)) % n
        acc = cg.distinct(np.concatenate([acc, f.follow(s, d)]))
        progress("following sampled routes", lo + m, total)
    return acc


def follow(
    policy: Any, router: Any, *, seed: int = 0, max_hops: int | None = None,
    destinations: str = "auto", progress: Progress = quiet, every_node: bool = False,
) -> Followed:  # fmt: skip
    """Follow ``router``'s routes with ``policy``'s tracker (see :func:`plan_mode`).

    Raises
    ------
    RoutingError
        A route longer than the limit, a router that is not invariant under
        ``--destinations symmetry``, or symmetry where the policy's count forbids it.
    ResourceError
        Every pair over the analysis's limit where nothing else will do.
    """
    topo = policy.topo
    mode, fallback = plan_mode(policy, destinations, every_node)
    limit = default_max_hops(topo) if max_hops is None else int(max_hops)
    args = (router, seed)
    try:
        return _follow(policy, args, mode, limit, progress, every_node)
    except SymmetryError:
        if fallback is None:
            raise
    return _follow(policy, args, fallback, limit, progress, every_node)


def _follow(
    policy: Any, args: tuple, mode: str, limit: int, progress: Progress, every_node: bool
) -> Followed:
    topo = policy.topo
    limit = _limit(policy, args, limit, progress, mode)
    # a bound needs only the route lengths: the base tracker (``any``'s) records none
    tr = Tracker(policy, limit) if mode == "bound" else policy.tracker(limit)
    f = RouteFollower(topo, *args, limit, False, state=tr)
    keys_fit(f)
    if mode in ("symmetry", "bound"):
        sym = {"swap": tr.swap, "colour": tr.colour} if tr.swap is not None else {}
        per = target_keys(f, progress, **sym)
        if not every_node:
            swapping = swapping_targets(topo, tr.colour) if tr.swap is not None else None
            return Followed(f, tr, mode, per_target=per, swapping=swapping)
        keys = spread(f, per, progress, reduce=tr.reduce, **sym)
        return Followed(f, tr, mode, keys=keys)
    keys = all_keys(f, progress) if mode == "all" else _sample_keys(f, progress)
    if every_node:  # the classes the graph needs only (one key per dependency)
        x, r, q, c = f.decode(keys)
        keys = cg.distinct(f.encode(x, r, q, tr.reduce(c)))
    return Followed(f, tr, mode, keys=keys)


def keys_fit(f: RouteFollower) -> None:
    """Refuse (ResourceError) a follower whose hop keys would not fit in 64 bits."""
    t = f.topo
    if t.num_nodes * (f.deg + 1) * f.deg * f.H >= 1 << 62:
        raise ResourceError(f"{t.spec} is too large to encode its hops in 64 bits")


def lowest_vcs(fw: Followed) -> np.ndarray:
    """The lowest VC each followed hop that does not deliver is allowed."""
    f, tr = fw.f, fw.tracker
    parts = []
    groups = [fw.keys] if fw.keys is not None else fw.per_target or []
    for k, keys in enumerate(groups):
        x, _, q, c = f.decode(keys)
        nxt = f.nb[x, q]
        # a tracker whose ranges grow with V (the torus dateline's halves) says the least
        # VC it needs apart: the class, not where the class starts with this V
        low = getattr(tr, "lowest", None)
        parts.append(low(c, x, nxt) if low is not None else tr.allowed(c, x, nxt)[0])
        if fw.keys is None and fw.swapping is not None and fw.swapping[k]:
            parts.append(tr.allowed(tr.swap(c), x, nxt, swapped=True)[0])
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


def requirement(policy: Any, router: Any, **opts: Any) -> Requirement:
    """The VCs ``policy`` needs for ``router`` (``opts``: :func:`follow`'s keywords)."""
    if policy.name == "any":
        return Requirement("any", 1, None, None, None, True, "not needed", 0)
    return requirement_of(policy, follow(policy, router, **opts))


def vcs_needed(policy: Any, router: Any, **opts: Any) -> int:
    """VCs ``policy`` needs for ``router``'s routes on its topology."""
    return requirement(policy, router, **opts).vcs


def check_vcs(policy: Any, router: Any, **opts: Any) -> None:
    """Refuse (RoutingError) a policy whose ``vcs`` is below :func:`vcs_needed`, naming it.

    ``opts``: ``seed``, ``max_hops``, ``destinations``, ``progress`` (as the deadlock
    analysis takes them).
    """
    req = requirement(policy, router, **opts)
    if policy.vcs < req.vcs:
        raise RoutingError(
            f"vc_policy {policy.name!r} needs vcs >= {req.vcs} for {router.name} on "
            f"{policy.topo.spec} ({req.why}); got vcs = {policy.vcs}"
        )


def requirement_of(policy: Any, fw: Followed) -> Requirement:
    """:func:`requirement` from routes already followed."""
    f = fw.f
    lo = lowest_vcs(fw)
    top = int(lo.max()) if lo.size else -1
    counting = policy.state_words > 0
    colours = int(policy.colours) if policy.name == "negative-hop" else None
    if fw.mode == "bound":  # every hop but the last counted: VCs up to longest - 1
        top = f.max_length - 1
    how = {"all": "every pair", "symmetry": "symmetry", "bound": "upper bound"}
    counted = max(top, 0) if counting else None
    return Requirement(
        policy.name, max(1, top + 1), f.max_length, counted, colours,
        fw.mode in ("all", "symmetry"), how.get(fw.mode, fw.mode), f.pairs,
    )  # fmt: skip
