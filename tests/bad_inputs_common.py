"""What the bad-input catalogue's modules share (tests/test_bad_inputs.py,
test_bad_inputs_values.py, test_bad_inputs_specs.py): the files a case creates before it
runs, and the commands most cases start from."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from catalogue import Maker, described

SEED_RANGE = r"seed must be in \[0, 9,223,372,036,854,775,807\], got "


# -- what a case creates before it runs ---------------------------------------------------------
@described("a directory", slash=True)
def directory(path: Path, traces) -> None:
    path.mkdir()


@described("-> `gone/t.h5` (dangling)")
def dangling(path: Path, traces) -> None:
    path.symlink_to("gone/t.h5")


@described("immutable (`chattr +i`)", slash=True)
def read_only(path: Path, traces) -> None:
    """A directory root cannot write into: immutable (``chattr +i``), as root ignores modes."""
    path.mkdir()
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here: no read-only directory for root")


read_only.immutable = True


def copy_of(name: str) -> Maker:
    """A copy of one of the real traces (the split one with its parts directory)."""

    def make(path: Path, traces) -> None:
        src = traces()[name]
        shutil.copy(src, path)
        for parts in src.parent.glob(f"{src.name}.parts-*"):
            shutil.copytree(parts, path.parent / f"{path.name}{parts.name[len(src.name) :]}")

    make.text = "a real trace" + (" (split, with parts)" if name == "split" else "")
    return make


def corrupt_copy(dataset: str) -> Maker:
    """A copy of the serial trace with one byte of ``dataset``'s first chunk inverted."""

    def make(path: Path, traces) -> None:
        import h5py

        shutil.copy(traces()["serial"], path)
        with h5py.File(path, "r") as f:
            offset = f[dataset].id.get_chunk_info(0).byte_offset + 9
        with open(path, "r+b") as fh:
            fh.seek(offset)
            byte = fh.read(1)[0]
            fh.seek(offset)
            fh.write(bytes([byte ^ 0xFF]))

    make.text = f"a real trace, a byte of `{dataset}` inverted"
    return make


@described("a split trace, parts directory removed")
def without_parts(path: Path, traces) -> None:
    """The master file of a split trace whose parts directory was removed."""
    shutil.copy(traces()["split"], path)


JOB = 'topology = "star:4"\n'
NOTES = {"notes.txt": "precious\n"}

RUN = "run --topology star:4 --quiet"
ROUTES = "routes scc:4 --router scc-greedy"
ONE_PORT_BC = "--workload broadcast --model one-port"
LINK = """--set 'faults.links=[["1234","2134"]]'"""  # neighbours in star:4 (generator T2)
EDGES = "export star:4 --format edgelist"
