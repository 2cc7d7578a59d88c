"""Symbolic validation of the macro-star emulation schedules (paper 004, Sections 3-4)."""

from __future__ import annotations

import numpy as np
import pytest

from mpinet import perm
from mpinet.emulation import (
    FIG6A,
    FIG6B,
    allport_length,
    allport_schedule,
    consecutive_word,
    ct_word,
    emulation_report,
    link_utilisation,
    paper_schedule,
    schedule_markdown,
    schedule_problems,
    sdc_word,
    shortest_word,
    star_transposition,
    theorem_4_2_length,
    validate_consecutive,
    validate_word,
    word_perm,
)
from mpinet.errors import MpinetError, TopologyError
from mpinet.topology.macrostar import MacroStar

CASES = [(2, 2), (3, 2), (2, 3), (4, 3), (5, 3), (3, 4), (2, 1), (4, 1), (1, 4)]
ALL_SMALL = [(l, n) for l in range(1, 20) for n in range(1, 20) if 3 <= n * l + 1 <= 20]


def test_port_generators_match_macrostar() -> None:
    for l, n in [(2, 2), (4, 3), (5, 3)]:
        ms = MacroStar(l, n)
        for name, gen in zip(ms.ports, ms.gens, strict=True):
            assert np.array_equal(word_perm(l, n, [name]), gen)


def test_definition_2_2_identity() -> None:
    # S_{n,i} T_j S_{n,i} = T_{(i-1)n+j}
    for l, n in [(4, 3), (5, 3), (3, 4)]:
        for i in range(2, l + 1):
            for j in range(2, n + 2):
                assert validate_word(
                    l, n, [f"S{i}", f"T{j}", f"S{i}"], star_transposition(l, n, (i - 1) * n + j)
                )


@pytest.mark.parametrize(("l", "n"), CASES)
def test_sdc_words(l: int, n: int) -> None:
    k = n * l + 1
    for j in range(2, k + 1):
        w = sdc_word(l, n, j)
        assert len(w) == (1 if j <= n + 1 else 3)
        assert validate_word(l, n, w, star_transposition(l, n, j))
        for other in range(2, k + 1):
            if other != j:
                assert not validate_word(l, n, w, star_transposition(l, n, other))


def test_sdc_word_examples() -> None:
    assert sdc_word(4, 3, 3) == ["T3"]
    assert sdc_word(4, 3, 5) == ["S2", "T2", "S2"]
    assert sdc_word(4, 3, 13) == ["S4", "T4", "S4"]


@pytest.mark.parametrize(("l", "n"), CASES)
def test_consecutive_words(l: int, n: int) -> None:
    k = n * l + 1
    for j in range(2, k + 1):
        for s in range(1, k - j + 2):
            dims = list(range(j, j + s))
            w = consecutive_word(l, n, dims)
            assert validate_consecutive(l, n, dims, w)
            exact = theorem_4_2_length(n, j, s, exact=True)
            assert len(w) == exact
            paper = theorem_4_2_length(n, j, s)
            # the paper's b1 is the block of j + s: 2 too many when j + s - 1 closes a block
            assert paper - len(w) == (2 if (j + s - 2) % n == 0 else 0)


def test_consecutive_example_and_rejects() -> None:
    assert consecutive_word(4, 3, [5, 6, 7]) == ["S2", "T2", "T3", "T4", "S2"]
    assert consecutive_word(4, 3, [7, 8]) == ["S2", "T4", "S2", "S3", "T2", "S3"]
    # an un-reduced word is valid too; a wrong one is not
    assert validate_consecutive(4, 3, [5, 6], ["S2", "T2", "S2", "S2", "T3", "S2"])
    assert not validate_consecutive(4, 3, [5, 6], ["S2", "T3", "T2", "S2"])
    assert not validate_consecutive(4, 3, [5, 6], ["S2", "T2", "T3"])


@pytest.mark.parametrize(("l", "n"), CASES)
def test_ct_words(l: int, n: int) -> None:
    k = n * l + 1
    longest = 0
    for i in range(1, k + 1):
        for j in range(i + 1, k + 1):
            w = ct_word(l, n, i, j)
            assert validate_word(l, n, w, star_transposition(l, n, i, j))
            assert ct_word(l, n, j, i) == w
            longest = max(longest, len(w))
    expected = {1: 3, 2: 5}.get(l, 7)  # Thm 4.9: 5 for l = 2, 7 for l >= 3
    assert longest == expected


