"""The hostile-input catalogue's machinery: one :class:`Case` type, one runner, one check.

Every catalogue module (``tests/test_bad_inputs*.py``, ``tests/test_catalogue_*.py``) is a
list of sections, ``SECTIONS = [(title, [Case, ...]), ...]``, and one parametrized test
that calls :func:`run_case` and :func:`check`. A case runs ``python -m mpinet ARGS`` in a
fresh directory (under ``mpiexec -n R`` when ``ranks > 1``), in processes whose address
space is capped at :data:`CAP`, and asserts what the case states:

* the exit code (2: refused before any work; 1: damaged data; 3: results printed, an
  output not written; 0: the command worked, e.g. strict JSON);
* stderr, once the launcher's own ``[mpiexec@host]`` notices and mpinet's "first run: compiling"
  notice (it depends on numba's cache, not on the case) are dropped, is exactly one
  non-empty line from rank 0, ``mpinet: error: ...``, matching the case's pattern (or
  empty, for ``match=None``);
* no ``Traceback`` anywhere; stdout empty, or matching ``stdout`` (a pattern, or
  :data:`STRICT_JSON`);
* the directory holds exactly what the case created, byte for byte (or, with ``left``,
  what that function accepts): no hidden ``.NAME.tmp-*`` file, no parts directory,
  nothing removed or replaced;
* the answer came within the case's ``limit`` seconds: a hang guard, generous on a busy
  machine; it proves nothing about the work done. "Refused before any work" is proved by
  memory instead: such a case sets ``cap`` (e.g. :data:`BEFORE_WORK`), an address space far
  below what the refused work would need, so any sizeable allocation before the refusal
  fails it (a ``MemoryError`` traceback or another exit code).

A case may run on a small file system of its own (``fs``: a tmpfs of that many bytes,
mounted for the case; skipped where mounting is not allowed) and may be interrupted
(``signal``: the signal and the stderr text, or seconds, to wait for; it goes to the case's
process group, which holds ``mpiexec`` alone, as a terminal's Ctrl-C does: hydra starts its
proxy and every rank in sessions of their own; the progress lines waited for are dropped,
and the line checked starts with ``prefix``, ``mpinet: interrupted by `` for these).

docs/reliability.md ("Bad-input catalogue") lists every case with the line mpinet says;
:func:`check_doc_row` compares that row with the line just printed, so a message that
changes fails the test until the document follows (``scripts/catalogue_doc.py``
rewrites the tables from a run of the cases).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import resource
import shlex
import signal as _signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reliability.md"
#: seconds a case may take (interpreter, numba and mpiexec start-up included, busy machine):
#: a hang guard only (a case that hangs is killed at 3 x its limit)
LIMIT = 60
#: address space of every process of a case: far below what any refused job would need
CAP = 4 << 30
#: ``Case(cap=BEFORE_WORK)``: the address space of a case whose claim is "refused before any
#: work": the interpreter, numpy, numba and MPI start in it (about 0.4 GiB on one rank, 0.6 GiB
#: per rank under mpiexec), little else does
BEFORE_WORK = 1 << 30
#: environment variables that would change a case's outcome, dropped from the parent's
CLEAN = ("MPINET_MEMORY_LIMIT", "MPINET_TIMEOUT", "MPINET_TRACE_CONSOLIDATE_MIB")
#: ``stdout=STRICT_JSON``: stdout is one JSON document without NaN or infinities
STRICT_JSON = "<strict json>"

#: (path to create, the module's real traces: a function, so only the cases using them pay)
Maker = Callable[[Path, Callable[[], dict]], None]


@dataclass(frozen=True)
class Case:
    """One hostile input and what mpinet must do with it."""

    id: str
    cmd: str  # the mpinet arguments, as a shell would split them
    match: str | None  # pattern of the stderr line after its prefix; None: no line
    code: int = 2
    files: dict = field(default_factory=dict)  # name -> text, bytes or a Maker
    ranks: int = 1
    env: dict = field(default_factory=dict)
    stdout: str | None = None  # None: empty; a pattern (re.search); STRICT_JSON
    left: Callable[[dict, dict, Path], None] | None = None  # checks (before, after, dir)
    fs: int = 0  # bytes of a tmpfs the case runs in (0: a plain directory)
    signal: tuple | None = None  # (signum, stderr text or seconds to wait for)
    prefix: str = "mpinet: error: "  # how the stderr line starts ("mpinet: interrupted by ")
    limit: float = LIMIT
    xfail: str = ""  # mpinet still misbehaves: the precise defect (strict xfail)
    wdirs: tuple = ()  # MPMD: one rank per directory (``-wdir``), the same command in each
    cap: int = 0  # address space of every process in bytes (0: CAP); see BEFORE_WORK
    sink: str = ""  # stdout: "" a pipe read whole; "/dev/full"; HEAD; else a file in the dir
    section: str = ""  # the heading it is listed under (set by :func:`section`)


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    lines: list[str]  # stderr lines, the launcher's notices dropped
    took: float
    before: dict
    after: dict
    cwd: Path = Path(".")


def _cap(cap: int = CAP) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    os.setsid()  # a signal case stops the whole group, launcher and ranks
    # a suite run under nohup passes SIGHUP ignored to every child (exec keeps an ignored
    # signal ignored): mpiexec then outlived the SIGHUP a case sends it. A case's command
    # starts with SIGHUP's default action, as from a terminal.
    _signal.signal(_signal.SIGHUP, _signal.SIG_DFL)


def snapshot(d: Path) -> dict[str, str]:
    """Every entry under ``d``, hidden ones too: its kind and, for a file, a digest."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            p = Path(root, name)
            rel = str(p.relative_to(d))
            if p.is_symlink():
                out[rel] = f"-> {os.readlink(p)}"
            elif p.is_dir():
                out[rel] = "dir"
            else:
                try:
                    out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
                except OSError as exc:  # a FIFO or a file the case made unreadable
                    out[rel] = f"unreadable ({exc.strerror})"
    return out


