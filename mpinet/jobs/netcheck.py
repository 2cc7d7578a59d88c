"""Every rank runs the same network: a file network's SHA-256 compared across the ranks.

Each rank reads ``file:PATH`` itself, relative to its own working directory and on
its own machine, so one name can be two files (``mpiexec -n 1 -wdir A mpinet run ...
: -n 1 -wdir B mpinet run ...``, or a file copied to one machine of two). The ranks
would then route on different graphs, and a run ended, after a minute, in a verdict
of livelock. Every command that loads a network calls :func:`same_network` once all
ranks hold it, before any collective work: one allgather of (spec, digest), and the
same one-line refusal on every rank, naming the file and which ranks read what.
"""

from __future__ import annotations

from typing import Any

from mpinet.topology.filegraph import FileError


def _what(topo: Any) -> tuple[str, str | None, str | None]:
    info = getattr(topo, "file_info", None) or {}
    if info.get("sha256"):
        return "file", info.get("path"), info["sha256"]
    return "spec", str(getattr(topo, "spec", topo)), None


def _ranks(ranks: list[int]) -> str:
    """``rank 0``, ``ranks 1, 2`` or ``ranks 0-7``."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2:
        return f"ranks {ranks[0]}-{ranks[-1]}"
    shown = ", ".join(map(str, ranks[:8]))
    return f"ranks {shown}{', ...' if len(ranks) > 8 else ''}"


def same_network(comm: Any, *topos: Any) -> None:
    """Refuse, on every rank alike, ranks that hold different networks under one spec.

    Collective: every rank of ``comm`` calls it with its topologies (the ones its
    command loaded, in the same order).

    Raises
    ------
    FileError
        The file's SHA-256 (or the network's spec) differs between ranks; the message
        names the file and the ranks that read each version.
    """
    if comm.Get_size() == 1 or not topos:
        return
    mine = [_what(t) for t in topos]
    every = comm.allgather(mine)
    for k in range(len(mine)):
        seen: dict[tuple, list[int]] = {}  # what was read (a file by its digest alone) -> ranks
        named: dict[tuple, tuple] = {}  # -> how its first rank named it
        for rank, theirs in enumerate(every):
            w = tuple(theirs[k]) if k < len(theirs) else ("spec", "nothing", None)
            key = (w[0], w[2]) if w[0] == "file" else w  # one file under two names is one file
            seen.setdefault(key, []).append(rank)
            named.setdefault(key, w)
        if len(seen) > 1:
            raise FileError(_message({named[key]: ranks for key, ranks in seen.items()}))


def _message(seen: dict[tuple, list[int]]) -> str:
    groups = sorted(seen.items(), key=lambda kv: kv[1][0])
    files = [w for w, _ in groups if w[0] == "file"]
    if len(files) == len(groups) and len({w[1] for w in files}) == 1:
        parts = [f"{_ranks(r)} read sha256 {w[2][:12]}" for w, r in groups]
        return (
            f"network file {files[0][1]} differs between ranks: {'; '.join(parts)} (one name, "
            "different files: another working directory or machine); give every rank the "
            "same file"
        )
    parts = []
    for w, r in groups:
        what = f"file:{w[1]} (sha256 {w[2][:12]})" if w[0] == "file" else w[1]
        parts.append(f"{_ranks(r)} loaded {what}")
    return f"the ranks loaded different networks: {'; '.join(parts)}; give every rank the same"
