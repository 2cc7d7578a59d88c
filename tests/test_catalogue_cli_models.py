"""The flit model's options of ``run`` and ``sweep`` (``--switching``, ``--flits``, ``--vcs``,
``--vc-buffer``, ``--vc-policy``) given hostile values: each refused in one line (exit 2)
before any work, with the line ``--set model.KEY=VALUE`` gives (the option sets the key;
numbers are checked by the key's range as the other key flags are). Checked by
:func:`catalogue.check`; the same refusals through ``--set`` are compared in
tests/test_help.py.
"""

from __future__ import annotations

import pytest
from catalogue import Case, param, run_and_check, section

RUN = "run --topology star:4 --router shortest"
SWEEP = "sweep --topology star:4 --router shortest"
C = Case
CASES: list[Case] = [
    *section(
        "The flit model's options of run and sweep",
        C(
            "cli-models-switching-unknown",
            f"{RUN} --switching teleport",
            r"model\.switching must be one of store-and-forward, cut-through, wormhole; "
            r"got 'teleport'",
        ),
        C(
            "cli-models-vc-policy-unknown",
            f"{RUN} --switching wormhole --vc-policy fastest",
            r"unknown vc_policy 'fastest'; valid: any, hops, negative-hop, dateline, dateline-turn",
        ),
        C(
            "cli-models-flits-zero",
            f"{RUN} --flits 0",
            r"argument --flits: model\.flits must be in \[1, 65,536\], got 0",
        ),
        C(
            "cli-models-vcs-too-many",
            f"{SWEEP} --switching wormhole --vcs 65",
            r"argument --vcs: model\.vcs must be in \[1, 64\], got 65",
        ),
        C(
            "cli-models-vc-buffer-text",
            f"{RUN} --vc-buffer four",
            r"argument --vc-buffer: model\.vc_buffer must be an integer",
        ),
        C(
            "cli-models-vc-buffer-below-flits",
            f"{RUN} --switching cut-through --flits 8 --vc-buffer 4",
            r"model\.vc_buffer = 4 is smaller than model\.flits = 8: cut-through keeps a whole "
            r"packet in one buffer",
        ),
        C(
            "cli-models-with-packet-buffer",
            f"{RUN} --switching wormhole --buffer 4",
            r"model\.buffer has no effect with model\.switching",
        ),
        C(
            "cli-models-hops-too-few-vcs",
            f"{SWEEP} --switching wormhole --vc-policy hops --vcs 2",
            r"vc_policy 'hops' needs vcs >= 3 for shortest on star:4 \(longest route 4 hops; "
            r"the last hop takes no VC\); got vcs = 2",
        ),
        C(
            "cli-models-switching-collective",
            "run --topology star:4 --workload broadcast --switching wormhole",
            r"model\.switching applies to unicast traffic; workload\.kind = 'broadcast' runs "
            r"on the collective engine",
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("cli-models-") for i in ids)


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_cli_models_case(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