def section(title: str, *cases: Case) -> list[Case]:
    """The cases of one heading of the document."""
    return [replace(c, section=title) for c in cases]


@dataclass(frozen=True)
class Given:
    """File content with the words the document shows for it (``"ELF bytes"``)."""

    content: str | bytes
    text: str


def described(text: str, slash: bool = False):
    """Give a maker the words the document shows for what it creates."""

    def wrap(fn):
        fn.text, fn.slash = text, slash
        return fn

    return wrap


def describe(files: dict) -> str:
    """What a case created, as the document's *given* column shows it."""
    out = []
    for name, content in files.items():
        if isinstance(content, str):
            lines = [ln.strip() for ln in content.splitlines() if ln.strip()]
            out.append(f"`{name}`: " + " ".join(f"`{ln}`" for ln in lines) if lines else
                       f"`{name}` empty")  # fmt: skip
            continue
        text = getattr(content, "text", None) or f"{len(content)} bytes"
        slash = "/" if getattr(content, "slash", False) else ""
        sep = "" if text.startswith(":") else " "
        out.append(f"`{name}{slash}`{sep}{text}")
    return "; ".join(out)


def create(d: Path, files: dict, traces: Callable[[], dict]) -> None:
    for name, content in files.items():
        path = d / name
        if isinstance(content, Given):
            content = content.content
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            content(path, traces)


