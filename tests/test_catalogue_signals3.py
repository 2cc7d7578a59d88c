"""The third signals catalogue: every command inside the signal handling on 1-4 ranks,
standard output on a full device or a closed pipe, and error lines capped.

Signal cases start a command that runs for seconds, wait for its first progress line (or a
few seconds, for ``bench``) and signal the case's process group, as
``tests/test_catalogue_signals.py`` does: exit code 128 + N, one line from rank 0, nothing
left in the directory (``bench`` keeps its scratch traces there: ``TMPDIR={dir}``).
Device cases send stdout to ``/dev/full``, a small file system, or a pipe closed after the
first line (:data:`catalogue.HEAD`): exit code 3 and one line, or for a closed pipe a
quiet exit. Checked by :func:`catalogue.check` like every case.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from signal import SIGHUP, SIGINT, SIGTERM

import pytest
from catalogue import HEAD, ROOT, Case, Given, described, fill, param, run_and_check, section

PROGRESS = {"MPINET_PROGRESS_DELAY": "0"}
CTRL_C = r"^\[mpiexec@[^\]]*\] Sending Ctrl-C to processes as requested$"
#: ~10 s on one process here (rank 0 alone under mpiexec): star:9 as GraphML, 383 MB
EXPORT = "export star:9 --format graphml --out x.graphml --progress"
ROUTES = "routes ms:3,2 --router ms-balls-to-boxes --pairs all --progress"
#: a 7 MB trace read 16 rows at a time: ~6 s
ANALYZE = "analyze t.h5 --chunk-rows 16 --progress"
BENCH = "bench --specs ms:3,2 --packets 1000 --repeat 20 --trace summary"
VERIFY = "verify --progress"
FULL_LINE = r"^cannot write the results to standard output: No space left on device$"
_TRACE: list[Path] = []


@described("a trace of ms:3,2 (Bernoulli 0.2, 200 steps, level hops; 7 MB)")
def trace(path: Path, traces) -> None:
    """A trace long enough to analyze for seconds, made once per session."""
    if not _TRACE:
        d = Path(tempfile.mkdtemp(prefix="mpinet-sig3-"))
        cmd = [sys.executable, "-m", "mpinet", "run", "--topology", "ms:3,2", "--injection"]
        cmd += ["bernoulli", "--rate", "0.2", "--steps", "200", "--trace-level", "hops"]
        cmd += ["--out", "t.h5", "--quiet"]
        env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
        subprocess.run(cmd, cwd=d, env=env, check=True, capture_output=True, timeout=300)
        _TRACE.append(d / "t.h5")
    shutil.copy(_TRACE[0], path)


@described("fills the file system")
def filled(path: Path, traces) -> None:
    fill(path.parent)


def S(cid: str, cmd: str, sig: int, ranks: int = 1, when: str | float = "", **kw) -> Case:
    """A signal case: the exit code and the line follow from the signal and the output."""
    name = {SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"}[sig]
    tail = kw.pop("tail", "$")
    kw.setdefault("stdout", CTRL_C if sig == SIGINT and ranks > 1 else None)
    return Case(
        cid,
        cmd,
        rf"^{name}; stopped with exit code {128 + sig}{tail}",
        code=128 + sig,
        ranks=ranks,
        env={**PROGRESS, **kw.pop("env", {})},
        signal=(sig, when or f"[mpinet] {cmd.split()[0]}"),
        prefix="mpinet: interrupted by ",
        **kw,
    )


GRAPHML = "; no GraphML file written, its temporary files removed$"
SCRATCH = {"TMPDIR": "{dir}"}
T = {"t.h5": trace}


def F(cid: str, cmd: str, ranks: int = 1, **kw) -> Case:
    """A command whose stdout is ``/dev/full``: the work done, exit code 3, one line."""
    return Case(cid, cmd, kw.pop("match", FULL_LINE), code=3, ranks=ranks, sink="/dev/full", **kw)


def kept(*names: str):
    """``left``: the case's files unchanged, and ``names`` created (complete outputs)."""

    def check(before: dict, after: dict, d: Path) -> None:
        assert {k: v for k, v in after.items() if k not in names} == before, after
        assert all(n in after for n in names), after

    return check


