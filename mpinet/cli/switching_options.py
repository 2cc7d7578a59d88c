"""The flit model's options (``--switching``, ``--flits``, ``--vcs``, ``--vc-buffer``,
``--vc-policy``, ``--router-model``): one definition for ``run``, ``sweep`` and ``deadlock``.

The choices are the names the program checks against (:mod:`mpinet.model_names`:
``SWITCHING``, and ``VC_POLICY_NAMES``, which a test holds to ``routing.vc_policies``'
registry; no numba imported to build the parser); ``run`` and ``sweep`` map each option to
its ``model.*`` key (:data:`KEYS`), so a flag and ``--set`` are validated by the same rule
and refused with the same line. :func:`job_sets` gathers every key their command lines set.
"""

from __future__ import annotations

import argparse
from typing import Any

#: option dest -> the job key it sets (run, sweep)
KEYS = {
    "switching": "model.switching",
    "flits": "model.flits",
    "vcs": "model.vcs",
    "vc_buffer": "model.vc_buffer",
    "vc_policy": "model.vc_policy",
    "router_model": "model.router",
}


def _choices() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from mpinet.model_names import SWITCHING, VC_POLICY_NAMES

    return SWITCHING, VC_POLICY_NAMES


def add_switching(p: Any, *, job: bool = True, vcs_help: str | None = None) -> None:
    """Add the switching options to the parser ``p``.

    ``job``: the options set job keys (``run``, ``sweep``: all five in a group of their
    own, each value checked as its key is); without, ``deadlock``'s three
    (``--switching``, ``--vc-policy``, ``--vcs``) with its own ``vcs_help``.
    """
    g = p.add_argument_group("switching (the flit engine: docs/switching.md)") if job else p
    from mpinet.jobs.spec import key_arg
    from mpinet.model_names import MAX_VCS
    from mpinet.values import Range, arg

    switching, policies = _choices()
    g.add_argument(
        "--switching",
        choices=None if job else switching,  # run, sweep: refused as --set refuses it
        default=None,
        metavar="MODE",
        help=" | ".join(switching)
        if job
        else "wormhole or cut-through: the (link, VC) graph of the flit engine; "
        "store-and-forward (the default): packet buffers",
    )
    if job:
        g.add_argument(
            "--flits", type=key_arg("model.flits"), metavar="L", help="flits per packet (1)"
        )
    g.add_argument(
        "--vcs",
        type=key_arg("model.vcs") if job else arg(Range(1, MAX_VCS, integer=True)),
        default=None,
        metavar="V",
        help=vcs_help or "virtual channels per link (1)",
    )
    if job:
        g.add_argument(
            "--vc-buffer",
            dest="vc_buffer",
            type=key_arg("model.vc_buffer"),
            metavar="B",
            help="flit slots per VC (wormhole 4, else L)",
        )
    g.add_argument(
        "--vc-policy",
        dest="vc_policy",
        default=None,
        metavar="NAME",
        help=f"{'|'.join(policies)} (any)",
    )
    if job:
        g.add_argument(
            "--router-model",
            dest="router_model",
            default=None,
            metavar="MODEL",
            help="ideal | iq: BookSim's input-queued router (ideal)",
        )


def flag_sets(args: argparse.Namespace, keys: dict[str, str]) -> list[tuple[list[str], Any]]:
    """The ``--set`` pairs of the options of ``keys`` (dest -> job key) that were given."""
    return [
        (key.split("."), getattr(args, dest))
        for dest, key in keys.items()
        if getattr(args, dest, None) is not None
    ]


def switching_sets(args: argparse.Namespace) -> list[tuple[list[str], Any]]:
    """The ``--set`` pairs of the switching options given (run, sweep)."""
    return flag_sets(args, KEYS)


def job_sets(args: argparse.Namespace, flag_keys: dict[str, str]) -> list[tuple[list[str], Any]]:
    """Every job key a command line sets, in the order that overrides: ``--set``, then the
    flags of ``flag_keys`` (dest -> job key), then the switching options (run, sweep)."""
    from mpinet.jobs import parse_set

    return [parse_set(s) for s in args.set] + flag_sets(args, flag_keys) + switching_sets(args)
