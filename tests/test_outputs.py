"""mpinet.outputs: one discipline for every file a command writes (tested once per piece,
then once per command: run, sweep, export, analyze --plot, bench, the report scripts)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from mpinet import outputs
from mpinet.errors import OutputError, TraceError
from mpinet.outputs import EXPORTS, FIGURE, GuardedFile, check_target, reserve
from mpinet.outputs.figures import FigureSet, plan_figures
from mpinet.outputs.hdf5 import SWEEP, TRACE, h5_file
from mpinet.outputs.reserve import WriterLock

ROOT = Path(__file__).resolve().parent.parent
MPINET = [sys.executable, "-m", "mpinet"]
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


@pytest.fixture(autouse=True)
def _nothing_live():
    yield
    assert outputs.live() == []  # every test leaves no reservation behind


# -- check_target: every refusal, for every kind ------------------------------------------------
KINDS = [TRACE, SWEEP, FIGURE, *EXPORTS.values()]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_refusals_name_the_kind_and_the_way_out(tmp_path, kind):
    (tmp_path / "sub").mkdir()
    (tmp_path / "notes.txt").write_text("precious\n")
    (tmp_path / "link").symlink_to("gone")
    cases = {
        "": "path is empty",
        "x/": "ends in '/', so it names a directory",
        str(tmp_path / "sub"): "is a directory; give a file name such as",
        str(tmp_path / "link"): "dangling symbolic link",
        str(tmp_path / "nodir" / "f"): "does not exist; create it first",
        str(tmp_path / "notes.txt"): "exists; use --force",
    }
    for path, words in cases.items():
        with pytest.raises(kind.error, match=words) as info:
            check_target(path, kind)
        assert kind.noun in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(kind.error, match=f"is not an mpinet {kind.noun}"):
        check_target(tmp_path / "notes.txt", kind, force=True)
    with pytest.raises(kind.error, match="is the job file itself"):
        check_target(tmp_path / "notes.txt", kind, protect=[(str(tmp_path / "notes.txt"),
                                                             "the job file")])  # fmt: skip
    assert listing(tmp_path) == ["link", "notes.txt", "sub"]  # nothing created


def test_force_replaces_only_the_commands_own_kind(tmp_path):
    from mpinet.trace import write_trace

    trace = tmp_path / "t.h5"
    write_trace(trace, None, attrs={"v": 1}, tables={"steps": {"n": np.arange(3)}})
    assert check_target(trace, TRACE, force=True).replaces is not None
    with pytest.raises(OutputError, match="is not an mpinet sweep file"):
        check_target(trace, SWEEP, force=True)
    edges = tmp_path / "e.txt"
    edges.write_text("# mpinet export star:4: 24 nodes\n0 1 T2 star\n")
    for kind in EXPORTS.values():  # any export replaces any export
        assert check_target(edges, kind, force=True).replaces is not None
    with pytest.raises(TraceError, match="is not an mpinet trace"):
        check_target(edges, TRACE, force=True)


def test_recognisers(tmp_path):
    """Each kind recognises what mpinet writes of it, and nothing else."""
    from mpinet.cli import main
    from mpinet.outputs import kinds

    files = {}
    for fmt in EXPORTS:
        files[fmt] = tmp_path / f"net.{fmt}"
        assert main(["export", "star:4", "--format", fmt, "--out", str(files[fmt])]) == 0
    files["trace"] = tmp_path / "t.h5"
    assert main(["run", "--topology", "star:4", "--quiet", "--out", str(files["trace"])]) == 0
    files["sweep"] = tmp_path / "s.h5"
    args = ["sweep", "--topology", "star:4", "--rates", "0.1", "--warmup", "10", "--measure",
            "20", "--quiet", "--plot", str(tmp_path), "--out", str(files["sweep"])]  # fmt: skip
    assert main(args) == 0
    files["figure"] = tmp_path / "s_latency.png"
    files["svg"] = tmp_path / "s_latency.svg"
    files["notes"] = tmp_path / "notes.txt"
    files["notes"].write_text("router 0 node 0 is what I wrote\n")
    want = {
        "trace": {"trace"},
        "sweep": {"sweep"},
        "figure": {"figure", "svg"},
        "export:anynet": {"anynet", "graphml", "edgelist"},
    }
    for name, accepted in want.items():
        kind = kinds.get(name)
        for f, path in files.items():
            assert kind.recognise(str(path)) == (f in accepted), (name, f)
    with pytest.raises(OutputError, match="unknown output kind 'zzz'; known: ") as err:
        kinds.get("zzz")
    assert {"trace", "sweep", "figure", "export:anynet"} <= set(
        str(err.value).split(": ")[-1].split(", ")
    )


# -- the writer lock, publication, discard ------------------------------------------------------
def test_a_second_writer_is_refused_at_its_start(tmp_path):
    first = reserve(tmp_path / "s.h5", SWEEP)
    with pytest.raises(OutputError, match=r"being written by another mpinet command \(pid"):
        reserve(tmp_path / "s.h5", SWEEP)
    first.discard()
    second = reserve(tmp_path / "s.h5", SWEEP)  # released: the next one may write
    second.discard()
    assert listing(tmp_path) == []  # lock and temporary file gone


def test_a_stale_lock_file_does_not_block(tmp_path):
    """A lock file left by a killed command (flock released by the kernel) is taken over."""
    (tmp_path / ".s.h5.lock").write_text("pid 1 on a killed host")
    res = reserve(tmp_path / "s.h5", SWEEP)
    outputs.write_file(res, lambda fh: fh.write("x"))
    assert listing(tmp_path) == ["s.h5"]


def test_lock_removed_while_held_is_not_shared(tmp_path):
    """The classic race: a holder unlinks the lock file; a waiter must not lock the old inode."""
    a = WriterLock(str(tmp_path / "x"))
    a.acquire("file", "x", OutputError)
    stale = os.open(a.path, os.O_RDWR)  # another process opened the old file meanwhile
    a.release()
    b, c = WriterLock(str(tmp_path / "x")), WriterLock(str(tmp_path / "x"))
    b.acquire("file", "x", OutputError)
    with pytest.raises(OutputError, match="being written"):
        c.acquire("file", "x", OutputError)
    b.release()
    os.close(stale)


def test_publication_is_exclusive_and_force_replaces_only_what_it_saw(tmp_path):
    path = tmp_path / "e.txt"
    res = reserve(path, EXPORTS["edgelist"])
    path.write_text("another program\n")  # no lock: a program that is not mpinet
    with pytest.raises(OutputError, match="appeared while this command worked"):
        outputs.write_file(res, lambda fh: fh.write("# mpinet export\n"))
    assert path.read_text() == "another program\n" and listing(tmp_path) == ["e.txt"]
    path.write_text("# mpinet export one\n")
    res = reserve(path, EXPORTS["edgelist"], force=True)
    os.replace(path, tmp_path / "moved")  # replaced meanwhile
    path.write_text("# mpinet export two\n")
    with pytest.raises(OutputError, match="changed while this command worked"):
        outputs.write_file(res, lambda fh: fh.write("# mpinet export three\n"))
    assert path.read_text() == "# mpinet export two\n"


def test_abandon_all_removes_every_temporary(tmp_path):
    res = reserve(tmp_path / "s.h5", SWEEP)
    scratch = outputs.scratch_dir(None, prefix=str(tmp_path / "scratch-"))
    figs = FigureSet(tmp_path / "figs" / "deep", plan_figures(tmp_path / "figs" / "deep", ["a"]))
    assert (tmp_path / "figs" / "deep").is_dir() and os.path.isfile(res.tmp)
    assert outputs.abandon_all(final_parts=True) == []
    assert listing(tmp_path) == [] and outputs.live() == []
    del scratch, figs


def test_abandon_all_discards_newest_first(tmp_path, monkeypatch):
    scratch = outputs.scratch_dir(None, prefix=str(tmp_path / "scratch-"))
    res = reserve(Path(scratch.path) / "bench.h5", SWEEP)  # a timed run's trace in it
    order = []
    for obj in (scratch, res):
        monkeypatch.setattr(
            obj, "discard", lambda f=False, o=obj, d=obj.discard: order.append(o) or d(f)
        )
    assert outputs.abandon_all(final_parts=True) == []
    assert order == [res, scratch] and listing(tmp_path) == []


def test_scratch_dir_removed_when_a_file_appears_during_its_removal(tmp_path, monkeypatch):
    scratch = outputs.scratch_dir(None, prefix=str(tmp_path / "scratch-"))
    real, calls = shutil.rmtree, []

    def racing(path, ignore_errors=False):
        calls.append(path)
        real(path, ignore_errors=ignore_errors)
        if len(calls) == 1:  # the main thread wrote a file after the walk: rmdir failed
            os.makedirs(path)
            Path(path, ".bench.h5.lock").write_text("")

    monkeypatch.setattr(shutil, "rmtree", racing)
    scratch.discard()
    assert len(calls) == 2 and listing(tmp_path) == []


# -- a failing disk: GuardedFile and h5_file ----------------------------------------------------
def test_guarded_file_keeps_the_first_error(tmp_path, monkeypatch):
    g = GuardedFile(str(tmp_path / "g"))
    g.write(b"abc")
    real = os.pwrite

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    assert g.write(b"defg") == 4  # HDF5 never sees the failure
    monkeypatch.setattr(os, "pwrite", real)
    g.write(b"more")  # dropped: the file is already incomplete
    g.close()
    assert (tmp_path / "g").read_bytes() == b"abc"
    with pytest.raises(OutputError, match="cannot write the file: No space left on device"):
        g.check("the file")


def test_h5_file_on_a_full_disk_is_one_line_and_no_crash(tmp_path, monkeypatch):
    res = reserve(tmp_path / "s.h5", SWEEP)
    calls = []
    real = os.pwrite

    def pwrite(fd, data, offset):
        calls.append(len(data))
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)
    full = r"^cannot write sweep file .*: No space left on device"
    with pytest.raises(OutputError, match=full), h5_file(res) as f:
        f.create_dataset("a", data=np.arange(1 << 16))
    res.discard()
    assert listing(tmp_path) == []


# -- figures --------------------------------------------------------------------------------------
def test_figure_set_publishes_tagged_figures_and_cleans_what_it_made(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    d = tmp_path / "a" / "b"
    figs = FigureSet(d, plan_figures(d, ["one", "two"]))
    fig = plt.figure()
    written = figs.save(fig, "one")
    plt.close(fig)
    figs.discard()
    assert [Path(p).name for p in written] == ["one.png", "one.svg"]
    assert listing(d) == ["one.png", "one.svg"]  # "two" was never drawn: nothing of it
    assert all(FIGURE.recognise(p) for p in written)
    with pytest.raises(OutputError, match="exists; use --force"):
        plan_figures(d, ["one"])
    plan_figures(d, ["one"], force=True)  # its own figures: replaceable with --force
    empty = tmp_path / "c" / "d"
    FigureSet(empty, plan_figures(empty, ["x"])).discard()
    assert not (tmp_path / "c").exists()  # the directories it made, removed again


# -- every command, end to end --------------------------------------------------------------------
def _run(args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*MPINET, *args], cwd=cwd, env=ENV, capture_output=True, text=True,
                          timeout=300, **kw)  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["export", "star:8", "--format", "graphml", "--out", "out"],
        [
            "sweep",
            "--topology",
            "star:5",
            "--rates",
            "0.1,0.2",
            "--warmup",
            "200",
            "--measure",
            "400",
            "--quiet",
            "--out",
            "out",
        ],  # fmt: skip
        ["run", "--topology", "star:7", "--quiet", "--out", "out"],
    ],
    ids=["export", "sweep", "run"],
)
def test_rival_commands_one_wins_the_other_is_refused(tmp_path, args):
    procs = [
        subprocess.Popen(
            [*MPINET, *args],
            cwd=tmp_path,
            env=ENV,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    loser = outs[[p.returncode for p in procs].index(2)][1]
    assert "being written by another mpinet command" in loser or "exists; use --force" in loser
    assert listing(tmp_path) == ["out"]


@pytest.mark.slow
def test_interrupted_export_leaves_nothing(tmp_path):
    proc = subprocess.Popen([*MPINET, "export", "star:9", "--format", "graphml", "--out", "g"],
                            cwd=tmp_path, env=ENV, text=True, stderr=subprocess.PIPE)  # fmt: skip
    t0 = time.monotonic()
    while not any(p.name.startswith(".g.tmp-") for p in tmp_path.iterdir()):
        assert time.monotonic() - t0 < 60 and proc.poll() is None, "the export never started"
        time.sleep(0.02)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 143, err
    assert listing(tmp_path) == []


def test_bench_leaves_no_scratch(tmp_path):
    env = dict(ENV, TMPDIR=str(tmp_path))
    args = ["bench", "--specs", "star:4", "--packets", "2", "--repeat", "1", "--json"]
    r = subprocess.run([*MPINET, *args], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and json.loads(r.stdout)["spec"] == "star:4", r.stderr
    assert listing(tmp_path) == []


@pytest.mark.slow
def test_interrupted_bench_leaves_no_scratch(tmp_path):
    env = dict(ENV, TMPDIR=str(tmp_path))
    args = ["bench", "--specs", "star:7", "--packets", "64", "--repeat", "5", "--trace", "summary"]
    proc = subprocess.Popen([*MPINET, *args], env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    t0 = time.monotonic()
    while not any(tmp_path.glob("mpinet-bench-*/*")):  # a timed run is writing its trace
        assert time.monotonic() - t0 < 120 and proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, err
    assert listing(tmp_path) == []


def test_report_scripts_refuse_a_file_that_is_not_their_report(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("my own notes\n")
    script = ROOT / "scripts" / "deadlock_report.py"
    r = subprocess.run([sys.executable, str(script), "--quick", "--out", str(notes)], env=ENV,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 1 and "is not an mpinet report of deadlock_report.py" in r.stderr
    assert notes.read_text() == "my own notes\n" and listing(tmp_path) == ["notes.md"]
