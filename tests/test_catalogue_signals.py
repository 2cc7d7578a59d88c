"""The signals catalogue: SIGINT, SIGTERM and SIGHUP during a command, on 1 to 4 ranks.

Each case starts a long command with ``--progress`` (``MPINET_PROGRESS_DELAY=0``), waits
for its first progress line and sends the signal to the case's process group: ``mpinet``
itself, or ``mpiexec`` alone (hydra starts its proxy and the ranks in sessions of their
own), as a terminal's Ctrl-C does. Checked by :func:`catalogue.check` like every case:
the exit code 128 + N, one line on stderr from rank 0 (``mpinet: interrupted by ...``;
the progress lines and hydra's ``[mpiexec@host]`` notices dropped), no traceback, nothing
left in the directory. On SIGINT hydra says ``Sending Ctrl-C to processes as requested``
on stdout, which is all stdout may hold.
"""

from __future__ import annotations

from signal import SIGHUP, SIGINT, SIGTERM

import pytest
from catalogue import Case, param, run_and_check, section

#: a run of 10-25 s on 1-4 ranks here, interrupted seconds after its first progress line
RUN = (
    "run --topology ms:3,2 --injection bernoulli --rate 0.2 --steps 3000 "
    "--trace-level summary --out t.h5 --progress"
)
STEP = "[mpinet] step"
PROGRESS = {"MPINET_PROGRESS_DELAY": "0"}
CTRL_C = r"^\[mpiexec@[^\]]*\] Sending Ctrl-C to processes as requested$"
INTERRUPTED = "mpinet: interrupted by "
TRACE = "; no trace written, its temporary files removed$"


def C(cid: str, cmd: str, sig: int, ranks: int = 1, when: str = STEP, **kw) -> Case:
    """A signal case: the exit code and the line follow from the signal."""
    name = {SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"}[sig]
    tail = TRACE if "--out" in cmd else "$"
    kw.setdefault("stdout", CTRL_C if sig == SIGINT and ranks > 1 else None)
    return Case(
        cid,
        cmd,
        rf"^{name}; stopped with exit code {128 + sig}{tail}",
        code=128 + sig,
        ranks=ranks,
        env={**PROGRESS, **kw.pop("env", {})},
        signal=(sig, when),
        prefix=INTERRUPTED,
        **kw,
    )


CASES = [
    *section(
        "Interrupts: a run, without a launcher",
        C("sigint-run", RUN, SIGINT),
        C("sigterm-run", RUN, SIGTERM),
        C("sighup-run", RUN, SIGHUP),
        # UCX took SIGHUP as its debug signal: the run went on, ~240 debug lines on stdout
        C("sighup-run-json", f"{RUN} --json", SIGHUP),
    ),
    *section(
        "Interrupts: a run under mpiexec (the signal to mpiexec, as Ctrl-C)",
        C("sigint-run-n2", RUN, SIGINT, ranks=2),
        # hydra used to SIGKILL the other ranks when rank 0 exited: exit code 9, "Killed"
        C("sigint-run-n3", RUN, SIGINT, ranks=3),
        C("sigint-run-n4", RUN, SIGINT, ranks=4),
        C("sigterm-run-n2", RUN, SIGTERM, ranks=2),
        C("sigterm-run-n3", RUN, SIGTERM, ranks=3),
        C("sigterm-run-n4", RUN, SIGTERM, ranks=4),
        C(
            "sigterm-split-trace-n3",
            RUN.replace("summary", "hops"),
            SIGTERM,
            ranks=3,
            env={"MPINET_TRACE_CONSOLIDATE_MIB": "0"},
        ),
    ),
    *section(
        "Interrupts: other commands",
        C("sigint-info-n3", "info star:10 --progress", SIGINT, ranks=3, when="[mpinet] info"),
        C(
            "sigterm-routes-n2",
            "routes ms:3,2 --router ms-balls-to-boxes --pairs all --progress",
            SIGTERM,
            ranks=2,
            when="[mpinet] routes",
        ),
        C(
            "sighup-deadlock",
            "deadlock ms:3,2 --router shortest --destinations all --progress",
            SIGHUP,
            when="[mpinet] deadlock",
        ),
        C("sigint-info-json", "info star:10 --progress --json", SIGINT, when="[mpinet] info"),
    ),
]


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 12 and sum(c.ranks > 1 for c in CASES) >= 8
    assert {c.signal[0] for c in CASES} == {SIGINT, SIGTERM, SIGHUP}


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_signal_case(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
