"""Star-graph and complete-transposition emulation on macro-star networks (paper 004).

Schedules as data (lists of MS port names, per-step tables) with symbolic
validation: every word is checked by composing its position generators. Pure
numpy/Python, no MPI. See docs/emulation.md.
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
from mpinet.emulation.report import emulation_report
from mpinet.emulation.schedules import (
    consecutive_word,
    ct_word,
    port_generator,
    reduce_word,
    sdc_word,
    shortest_word,
    star_transposition,
    theorem_4_2_length,
    validate_consecutive,
    validate_word,
    word_perm,
)

__all__ = [
    "FIG6A",
    "FIG6B",
    "allport_length",
    "allport_schedule",
    "consecutive_word",
    "ct_word",
    "emulation_report",
    "link_utilisation",
    "paper_schedule",
    "port_generator",
    "reduce_word",
    "schedule_markdown",
    "schedule_problems",
    "sdc_word",
    "shortest_word",
    "star_transposition",
    "theorem_4_2_length",
    "validate_consecutive",
    "validate_word",
    "word_perm",
]
