"""``scripts/sdc_floor.py``, ``flit_stage_split.py`` and ``port_stage_split.py``: their
patches still apply to the kernels (no run: compiling the copy takes minutes), and a patch
whose anchor is gone stops it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import sdc_floor  # noqa: E402


def test_patches_apply_and_compile(tmp_path: Path) -> None:
    dst = tmp_path / "mpinet"
    sdc_floor.patch(ROOT / "mpinet", dst)
    flit = dst / "engine" / "flit"
    for name in sorted({p[0] for p in sdc_floor.PATCHES}):
        text = (flit / name).read_text()
        compile(text, str(flit / name), "exec")  # the patched module is valid Python
        for f, _, new in sdc_floor.PATCHES:
            if f == name:
                assert new in text
    chunk = (flit / "chunk.py").read_text()
    assert chunk.count("_replay(t, bufs, links, so, inc)") == 3  # defined, free, kept (and lists)
    assert "*FLOOR)" in (flit / "port_demand.py").read_text()


def test_missing_anchor_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = [*sdc_floor.PATCHES, ("chunk.py", "no such line in the kernels\n", "")]
    monkeypatch.setattr(sdc_floor, "PATCHES", bad)
    with pytest.raises(SystemExit, match="update PATCHES"):
        sdc_floor.patch(ROOT / "mpinet", tmp_path / "mpinet")


def test_stage_split_patches_apply_and_the_copy_is_kept(tmp_path: Path) -> None:
    """flit_stage_split.py's patches through the same copy (scripts/patched_copy.py): each
    applies (or the build stops), the clocks' module is written, and a second build keeps
    the copy."""
    import flit_stage_split

    work = flit_stage_split.build(tmp_path)
    flit = work / "mpinet" / "engine" / "flit"
    assert (flit / "prof.py").read_text().startswith(flit_stage_split.PROF.split("%r")[0])
    for name in {p[0] for p in flit_stage_split.PATCHES}:  # (later patches may rewrite earlier)
        assert (flit / name).read_text() != (ROOT / "mpinet/engine/flit" / name).read_text()
    stamp = (work / "stamp.json").stat().st_mtime_ns
    (flit / "marker").write_text("kept")
    flit_stage_split.build(tmp_path)
    assert (flit / "marker").exists() and (work / "stamp.json").stat().st_mtime_ns == stamp


def test_port_split_patches_apply(tmp_path: Path) -> None:
    """port_stage_split.py's clocks on top of flit_stage_split's: each anchor found (or the
    build stops), the choice's clocks in the copy's ``kept_choice.py``."""
    import port_stage_split

    work = port_stage_split.build(tmp_path)
    kept = (work / "mpinet" / "engine" / "flit" / "kept_choice.py").read_text()
    assert "def kept_deny(nt, t, t0, prm, segs, pkts, links, so, inc, clk):" in kept
    assert "clk[1][53] += na" in kept
