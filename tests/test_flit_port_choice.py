"""The k-port and one-port choice without reading the requests of nodes that have no choice
(issue 33: the port models within 1.5x of all-port), and the division-free quotient it uses.

:func:`~mpinet.engine.flit.port_choice.kport_choice` allows every link of a node with at most
``k`` links with requests, movable or not; the reference choice
(:func:`~mpinet.engine.flit.port_choice.movable` then
:func:`~mpinet.engine.flit.port_choice.choose_links`) allows only the movable ones. Held to
it at every step of loaded runs: the same links wherever a node has a choice, and a link
allowed only by the new choice has no request that can move (so it moves nothing). The
runs' rows are held to the reference engine by tests/test_switching_reference.py and to
the compiled steps by tests/test_flit_active.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_flit_active import bernoulli_plan, run
from test_flit_chunk import assert_identical

from mpinet.engine.flit import kernels as fk
from mpinet.engine.flit import port_choice
from mpinet.engine.flit.layout import quotient


@pytest.mark.parametrize("kind", ["one-port", "k-port:2", "k-port:3"])
@pytest.mark.parametrize("mode", ["wormhole", "cut-through"])
def test_kport_choice_equals_the_reference_choice_every_step(monkeypatch, kind, mode):
    seen = {"choice": 0, "idle_allowed": 0, "steps": 0}
    real = port_choice.port_model

    def checked(nt, prm, segs, pkts, links, so, sdc_port):
        first = np.empty(nt, np.int64)
        demand = np.zeros(prm.deg, np.int64)
        port_choice.movable(nt, prm, segs, pkts, links, so, first, demand)
        port_choice.choose_links(nt, prm, segs, pkts, so, first, sdc_port)
        ref = so.allow[:nt].copy()
        so.allow[:nt] = False
        real(nt, prm, segs, pkts, links, so, sdc_port)
        new = so.allow[:nt].copy()
        assert (so.node == -1).all()  # the per-node scratch is left as found
        nodes = so.touched[:nt] // prm.deg
        per_node = np.bincount(nodes, minlength=int(so.node.size))[nodes]
        choice = per_node > prm.k
        assert (new[choice] == ref[choice]).all()  # a choice: the same links
        assert ref[~choice].sum() <= new[~choice].sum()
        extra = new & ~ref
        assert not (ref & ~new).any()
        assert (first[extra] == -1).all()  # allowed only here: nothing of it can move
        seen["choice"] += int(np.unique(nodes[choice]).size)
        seen["idle_allowed"] += int(extra.sum())
        seen["steps"] += 1

    monkeypatch.setattr(fk, "port_model", checked)
    p = bernoulli_plan("star:5", "shortest", kind, mode, 0.12, 150, flits=4, vcs=2, buf=2)
    _, a = run(p, False)
    assert seen["steps"] > 100
    assert seen["choice"] > 50 and seen["idle_allowed"] > 50  # both branches ran, often
    monkeypatch.undo()
    _, b = run(p, False)
    assert_identical(a, b)  # the check changed nothing


def test_quotient_is_floor_division():
    """Exhaustive for small operands, random up to 2**40, and at multiples of the divisor."""
    from numba import njit

    @njit(cache=False)
    def quotients(a, d):
        out = np.empty(a.size, np.int64)
        rd = 1.0 / d
        for i in range(a.size):
            out[i] = quotient(a[i], d, rd)
        return out

    rng = np.random.default_rng(7)
    for d in [1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 31, 63, 64, 100, 1000, 99_991]:
        multiples = np.arange(1, 2**40 // d, 2**40 // d // 5000, dtype=np.int64) * d
        a = np.concatenate([np.arange(0, 20_000, dtype=np.int64),
                            rng.integers(0, 2**40, 20_000, dtype=np.int64),
                            multiples - 1, multiples, multiples + 1])  # fmt: skip
        a = a[a >= 0]
        assert (quotients(a, np.int64(d)) == a // d).all(), d