def test_ct_dilation_is_shortest_for_small_n2() -> None:
    for l, n in [(2, 2), (3, 2), (2, 3)]:
        k = n * l + 1
        worst = max(
            len(shortest_word(l, n, star_transposition(l, n, i, j)))
            for i in range(1, k + 1)
            for j in range(i + 1, k + 1)
        )
        assert worst == (5 if l == 2 else 7)
    # n = 1: S_i is itself a transposition, the Thm 4.9 words are not shortest
    assert shortest_word(3, 1, star_transposition(3, 1, 2, 4)) == ["S3"]


@pytest.mark.parametrize(("l", "n"), ALL_SMALL)
def test_allport_schedule(l: int, n: int) -> None:
    sched = allport_schedule(l, n)
    assert len(sched) == allport_length(l, n) == (1 if l == 1 else max(2 * n, l + 1))
    assert schedule_problems(l, n, sched) == []
    used, slots, frac = link_utilisation(l, n, sched)
    assert used == n + 3 * n * (l - 1)
    assert slots == len(sched) * (n + l - 1)


def test_schedule_problems_detects_errors() -> None:
    sched = [dict(row) for row in FIG6A]
    sched[1][6] = "S3"  # S3 twice in step 2, wrong word for dimension 6
    probs = schedule_problems(4, 3, sched)
    assert any("S3 used 2 times" in p for p in probs)
    assert any("dimension 6" in p for p in probs)
    swapped = [dict(row) for row in FIG6A]
    swapped[1][5], swapped[3][5] = swapped[3][5], swapped[1][5]  # T before S: out of order
    assert any("dimension 5" in p for p in schedule_problems(4, 3, swapped))
    missing = [dict(row) for row in FIG6A]
    del missing[0][2]
    assert any("dimension 2" in p for p in schedule_problems(4, 3, missing))


def test_fig6_tables() -> None:
    assert schedule_problems(4, 3, FIG6A) == []
    assert schedule_problems(5, 3, FIG6B) == []
    assert paper_schedule(4, 3) == FIG6A
    used, slots, frac = link_utilisation(5, 3, FIG6B)
    assert (used, slots) == (39, 42)
    assert round(100 * frac) == 93
    assert [len(row) for row in FIG6B][:5] == [7] * 5  # fully used during steps 1-5
    assert link_utilisation(4, 3, FIG6A)[:2] == (30, 36)


@pytest.mark.parametrize(("l", "n"), [(l, n) for l, n in ALL_SMALL if n >= 2])
def test_paper_schedule(l: int, n: int) -> None:
    if (l - 1) % n and l > n:
        with pytest.raises(TopologyError, match="l = rn"):
            paper_schedule(l, n)
        return
    sched = paper_schedule(l, n)
    assert len(sched) == allport_length(l, n)
    assert schedule_problems(l, n, sched) == []


def test_paper_schedule_n1_rejected() -> None:
    with pytest.raises(TopologyError, match="n >= 2"):
        paper_schedule(3, 1)


def test_invalid_arguments() -> None:
    with pytest.raises(MpinetError, match="got l\\*n\\+1 = 2"):
        sdc_word(1, 1, 2)
    with pytest.raises(TopologyError, match="star dimension"):
        sdc_word(2, 2, 6)
    with pytest.raises(TopologyError, match="not a port"):
        word_perm(2, 2, ["S3"])
    with pytest.raises(TopologyError, match="distinct"):
        ct_word(2, 2, 3, 3)
    with pytest.raises(TopologyError, match=r"needs 3 <= l\*n\+1 <= 20 symbols, got l\*n\+1 = 22"):
        allport_schedule(7, 3)  # k = 22 symbols
    with pytest.raises(TopologyError, match="k!"):
        shortest_word(4, 3, perm.identity(13)[0])


@pytest.mark.slow
def test_markdown_and_report() -> None:
    md = schedule_markdown(4, 3, FIG6A)
    assert md.count("\n") == 1 + len(FIG6A)
    assert "| Step 1 | T2 | T3 | T4 | S2 |" in md
    report = emulation_report()
    assert "92.9% (paper: 93%)" in report
    assert "False" not in report


def test_doc_tables_are_current() -> None:
    from pathlib import Path

    doc = Path(__file__).resolve().parents[1] / "docs" / "emulation.md"
    assert doc.read_text(encoding="utf-8").endswith(emulation_report())
