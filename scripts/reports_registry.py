"""Every report, table and benchmark script of ``scripts/``, and what each regenerates.

Read by ``python scripts/reports.py list`` and ``run``; tests/test_reports_framework.py
fails when a script of ``scripts/`` is neither here (as a report or a part of one) nor
one of the :data:`TOOLS`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Report:
    """One registered report or benchmark.

    Attributes
    ----------
    name : str
        Its name for ``reports.py run NAME``.
    script : str
        The script under ``scripts/`` that builds it.
    description : str
        One line: what it measures or computes.
    regenerates : str
        The docs page and block it writes, or where its printed table goes.
    parts : tuple of str
        Modules of ``scripts/`` it imports that are no report of their own.
    argv : tuple of str
        Arguments always given to the script (``--speed-table``).
    entry : str
        The script's function that builds it, called with the arguments (``main(argv)``).
    """

    name: str
    script: str
    description: str
    regenerates: str
    parts: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    entry: str = "main"

    def command(self) -> str:
        """How it runs alone, by path."""
        return " ".join(["python", f"scripts/{self.script}", *self.argv])


R = Report
REPORTS: tuple[Report, ...] = (
    # ---- reports: documents regenerated, numbers never typed
    R("reproduce", "reproduce.py", "the papers' tables beside mpinet's runs of jobs/",
      "docs/reproduction.md (whole page; keeps wormhole_report's blocks) and docs/figures/",
      parts=("reproduce_tables.py", "reproduce_sections.py", "paper_values.py")),
    R("wormhole", "wormhole_report.py", "the papers' wormhole statements, measured",
      "docs/reproduction.md, the blocks <!-- BEGIN scripts/wormhole_report.py: paper 000/004 -->",
      parts=("wormhole_jobs.py", "wormhole_star_step.py")),
    R("routing", "routing_report.py", "the papers' routing tables beside mpinet's routers",
      "docs/routing.md (whole page)", parts=("paper_values.py",)),
    R("deadlock", "deadlock_report.py", "every router's channel dependency graph; VCs needed",
      "docs/deadlock-analysis.md, the blocks <!-- BEGIN scripts/deadlock_report.py[: virtual "
      "channels] -->", parts=("deadlock_vc_report.py",)),
    R("collectives", "collectives_report.py", "measured collective steps beside papers and bounds",
      "docs/collectives.md (whole page)"),
    R("emulation", "emulation_report.py", "star algorithms run on macro-stars with real packets",
      "docs/emulation.md, the block <!-- emulation runs: begin ... -->"),
    R("compare", "compare_report.py", "networks of about 5,000 nodes swept under load",
      "docs/comparison.md, docs/comparison.json, docs/figures/comparison/",
      parts=("compare_claims.py", "compare_wormhole.py")),
    R("ms-variants", "ms_variants_table.py", "paper 004's Table 2 and the IMS words, recomputed",
      "docs/ms-variants.md, the blocks <!-- BEGIN scripts/ms_variants_table.py: ... -->"),
    R("network-table", "network_table.py", "one table comparing networks from traces and sweeps",
      "printed (docs/own-network.md shows one)"),
    R("read-plan", "read_plan_peaks.py", "peak memory of reading network files against the plan",
      'printed, for docs/networks.md, "The read plan"'),
    # ---- benchmarks: printed tables for docs/performance.md
    R("bench-engine", "bench_engine.py", "packet engine throughput on 1 and 2 ranks",
      'printed, for docs/performance.md, "The packet engine"'),
    R("bench-floor", "bench_floor.py", "the floor of a hop: only its unavoidable memory work",
      "printed, for docs/performance.md (the floor of a hop)"),
    R("bench-info", "bench_info.py", "mpinet info on large networks, 1 and 2 ranks",
      "printed, for docs/performance.md (mpinet info)"),
    R("bench-netfile", "bench_netfile.py", "networks from files: read, info and a run",
      'printed, for docs/performance.md (network files)'),
    R("bench-routers", "bench_routers.py", "routing decisions per second for every router",
      'printed, for docs/performance.md, "Routers"'),
    R("bench-scaling", "bench_scaling.py", "scaling measured on 1-4 ranks and projected",
      "docs/performance.md, the block <!-- BEGIN scripts/bench_scaling.py -->; "
      "docs/scaling.json", parts=("scaling_model.py",)),
    R("bench-source-routes", "bench_source_routes.py", "what a hop costs each paper's router",
      'printed, for docs/performance.md, "Routers"'),
    R("bench-iq", "bench_iq.py", "the iq router's speed against the ideal router's",
      'printed, for docs/performance.md, "Today" (iq against ideal)'),
    R("bench-iq-ranks", "bench_iq_ranks.py", "the iq router's speed on 1 and 2 ranks",
      'printed, for docs/iq-router.md, "Session 19: the lean path on several ranks"'),
    R("bench-ports", "bench_ports.py", "the flit engine's port models against all-port",
      'printed, for docs/performance.md, "Today" (port models)'),
    R("booksim", "booksim_check.py", "BookSim2 and mpinet side by side (needs BookSim2)",
      "docs/booksim.md, the block <!-- BEGIN scripts/booksim_check.py -->",
      parts=("booksim_runs.py",)),
    R("booksim-speed", "booksim_check.py", "BookSim2 and mpinet timed alternately",
      "docs/booksim.md, the block <!-- BEGIN scripts/booksim_check.py --speed-table -->",
      parts=("booksim_speed.py",), argv=("--speed-table",)),
    R("booksim-kncube", "booksim_check.py", "BookSim2 and mpinet booksim on k-ary n-cubes",
      "docs/booksim.md, the block <!-- BEGIN scripts/booksim_check.py --kncube -->",
      parts=("booksim_kncube.py",), argv=("--kncube",)),
    R("booksim-iq", "booksim_check.py", "BookSim2 and mpinet's iq router on the anynet rows",
      "docs/booksim.md, the block <!-- BEGIN scripts/booksim_check.py --router iq -->; "
      "docs/data/booksim_runs.json",
      parts=("booksim_iq.py", "booksim_data.py", "booksim_bracket.py"), argv=("--router", "iq")),
    R("booksim-examples", "booksim_examples.py", "BookSim2's own example files on both "
      "simulators (needs BookSim2)", "docs/booksim.md, the block <!-- BEGIN booksim_examples -->",
      argv=("--write",)),
)  # fmt: skip

#: the scripts that are no report: the docs checker and generator, the test runner, helpers,
#: booksim_trace.py, which writes test data (tests/data/booksim) from BookSim2's traces, and
#: flit_stage_split.py, which times a scratch copy of the engine stage by stage, and sdc_floor.py,
#: which times sdc with its port choice replayed in a scratch copy (probes, no reports),
#: patched_copy.py, the scratch copy both make, and iq_floor.py with its kernels
#: (iq_floor_kernels.py, iq_floor_soa.py, iq_floor_x.py), which times a lean input-queued
#: router against the ideal and iq runs of bench_iq.py's cases (a probe, no report), and
#: port_stage_split.py, which clocks one-port's stages against all-port's (a probe, no report)
TOOLS = (
    "booksim_split.py",
    "booksim_trace.py",
    "catalogue_doc.py",
    "docs.py",
    "docs_blocks.py",
    "docs_toml.py",
    "flit_stage_split.py",
    "gen_reference.py",
    "iq_floor.py",
    "iq_floor_kernels.py",
    "iq_floor_soa.py",
    "iq_floor_x.py",
    "launcher.py",
    "mkdocs_hooks.py",
    "patched_copy.py",
    "port_stage_split.py",
    "run_tests.py",
    "reports.py",
    "reports_registry.py",
    "sdc_floor.py",
)


def find(name: str) -> Report:
    """The report called ``name``; ``KeyError`` naming the valid names."""
    for r in REPORTS:
        if r.name == name:
            return r
    names = ", ".join(r.name for r in REPORTS)
    raise KeyError(f"no report {name!r}; the reports: {names} (python scripts/reports.py list)")
