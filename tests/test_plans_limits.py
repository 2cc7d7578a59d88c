"""What a plan may use (:mod:`mpinet.engine.limits`) and how deep ``info`` searches.

The limits reader runs on fake ``/proc`` and cgroup trees (v1 and v2, limits on an
ancestor, a container whose group path is not under the mount, no limit at all); the
refusals name the limit that binds. The BFS depth of a network with no closed form is
sampled: on a ring every eccentricity is ``n / 2``, on a path the samples' eccentricities
are checked against the distributed BFS and against ``n - 1``.
"""

from __future__ import annotations

import re

import pytest

from mpinet.cli import main
from mpinet.engine import bfs, bfs_memory, limits
from mpinet.engine import info as ei
from mpinet.errors import ResourceError
from mpinet.jobs import plans_info
from mpinet.jobs import resources as rs
from mpinet.netfile import load_topology

GIB = 1 << 30


def _proc(tmp_path, cgroup: str, available: int = 8 * GIB, limits_line: str | None = None,
          vm: tuple[int, int] = (0, 0)):  # fmt: skip
    """A fake /proc: meminfo, self/cgroup, self/limits, self/status."""
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(f"MemTotal: 99999999 kB\nMemAvailable: {available // 1024} kB\n")
    (proc / "self" / "cgroup").write_text(cgroup)
    line = (
        limits_line or "Max address space         unlimited            unlimited            bytes"
    )
    (proc / "self" / "limits").write_text(
        "Limit                     Soft Limit           Hard Limit           Units\n"
        "Max cpu time              unlimited            unlimited            seconds\n"
        f"{line}\n"
    )
    (proc / "self" / "status").write_text(
        f"Name: python\nVmPeak: {vm[0] // 1024} kB\nVmSize: {vm[0] // 1024} kB\n"
        f"VmHWM: {vm[1] // 1024} kB\nVmRSS: {vm[1] // 1024} kB\n"
    )
    return str(proc)


def _group(root, rel: str, **files: object) -> None:
    d = root.joinpath(*rel.strip("/").split("/")) if rel.strip("/") else root
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name.replace("_", ".", 1)).write_text(str(text))


@pytest.fixture(autouse=True)
def _no_env_limit(monkeypatch):
    monkeypatch.delenv("MPINET_MEMORY_LIMIT", raising=False)


def test_mem_available_without_limits(tmp_path):
    proc = _proc(tmp_path, "0::/\n", available=5 * GIB)
    got = limits.memory(proc, str(tmp_path / "cg"))
    assert (got.machine, got.machine_origin, got.rank) == (5 * GIB, "MemAvailable", None)


def test_cgroup_v2_takes_the_tightest_ancestor(tmp_path):
    root = tmp_path / "cg"
    _group(root, "/", memory_max="max", memory_current=str(3 * GIB))
    _group(root, "/job", memory_max=str(2 * GIB), memory_current=str(GIB),
           memory_stat=f"anon 1\ninactive_file {100 << 20}\n")  # fmt: skip
    _group(root, "/job/step", memory_max="max", memory_current=str(GIB))
    proc = _proc(tmp_path, "0::/job/step\n")
    got = limits.memory(proc, str(root))
    assert got.machine == 2 * GIB - GIB + (100 << 20)  # the limit less usage, plus cache
    assert "memory.max 2.0 GiB" in got.machine_origin and "job" in got.machine_origin


def test_cgroup_v1_and_its_no_limit(tmp_path):
    root = tmp_path / "cg"
    _group(root, "/memory/slurm/job1", memory_limit_in_bytes=str(3 * GIB),
           memory_usage_in_bytes=str(GIB), memory_stat="total_inactive_file 0\n")  # fmt: skip
    proc = _proc(tmp_path, "5:cpu:/\n4:memory:/slurm/job1\n")
    got = limits.memory(proc, str(root))
    assert got.machine == 2 * GIB and "memory.limit_in_bytes 3.0 GiB" in got.machine_origin
    # v1's "no limit" is the largest page-aligned int64
    _group(root, "/memory/slurm/job1", memory_limit_in_bytes="9223372036854771712")
    assert limits.memory(proc, str(root)).machine_origin == "MemAvailable"


