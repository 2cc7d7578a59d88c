"""BookSim's separable allocators on the iq router's lean path (docs/iq-router.md, "Session
20: separable allocators on the lean path"): ``separable_input_first`` and
``separable_output_first`` for VC and switch allocation, alone and mixed with iSLIP, with
``alloc_iters``, input speedup, speculation and output speedup; every record equals the
general path's, hop rows too."""

from __future__ import annotations

import pytest
from test_iq_lean import MESHC, _ids, _lean_as_general

IF, OF, IS = "separable_input_first", "separable_output_first", "islip"


def al(va, sa, **keys):
    """The keys with ``vc_allocator = va`` and ``sw_allocator = sa``."""
    return dict(keys, vc_allocator=va, sw_allocator=sa)


SEP = [  # network, router, flits, VCs, slots, packets, steps, keys
    ("mesh:4,2", "dor", 1, 16, 8, 400, 200, al(IF, IF, **MESHC)),  # light
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, al(IF, IF, **MESHC)),  # saturated
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, al(OF, OF, **MESHC)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, al(IF, IF, alloc_iters=2, **MESHC)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, al(IF, IF, **MESHC)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, al(OF, OF)),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, al(IF, IS)),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, al(IS, IF)),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, al(OF, IS, alloc_iters=2)),
    ("mesh:4,2", "dor", 2, 4, 4, 1500, 100, al(IS, OF, alloc_iters=2)),
    ("mesh:5,2", "dor", 3, 2, 2, 800, 60, al(IF, OF)),
    ("torus:4,2", "dor", 2, 2, 4, 800, 100, al(IF, IF, **MESHC)),
    ("torus:4,2", "dor", 16, 4, 4, 300, 100, al(OF, OF)),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100, al(IF, IF)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, al(OF, IF, **MESHC)),
    ("ms:2,2", "anynet-min", 6, 2, 8, 600, 100, al(IF, IF, **MESHC)),
    ("ms:2,2", "anynet-min", 16, 2, 8, 300, 200, al(OF, OF)),
    ("ms:3,2", "anynet-min", 4, 4, 4, 1500, 150, al(IF, IF)),
]


@pytest.mark.parametrize("case", SEP, ids=_ids(SEP))
def test_lean_separable(case):
    """The separable allocators for VC and switch allocation (and either beside iSLIP) on
    the lean path, as the general path's, light to saturated."""
    _lean_as_general(case)


SP, OS = {"speculative": 1}, {"output_speedup": 2}
SPEEDUP = [  # input and output speedup, speculation
    ("mesh:4,2", "dor", 20, 8, 8, 600, 200, al(IF, IF, input_speedup=2, **MESHC)),
    ("mesh:4,2", "dor", 1, 8, 8, 3000, 150, al(OF, OF, input_speedup=2, alloc_iters=2, **MESHC)),
    ("torus:4,2", "dor", 2, 4, 4, 1500, 100, al(OF, IF, input_speedup=3)),
    ("mesh:4,2", "dor", 1, 4, 8, 100, 200, al(IF, IF, **SP)),  # light
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, al(IF, IF, **SP)),
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, al(IS, OF, **SP)),
    ("mesh:4,2", "dor", 1, 16, 8, 3000, 150, al(OF, OF, **SP, **MESHC)),
    ("hypercube:5", "anynet-min", 1, 2, 8, 2000, 100, al(IF, IF, **SP, **MESHC)),
    ("ms:2,2", "anynet-min", 6, 4, 8, 600, 100, al(IF, IS, **SP)),
    ("mesh:4,2", "dor", 4, 4, 4, 100, 200, al(OF, OF, **OS)),  # light
    ("mesh:4,2", "dor", 4, 4, 4, 1500, 150, al(IF, IF, **OS, **SP, **MESHC)),  # mesh4-osp2's
    ("torus:4,2", "dor", 16, 4, 4, 300, 100, al(OF, OF, **OS, **SP)),
    ("hypercube:4", "hypercube-ecube", 5, 4, 3, 500, 100, al(OF, IF, **OS, **SP)),
    ("ms:2,2", "anynet-min", 2, 4, 4, 1500, 100, al(IF, IF, **OS, **SP, **MESHC)),
    ("mesh:4,2", "dor", 20, 8, 8, 600, 200, al(IF, IF, input_speedup=2, **OS, **SP, **MESHC)),
]


@pytest.mark.parametrize("case", SPEEDUP, ids=_ids(SPEEDUP))
def test_lean_separable_speedups(case):
    """The separable allocators with input speedup, speculation (its bids below the others:
    the priority they compare first) and output speedup, as the general path's."""
    _lean_as_general(case)