class SmallFS:
    """A tmpfs of ``size`` bytes mounted on a fresh directory (root only; else a skip)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.path = Path(tempfile.mkdtemp(prefix="mpinet-smallfs-"))

    def __enter__(self) -> Path:
        cmd = ["mount", "-t", "tmpfs", "-o", f"size={self.size}", "tmpfs", str(self.path)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            self.path.rmdir()
            pytest.skip(f"no small file system here (mount -t tmpfs: {r.stderr.strip()})")
        return self.path

    def __exit__(self, *exc) -> None:
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
        self.path.rmdir()


def fill(path: Path, keep: int = 0) -> None:
    """Fill the file system holding ``path`` up to ``keep`` free bytes (a file ``.fill``)."""
    st = os.statvfs(path)
    free = st.f_bavail * st.f_frsize
    with open(path / ".fill", "wb") as fh:
        fh.write(b"\0" * max(0, free - keep))


def _signal_when(proc: subprocess.Popen, signum: int, when, err_lines: list[str]) -> None:
    t0 = time.monotonic()
    while proc.poll() is None and time.monotonic() - t0 < 120:
        if isinstance(when, (int, float)):
            if time.monotonic() - t0 >= when:
                break
        elif any(when in ln for ln in list(err_lines)):
            break
        time.sleep(0.05)
    if proc.poll() is None:
        os.killpg(proc.pid, signum)


#: ``Case(sink=HEAD)``: stdout is a pipe whose reader closes it after the first line
HEAD = "| head -1"


def _read_out(proc: subprocess.Popen, sink: str, out: list[str]) -> None:
    if proc.stdout is None:  # stdout into a file or a device
        return
    if sink == HEAD:
        out.append(proc.stdout.readline())
        proc.stdout.close()  # the reader gone: the writer's next write fails with EPIPE
        return
    out.extend(iter(proc.stdout.readline, ""))


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, _signal.SIGKILL)


def run_case(c: Case, d: Path, traces: Callable[[], dict], mpiexec: list[str]) -> Outcome:
    """Create the case's files in ``d``, run it, and collect what it did."""
    create(d, c.files, traces)
    parts = [p.name for p in d.glob("*.parts-*")]
    argv = [a.replace("{parts}", parts[0] if parts else "") for a in shlex.split(c.cmd)]
    argv = [a.replace("{dir}", str(d)) for a in argv]
    before = snapshot(d)
    prefix = [*mpiexec, "-n", str(c.ranks)] if c.ranks > 1 else []
    if c.wdirs:  # mpiexec -n 1 -wdir A python -m mpinet ARGS : -n 1 -wdir B ... (the last below)
        prefix = [*mpiexec]
        for w in c.wdirs[:-1]:
            prefix += ["-n", "1", "-wdir", str(d / w), sys.executable, "-m", "mpinet", *argv, ":"]
        prefix += ["-n", "1", "-wdir", str(d / c.wdirs[-1])]
    env = {k: v for k, v in os.environ.items() if k not in CLEAN}
    env.update(PYTHONPATH=str(ROOT), **{k: v.replace("{dir}", str(d)) for k, v in c.env.items()})
    t0 = time.monotonic()
    sink = subprocess.PIPE if c.sink in ("", HEAD) else open(d / c.sink, "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "mpinet", *argv],
        stdout=sink,
        stderr=subprocess.PIPE,
        text=True,
        cwd=d,
        env=env,
        preexec_fn=lambda: _cap(c.cap or CAP),  # inherited by mpiexec and its ranks
    )
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=_read_out, args=(proc, c.sink, out), daemon=True),
        threading.Thread(target=lambda: err.extend(iter(proc.stderr.readline, "")), daemon=True),
    ]
    for t in readers:
        t.start()
    if c.signal:
        threading.Thread(
            target=_signal_when, args=(proc, c.signal[0], c.signal[1], err), daemon=True
        ).start()
    # a hang fails the case instead of the suite; a timer, not wait(timeout=), which polls
    # with sleeps of up to 50 ms and so left the worker idle ~25 ms after each case's end
    killer = threading.Timer(3 * c.limit, _kill_group, args=(proc.pid,))
    killer.start()
    proc.wait()
    killer.cancel()
    took = time.monotonic() - t0
    if sink is not subprocess.PIPE:
        sink.close()
    for t in readers:
        t.join(10)
    after = snapshot(d)
    stderr = "".join(err)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("[mpiexec@")]  # the launcher's notices
    # the compile notice depends on numba's cache (which tests ran before), not on the case
    lines = [ln for ln in lines if not ln.startswith("[mpinet] first run: compiling")]
    if c.signal:  # the progress lines a signal case waits for (--progress)
        lines = [ln for ln in lines if not ln.startswith("[mpinet] ")]
    return Outcome(proc.returncode, "".join(out), stderr, lines, took, before, after, d)


