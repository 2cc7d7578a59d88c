"""The flit-trace catalogue: ``mpinet analyze`` on traces of the flit engine (issue 32).

Sound traces of wormhole, cut-through and store-and-forward runs (summary and hops level,
written by 1 or 2 ranks, layout 1.1 and 1.2, a deadlocked run with packets in flight)
analyse with exit code 0 and name their switching; a trace damaged in one value (a link
load, a ``/hops`` row, a step's flits, a delivery step, a switching attribute) exits 1
with the check or attribute it broke; a file network's trace finds its network from
another directory, and names it when it moved or changed. Checked by
:func:`catalogue.check` like every catalogue case.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from catalogue import ROOT, Case, described, param, run_and_check, section

WORM = str(ROOT / "jobs" / "switching" / "wormhole.toml")
DEADLOCK = str(ROOT / "jobs" / "switching" / "deadlock.toml")
SMALL = ["--set", "topology=ms:2,2", "--set", "workload.steps=40", "--set", "workload.rate=0.05",
         "--set", "model.flits=4", "--quiet"]  # fmt: skip
#: name -> the run that makes it (mpinet arguments; ranks)
RUNS = {
    "wormhole-summary": ([WORM, *SMALL, "--set", "model.vc_buffer=2"], 1),
    "wormhole-hops": ([WORM, *SMALL, "--set", "model.vc_buffer=2", "--trace-level", "hops"], 1),
    "cut-through-hops": ([WORM, *SMALL, "--set", "model.switching=cut-through",
                          "--set", "model.vc_buffer=4", "--trace-level", "hops"], 1),
    "saf-summary": ([WORM, *SMALL, "--set", "model.switching=store-and-forward",
                     "--set", "model.vc_buffer=4"], 1),
    "wormhole-2-ranks": ([WORM, *SMALL, "--set", "model.vc_buffer=2", "--trace-level", "hops"], 2),
    "deadlock": ([DEADLOCK, "--trace-level", "hops", "--quiet"], 1),
    "packet": (["--topology", "ms:2,2", "--packets", "2", "--quiet"], 1),
}  # fmt: skip
_MADE: dict[str, Path] = {}
_DIR: list[Path] = []


def _mpinet(
    args: list[str], cwd: Path, ranks: int = 1, timeout: float = 300
) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    pre = []
    if ranks > 1:
        sys.path.insert(0, str(ROOT / "scripts"))
        from launcher import find_mpiexec

        pre = [*find_mpiexec(), "-n", str(ranks)]
    cmd = [*pre, sys.executable, "-m", "mpinet", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _trace(name: str) -> Path:
    """The session's trace ``name`` (made once, on first use)."""
    if name not in _MADE:
        if not _DIR:
            _DIR.append(Path(tempfile.mkdtemp(prefix="mpinet-ftr-")))
            atexit.register(shutil.rmtree, _DIR[0], True)
        args, ranks = RUNS[name]
        out = _DIR[0] / f"{name}.h5"
        proc = _mpinet(["run", *args, "--out", str(out)], _DIR[0], ranks)
        assert proc.returncode == (1 if name == "deadlock" else 0), proc.stderr[-2000:]
        _MADE[name] = out
    return _MADE[name]


def copy(name: str, text: str, damage=None):
    """A maker: a copy of the session's trace ``name``, then ``damage(h5py.File)``."""

    @described(text)
    def make(path: Path, traces) -> None:
        shutil.copy(_trace(name), path)
        if damage is not None:
            with h5py.File(path, "r+") as f:
                damage(f)

    return make


def _bump_load(f: h5py.File) -> None:
    load = f["links/load"]
    node = int(np.argmax(load[:, 0]))
    load[node, 0] = load[node, 0] + 1


def _drop_hops_row(f: h5py.File) -> None:
    g = f["hops"]
    n = g["port"].shape[0]
    keep = np.arange(n) != n // 2
    for c in list(g):
        data, attrs = g[c][()][keep], dict(g[c].attrs)
        del g[c]
        g.create_dataset(c, data=data, fletcher32=True, chunks=True)
        g[c].attrs.update(attrs)
    g.attrs["rank_rows"] = np.array([n - 1], dtype=np.int64)


def _bump_step(f: h5py.File) -> None:
    t = f["steps/transmissions"]
    t[3] = t[3] + 1


def _too_fast(f: h5py.File) -> None:
    hops, inj = f["packets/hops"][()], f["packets/inject_step"][()]
    i = int(np.argmax(hops))
    f["packets/deliver_step"][i] = inj[i] + hops[i] * 4 - 1  # one step below L x hops


