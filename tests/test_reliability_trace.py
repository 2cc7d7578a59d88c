"""Self-describing, verified traces: units, step column, JSON job, fletcher32 checksums,
damaged data refused with one line (``mpinet analyze`` exit code 1), lost parts refused.

docs/reliability.md lists each guarantee with the test here that proves it.
"""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest

import mpinet.trace as trace
from mpinet.analysis import summarize
from mpinet.cli import main
from mpinet.errors import CorruptTraceError, TraceError


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("reliable")
    uni, bc, stuck = d / "u.h5", d / "b.h5", d / "s.h5"
    base = ["run", "--topology", "ms:2,2", "--quiet", "--out"]
    assert main([*base, str(uni), "--packets", "2", "--trace-level", "hops", "--json"]) == 0
    assert main([*base, str(bc), "--workload", "broadcast"]) == 0
    assert main([*base, str(stuck), "--packets", "4", "--max-steps", "3"]) == 1
    return {"uni": uni, "bc": bc, "stuck": stuck, "dir": d}


def copy(runs, name: str, tmp_path) -> str:
    out = tmp_path / f"{name}.h5"
    shutil.copy(runs[name], out)
    return str(out)


def analyze(capsys, *args: str) -> tuple[int, str, list[str]]:
    code = main(["analyze", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err.strip().splitlines()


def datasets(path) -> list[h5py.Dataset]:
    out: list[h5py.Dataset] = []
    f = h5py.File(path, "r")
    f.visititems(lambda n, o: out.append(o) if isinstance(o, h5py.Dataset) else None)
    return out


# -- self-describing --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["uni", "bc"])
def test_every_dataset_has_units_description_and_checksum(runs, name):
    dsets = datasets(runs[name])
    assert {d.name for d in dsets} >= {"/steps/step", "/steps/transmissions", "/checks/name"}
    for ds in dsets:
        assert ds.attrs["units"] and ds.attrs["description"], ds.name
        assert ds.fletcher32 and ds.chunks, ds.name
    f = dsets[0].file
    assert all(g.attrs["description"] for g in f.values())
    assert f.attrs["layout_version"] == trace.LAYOUT_VERSION == "1.2"
    f.close()


@pytest.mark.parametrize("name", ["uni", "bc"])
def test_steps_have_a_step_column_and_the_job_is_json(runs, name):
    with trace.open(runs[name]) as tr:
        steps = tr.column("steps", "step")
        assert steps.tolist() == list(range(1, tr.nrows("steps") + 1))
        assert len(steps) >= tr.attrs["steps"] > 0
        job = json.loads(tr.attrs["job"])
        assert job == tr.job and job["topology"] == "ms:2,2"
        info = tr.column_info("steps")
        assert info["step"] == {"units": "step", "description": "the step number, from 1"}


def test_layout_1_0_job_repr_still_reads(tmp_path):
    """Traces of layout 1.0 stored the job as a Python repr; the reader still parses it."""
    job = {"topology": "star:4", "seed": 0, "workload": {"kind": "uniform", "rate": None}}
    path = tmp_path / "old.h5"
    tables = {"steps": {"transmissions": np.arange(3, dtype=np.int64)}}
    trace.write_trace(path, None, attrs={"job": repr(job)}, tables=tables)
    with h5py.File(path, "r+") as f:
        f.attrs["layout_version"] = "1.0"
    with trace.open(path) as tr:
        assert tr.job == job
        assert tr.column_info("steps")["transmissions"]["units"] == "transmissions"


# -- lost parts of a split trace ----------------------------------------------------------------
def test_split_trace_without_its_parts(tmp_path, capsys):
    tables = {"packets": {"id": np.arange(50, dtype=np.int64), "hops": np.ones(50, np.uint8)}}
    path = tmp_path / "t.h5"
    trace.write_trace(path, None, attrs={}, tables=tables, consolidate=False)
    with h5py.File(path, "r") as f:
        parts_dir = f.attrs["parts_dir"]
        assert list(f.attrs["parts"]) == [f"{parts_dir}/rank00000.h5"]
        assert f["packets/id"].attrs["units"] == "packet id"
    shutil.rmtree(tmp_path / parts_dir)
    with pytest.raises(CorruptTraceError, match="lacks 1 of 1 part files"):
        trace.open(path)
    # plain h5py raises nothing: it reads the fill value, which no mpinet column holds
    with h5py.File(path, "r") as f:
        ids, hops = f["packets/id"], f["packets/hops"]
        assert (ids[()] == np.iinfo(np.int64).min).all() == (ids.attrs["missing_value"] < 0)
        assert (hops[()] == 255).all() and hops.attrs["missing_value"] == 255
    code, _, err = analyze(capsys, str(path))
    assert code == 1 and len(err) == 1 and "part files" in err[0]


# -- checksums and damage --------------------------------------------------------------------------
def flip(path: str, dataset: str, chunk: int = 0, offset: int = 9, nbytes: int = 1) -> None:
    """Invert ``nbytes`` bytes of a stored chunk, as a bad disk or a bad copy would."""
    with h5py.File(path, "r") as f:
        info = f[dataset].id.get_chunk_info(chunk)
    with open(path, "r+b") as fh:
        fh.seek(info.byte_offset + offset)
        raw = fh.read(nbytes)
        fh.seek(info.byte_offset + offset)
        fh.write(bytes(b ^ 0xFF for b in raw))


@pytest.mark.parametrize("dataset", ["/packets/hops", "/hops/port", "/links/load", "/steps/step"])
def test_flipped_bytes_fail_the_checksum(runs, tmp_path, capsys, dataset):
    path = copy(runs, "uni", tmp_path)
    flip(path, dataset)
    with trace.open(path) as tr, pytest.raises(CorruptTraceError, match=dataset):
        tr.verify()
    with pytest.raises(CorruptTraceError, match=f"{dataset} is damaged.*checksum"):
        trace.open(path, verify=True)
    code, out, err = analyze(capsys, path)
    assert code == 1 and out == "" and len(err) == 1
    assert err[0].startswith("mpinet: error: trace") and dataset in err[0]


def test_random_bytes_in_a_compressed_column(tmp_path, capsys):
    n = 300_000  # 2.4 MB of int64: gzip-compressed, several chunks
    tables = {"packets": {"id": np.arange(n, dtype=np.int64)}}
    path = str(tmp_path / "big.h5")
    trace.write_trace(path, None, attrs={}, tables=tables)
    with h5py.File(path, "r") as f:
        assert f["packets/id"].compression == "gzip" and f["packets/id"].fletcher32
    flip(path, "/packets/id", chunk=1, offset=100, nbytes=16)
    damaged = r"/packets/id is damaged, rows 0\.\.299,999 \(checksum"
    with trace.open(path) as tr, pytest.raises(CorruptTraceError, match=damaged):
        list(tr.iter_chunks("packets", ["id"], chunk_rows=10**6))


def test_truncated_column(runs, tmp_path, capsys):
    path = copy(runs, "uni", tmp_path)
    with h5py.File(path, "r+") as f:
        short = f["packets/hops"][:-7]
        del f["packets/hops"]
        f["packets/hops"] = short
    with pytest.raises(CorruptTraceError, match="/packets/hops has 233 rows, its table 240"):
        trace.open(path)
    code, _, err = analyze(capsys, path)
    assert code == 1 and len(err) == 1 and "/packets/hops" in err[0]


@pytest.mark.parametrize(
    "dataset,row,value",
    [
        ("packets/hops", 3, 2**40),  # was: numpy "array is too big" in the histogram
        ("packets/source", 0, 10**9),  # was: IndexError in the distance table
        ("packets/deliver_step", 5, -9),
        ("links/load", 2, -1),
        ("hops/port", 4, 77),
    ],
)
def test_impossible_values_are_one_line(runs, tmp_path, capsys, dataset, row, value):
    """Values written with a valid checksum but impossible: one line, never a traceback."""
    path = copy(runs, "uni", tmp_path)
    with h5py.File(path, "r+") as f:
        a = f[dataset][()]
        a = a.astype(np.int64)
        a[row] = value
        del f[dataset]
        f[dataset] = a
    code, _, err = analyze(capsys, path)
    assert code == 1 and len(err) == 1
    assert f"/{dataset} row {row}" in err[0] and "outside the valid range" in err[0]


def test_truncated_file(runs, tmp_path, capsys):
    path = copy(runs, "uni", tmp_path)
    with open(path, "r+b") as fh:
        fh.truncate(fh.seek(0, 2) // 2)
    code, _, err = analyze(capsys, path)
    assert code == 1 and len(err) == 1 and "truncated or damaged" in err[0]


def test_failed_consistency_check_exits_1(runs, tmp_path, capsys):
    path = copy(runs, "uni", tmp_path)
    with h5py.File(path, "r+") as f:
        f["links/load"][0, 0] += 1  # a valid checksum, but the tables disagree
    code, out, err = analyze(capsys, path)
    assert code == 1 and "disagreement" in out  # the summary is still printed
    assert len(err) == 1 and "failed 3 consistency check(s)" in err[0]


def test_sound_traces_exit_0_even_with_stuck_packets(runs, capsys):
    """A run stopped at max_steps is a sound trace: its hops still match the link loads."""
    for name in ("uni", "bc", "stuck"):
        code, out, err = analyze(capsys, str(runs[name]))
        assert code == 0 and err == [], (name, err)
    s = summarize(runs["stuck"])
    assert s["packets"]["undelivered"] > 0 and all(c["ok"] for c in s["consistency"])
    assert s["verified"]["unchecked"] == [] and s["verified"]["datasets"] > 10


def test_compare_verifies_both(runs, tmp_path, capsys):
    path = copy(runs, "uni", tmp_path)
    flip(path, "/packets/id")  # a column the summary itself never reads
    code, _, err = analyze(capsys, str(runs["uni"]), "--compare", path)
    assert code == 1 and "/packets/id" in err[0]


def test_not_a_trace_is_still_exit_2(tmp_path, capsys):
    (tmp_path / "x.h5").write_text("text")
    code, _, err = analyze(capsys, str(tmp_path / "x.h5"))
    assert code == 2 and "not an mpinet trace" in err[0]
    with pytest.raises(TraceError, match=r"trace file .*missing\.h5 does not exist"):
        trace.open(tmp_path / "missing.h5")