def stdout_file(before: dict, after: dict, d: Path) -> None:
    """Only ``out.txt`` (the shell's redirection target) was created."""
    assert set(after) == set(before) | {"out.txt"}, after


CASES = [
    *section(
        "Interrupts: export, routes, analyze, bench and verify",
        S("sig3-sigint-export", EXPORT, SIGINT, tail=GRAPHML),
        S("sig3-sighup-export", EXPORT, SIGHUP, tail=GRAPHML),
        # rank 1 waited outside the handling: exit 15, hydra's banner, the temporary left
        S("sig3-sigterm-export-n2", EXPORT, SIGTERM, ranks=2, tail=GRAPHML),
        # a KeyboardInterrupt traceback on rank 1 and a launcher that never exited
        S("sig3-sigint-export-n2", EXPORT, SIGINT, ranks=2, tail=GRAPHML),
        S("sig3-sigterm-export-n3", EXPORT, SIGTERM, ranks=3, tail=GRAPHML),
        S("sig3-sigint-export-n4", EXPORT, SIGINT, ranks=4, tail=GRAPHML),
        S("sig3-sigint-routes", ROUTES, SIGINT),
        S("sig3-sighup-routes", ROUTES, SIGHUP),
        S("sig3-sigint-routes-n2", ROUTES, SIGINT, ranks=2),
        S("sig3-sigterm-routes-n4", ROUTES, SIGTERM, ranks=4),
        S("sig3-sigint-analyze", ANALYZE, SIGINT, files=T),
        S("sig3-sigterm-analyze", ANALYZE, SIGTERM, files=T),
        S("sig3-sighup-analyze", ANALYZE, SIGHUP, files=T),
        S("sig3-sigterm-analyze-n2", ANALYZE, SIGTERM, ranks=2, files=T),
        S("sig3-sigint-analyze-n3", ANALYZE, SIGINT, ranks=3, files=T),
        S(
            "sig3-sigterm-bench",
            BENCH,
            SIGTERM,
            when=3.0,
            env=SCRATCH,
            tail="; its temporary files removed$",
        ),  # fmt: skip
        S(
            "sig3-sighup-bench",
            BENCH,
            SIGHUP,
            when=3.0,
            env=SCRATCH,
            tail="; its temporary files removed$",
        ),  # fmt: skip
        S(
            "sig3-sigint-bench-n2",
            BENCH,
            SIGINT,
            ranks=2,
            when=4.0,
            env=SCRATCH,
            tail="; its temporary files removed$",
        ),  # fmt: skip
        S("sig3-sighup-verify", VERIFY, SIGHUP, stdout=r"^topology +collective"),
        S("sig3-sigterm-verify-n2", VERIFY, SIGTERM, ranks=2, stdout=r"^topology +collective"),
    ),
    *section(
        "Standard output on a full device: exit code 3, one line",
        # ENOSPC traceback, exit 1; under mpiexec hydra's six lines and exit 255
        F("sig3-full-run", "run --topology star:4 --packets 2 --quiet"),
        F("sig3-full-run-n2", "run --topology star:4 --packets 2 --quiet", ranks=2),
        F(
            "sig3-full-run-trace",
            "run --topology star:4 --packets 2 --quiet --out t.h5",
            left=kept("t.h5"),
        ),  # fmt: skip
        F("sig3-full-info", "info star:5"),
        F("sig3-full-info-n2", "info star:5 --json", ranks=2),
        F("sig3-full-routes", "routes star:5 --router star-greedy"),
        F("sig3-full-routes-n2", "routes star:5 --router star-greedy", ranks=2),
        F(
            "sig3-full-sweep",
            "sweep --topology star:4 --rates 0.1 --warmup 10 --measure 20 --drain 40 --quiet",
        ),  # fmt: skip
        F("sig3-full-deadlock", "deadlock star:5 --router shortest"),
        F("sig3-full-deadlock-n2", "deadlock star:5 --router shortest", ranks=2),
        F("sig3-full-export", "export star:6 --format edgelist"),
        F("sig3-full-export-n2", "export star:6 --format anynet", ranks=2),
        F("sig3-full-analyze", "analyze t.h5", files=T),
        F("sig3-full-verify", "verify --list"),
        F("sig3-full-help", "--help"),
        Case(
            "sig3-full-fs-export",
            "export star:7 --format edgelist",
            FULL_LINE,
            code=3,
            sink="out.txt",
            fs=64 << 10,
            left=stdout_file,
        ),  # fmt: skip
        Case(
            "sig3-full-fs-info-n2",
            "info star:7 --histogram",
            FULL_LINE,
            code=3,
            ranks=2,
            sink="out.txt",
            fs=64 << 10,
            files={".fill": filled},
            left=stdout_file,
        ),  # fmt: skip
    ),
    *section(
        "Standard output closed early (| head -1): a quiet exit",
        # "Exception ignored ... BrokenPipeError" after the output, at interpreter exit
        Case(
            "sig3-epipe-export",
            "export star:8 --format edgelist",
            None,
            code=0,
            sink=HEAD,
            stdout=r"^# mpinet export star:8",
        ),  # fmt: skip
        Case(
            "sig3-epipe-export-graphml",
            "export star:7 --format graphml",
            None,
            code=0,
            sink=HEAD,
            stdout=r"^<\?xml",
        ),  # fmt: skip
        # hydra writes the pipe itself and dies of SIGPIPE (141 in a shell), its proxy ending
        # the ranks: quiet, as `yes | head -1`, but the launcher's code (measured)
        Case(
            "sig3-epipe-export-n2",
            "export star:8 --format edgelist",
            None,
            code=-13,
            ranks=2,
            sink=HEAD,
            stdout=r"^# mpinet export star:8",
        ),  # fmt: skip
    ),
    *section(
        "Error lines: one line, capped at 400 bytes",
        Case(
            "sig3-long-model",
            "run job.toml",
            r"^model must be one of .*; got 'y+ \[\.\.\. [\d,]+ bytes cut \.\.\.\] y+'$",
            files={
                "job.toml": Given(
                    f'topology = "star:4"\n[model]\nkind = "{"y" * 20000}"\n',
                    ': `topology = "star:4"`, a 20,000-character `model.kind`',
                )
            },
        ),  # fmt: skip
        Case(
            "sig3-long-spec-n2",
            "run job.toml",
            r"^N in star:N must be in \[3, 20\], got 9+ \[\.\.\. [\d,]+ bytes cut \.\.\.\] 9+$",
            ranks=2,
            files={
                "job.toml": Given(f'topology = "star:{"9" * 4000}"\n', ": a 4,000-digit `star:N`")
            },
        ),  # fmt: skip
    ),
]
#: bytes of an error line at most: the message's 400 and its prefix
LINE_BYTES = 400 + len("mpinet: error: ")


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and all(i.startswith("sig3-") for i in ids)
    assert len(CASES) >= 25 and sum(c.ranks > 1 for c in CASES) >= 10
    assert {c.signal[0] for c in CASES if c.signal} == {SIGINT, SIGTERM, SIGHUP}
    commands = {c.cmd.split()[0] for c in CASES if c.sink == "/dev/full"}
    assert {"run", "info", "routes", "sweep", "deadlock", "export"} <= commands


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_signals3_case(c: Case, tmp_path, request):
    o = run_and_check(c, tmp_path, request)
    for line in o.lines:  # every error line within the cap, printable
        assert len(line.encode()) <= LINE_BYTES and line.isprintable(), line
