"""The memory this process may use: the machine's, its cgroup's and its address space's.

Three limits can end a run that fits the others:

* ``MemAvailable`` of ``/proc/meminfo`` (the machine, shared by its ranks);
* the memory cgroup of the process (v2 ``memory.max``, v1 ``memory.limit_in_bytes``, on
  its own group and every ancestor): the limit less the usage, plus the inactive page
  cache the kernel reclaims first; shared by the ranks in the group;
* ``ulimit -v`` (``RLIMIT_AS``, from ``/proc/self/limits``), per process. It caps the
  address space, which runs ahead of the resident memory a plan counts: the process
  already maps ``VmSize - VmRSS`` it does not touch (libraries, numba, MPI: 340-370 MiB
  measured), and what it allocates later maps up to :data:`AS_RATIO` times what becomes
  resident (1.0-1.11 measured: ``VmPeak`` growth over ``VmHWM`` growth of flit and packet
  runs and BFS on 1 and 2 ranks; 1.25 keeps a margin). So it leaves
  ``(RLIMIT_AS - (VmSize - VmRSS)) / AS_RATIO`` bytes of resident memory.

``MPINET_MEMORY_LIMIT`` (tests, shared nodes) caps the machine's figure. Every reader
takes its root directories as parameters so that tests give it fake ``/proc`` and cgroup
trees; anything unreadable counts as no limit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mpinet.values import env_number

#: address space mapped per byte of resident memory allocated after the plan (1.0-1.11
#: measured, with a margin; docs/reliability.md, "Available memory")
AS_RATIO = 1.25
#: cgroup v1's "no limit" (the largest page-aligned int64), and anything above it
_V1_UNLIMITED = 1 << 62


@dataclass(frozen=True)
class Memory:
    """What a plan may use: ``machine`` bytes for all the ranks on this machine, at most
    ``rank`` bytes resident per process (None: no per-process limit); each ``*_origin``
    names the limit the figure comes from."""

    machine: int
    machine_origin: str
    rank: int | None = None
    rank_origin: str = ""


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{int(nbytes):,} bytes"


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read(1 << 16)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _fields(text: str | None, unit: int = 1) -> dict[str, int]:
    """``Key: 123 kB`` or ``key 123`` lines as a dict of ints (times ``unit``)."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1]) * unit
    return out


def mem_available(proc: str = "/proc") -> int:
    """``MemAvailable`` in bytes (the physical memory when the line is missing)."""
    have = _fields(_read(os.path.join(proc, "meminfo")), 1024).get("MemAvailable")
    if have is None:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return have


def _cgroup_dirs(proc: str, root: str) -> list[tuple[str, int]]:
    """The memory cgroup directories of this process, deepest first, with their version."""
    text = _read(os.path.join(proc, "self", "cgroup")) or ""
    out = []
    for line in text.splitlines():
        _, ctl, path = (line.split(":", 2) + ["", ""])[:3]
        if ctl == "" and line.startswith("0::"):
            base, version = root, 2
        elif "memory" in ctl.split(","):
            base, version = os.path.join(root, "memory"), 1
        else:
            continue
        rel = path.strip().strip("/")
        # inside a container the group's path may not exist under the mount: its root is it
        parts = rel.split("/") if rel else []
        for k in range(len(parts), -1, -1):
            d = os.path.join(base, *parts[:k])
            if os.path.isdir(d):
                out.append((d, version))
    return out


def cgroup_available(proc: str = "/proc", root: str = "/sys/fs/cgroup") -> tuple[int, str] | None:
    """Bytes the memory cgroup (the tightest of its ancestors) still allows, and its name."""
    best = None
    for d, version in _cgroup_dirs(proc, root):
        if version == 2:
            limit_text, used_text, stat_key = "memory.max", "memory.current", "inactive_file"
        else:
            limit_text, used_text = "memory.limit_in_bytes", "memory.usage_in_bytes"
            stat_key = "total_inactive_file"
        raw = (_read(os.path.join(d, limit_text)) or "").strip()
        if not raw.isdigit() or int(raw) >= _V1_UNLIMITED:
            continue  # "max", unreadable, or v1's no limit
        limit = int(raw)
        used = (_read(os.path.join(d, used_text)) or "").strip()
        used = int(used) if used.isdigit() else 0
        cache = _fields(_read(os.path.join(d, "memory.stat"))).get(stat_key, 0)
        free = max(0, limit - used + min(cache, used))
        if best is None or free < best[0]:
            best = (free, f"cgroup {limit_text} {_size(limit)}, {_size(used)} in use ({d})")
    return best


def address_space(proc: str = "/proc") -> tuple[int, str] | None:
    """Resident bytes ``ulimit -v`` (``RLIMIT_AS``) leaves this process, and its name."""
    for line in (_read(os.path.join(proc, "self", "limits")) or "").splitlines():
        if line.startswith("Max address space"):
            soft = line[len("Max address space") :].split()[:1]
            if not soft or not soft[0].isdigit():
                return None  # unlimited
            cap = int(soft[0])
            vm = _fields(_read(os.path.join(proc, "self", "status")), 1024)
            mapped = max(0, vm.get("VmSize", 0) - vm.get("VmRSS", 0))
            rss = max(0, int((cap - mapped) / AS_RATIO))
            # short: the refusal must keep its way out within the one line's 400 bytes
            return rss, f"only {_size(rss)} is available per process (ulimit -v {_size(cap)})"
    return None


def memory(proc: str = "/proc", root: str = "/sys/fs/cgroup") -> Memory:
    """The limits of this process (collective use: every rank reads its own)."""
    have, origin = mem_available(proc), "MemAvailable"
    group = cgroup_available(proc, root)
    if group is not None and group[0] < have:
        have, origin = group
    limit = env_number("MPINET_MEMORY_LIMIT")  # a size in [1M, 1P], or None
    if limit is not None and limit < have:
        have, origin = int(limit), "MPINET_MEMORY_LIMIT"
    space = address_space(proc)
    if space is None:
        return Memory(have, origin)
    return Memory(have, origin, space[0], space[1])
