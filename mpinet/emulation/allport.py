"""Theorem 4.4: one all-port star step on MS(l, n) in ``max(2n, l + 1)`` MS steps.

A schedule is a list of MS steps; step ``t`` is a dict ``{star dimension j: port}``
naming the port on which every node forwards the packet of emulated dimension
``j`` at that step (dimensions idle at step ``t`` are absent). Every node runs the
same schedule, so a port appearing at most once per step means no link carries two
packets in one step. Dimension ``j <= n + 1`` uses ``T_j`` once; a far dimension
uses ``S_{j1+1}, T_{j0+2}, S_{j1+1}`` at increasing steps (Theorem 3.1 words).

Lower bound (why ``max(2n, l + 1)`` is optimal): ``S_i`` carries ``2n`` packets
(two per dimension of block ``i``), so ``L >= 2n``; ``T_x`` carries ``l - 1``
far packets, each preceded and followed by a swap, so they fit only in steps
``2 .. L - 1`` and ``L >= l + 1``.
"""

from __future__ import annotations

from mpinet.emulation.schedules import check_ms, sdc_word, star_transposition
from mpinet.emulation.schedules import validate_word as _validate_word
from mpinet.errors import TopologyError

__all__ = [
    "FIG6A",
    "FIG6B",
    "allport_length",
    "allport_schedule",
    "link_utilisation",
    "paper_schedule",
    "schedule_markdown",
    "schedule_problems",
]

Schedule = list[dict[int, str]]


def allport_length(l: int, n: int) -> int:
    """Theorem 4.4 slowdown ``max(2n, l + 1)`` (1 for the plain star MS(1, n))."""
    l, n = check_ms(l, n)
    return 1 if l == 1 else max(2 * n, l + 1)


