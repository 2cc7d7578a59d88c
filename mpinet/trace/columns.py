"""Units and descriptions of the tables and columns mpinet writes (layout 1.1).

Every dataset of a trace carries the attributes ``units`` and ``description``; the writer
takes them from the caller's ``meta`` first, then from :data:`COLUMNS`. A column of a
table mpinet does not know gets empty strings (a caller of :func:`write_trace` should pass
``meta``). ``units`` are plain words: ``step`` (a step number, counted from 1; 0 is
injection before the first step), ``node id`` (index into the network's nodes, see
``Topology.label``), ``port index`` (index into the root attribute ``ports``), counts of
``packets``, ``hops`` or ``transmissions`` (one packet or message over one directed link).
"""

from __future__ import annotations

#: table -> description of the group
TABLES: dict[str, str] = {
    "packets": "one row per packet, sorted by id",
    "steps": "one row per step of the run, in step order",
    "links": "one row per node: traffic of its ports over the whole run",
    "hops": "one row per hop of every packet, sorted by (packet, step)",
    "checks": "the end-of-run checks of mpinet run, one row per check",
}

#: root attribute -> description: the writer's own, then those of ``mpinet run``
#: (:mod:`mpinet.jobs.trace_attrs`); docs/reference/trace-layout.md is generated from it
ATTRS: dict[str, str] = {
    "layout_version": "the layout of this file (1.2); the reader reads 1.0 to 1.2",
    "mpinet_version": "the mpinet that wrote it",
    "layout": "single (one file) | split (a master over per-rank parts) | parallel (mpio)",
    "parts_dir": "split: the parts directory, relative to this file; else empty",
    "nparts": "number of part files (split), else 0 or 1",
    "parts": "split: the part files, relative to this file's directory",
    "rank": "a split trace's part file: the rank that wrote it",
    "token": "a split trace's part file: the write it belongs to",
    "topology": "the topology spec the run was given",
    "network_sha256": "file networks: sha256 of the network file's content",
    "network_path": "file networks: absolute path of the network file as read",
    "network_format": "file networks: edgelist | graphml | anynet",
    "nodes": "number of nodes",
    "degree": "ports per node",
    "ports": "name of each port index (the hops' port column indexes it)",
    "port_classes": "port class of each port index (model.capacity is per class)",
    "model": "port model: all-port | one-port | k-port:K | sdc",
    "order": "arbitration at each output link: fifo | oldest-first (always, on flits)",
    "buffer": "slots per input port (0: unbounded)",
    "buffer_classes": "none | hops",
    "workload": "the workload kind",
    "router": "the router's name",
    "collective": "collectives: the node program that ran",
    "seed": "the job's seed",
    "mpi_size": "number of MPI ranks of the run",
    "steps": "steps the run took",
    "trace_level": "summary | hops",
    "command_line": "the command line that wrote the trace",
    "job": "the validated job, every key with its value, as JSON",
    "start_time": "UTC start of the run (ISO 8601)",
    "end_time": "UTC end of the run (ISO 8601)",
    "load_unit": "unicast runs: what link loads and transmissions count: packets | flits",
    "switching": "flit runs: store-and-forward | cut-through | wormhole",
    "flits": "flit runs: flits per packet",
    "vcs": "flit runs: virtual channels per directed link",
    "vc_buffer": "flit runs: flit slots per virtual channel",
    "vc_policy": "flit runs: the VC policy",
    "capacities": "flit runs: flits per step of each port index",
    "SECTION_KEY": "a workload's result sections, one attribute per key (te_ratio, ...)",
}

#: attributes of the groups and datasets (``name`` -> description)
GROUP_ATTRS: dict[str, str] = {
    "description": "what a table's rows are (TABLES), or what a column holds",
    "rank_rows": "rows each rank contributed, in rank order (tables but /checks)",
    "json_columns": "/checks: the columns stored as JSON text",
    "units": "every column: its unit, in plain words",
    "missing_value": "split masters' virtual columns: the fill value of a lost part's rows",
}

#: table -> column -> (units, description)
COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "packets": {
        "id": ("packet id", "packet id, unique over the run (a function of source and number)"),
        "source": ("node id", "node that injected the packet"),
        "dest": ("node id", "destination node"),
        "inject_step": ("step", "step in which the packet was injected (0: before step 1)"),
        "deliver_step": ("step", "step in which it reached dest; -1: never delivered"),
        "hops": ("hops", "links crossed, also by a packet not delivered"),
        "admit_step": (
            "step",
            "step in which its source's injection buffer admitted it (= inject_step with "
            "unbounded buffers); -1: never admitted",
        ),
    },
    "steps": {
        "step": ("step", "the step number, from 1"),
        "transmissions": ("transmissions", "packets (or messages) sent over links in the step"),
        "delivered": ("packets", "packets that reached their destination in the step"),
        "in_flight": ("packets", "packets injected and not yet delivered after the step"),
        "cross_rank": ("transmissions", "transmissions between nodes of different MPI ranks"),
        "informed": ("(node, message) pairs", "pairs newly informed in the step (collective)"),
        "duplicates": ("transmissions", "transmissions to a node that held the message already"),
    },
    "links": {
        "load": ("packets", "(node, port): packets sent on that directed link over the run"),
    },
    "hops": {
        "step": ("step", "step in which the hop happened"),
        "packet": ("packet id", "the packet (id in /packets/id)"),
        "from_node": ("node id", "node the packet left"),
        "to_node": ("node id", "node the packet reached"),
        "port": ("port index", "port of from_node the hop used (index into attribute ports)"),
    },
    "checks": {
        "name": ("text", "what was checked"),
        "expected": ("JSON", "the value the check expects, as JSON text"),
        "measured": ("JSON", "the value measured, as JSON text"),
        "ok": ("boolean", "whether the check passed"),
        "detail": ("text", "how it was checked, or why it failed"),
    },
}


#: the columns whose meaning differs in a trace of the flit engine (``load_unit = "flits"``,
#: layout 1.2): links and steps count flits, hop rows and packet hops are the head's
FLIT_COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "links": {"load": ("flits", "(node, port): flits sent on that directed link over the run")},
    "steps": {
        "transmissions": ("flits", "flits sent over links in the step"),
        "cross_rank": ("flits", "flits sent between nodes of different MPI ranks"),
    },
    "packets": {
        "hops": ("hops", "links the packet's head crossed, also by a packet not delivered"),
        "inject_step": ("step", "step in which the head was injected (0: before step 1)"),
        "deliver_step": ("step", "step in which the tail reached dest; -1: never delivered"),
    },
    "hops": {"step": ("step", "step in which the packet's head made the hop")},
}


def column_meta(
    table: str, column: str, meta: dict[str, dict[str, tuple[str, str]]] | None = None
) -> tuple[str, str]:
    """``(units, description)`` of ``table/column``: from ``meta``, else :data:`COLUMNS`."""
    for source in (meta or {}, COLUMNS):
        if column in source.get(table, {}):
            units, description = source[table][column]
            return str(units), str(description)
    return "", ""