def _attr(**kw):
    def damage(f: h5py.File) -> None:
        for k, v in kw.items():
            if v is None:
                del f.attrs[k]
            else:
                f.attrs[k] = v

    return damage


_OLD = {k: None for k in ("load_unit", "switching", "flits", "vcs", "vc_buffer", "vc_policy",
                          "capacities")}  # fmt: skip


@described(": `ring.edges` (a 12-ring) and `t.h5`, the trace of a run made there", slash=True)
def ring_run(path: Path, traces) -> None:
    path.mkdir()
    (path / "ring.edges").write_text("".join(f"{i} {(i + 1) % 12}\n" for i in range(12)))
    proc = _mpinet(["run", "--topology", "file:ring.edges", "--packets", "2", "--quiet",
                    "--out", "t.h5"], path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


@described(": as above, then `ring.edges` given one more link", slash=True)
def ring_changed(path: Path, traces) -> None:
    ring_run(path, traces)
    with open(path / "ring.edges", "a") as fh:
        fh.write("0 6\n")


@described(": as above, then `ring.edges` renamed `moved.edges`", slash=True)
def ring_moved(path: Path, traces) -> None:
    ring_run(path, traces)
    (path / "ring.edges").rename(path / "moved.edges")


def figures_written(before: dict, after: dict, d: Path) -> None:
    new = sorted(set(after) - set(before))
    names = ["route_lengths", "latency_cdf", "steps", "link_load", "link_heatmap"]
    want = ["figs", *(f"figs/w_{n}.{e}" for n in names for e in ("png", "svg"))]
    assert new == sorted(want), new
    assert all(after[k] == v for k, v in before.items())


C = Case
W = "a real wormhole trace (ms:2,2, 4 flits, 2 VCs of 2 flits)"
WH = W.replace(")", ", level hops)")
FAILED = r"trace .*w\.h5 failed \d consistency check\(s\): "
CASES = [
    *section(
        "Flit traces: sound traces analysed",
        C("ftr-wormhole-summary", "analyze w.h5", None, code=0,
          stdout=r"\nswitching +wormhole: 4 flit\(s\) per packet, 2 VC\(s\) of 2 flits per link",
          files={"w.h5": copy("wormhole-summary", W)}),
        C("ftr-wormhole-hops", "analyze w.h5", None, code=0,
          stdout=r"\nconsistency +tables agree", files={"w.h5": copy("wormhole-hops", WH)}),
        C("ftr-cut-through-hops", "analyze w.h5", None, code=0,
          stdout=r"\nswitching +cut-through: 4 flit\(s\)",
          files={"w.h5": copy("cut-through-hops", "a real cut-through trace (level hops)")}),
        C("ftr-saf-summary", "analyze w.h5", None, code=0,
          stdout=r"\nswitching +store-and-forward: 4 flit\(s\)",
          files={"w.h5": copy("saf-summary", "a real store-and-forward trace of 4-flit packets")}),
        C("ftr-json", "analyze w.h5 --json", None, code=0,
          stdout=r'"load_unit": "flits"[\s\S]*"switching": \{\s*"mode": "wormhole"',
          files={"w.h5": copy("wormhole-hops", WH)}),
        C("ftr-plot", "analyze w.h5 --plot figs", None, code=0, stdout=r"\nplots:\n",
          files={"w.h5": copy("wormhole-hops", WH)}, left=figures_written),
        C("ftr-in-flight", "analyze w.h5", None, code=0,
          stdout=r"\npackets +60 of 96 delivered \(36 still in flight\)[\s\S]*tables agree",
          files={"w.h5": copy("deadlock", "a real trace of a deadlocked wormhole run")}),
        C("ftr-written-by-2-ranks", "analyze w.h5", None, code=0, ranks=2,
          stdout=r"on 2 rank\(s\)[\s\S]*tables agree",
          files={"w.h5": copy("wormhole-2-ranks", "a real wormhole trace written by 2 ranks")}),
        C("ftr-layout-1.1", "analyze w.h5", None, code=0,
          stdout=r"\nswitching +wormhole: 4 flit\(s\)[\s\S]*tables agree",
          files={"w.h5": copy("wormhole-hops", "a wormhole trace as layout 1.1 wrote it (no "
                              "switching attributes)",
                              _attr(layout_version="1.1", order="fifo", **_OLD))}),
        C("ftr-compare-with-packet-trace", "analyze w.h5 --compare p.h5", None, code=0,
          stdout=r"\nattrs\.load_unit +flits +packets +differs",
          files={"w.h5": copy("wormhole-summary", W),
                 "p.h5": copy("packet", "a real packet trace of ms:2,2")}),
    ),
    *section(
        "Flit traces: one value damaged",
        C("ftr-link-load-changed", "analyze w.h5",
          FAILED + r"link-load total = flits x hops of all packets \(expected \d+, measured \d+\)",
          code=1, stdout=r"\n  FAIL link-load total = flits x hops of all packets",
          files={"w.h5": copy("wormhole-hops", "a wormhole trace, one link load + 1",
                              _bump_load)}),
        C("ftr-hops-row-dropped", "analyze w.h5",
          FAILED + r"/hops rows = hops of all packets \(one per head hop\)",
          code=1, stdout=r"\n  FAIL link load per port = flits x /hops per port",
          files={"w.h5": copy("cut-through-hops", "a cut-through trace, one `/hops` row dropped",
                              _drop_hops_row)}),
        C("ftr-step-flits-changed", "analyze w.h5",
          FAILED + r"flits sent per step = link-load total", code=1, stdout=r"\nconsistency ",
          files={"w.h5": copy("wormhole-summary", "a wormhole trace, one step's flits + 1",
                              _bump_step)}),
        C("ftr-faster-than-switching", "analyze w.h5",
          FAILED + r"no delivered packet faster than store-and-forward allows \(latency >= "
          r"hops x ceil\(L/c\)\) \(expected 0, measured 1\)", code=1, stdout=r"\nconsistency ",
          files={"w.h5": copy("saf-summary", "a store-and-forward trace, one packet delivered "
                              "a step before L x hops", _too_fast)}),
        C("ftr-flits-contradict-job", "analyze w.h5",
          r"trace w\.h5: attribute flits = 8, but its job says 4; the trace is damaged", code=1,
          files={"w.h5": copy("wormhole-summary", "a wormhole trace, attribute `flits` = 8",
                              _attr(flits=8))}),
        C("ftr-flits-zero", "analyze w.h5",
          r"attribute flits = 0 is not a count in \[1, 65,536\]", code=1,
          files={"w.h5": copy("wormhole-summary", "a wormhole trace, attribute `flits` = 0",
                              _attr(flits=0))}),
        C("ftr-load-unit-unknown", "analyze w.h5",
          r"attribute load_unit = 'bytes' is neither 'packets' nor 'flits'", code=1,
          files={"w.h5": copy("wormhole-summary", "a wormhole trace, `load_unit` = 'bytes'",
                              _attr(load_unit="bytes"))}),
        C("ftr-switching-lost", "analyze w.h5",
          r"a flit trace \(load_unit = 'flits'\) lacks attribute switching", code=1,
          files={"w.h5": copy("wormhole-summary", "a wormhole trace without `switching`",
                              _attr(switching=None))}),
        C("ftr-packets-claimed", "analyze w.h5",
          r"load_unit = 'packets', but its job ran wormhole of 4-flit packets", code=1,
          files={"w.h5": copy("wormhole-summary", "a wormhole trace, `load_unit` = 'packets'",
                              _attr(load_unit="packets"))}),
        C("ftr-damaged-on-2-ranks", "analyze w.h5",
          FAILED + r"link-load total = flits x hops of all packets", code=1, ranks=2,
          stdout=r"\n  FAIL link-load total",
          files={"w.h5": copy("wormhole-hops", "a wormhole trace, one link load + 1",
                              _bump_load)}),
    ),
    *section(
        "Flit traces: file networks from another directory",
        C("ftr-file-network-elsewhere", "analyze run/t.h5", None, code=0,
          stdout=r"\nstretch +mean 1\.0000", files={"run": ring_run}),
        C("ftr-file-network-changed", "analyze run/t.h5", None, code=0,
          stdout=r"\nstretch +skipped: the network file is missing or changed since the run: "
          r"\S+/run/ring\.edges has changed \(another sha256\)", files={"run": ring_changed}),
        C("ftr-file-network-moved", "analyze run/t.h5", None, code=0,
          stdout=r"\nstretch +skipped: the network file is missing or changed since the run: "
          r"no file \S+/run/ring\.edges", files={"run": ring_moved}),
    ),
]  # fmt: skip


def test_the_catalogue_is_complete():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 15
    assert all(i.startswith("ftr-") for i in ids)
    assert sum(c.code == 1 for c in CASES) >= 8 and sum(c.ranks > 1 for c in CASES) >= 2


@pytest.mark.parametrize("c", [param(c) for c in CASES])
def test_flit_trace_case(c: Case, tmp_path, request):
    run_and_check(c, tmp_path, request)
