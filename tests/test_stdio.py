"""Standard output and error as outputs (``mpinet/cli/stdio.py``): a full device is one
line and exit code 3, a closed pipe a quiet exit, every error line capped and escaped, on one
process and under ``mpiexec`` (where rank 0 checks the launcher's own descriptors).
docs/reliability.md ("One line instead of a traceback") lists what each test proves.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MPINET = [sys.executable, "-m", "mpinet"]


def test_one_line_escapes_and_caps_a_message_of_megabytes():
    from mpinet.cli.stdio import MESSAGE_BYTES, one_line

    head, tail = "refused: got '", "'; way out: a smaller file"
    text = head + ("\0\x01binary\n" * 5_000_000) + tail  # 45 MB with NULs and newlines
    t0 = time.process_time()
    line = one_line(text)
    assert time.process_time() - t0 < 5  # never the whole text escaped
    assert len(line.encode()) <= MESSAGE_BYTES and line.isprintable()
    assert line.startswith(head + "\\x00\\x01binary\\n") and line.endswith("binary\\n" + tail)
    shown = line.replace("\\x00", "\0").replace("\\x01", "\1").replace("\\n", "\n")
    first, rest = shown.split(" [... ", 1)
    cut, last = rest.split(" bytes cut ...] ", 1)
    # the bytes said cut are exactly those not shown
    assert len(first) + int(cut.replace(",", "")) + len(last) == len(text)
    assert text.startswith(first) and text.endswith(last)


def test_one_line_keeps_short_lines_and_escapes_every_unprintable():
    from mpinet.cli.stdio import one_line

    assert one_line("plain; way out: x") == "plain; way out: x"
    odd = "a\tb\rc\x1b[2J\x7f\u202e\u2028" + b"\xff".decode("utf-8", "surrogateescape")
    assert one_line(odd) == "a\\tb\\rc\\x1b[2J\\x7f\\u202e\\u2028\\xff"
    assert one_line("é" * 300).endswith("é" * 25) and len(one_line("é" * 300).encode()) <= 400


def test_every_error_line_on_stderr_is_capped_whoever_prints_it():
    """print(f"mpinet: error: {e}") in any command goes through the guarded stderr."""
    from mpinet.cli.stdio import GuardedStream

    raw = io.StringIO()
    err = GuardedStream(raw, "standard error", errors=True)
    print("mpinet: error: " + "x\n" * 10_000 + "end", file=err)
    print("mpinet: error on rank 1: a\x00b", file=err)
    print("[mpinet] step 3 (progress: unchanged)\r", file=err)
    lines = raw.getvalue().split("\n")
    assert len(lines[0].encode()) <= 400 + len("mpinet: error: ") and "bytes cut" in lines[0]
    assert lines[1] == "mpinet: error on rank 1: a\\x00b"
    assert lines[2] == "[mpinet] step 3 (progress: unchanged)\r"


class _Broken:
    """A stream whose writes fail with ``errno_``."""

    def __init__(self, errno_: int) -> None:
        self.errno, self.calls = errno_, 0

    def write(self, text: str) -> int:
        self.calls += 1
        raise OSError(self.errno, os.strerror(self.errno))

    flush = write


@pytest.mark.parametrize("err", [28, 32], ids=["ENOSPC", "EPIPE"])
def test_a_failed_stdout_write_raises_once_then_goes_nowhere(err):
    from mpinet.cli.stdio import GuardedStream, StreamError

    raw = _Broken(err)
    out = GuardedStream(raw, "standard output")
    with pytest.raises(StreamError, match="cannot write the results to standard output") as exc:
        out.write("results\n")
    assert exc.value.quiet is (err == 32)
    out.write("more")
    out.flush()  # the exit flush: nothing raised, nothing tried
    assert raw.calls == 1


@pytest.mark.slow
def test_stdout_full_and_closed_on_one_process(tmp_path):
    """``> /dev/full``: exit 3, one line; ``| head -1``: exit 0, nothing on stderr."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open("/dev/full", "w") as full:
        r = subprocess.run([*MPINET, "info", "star:5"], stdout=full, stderr=subprocess.PIPE,
                           text=True, env=env, cwd=tmp_path, timeout=120)  # fmt: skip
    assert r.returncode == 3
    assert r.stderr == (
        "mpinet: error: cannot write the results to standard output: No space left on device\n"
    )
    cmd = [*MPINET, "export", "star:8", "--format", "edgelist"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tmp_path)  # fmt: skip
    assert proc.stdout.readline().startswith(b"# mpinet export star:8")
    proc.stdout.close()  # 2 MB still to come: the next write meets EPIPE
    assert proc.wait(timeout=120) == 0
    assert proc.stderr.read() == b""  # no "Exception ignored ... BrokenPipeError"


def test_launcher_room_sees_dev_full_files_and_pipes(tmp_path):
    """What rank 0 learns of the launcher's stdout (its pid stands for mpiexec here)."""
    from mpinet.cli.stdio import launcher_room

    def room(stdout) -> int | None:
        child = subprocess.Popen(["sleep", "30"], stdout=stdout)
        try:
            return launcher_room(child.pid)
        finally:
            child.kill()
            child.wait()

    with open("/dev/full", "w") as full:
        assert room(full) == 0
    with open(tmp_path / "out.txt", "w") as fh:
        st = os.statvfs(tmp_path)
        assert abs(room(fh) - st.f_bavail * st.f_frsize) < 64 << 20
    assert room(subprocess.PIPE) is None
    assert launcher_room(2**22 + 12345) is None  # no such process


@pytest.mark.slow
def test_a_launchers_full_stderr_leaves_the_refusals_code(tmp_path, mpiexec):
    """``mpiexec ... 2> /dev/full``: hydra used to exit 255 with lines of its own on failing
    to write rank 0's error line; rank 0 now sees the launcher's stderr and stays silent."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open("/dev/full", "w") as full:
        r = subprocess.run([*mpiexec, "-n", "2", *MPINET, "info", "foo:3"], stderr=full,
                           stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                           timeout=120)  # fmt: skip
    assert r.returncode == 2 and r.stdout == ""


def test_main_keeps_its_error_lines_inside_the_guard(capsys):
    """A refusal printed by main (in-process) is capped and escaped like any other line."""
    from mpinet.cli import main

    assert main(["run", "job\n\x07" + "j" * 5000 + ".toml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mpinet: error: job file job\\n\\x07jjj")
    assert "bytes cut" in err and len(err.encode()) <= 400 + len("mpinet: error: ") + 1
