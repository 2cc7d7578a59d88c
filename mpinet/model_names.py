"""The flit model's names and limits that parsers and listings read: plain data.

``mpinet --help`` lists the switching modes and VC policies, and the job schema checks
``model.vcs``; the modules that implement them (:mod:`mpinet.routing.vc_policies`) import
numpy and, through the routing package, numba's kernels (0.2 s of a ``--help`` that runs no
kernel; docs/performance.md, "mpinet booksim meshconfig, end to end", session 13). The
names live here; :mod:`mpinet.routing.vc_policies` takes :data:`SWITCHING` and
:data:`MAX_VCS` from here, and ``tests/test_lazy_registry.py`` holds
:data:`VC_POLICY_NAMES` to its registry.

Bottom layer: imports nothing of mpinet.
"""

from __future__ import annotations

#: the switching modes (docs/switching.md), the one list every layer and command checks
#: against: the packet model first, then the flit engine's two
SWITCHING = ("store-and-forward", "cut-through", "wormhole")
#: the most VCs per link a policy is built with
MAX_VCS = 64
#: the VC policies' names (``model.vc_policy``), in the order of their registry
#: (:data:`mpinet.routing.vc_policies.VC_POLICIES`)
VC_POLICY_NAMES = ("any", "hops", "negative-hop", "dateline", "dateline-turn")
