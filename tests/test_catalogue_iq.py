"""The iq router's catalogue (``model.router = "iq"``, docs/iq-router.md): its keys out of
range or unknown, what it does not run yet, and BookSim configurations with iq keys it does
not model, each refused in one line before any work. Checked by :func:`catalogue.check`."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalogue import BEFORE_WORK, Case, described, param, run_and_check, section
from test_catalogue_flit_traces import _mpinet

RUN = "run --topology mesh:4,2 --router dor --quiet"
IQ = f"{RUN} --set model.router=iq"
MESH = "topology = mesh;\nk = 4;\nn = 2;\nrouting_function = dim_order;\n"
#: star:4 under 8-flit worms, one VC of 2 flits and vc_policy any (jobs/switching/deadlock.toml,
#: six packets a node: its four complete under iq, whose ties go by BookSim's port numbers)
DEAD = ("run --topology star:4 --router shortest --switching wormhole --vc-policy any "
        "--set model.flits=8 --set model.vcs=1 --set model.vc_buffer=2 --set workload.packets=6 "
        "--set model.router=iq --quiet")  # fmt: skip
#: the hang guard of a case that may compile the iq kernels (a fresh checkout's first iq run:
#: 134 s seen at load 8 against the catalogue's 60; the first 2-rank run 78 s in CI's fresh
#: clone once the read and write phases compiled both inlined and as the ranks' kernels)
COMPILES = 300
#: the report of its wait-for cycle, as the ideal model's (docs/iq-router.md, "Deadlocks")
CYCLE = (r"checks +1 FAILED\n[\s\S]*DEADLOCK in step 312: 83 packets blocked; one wait-for "
         r"cycle of 8 virtual channels:\n    3241 --T3--> 4231 \(VC 0\) waits\n")  # fmt: skip


@described("a trace of an iq run on 2 ranks (mesh:4,2, 3-flit packets, level hops)")
def two_rank_trace(path: Path, traces) -> None:
    args = [*IQ.split()[1:], "--set", "model.flits=3", "--set", "workload.packets=20",
            "--trace-level", "hops", "--out", str(path)]  # fmt: skip
    # a hang guard: the first iq run on ranks of a fresh checkout compiles its kernels (16 s
    # quiet, over 300 s seen at load 8 with two ranks on two cores)
    proc = _mpinet(["run", *args], path.parent, ranks=2, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]


def C(cid: str, cmd: str, match: str, **kw) -> Case:  # noqa: N802 (the catalogue's name)
    return Case(cid, cmd, match, cap=BEFORE_WORK, **kw)


CASES: list[Case] = [
    *section(
        "The iq router: its keys",
        C("iq-router-unknown", f"{RUN} --set model.router=oq",
          r"model\.router must be one of ideal, iq, got 'oq'"),
        C("iq-key-unknown", f"{IQ} --set model.iq.pipeline=3",
          r"model\.iq: unknown key 'pipeline'; valid keys: routing_delay, vc_alloc_delay"),
        C("iq-delay-zero", f"{IQ} --set model.iq.vc_alloc_delay=0",
          r"model\.iq\.vc_alloc_delay must be an integer in \[1, 64\], got 0"),
        C("iq-speedup-low", f"{IQ} --set model.iq.internal_speedup=0.5",
          r"model\.iq\.internal_speedup must be a number in \[1, 16\], got 0\.5"),
        C("iq-max-size", f"{IQ} --set model.iq.sw_allocator=max_size",
          r"model\.iq\.sw_allocator = 'max_size' \(BookSim's maximum-size matching\) is not "
          r"modeled; use one of separable_input_first, separable_output_first, islip"),
        C("iq-no-crossbar", f"{IQ} --set model.iq.st_final_delay=0",
          r"st_prepare_delay \+ st_final_delay must be at least 1"),
        C("iq-keys-with-ideal", f"{RUN} --set model.iq.routing_delay=0",
          r"\[model\.iq\] has no effect with model\.router = 'ideal'; set model\.router = 'iq' "
          r"or remove it"),
    ),
    *section(
        "The iq router: what it does not run yet",
        C("iq-cut-through", f"{IQ} --set model.switching=cut-through --set model.flits=2",
          r"model\.router = 'iq' runs wormhole switching \(BookSim's vct = 0\); "
          r"model\.switching = 'cut-through' is not built for it yet"),
        C("iq-booksim-unmodeled", "booksim c.cfg noq=1",
          r"override 'noq=1': noq = 1: not modeled by mpinet's iq router", files={"c.cfg": MESH}),
        C("iq-booksim-max-size", "booksim c.cfg vc_allocator=max_size",
          r"vc_allocator = max_size: BookSim's maximum-size matching is not modeled; mpinet's "
          r"iq router runs separable_input_first, separable_output_first, islip",
          files={"c.cfg": MESH}),
    ),
    *section(
        "The iq router on several ranks",
        Case("iq-two-ranks", IQ, None, code=0, ranks=2, limit=COMPILES,
             stdout=r"on 2 rank\(s\)[\s\S]*delivered +16 of 16[\s\S]*checks +all passed"),
        Case("iq-two-ranks-trace", "analyze t.h5", None, code=0,
             stdout=r"\nchecks +all \d+ passed[\s\S]*\nconsistency +tables agree",
             files={"t.h5": two_rank_trace}),
    ),
    *section(
        "The iq router: deadlocks",
        Case("iq-deadlock", DEAD, None, code=1, stdout=CYCLE, limit=COMPILES),
        Case("iq-deadlock-two-ranks", DEAD, None, code=1, ranks=2, stdout=CYCLE,
             limit=COMPILES),
    ),
]  # fmt: skip


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("iq-") for i in ids)


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_bad_input(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
