"""The static switching catalogue: ``mpinet deadlock`` at virtual-channel level refused.

Unknown policies and switching modes, VC counts out of range or below what the policy
needs, VC flags without a VC-level switching, packet-buffer flags with one, symmetry a
policy's count forbids, and graphs too large to follow or build: each refused in one
line (exit code 2) before the analysis, or as soon as the routes show the VCs needed.
Checked by :func:`catalogue.check`.
"""

from __future__ import annotations

import pytest
from catalogue import Case, param, run_and_check, section

DL = "deadlock star:5 --router shortest"
WH = f"{DL} --switching wormhole"
HOPS_TOO_FEW = (
    r"vc_policy 'hops' needs vcs >= 5 for shortest on star:5 \(longest route 6 hops; the last "
    r"hop takes no VC\); got vcs = 2"
)
VC_FLAGS = r"needs --switching wormhole or cut-through \(virtual channels\); "
C = Case
CASES: list[Case] = [
    *section(
        "Switching: static deadlock analysis at VC level",
        C(
            "deadlock-vc-policy-unknown",
            f"{WH} --vc-policy fastest",
            r"unknown --vc-policy 'fastest'; valid: any, hops, negative-hop, dateline, "
            r"dateline-turn",
        ),
        C(
            "deadlock-vc-vcs-zero",
            f"{WH} --vcs 0",
            r"argument --vcs: must be in \[1, 64\], got 0",
        ),
        C(
            "deadlock-vc-vcs-too-many",
            f"{WH} --vcs 65",
            r"argument --vcs: must be in \[1, 64\], got 65",
        ),
        C("deadlock-vc-vcs-too-few", f"{WH} --vc-policy hops --vcs 2", HOPS_TOO_FEW),
        C("deadlock-vc-vcs-too-few-mpi", f"{WH} --vc-policy hops --vcs 2", HOPS_TOO_FEW, ranks=2),
        C(
            "deadlock-vc-negative-hop-too-few",
            f"{WH} --vc-policy negative-hop --vcs 3",
            r"vc_policy 'negative-hop' needs vcs >= 4 for shortest on star:5 \(at most 3 "
            r"negative hops before a route's last hop, 2 colours\); got vcs = 3",
        ),
        C(
            "deadlock-vc-switching-unknown",
            f"{DL} --switching teleport",
            r"argument --switching: invalid choice: 'teleport' \(choose from "
            r"'store-and-forward', 'cut-through', 'wormhole'\)",
        ),
        C(
            "deadlock-vc-policy-without-switching",
            f"{DL} --vc-policy hops",
            r"--vc-policy " + VC_FLAGS + r"without it the analysis is of store-and-forward "
            r"packet buffers \(--buffer-classes\)",
        ),
        C("deadlock-vc-vcs-without-switching", f"{DL} --vcs 2", r"--vcs " + VC_FLAGS),
        C(
            "deadlock-vc-policy-store-and-forward",
            f"{DL} --switching store-and-forward --vc-policy hops --vcs 4",
            r"--vc-policy and --vcs need --switching wormhole or cut-through \(virtual "
            r"channels\); --switching store-and-forward is analysed with packet buffers",
        ),
        C(
            "deadlock-vc-buffer-classes",
            f"{WH} --buffer-classes hops",
            r"--buffer-classes hops is for store-and-forward packet buffers; with --switching "
            r"wormhole give --vc-policy hops instead",
        ),
        C(
            "deadlock-vc-negative-hop-symmetry",
            "deadlock scc:4 --router shortest --switching wormhole --vc-policy negative-hop "
            "--destinations symmetry",
            r"vc_policy 'negative-hop' on scc:4: the translations do not keep what it counts "
            r"\(a colouring of 3 colours\); use --destinations all",
        ),
        C(
            "deadlock-vc-negative-hop-every-pair",
            "deadlock scc:8 --router scc-greedy --switching wormhole --vc-policy negative-hop",
            r"following every route of scc:8 \(282,240 nodes\) means N\*N = 79,659,417,600 "
            r"pairs, over the limit of 67,108,864 \(the translations do not keep a colouring "
            r"of 3 colours\); way out: a smaller network",
        ),
        C(
            "deadlock-vc-dateline-every-pair",
            "deadlock ccc:12 --router ccc --switching wormhole --vc-policy dateline",
            r"following every route of ccc:12 \(49,152 nodes\) means N\*N = 2,415,919,104 "
            r"pairs, over the limit of 67,108,864 \(the translations do not keep ring "
            r"positions\)",
        ),
        C(
            "deadlock-vc-any-many-vcs",
            "deadlock star:9 --router shortest --switching wormhole --vcs 64",
            r"deadlock analysis of shortest on star:9 \(362,880 nodes, degree 8\): its "
            r"dependency graph would have about [\d,]+ dependencies .*over the limit of "
            r"134,217,728",
        ),
        C(
            "deadlock-vc-any-many-vcs-mpi",
            "deadlock star:9 --router shortest --switching wormhole --vcs 64",
            r"its dependency graph would have about [\d,]+ dependencies",
            ranks=2,
        ),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 10 and sum(c.ranks > 1 for c in CASES) >= 2


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_switching_static_case(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