def _strict_json(text: str) -> None:
    def refuse(name: str):
        raise AssertionError(f"stdout is not strict JSON: it holds {name}")

    json.loads(text, parse_constant=refuse)


def check(c: Case, o: Outcome, d: Path) -> None:
    """Assert everything the case states about its outcome."""
    output = o.stdout + o.stderr
    assert "Traceback" not in output, output[-3000:]
    assert o.code == c.code, f"exit code {o.code}, expected {c.code}\n{output[-3000:]}"
    if c.match is None:
        assert o.lines == [], o.stderr[-3000:]
    else:
        assert len(o.lines) == 1, o.stderr[-3000:]
        assert o.lines[0].startswith(c.prefix), o.lines[0]
        said = o.lines[0].removeprefix(c.prefix)
        assert re.search(c.match, said), o.lines[0]
    if c.stdout is None:
        assert o.stdout == "", o.stdout[-2000:]
    elif c.stdout == STRICT_JSON:
        _strict_json(o.stdout)
    else:
        assert re.search(c.stdout, o.stdout, re.MULTILINE), o.stdout[-2000:]
    if c.left is None:
        assert o.after == o.before, f"files were created, changed or removed: {o.after}"
    else:
        c.left(o.before, o.after, d)
    assert o.took < c.limit, f"answered after {o.took:.1f} s"


#: sections whose quick case is chosen: ``run_tests.py --quick`` runs one case a section
_QUICK: set[str] = set()


def param(c: Case):
    """The case as a pytest parameter: slow unless it is the first one-rank case of its
    section (a process each, they would fill the quick tier's three minutes)."""
    marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
    if c.ranks > 1 or c.section in _QUICK:
        marks.append(pytest.mark.slow)
    else:
        _QUICK.add(c.section)
    return pytest.param(c, id=c.id, marks=marks)


# -- the document ------------------------------------------------------------------------------
#: parts of a line that follow the machine (memory figures and what they imply)
MASKS = [
    (re.compile(r"\d[\d,.]*\s*(?:GiB|MiB|KiB|GB|MB|kB|bytes)\b"), "<mem>"),
    (re.compile(r"\b\d+ or more ranks"), "<n> or more ranks"),
    (re.compile(r"<= \d[\d,]* fits"), "<= <n> fits"),
    (re.compile(r"at most \d+ per machine"), "at most <n> per machine"),
    (re.compile(r"/tmp/[^\s:;,)']+"), "<tmp>"),
    (re.compile(r"pid \d+"), "pid <n>"),
    (re.compile(r"[0-9a-f]{8}\b"), "<token>"),
]
#: characters of the line the table keeps
CUT = 150


def doc_text(said: str) -> str:
    """A line as the table shows it: cut at :data:`CUT` characters, pipes escaped."""
    said = said if len(said) <= CUT else said[:CUT].rstrip() + " ..."
    return said.replace("|", "\\|")


def masked(text: str) -> str:
    for rx, rep in MASKS:
        text = rx.sub(rep, text)
    return text


def doc_rows() -> dict[str, list[str]]:
    """Case id -> the cells of its row in docs/reliability.md's catalogue tables."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `([\w.+-]+)` \|", line)
        if m:
            cells = [x.strip() for x in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows[m.group(1)] = cells
    return rows


def relative(said: str, d: Path) -> str:
    """A line with the case's directory left out (the table shows paths relative to it)."""
    return said.replace(f"{d}{os.sep}", "").replace(str(d), ".")


