"""The switching catalogue: jobs with flit keys (docs/switching.md) refused before any work.

Flits, VCs and buffers out of range, a buffer too small for cut-through or
store-and-forward, unknown modes and policies, a policy that needs more VCs than given,
and switching keys where the flit engine does not run (collectives, schedule-driven
routers, faults, the packet engine's own keys). Checked by :func:`catalogue.check`.
"""

from __future__ import annotations

import pytest
from catalogue import Case, param, run_and_check, section

RUN = "run --topology star:4 --quiet"
WH = "--set model.switching=wormhole"
C = Case
CASES: list[Case] = [
    *section(
        "Switching: flits, virtual channels and buffers",
        C(
            "flits-zero",
            f"{RUN} --set model.flits=0",
            r"model\.flits must be in \[1, 65,536\], got 0",
        ),
        C(
            "flits-fraction",
            f"{RUN} --set model.flits=2.5",
            r"model\.flits must be an integer in \[1, 65,536\], got 2\.5",
        ),
        C("vcs-zero", f"{RUN} --set model.vcs=0", r"model\.vcs must be in \[1, 64\], got 0"),
        C("vcs-zero-mpi", f"{RUN} --set model.vcs=0", r"model\.vcs must be in \[1, 64\]", ranks=2),
        C("vcs-too-many", f"{RUN} --set model.vcs=65", r"model\.vcs must be in \[1, 64\], got 65"),
        C(
            "vc-buffer-zero",
            f"{RUN} {WH} --set model.vc_buffer=0",
            r"model\.vc_buffer must be in \[1, 65,536\], got 0",
        ),
        C(
            "cut-through-buffer-below-flits",
            f"{RUN} --set model.switching=cut-through --set model.flits=4 --set model.vc_buffer=2",
            r"model\.vc_buffer = 2 is smaller than model\.flits = 4: cut-through keeps a whole "
            r"packet in one buffer; set vc_buffer >= 4",
        ),
        C(
            "store-and-forward-buffer-below-flits",
            f"{RUN} --set model.flits=4 --set model.vc_buffer=2",
            r"store-and-forward keeps a whole packet in one buffer; set vc_buffer >= 4",
        ),
        C(
            "switching-unknown",
            f"{RUN} --set model.switching=circuit",
            r"model\.switching must be one of store-and-forward, cut-through, wormhole; got "
            r"'circuit'",
        ),
        C(
            "vc-policy-unknown",
            f"{RUN} --set model.vc_policy=zzz",
            r"unknown vc_policy 'zzz'; valid: any, hops, negative-hop",
        ),
        C(
            "vc-policy-needs-more-vcs",
            f"{RUN} {WH} --set model.vc_policy=hops --set model.vcs=1",
            r"vc_policy 'hops' needs vcs >= 3 for shortest on star:4 \(longest route 4 hops; "
            r"the last hop takes no VC\); got vcs = 1",
        ),
        C(
            "vc-policy-needs-more-vcs-mpi",
            f"{RUN} {WH} --set model.vc_policy=hops --set model.vcs=1",
            r"vc_policy 'hops' needs vcs >= 3",
            ranks=2,
        ),
    ),
    *section(
        "Switching: where the flit engine does not run",
        C(
            "switching-on-a-broadcast",
            f"{RUN} --workload broadcast {WH}",
            r"model\.switching applies to unicast traffic; workload\.kind = 'broadcast' runs on "
            r"the collective engine",
        ),
        C(
            "switching-on-the-te-schedule",
            f"run --topology ms:2,2 --quiet --workload te {WH}",
            r"the router 'te-schedule' holds packets until their step \(a schedule\), which the "
            r"flit engine does not run",
        ),
        C(
            "switching-with-faults",
            f"{RUN} {WH} --set faults.random_links=0.1",
            r"model\.switching with \[faults\]: the flit engine does not model failed links yet",
        ),
        C(
            "switching-with-packet-buffers",
            f"{RUN} {WH} --buffer 4",
            r"model\.buffer and model\.buffer_classes are packet buffers of the "
            r"store-and-forward engine; with switching keys use model\.vc_buffer",
        ),
        C(
            "switching-with-order",
            f"{RUN} {WH} --order oldest-first",
            r"model\.order has no effect with model\.switching: the flit engine serves each link "
            r"oldest packet first",
        ),
        C(
            "switching-with-queues-mpi",
            f"{RUN} {WH} --set model.queues=links",
            r"model\.queues has no effect with model\.switching",
            ranks=2,
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 15 and sum(c.ranks > 1 for c in CASES) >= 3


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_switching_case(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