def test_a_container_group_path_falls_back_to_the_mount_root(tmp_path):
    root = tmp_path / "cg"
    _group(root, "/memory", memory_limit_in_bytes=str(GIB), memory_usage_in_bytes=str(GIB // 4))
    proc = _proc(tmp_path, "4:memory:/process_api/abc123\n")  # not under the mount
    assert limits.memory(proc, str(root)).machine == GIB - GIB // 4


def test_unreadable_or_odd_files_count_as_no_limit(tmp_path):
    root = tmp_path / "cg"
    _group(root, "/", memory_max="garbage\x00", memory_current="")
    proc = _proc(tmp_path, "not a cgroup line\n0::/\n")
    assert limits.memory(proc, str(root)).machine_origin == "MemAvailable"
    assert limits.memory(str(tmp_path / "missing"), str(root)).machine > 0  # sysconf


def test_mpinet_memory_limit_caps_the_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("MPINET_MEMORY_LIMIT", "1G")
    got = limits.memory(_proc(tmp_path, "0::/\n"), str(tmp_path / "cg"))
    assert (got.machine, got.machine_origin) == (GIB, "MPINET_MEMORY_LIMIT")


def test_ulimit_v_leaves_the_address_space_not_mapped_yet(tmp_path):
    cap, size, rss = 4 * GIB, 600 << 20, 200 << 20
    line = f"Max address space         {cap}           unlimited            bytes"
    proc = _proc(tmp_path, "0::/\n", limits_line=line, vm=(size, rss))
    got = limits.memory(proc, str(tmp_path / "cg"))
    assert got.rank == int((cap - (size - rss)) / limits.AS_RATIO)
    assert got.rank_origin.startswith("only ")
    assert got.rank_origin.endswith(" is available per process (ulimit -v 4.0 GiB)")
    assert got.machine_origin == "MemAvailable"  # per process, not the machine's


def test_the_real_process_reads_its_own_limits():
    import resource

    got = limits.memory()
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    assert (got.rank is None) == (soft == resource.RLIM_INFINITY)
    assert got.machine > 0


def _fake_memory(monkeypatch, machine: int, rank: int | None) -> None:
    origin = "only X is available per process (ulimit -v 1.0 GiB)"
    fake = limits.Memory(machine, "MemAvailable", rank, origin if rank else "")
    monkeypatch.setattr(limits, "memory", lambda *a, **k: fake)


def test_check_refuses_over_the_per_process_limit_naming_it(monkeypatch):
    _fake_memory(monkeypatch, 64 * GIB, 300 << 20)

    def estimate(r: int) -> rs.Estimate:
        est = rs.Estimate("job")
        est.add("shared", 100 << 20)
        est.add("split", (800 << 20) // r)
        return est

    with pytest.raises(ResourceError, match=r"but only X is available per process \(ulimit") as e:
        rs.check(estimate, 1, 1)
    # the first rank count whose share fits, computed: 4 ranks (100 + 200 MiB)
    assert "way out: 4 or more ranks, or a larger ulimit -v" in str(e.value)
    assert rs.check(estimate, 4, 4).bytes <= 300 << 20  # 4 ranks x 300 MiB: the machine fits
    # the machine's figure is compared with all the ranks here, the process's with one
    _fake_memory(monkeypatch, 1000 << 20, 300 << 20)
    with pytest.raises(ResourceError, match=r"for the 4 rank\(s\) on this machine"):
        rs.check(estimate, 4, 4)


def test_bfs_check_memory_names_the_process_limit(monkeypatch):
    _fake_memory(monkeypatch, 64 * GIB, 300 << 20)
    monkeypatch.setattr(bfs_memory, "available_memory", lambda: 64 * GIB)
    with pytest.raises(ResourceError, match=r"needs about 0\.5 GiB per rank, but only X"):
        bfs_memory.check_memory(lambda r: GIB // 2, 1, 1, "BFS on x")


# -- the depth of a network with no closed form ---------------------------------------------
def _edges(tmp_path, name: str, pairs) -> object:
    path = tmp_path / f"{name}.edges"
    path.write_text("".join(f"{a} {b}\n" for a, b in pairs))
    return load_topology(f"file:{path}")


def test_the_depth_of_a_ring_is_half_its_length(tmp_path):
    n = 1000
    ring = _edges(tmp_path, "ring", [(i, (i + 1) % n) for i in range(n)])
    assert ei.sample_depth(ring) == n // 2
    assert ei.bfs_levels(ring) == (n // 2 + 1, True)


def test_the_depth_of_a_path_is_its_samples_eccentricity(tmp_path):
    n = 1001
    path = _edges(tmp_path, "path", [(i, i + 1) for i in range(n - 1)])
    depth = ei.sample_depth(path)
    srcs = ei.sample_sources(path, ei.DEPTH_SAMPLES)
    exact = max(bfs.bfs_from(path, int(s)).diameter for s in srcs)  # the distributed BFS
    assert depth == exact
    assert (n - 1) // 2 <= depth <= n - 1  # the diameter n - 1 bounds every eccentricity


def test_a_deep_network_is_refused_with_its_depth_and_affordable_sources(tmp_path):
    n = 20_000
    path = _edges(tmp_path, "deep", [(i, i + 1) for i in range(n - 1)])
    with pytest.raises(ResourceError, match=r"depth about [\d,]+ by 4 sampled BFS") as e:
        plans_info.plan_info(path, 1, None, 1)
    text = str(e.value)
    assert re.search(r"about [\d.]+ (hours|minutes|s) on 1 rank\(s\)", text), text
    k = int(re.search(r"K <= ([\d,]+);", text).group(1).replace(",", ""))
    levels = ei.bfs_levels(path)[0]
    work = lambda s: -(-s // 64) * n * path.degree * levels  # noqa: E731
    assert work(k) <= ei.MAX_ALL_SOURCES_WORK < work(k + 64)
    assert ei.plan_info(path, 1, None, 1, sources=k) == "sample"  # the K it names runs


def test_a_ring_too_deep_for_one_word_names_one_source(tmp_path):
    n = 200_000
    ring = _edges(tmp_path, "bigring", [(i, (i + 1) % n) for i in range(n)])
    with pytest.raises(ResourceError, match=r"not even 64 sources .* --source LABEL"):
        ei.plan_info(ring, 1, None, 1, sources=4)


def test_progress_is_reported_level_by_level():
    from mpinet.topology import from_spec

    topo = from_spec("fccn:3")
    levels = ei.bfs_levels(topo)[0]
    seen = []
    got = bfs.bfs_all_sources(topo, progress=lambda d, t: seen.append((d, t)), levels=levels)
    assert (got.histogram == bfs.bfs_all_sources(topo).histogram).all()  # the same search
    totals = {t for _, t in seen}
    done = [d for d, _ in seen]
    assert len(totals) == 1 and done == sorted(done) and done[-1] == totals.pop()
    words = -(-int(topo.source_orbits()[0].size) // 64)
    assert len(seen) >= len(got.histogram) - 1 + words  # every level of every batch, and its end


def test_a_memory_error_in_info_is_one_line(monkeypatch, capsys):
    def boom(*a, **k):
        raise MemoryError

    monkeypatch.setattr(ei, "network_info", boom)
    assert main(["info", "star:4"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "info star:4 ran out of memory" in err[0], err
    assert "available (MemAvailable)" in err[0] and "Traceback" not in err[0]
