"""Markdown report of the emulation schedules (the generated part of docs/emulation.md).

Regenerate with ``python -m mpinet.emulation`` (prints this report).
"""

from __future__ import annotations

from mpinet.emulation.allport import (
    FIG6A,
    FIG6B,
    allport_length,
    allport_schedule,
    link_utilisation,
    paper_schedule,
    schedule_markdown,
    schedule_problems,
)
from mpinet.emulation.schedules import (
    SHORTEST_MAX_SYMBOLS,
    consecutive_word,
    ct_word,
    sdc_word,
    shortest_word,
    star_transposition,
    theorem_4_2_length,
    validate_consecutive,
    validate_word,
)
from mpinet.errors import TopologyError

__all__ = ["REPORT_CASES", "emulation_report"]

#: the MS(l, n) covered by the report's tables
REPORT_CASES: tuple[tuple[int, int], ...] = ((2, 2), (3, 2), (2, 3), (4, 3), (5, 3), (3, 4), (6, 3))


def _sdc_rows() -> list[str]:
    rows = ["| MS(l,n) | k | words valid | max length (Thm 3.1: 3) |", "|---|---|---|---|"]
    for l, n in REPORT_CASES:
        k = n * l + 1
        words = [sdc_word(l, n, j) for j in range(2, k + 1)]
        ok = all(
            validate_word(l, n, w, star_transposition(l, n, j))
            for j, w in zip(range(2, k + 1), words, strict=True)
        )
        rows.append(f"| MS({l},{n}) | {k} | {ok} | {max(map(len, words))} |")
    return rows


def _consecutive_rows() -> list[str]:
    rows = [
        "| MS(l,n) | ranges j..j+s-1 | all valid | word = paper formula | word = formula - 2 |",
        "|---|---|---|---|---|",
    ]
    for l, n in REPORT_CASES:
        k = n * l + 1
        total = ok = same = less2 = 0
        for j in range(2, k + 1):
            for s in range(1, k - j + 2):
                dims = list(range(j, j + s))
                w = consecutive_word(l, n, dims)
                total += 1
                ok += validate_consecutive(l, n, dims, w)
                gap = theorem_4_2_length(n, j, s) - len(w)
                same += gap == 0
                less2 += gap == 2
        rows.append(f"| MS({l},{n}) | {total} | {ok == total} | {same} | {less2} |")
    return rows


def _allport_rows() -> list[str]:
    rows = [
        "| MS(l,n) | max(2n, l+1) | steps | valid | used / slots | utilisation | paper's |",
        "|---|---|---|---|---|---|---|",
    ]
    for l, n in REPORT_CASES:
        sched = allport_schedule(l, n)
        used, slots, frac = link_utilisation(l, n, sched)
        ok = not schedule_problems(l, n, sched)
        try:
            paper = paper_schedule(l, n)
            pap = f"{len(paper)} steps, valid {not schedule_problems(l, n, paper)}"
        except TopologyError:  # the paper gives no explicit rule for this (l, n)
            pap = "no explicit rule"
        rows.append(
            f"| MS({l},{n}) | {allport_length(l, n)} | {len(sched)} | {ok} | "
            f"{used} / {slots} | {100 * frac:.1f}% | {pap} |"
        )
    return rows


def _ct_rows() -> list[str]:
    rows = [
        "| MS(l,n) | Thm 4.9 dilation | max word length | all valid | shortest (BFS) |",
        "|---|---|---|---|---|",
    ]
    for l, n in REPORT_CASES:
        k = n * l + 1
        pairs = [(i, j) for i in range(1, k + 1) for j in range(i + 1, k + 1)]
        words = {p: ct_word(l, n, *p) for p in pairs}
        ok = all(validate_word(l, n, w, star_transposition(l, n, *p)) for p, w in words.items())
        if k <= SHORTEST_MAX_SYMBOLS:
            best = max(len(shortest_word(l, n, star_transposition(l, n, *p))) for p in pairs)
            bfs = str(best)
        else:
            bfs = "(k too large)"
        thm = 5 if l == 2 else 7
        rows.append(f"| MS({l},{n}) | {thm} | {max(map(len, words.values()))} | {ok} | {bfs} |")
    return rows


def emulation_report() -> str:
    """The generated tables of docs/emulation.md, as markdown."""
    used_b, slots_b, frac_b = link_utilisation(5, 3, FIG6B)
    used_a, slots_a, frac_a = link_utilisation(4, 3, FIG6A)
    full_b = sum(len(row) == 3 + 5 - 1 for row in FIG6B)
    parts = [
        "### Theorem 3.1 (SDC words)",
        "",
        *_sdc_rows(),
        "",
        "### Theorem 4.2 (consecutive dimensions), every range j..j+s-1",
        "",
        *_consecutive_rows(),
        "",
        "### Theorem 4.4 (all-port), `allport_schedule`",
        "",
        *_allport_rows(),
        "",
        "#### Fig. 6a: MS(4,3) emulating the 13-star (`paper_schedule(4, 3)`, equal to `FIG6A`)",
        "",
        schedule_markdown(4, 3, paper_schedule(4, 3)),
        "",
        f"Valid: {not schedule_problems(4, 3, FIG6A)}; equal to the paper's table: "
        f"{paper_schedule(4, 3) == FIG6A}; utilisation {used_a}/{slots_a} = {100 * frac_a:.1f}%.",
        "",
        "#### Fig. 6b: MS(5,3) emulating the 16-star (the paper's table, `FIG6B`)",
        "",
        schedule_markdown(5, 3, FIG6B),
        "",
        f"Valid: {not schedule_problems(5, 3, FIG6B)}; utilisation {used_b}/{slots_b} = "
        f"{100 * frac_b:.1f}% (paper: 93%); fully used steps: {full_b} (paper: steps 1-5).",
        "",
        "#### MS(5,3) by `allport_schedule(5, 3)` (this package's construction)",
        "",
        schedule_markdown(5, 3, allport_schedule(5, 3)),
        "",
        "### Theorem 4.9 (complete transposition graph)",
        "",
        *_ct_rows(),
    ]
    return "\n".join(parts) + "\n"
