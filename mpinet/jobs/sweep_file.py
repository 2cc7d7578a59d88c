"""One HDF5 file per sweep (written by rank 0; read back by :mod:`mpinet.analysis.sweep`).

Every number of a sweep is already reduced over the ranks, so rank 0 writes
the file alone with the serial h5py, under a hidden temporary name renamed
into place when complete (as :mod:`mpinet.trace` does); the outcome is
broadcast, so every rank raises the same error if the write failed.

Layout ``sweep 1.0``:

* root attributes: ``kind = "sweep"``, ``layout_version``, ``mpinet_version``,
  ``spec``, ``nodes``, ``ranks``, ``router``, ``model``, ``order``, ``buffer``,
  ``buffer_classes``, ``pattern``, ``seed``, ``zero_load_latency``,
  ``command_line``, and ``settings``, ``bound``, ``saturation`` as JSON text;
* ``/summary/<column>``: one row per load, sorted by offered load (the table
  :data:`SUMMARY_COLUMNS` plus ``util_max_<class>`` and ``util_mean_<class>``);
* ``/loads/<i>``: attribute ``point`` (the load's whole result as JSON) and the
  histograms ``latency``, ``source_queue``, ``network``, ``hops`` (count per
  value in steps or hops) of the packets injected in the window.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpinet import __version__
from mpinet.engine.comm import resolve
from mpinet.errors import OutputError
from mpinet.outputs import os_error_text, reserve
from mpinet.outputs.hdf5 import SWEEP, h5_file
from mpinet.values import json_safe, json_text  # noqa: F401 (json_safe: the old home)

LAYOUT_VERSION = "1.0"
#: summary column -> (point key, sub-key or None)
SUMMARY_COLUMNS = {
    "offered": ("offered", None),
    "injected": ("injected", None),
    "accepted": ("accepted", None),
    "latency_mean": ("latency", "mean"),
    "latency_p50": ("latency", "p50"),
    "latency_p99": ("latency", "p99"),
    "source_queue_mean": ("source_queue", "mean"),
    "source_queue_p99": ("source_queue", "p99"),
    "network_mean": ("network", "mean"),
    "network_p99": ("network", "p99"),
    "hops_mean": ("hops", "mean"),
    "window_packets": ("window_packets", None),
    "in_flight_at_cap": ("in_flight_at_cap", None),
    "stable": ("stable", None),
    "run_order": ("run_order", None),
}
HISTOGRAMS = ("latency", "source_queue", "network", "hops")


def _json(x: Any) -> str:
    return json_text(x)


def summary_table(res: dict) -> dict[str, np.ndarray]:
    """The ``/summary`` columns of a sweep result."""
    pts = res["points"]
    cols: dict[str, np.ndarray] = {}
    for name, (key, sub) in SUMMARY_COLUMNS.items():
        vals = [pt[key] if sub is None else pt[key][sub] for pt in pts]
        dtype = bool if name == "stable" else (np.int64 if name in _INT else np.float64)
        cols[name] = np.array(vals, dtype=dtype)
    for cls in res["port_classes"]:
        for what in ("max", "mean"):
            cols[f"util_{what}_{cls}"] = np.array(
                [pt["utilisation"][cls][what] for pt in pts], dtype=np.float64
            )
    return cols


_INT = ("window_packets", "in_flight_at_cap", "run_order")


def write_sweep(
    path: str, res: dict, comm: Any, *, force: bool = False, reservation: Any = None
) -> str:
    """Write the sweep ``res`` (with its ``_hists``) to ``path``; collective, rank 0 writes.

    ``reservation``: the names reserved while the sweep was planned
    (``mpinet.outputs.reserve(path, SWEEP, ...)``); without one they are reserved here.
    The file appears complete under its name or not at all.

    Raises
    ------
    OutputError
        On every rank, when rank 0 could not write the file (a full disk, a rival file).
    """
    comm = resolve(comm)
    res_ = reservation if reservation is not None else reserve(path, SWEEP, comm, force=force)
    err = None
    if comm.Get_rank() == 0:
        try:
            _write(res_, res)
            res_.publish()
        except OutputError as exc:
            err = str(exc)
        except OSError as exc:  # the fsync of the directory, a rename
            err = f"cannot write sweep file {res_.path}: {os_error_text(exc, res_.path)}"
        finally:
            res_.discard(final_parts=True)
    err = comm.bcast(err, root=0)
    if comm.Get_rank() != 0:  # only now: rank 0 was writing the temporary file
        res_.mark_committed() if err is None else res_.discard()
    if err is not None:
        raise OutputError(err)
    return res_.path


def _write(reservation: Any, res: dict) -> None:
    with h5_file(reservation) as f:
        a = f.attrs
        a["kind"] = "sweep"
        a["layout_version"] = LAYOUT_VERSION
        a["mpinet_version"] = __version__
        for key in ("spec", "nodes", "ranks", "router", "model", "order", "buffer",
                    "buffer_classes", "pattern", "seed", "zero_load_latency"):  # fmt: skip
            a[key] = res[key]
        a["command_line"] = res.get("command_line", "")
        a["port_classes"] = list(res["port_classes"])
        for key in ("settings", "bound", "saturation"):
            a[key] = _json(res[key])
        if res.get("switching") is not None:  # flit sweeps only: packet files stay as they were
            a["switching"] = _json(res["switching"])
        a["seconds"] = float(res["seconds"])
        a["cpu_seconds"] = float(res["cpu_seconds"])
        g = f.create_group("summary")
        for name, col in summary_table(res).items():
            g.create_dataset(name, data=col)
        loads = f.create_group("loads")
        width = len(str(max(len(res["points"]) - 1, 0)))
        for i, (pt, hists) in enumerate(zip(res["points"], res["_hists"], strict=True)):
            h = loads.create_group(f"{i:0{width}d}")
            h.attrs["offered"] = pt["offered"]
            h.attrs["point"] = _json(pt)
            for name in HISTOGRAMS:
                h.create_dataset(name, data=np.asarray(hists[name], dtype=np.int64))
