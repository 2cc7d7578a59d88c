"""BookSim2's results kept in the repository: ``docs/data/booksim_runs.json``.

BookSim2 is slow where mpinet is compared with it (its anynet builds O(N^3) routing tables
before every run: minutes per load on scc:6, ms:3,2, fccn:4), so every BookSim run the
scripts make is stored here, keyed by the **full BookSim configuration** (every key of the
file the script wrote, ``network_file`` replaced by the network it exports, and the
``injection_rate``), with the UTC time it was measured. A table regenerated later reads
its BookSim figures from here instead of rerunning BookSim.

``searches`` holds BookSim saturation searches by their configuration and search rule:
either summarised from the runs above, or imported (:func:`import_results_table`) from a
table an earlier run generated whose runs were not kept; an imported entry says so and
from which table and date.

Part of ``scripts/booksim_check.py``; used by ``booksim_runs.py`` and ``booksim_iq.py``.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import reports

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "booksim_runs.json"
SCRIPT = str(ROOT / "scripts" / "booksim_check.py")
ABOUT = (
    "BookSim2 runs measured by scripts/booksim_check.py (BookSim2 of booksim/booksim2 "
    "28f43299, built outside the repository): 'runs' keyed by the full configuration and "
    "injection_rate, 'searches' by the configuration and the search rule; 'measured' is "
    "the UTC time of the run. docs/booksim.md's tables are regenerated from here."
)


def config_keys(config: str) -> dict[str, str]:
    """The ``key = value;`` lines of a configuration, as written."""
    return dict(re.findall(r"^(\w+) = (.*);$", config, re.M))


def run_key(network: str, config: str, rate: float) -> str:
    """The key of one run: every configuration key, the network, the injection rate."""
    keys = config_keys(config)
    keys.pop("network_file", None)  # the exported file's name; the network says what it is
    return json.dumps({"network": network, **keys, "injection_rate": repr(rate)},
                      sort_keys=True)  # fmt: skip


def search_key(network: str, config: str, rule: dict) -> str:
    """The key of a saturation search: its configuration and its rule (grid, bisections,
    zero-load probe, latency factor, accept tolerance)."""
    keys = config_keys(config)
    keys.pop("network_file", None)
    return json.dumps({"network": network, **keys, "rule": rule}, sort_keys=True)


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def load(path: str | Path = DATA) -> dict:
    """The stored runs and searches (empty sections if the file does not exist)."""
    p = Path(path)
    doc = json.loads(p.read_text()) if p.exists() else {}
    return {"about": ABOUT, "runs": doc.get("runs", {}), "searches": doc.get("searches", {})}


def save(path: str | Path, runs: dict | None = None, searches: dict | None = None) -> dict:
    """Add ``runs`` and ``searches`` to the file and write it whole (read again first: another
    search may have added entries since)."""
    doc = load(path)
    doc["runs"].update(runs or {})
    doc["searches"].update(searches or {})
    doc["runs"] = dict(sorted(doc["runs"].items()))
    doc["searches"] = dict(sorted(doc["searches"].items()))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    reports.write(path, json.dumps(doc, indent=1) + "\n", SCRIPT)
    return doc


_HEAD = re.compile(
    r"\((?P<date>\d{4}-\d\d-\d\d)[^)]*\): V = (?P<vcs>\d+), B = (?P<buf>\d+); BookSim "
    r"`sample_period` (?P<sp>\d+), `warmup_periods` (?P<wp>\d+), `max_samples` (?P<ms>\d+);"
    r".* loads (?P<lo>[0-9.]+)\.\.(?P<hi>[0-9.]+) x bound in (?P<n>\d+) steps, (?P<bis>\d+) "
    r"bisections"
)


def import_results_table(block: str) -> list[dict]:
    """The BookSim side of each row of a generated Results table (the text between
    ``booksim_check.py``'s markers): network, L, the configuration's parameters read from
    the block's head, the zero-load latency, bound, saturation, criteria, sustained rate
    and seconds, as printed."""
    head = _HEAD.search(block)
    if head is None:
        raise ValueError("not a booksim_check.py Results block (its head is not recognised)")
    out = []
    for line in block.splitlines():
        if not line.startswith("| `"):
            continue
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        sat = c[7].split()
        out.append({
            "network": c[0].strip("`"), "flits": int(c[1]),
            "vcs": int(head["vcs"]), "vc_buffer": int(head["buf"]),
            "sample_period": int(head["sp"]), "warmup_periods": int(head["wp"]),
            "max_samples": int(head["ms"]),
            "grid": [float(head["lo"]), float(head["hi"]), int(head["n"])],
            "bisect": int(head["bis"]),
            "zero_latency": float(c[4].split(" / ")[1]),
            "bound": float(c[5].split(" / ")[1]),
            "load": None if sat[0] == ">" else float(sat[0]),
            "criteria": c[9].split(" / ")[1].split(","),
            "throughput": float(c[10].split(" / ")[1]),
            "seconds": float(c[11].split(" / ")[1]),
            "table_date": head["date"],
        })  # fmt: skip
    return out
