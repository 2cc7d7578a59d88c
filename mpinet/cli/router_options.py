"""``--option KEY=VALUE``: a router's options on the command line (routes, deadlock).

One definition for the commands that build a router from flags, read as a job's
``--set`` is (:func:`mpinet.jobs.parse_set`: the same value types and messages).
"""

from __future__ import annotations

import argparse


def add_router_options(p: argparse.ArgumentParser, example: str = "tie=random") -> None:
    """Add the repeatable ``--option KEY=VALUE`` to a command's parser."""
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"router option, e.g. --option {example} (repeatable)",
    )


def router_options(items: list[str]) -> dict:
    """The ``--option`` items as the keyword arguments of ``make_router``."""
    from mpinet.jobs import parse_set

    out = {}
    for item in items:
        keys, value = parse_set(item, flag="--option", example="tie=random")
        out[".".join(keys)] = value
    return out
