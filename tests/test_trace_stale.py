"""A writer killed outright (SIGKILL; ``mpiexec`` dying of SIGHUP kills its ranks so) leaves
its temporaries; the next writer of the same trace name removes them once it holds the
name's lock: the ``.NAME.tmp-TOKEN`` file and a split trace's ``.NAME.parts-TOKEN.tmp``
directory, and nothing of another name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_next_trace_writer_removes_what_a_killed_one_left(tmp_path):
    stale_parts = tmp_path / ".t.h5.parts-0123abcd.tmp"
    stale_parts.mkdir()
    (stale_parts / "part-0.h5").write_bytes(b"half a part")
    (tmp_path / ".t.h5.tmp-89abcdef").write_bytes(b"half a trace")
    other = tmp_path / ".u.h5.parts-0123abcd.tmp"  # another name's: not ours to remove
    other.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "mpinet", "run", "--topology", "star:4", "--quiet"]
    r = subprocess.run([*cmd, "--out", "t.h5"], cwd=tmp_path, env=env, capture_output=True,
                       timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == [".u.h5.parts-0123abcd.tmp", "t.h5"]