def check_doc_row(c: Case, o: Outcome, rows: dict[str, list[str]]) -> None:
    """The case's row in the document shows this command, exit code and line."""
    assert c.id in rows, f"case {c.id} is not in docs/reliability.md: run scripts/catalogue_doc.py"
    said = relative(o.lines[0].removeprefix("mpinet: error: ") if o.lines else "", o.cwd)
    cells = rows[c.id]
    assert cells[3] == str(c.code), f"{c.id}: the document says exit {cells[3]}"
    want, got = masked(cells[4]), masked(doc_text(said))
    assert want == got, (
        f"{c.id}: docs/reliability.md says\n  {cells[4]}\nbut mpinet says\n  {doc_text(said)}\n"
        "run scripts/catalogue_doc.py to rewrite the tables"
    )


def command_text(c: Case) -> str:
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in c.env.items())
    launch = f"mpiexec -n {c.ranks} " if c.ranks > 1 else ""
    if c.wdirs:
        each = [f"-n 1 -wdir {w} mpinet {c.cmd}" for w in c.wdirs]
        return f"{env + ' ' if env else ''}mpiexec " + " : ".join(each)
    ulimit = f"ulimit -v {c.cap >> 10}; " if c.cap else ""  # the address space it runs in
    sig = ""
    if c.sink:  # where stdout went
        sig += f" {c.sink}" if c.sink == HEAD else f" > {c.sink}"
    if c.signal:
        sig += f" ({_signal.Signals(c.signal[0]).name} during the run)"
    return f"{ulimit}{env + ' ' if env else ''}{launch}mpinet {c.cmd}{sig}"


# -- running a case under pytest ---------------------------------------------------------------
#: set by scripts/catalogue_doc.py: record what every case said (JSON lines) instead of
#: comparing it with the document
RECORD = os.environ.get("MPINET_CATALOGUE_RECORD")


def make_traces(d: Path, mpiexec: list[str]) -> dict[str, Path]:
    """A serial trace (level hops) and a split one (``mpiexec -n 2``, with a parts directory)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    mpinet = [sys.executable, "-m", "mpinet", "run", "--topology", "star:4", "--quiet"]
    serial = [*mpinet, "--packets", "2", "--trace-level", "hops", "--out", "t.h5"]
    subprocess.run(serial, cwd=d, env=env, check=True, capture_output=True, timeout=120)
    env["MPINET_TRACE_CONSOLIDATE_MIB"] = "0"
    split = [*mpiexec, "-n", "2", *mpinet, "--out", "s.h5"]
    subprocess.run(split, cwd=d, env=env, check=True, capture_output=True, timeout=120)
    assert len(list(d.glob("s.h5.parts-*"))) == 1
    return {"serial": d / "t.h5", "split": d / "s.h5"}


def run_and_check(c: Case, tmp_path: Path, request: pytest.FixtureRequest) -> Outcome:
    """The whole test of one case: set up, run, check, compare with the document; the
    outcome is returned for checks of the module's own."""
    traces = lambda: request.getfixturevalue("catalogue_traces")  # noqa: E731
    mpiexec = request.getfixturevalue("mpiexec") if c.ranks > 1 or c.wdirs else []
    if c.fs:
        with SmallFS(c.fs) as d:
            try:
                o = run_case(c, d, traces, mpiexec)
                check(c, o, d)
            finally:
                _unlock(c, d)
    else:
        try:
            o = run_case(c, tmp_path, traces, mpiexec)
        finally:
            _unlock(c, tmp_path)
        check(c, o, tmp_path)
    if RECORD:
        said = relative(o.lines[0].removeprefix("mpinet: error: ") if o.lines else "", o.cwd)
        row = {
            "module": Path(request.node.fspath).stem,
            "section": c.section,
            "id": c.id,
            "command": command_text(c),
            "given": describe(c.files),
            "code": c.code,
            "says": doc_text(said),
        }
        with open(RECORD, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
    else:
        check_doc_row(c, o, doc_rows())
    return o


def _unlock(c: Case, d: Path) -> None:
    """Undo ``chattr +i`` of a read-only case, or the directory could not be removed."""
    for name, content in c.files.items():
        if getattr(content, "immutable", False):
            subprocess.run(["chattr", "-i", str(d / name)], check=False)