def _match(demands: list[list[int]]) -> list[int] | None:
    """Bipartite matching of demands to distinct slots (Kuhn's augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(d: int, seen: set[int]) -> bool:
        for slot in demands[d]:
            if slot in seen:
                continue
            seen.add(slot)
            if slot not in owner or augment(owner[slot], seen):
                owner[slot] = d
                return True
        return False

    for d in range(len(demands)):
        if not augment(d, set()):
            return None
    got = [0] * len(demands)
    for slot, d in owner.items():
        got[d] = slot
    return got


def allport_schedule(l: int, n: int) -> Schedule:
    """A conflict-free all-port schedule of ``max(2n, l + 1)`` MS steps.

    Construction (not the paper's, which is given by :func:`paper_schedule` for
    ``l = rn + 1``): with ``L = max(2n, l + 1)``, nucleus dimensions use ``T_j`` at
    step 1; the far dimension with offset ``x = j0`` in block ``c + 2`` uses its
    nucleus link ``T_{x+2}`` at step ``2 + (c + x) mod (L - 2)`` (distinct over the
    ``l - 1 <= L - 2`` blocks); per block the ``2n`` swap uses (one before and one
    after each nucleus step) are matched to distinct steps by bipartite matching.

    Raises
    ------
    TopologyError
        If no matching exists (never observed; the tests cover all small MS(l, n)).
    """
    l, n = check_ms(l, n)
    k = n * l + 1
    length = allport_length(l, n)
    sched: Schedule = [{} for _ in range(length)]
    for j in range(2, n + 2):
        sched[0][j] = f"T{j}"
    for c in range(l - 1):
        dims = list(range((c + 1) * n + 2, (c + 2) * n + 2))
        mid = [2 + (c + x) % (length - 2) for x in range(n)]
        # demand 2x: swap before step mid[x]; 2x + 1: swap after it (1-based steps)
        demands: list[list[int]] = []
        for m in mid:
            demands.append(list(range(m - 1, 0, -1)))
            demands.append(list(range(m + 1, length + 1)))
        got = _match(demands)
        if got is None:
            raise TopologyError(f"no all-port schedule found for MS({l},{n})")
        for x, j in enumerate(dims):
            word = sdc_word(l, n, j)
            for t, port in zip((got[2 * x], mid[x], got[2 * x + 1]), word, strict=True):
                sched[t - 1][j] = port
    if max(max(row, default=0) for row in sched) > k:  # a dimension beyond the k-star
        raise TopologyError(
            f"internal error: all-port schedule of MS({l},{n}) names a dimension > {k}"
        )
    return sched


def paper_schedule(l: int, n: int) -> Schedule:
    """The explicit schedule from the proof of Theorem 4.4.

    Defined in the paper for ``l = rn + 1`` and (implicitly) ``n >= 2``; for
    ``l <= n`` it is the schedule of MS(n + 1, n) restricted to the dimensions of
    MS(l, n) (trailing empty steps dropped). Other ``l`` (and ``n = 1``) raise
    :class:`TopologyError`; use :func:`allport_schedule` there.
    """
    l, n = check_ms(l, n)
    if l == 1:
        return [{j: f"T{j}" for j in range(2, n + 2)}]
    if n == 1:  # T of block i+1 at step n + 1 = 2 collides with its final swap at 2n = 2
        raise TopologyError(
            f"the paper's explicit schedule needs n >= 2 (got MS({l},1)); use allport_schedule"
        )
    if (l - 1) % n == 0:
        big = l
    elif l <= n:
        big = n + 1
    else:
        raise TopologyError(
            f"the paper's explicit schedule needs l = rn + 1 or l <= n, got MS({l},{n})"
        )
    r = (big - 1) // n
    length = max(2 * n, big + 1)
    sched: Schedule = [{} for _ in range(length)]

    def put(t: int, j: int, port: str) -> None:
        if j in sched[t - 1]:
            raise AssertionError(f"paper schedule: dimension {j} used twice at step {t}")
        sched[t - 1][j] = port

    def u(i: int, t: int, shift: int) -> int:
        return (i - 1) * n + 2 + (i + t - shift) % n

    for j in range(2, n + 2):
        put(1, j, f"T{j}")
    for t in range(1, n + 1):  # first swaps
        for i in range(2, big + 1):
            put(t, u(i, t, 3), f"S{i}")
    for s in range(r):  # nucleus steps of blocks sn+2 .. (s+1)n+1
        for t in range(s * n + 2, (s + 1) * n + 2):
            for i in range(s * n + 2, (s + 1) * n + 2):
                v = u(i, t, 4)
                put(t, v, f"T{v - (i - 1) * n}")
    for t in range(n + 1, 2 * n + 1):  # final swaps, blocks 2 .. n+1
        for i in range(2, n + 2):
            put(t, u(i, t, 3), f"S{i}")
    for s in range(1, r):  # final swaps, later groups of blocks
        for t in range(s * n + 3, (s + 1) * n + 3):
            for i in range(s * n + 2, (s + 1) * n + 2):
                put(t, u(i, t, 5), f"S{i}")
    if big != l:
        k = n * l + 1
        sched = [{j: p for j, p in row.items() if j <= k} for row in sched]
        while sched and not sched[-1]:
            sched.pop()
    return sched


def schedule_problems(l: int, n: int, schedule: Schedule) -> list[str]:
    """Everything wrong with an all-port schedule (empty list: valid).

    Checks: every star dimension ``2 .. nl+1`` is scheduled and nothing else; its
    ports in step order are its Theorem 3.1 word (``T_j``, or
    ``S_{j1+1}, T_{j0+2}, S_{j1+1}``) and compose symbolically to ``T_j``; no port
    appears twice in one step.
    """
    l, n = check_ms(l, n)
    k = n * l + 1
    problems: list[str] = []
    seq: dict[int, list[str]] = {}
    for t, row in enumerate(schedule, 1):
        ports = list(row.values())
        for port in sorted(set(ports)):
            if ports.count(port) > 1:
                problems.append(f"step {t}: port {port} used {ports.count(port)} times")
        for j, port in row.items():
            if not (isinstance(j, int) and 2 <= j <= k):
                problems.append(f"step {t}: {j!r} is not a star dimension of the {k}-star")
                continue
            seq.setdefault(j, []).append(port)
    for j in range(2, k + 1):
        word = seq.get(j, [])
        if word != sdc_word(l, n, j):
            problems.append(f"dimension {j}: ports {word} != Theorem 3.1 word {sdc_word(l, n, j)}")
        elif not _validate_word(l, n, word, star_transposition(l, n, j)):
            problems.append(f"dimension {j}: word {word} does not compose to T_{j}")
    return problems


def link_utilisation(l: int, n: int, schedule: Schedule) -> tuple[int, int, float]:
    """``(used, slots, used / slots)``: port-step slots carrying a packet.

    ``slots = steps * (n + l - 1)`` (every node has ``n + l - 1`` ports).
    """
    l, n = check_ms(l, n)
    used = sum(len(row) for row in schedule)
    slots = len(schedule) * (n + l - 1)
    return used, slots, used / slots


def schedule_markdown(l: int, n: int, schedule: Schedule) -> str:
    """Markdown table in the layout of Fig. 6: one row per MS step, one column per dimension."""
    l, n = check_ms(l, n)
    k = n * l + 1
    dims = range(2, k + 1)
    lines = [
        f"| MS({l},{n}) step | " + " | ".join(str(j) for j in dims) + " |",
        "|---|" + "---|" * len(dims),
    ]
    for t, row in enumerate(schedule, 1):
        cells = [row.get(j, "—" if _pending(schedule, t, j) else "") for j in dims]
        lines.append(f"| Step {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pending(schedule: Schedule, t: int, j: int) -> bool:
    """True if dimension ``j`` is between its first and last port at step ``t``."""
    steps = [s for s, row in enumerate(schedule, 1) if j in row]
    return bool(steps) and steps[0] < t < steps[-1]


def _table(rows: list[str], first_dim: int = 2) -> Schedule:
    out: Schedule = []
    for row in rows:
        cells = row.split()
        out.append({first_dim + i: c for i, c in enumerate(cells) if c != "-"})
    return out


#: Fig. 6a of paper 004 (MS(4,3) emulating the 13-star), dimensions 2..13 per row.
#: Transcribed from the OCR text; cells lost by the OCR in steps 5-6 were restored
#: as the only choice consistent with the caption's rules (checked in the tests).
FIG6A: Schedule = _table(
    [
        "T2 T3 T4 S2 -  -  -  S3 -  -  -  S4",
        "-  -  -  T2 S2 -  -  T3 S3 S4 -  T4",
        "-  -  -  -  T3 S2 S3 -  T4 T2 S4 -",
        "-  -  -  S2 -  T4 T2 S3 -  -  T3 S4",
        "-  -  -  -  S2 -  -  -  S3 S4 -  -",
        "-  -  -  -  -  S2 S3 -  -  -  S4 -",
    ]
)

#: Fig. 6b of paper 004 (MS(5,3) emulating the 16-star), dimensions 2..16 per row.
#: OCR cell shifts in steps 2, 5 and 6 restored by the caption's rules; in steps 5-6
#: the two final ``S4`` of dimensions 11 and 12 could also be exchanged.
FIG6B: Schedule = _table(
    [
        "T2 T3 T4 S2 -  -  -  S3 -  -  -  S4 -  S5 -",
        "-  -  -  T2 S2 -  -  -  S3 S4 -  T4 -  T3 S5",
        "-  -  -  -  T3 S2 S3 -  T4 T2 S4 -  S5 -  -",
        "-  -  -  S2 -  -  T2 -  S3 -  T3 S4 -  S5 T4",
        "-  -  -  -  S2 T4 S3 T3 -  S4 -  -  T2 -  S5",
        "-  -  -  -  -  S2 -  S3 -  -  S4 -  S5 -  -",
    ]
)
