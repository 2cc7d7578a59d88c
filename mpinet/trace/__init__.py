"""Trace files: what an emulation did, in HDF5, written by all ranks and read without MPI.

``write_trace(path, comm, attrs=..., tables=..., checks=...)`` is collective;
``mpinet.trace.open(path)`` returns a :class:`Trace` (``attrs``, ``tables``, ``table``,
``column``, ``iter_chunks``, ``checks``, ``nrows``, ``job``, ``column_info``, ``verify``,
``to_pandas``). :mod:`mpinet.trace.reserve` checks and reserves a path before a run.

Layout 1.2
----------
Root attributes: the caller's ``attrs`` plus ``layout_version``, ``mpinet_version``,
``layout`` (``"single"``, ``"split"`` or ``"parallel"``: one file written by all ranks with
an MPI h5py, uncompressed), ``parts_dir`` (``""`` unless split), ``nparts`` and, when
split, ``parts`` (the part files, relative to the master's directory).
A table is a group ``/<table>`` of equal-length columns ``/<table>/<column>`` (axis 0 is the
row, ``/links/load`` is 2-D) kept in the caller's order, with attribute ``rank_rows``: the
rows each rank contributed, in rank order, and ``description``. Every column carries the
attributes ``units`` and ``description`` (:mod:`mpinet.trace.columns`). ``/checks`` has one
column per check key: ``name`` and ``detail`` as UTF-8 strings, ``ok`` as bool,
``expected``, ``measured`` and any other key as JSON text (listed in its ``json_columns``
attribute) so that ints, floats and strings read back as they were written.
1.1 added ``units``/``description``, the checksums, ``parts`` and, in ``mpinet run``'s
traces, ``/steps/step`` and a JSON ``job`` attribute (1.0 wrote a Python repr); the reader
reads both. 1.2 added, in ``mpinet run``'s unicast traces, ``load_unit`` (``"packets"``, or
``"flits"`` on the flit engine: what ``/links/load``, ``/steps/transmissions`` and
``/steps/cross_rank`` count; ``/packets/hops`` and ``/hops`` rows are the head's) with, for
flit runs, ``switching``, ``flits``, ``vcs``, ``vc_buffer``, ``vc_policy``, ``capacities``
(flits per step of each port) and ``order = "oldest-first"``; and for ``file:`` networks
``network_path`` (absolute) and ``network_format`` beside ``network_sha256``. Flit traces of
1.1 read alike: :mod:`mpinet.analysis.switching` derives the switching from the stored job.

Storage: chunks of about 1 MiB of rows (HDF5's default chunk cache), each with a
fletcher32 checksum that HDF5 verifies on every read, gzip level 1 with the shuffle
filter; columns under ``COMPRESS_MIN_BYTES`` (1 MiB) are not compressed (one chunk), since
compressing them costs more time than it saves (a 40,000-packet trace: 15 -> 10 ms).
The virtual datasets of a split master have the fill value of
:func:`mpinet.trace.datasets.missing_fill`
(the dtype's minimum for signed integers, NaN for floats; attribute ``missing_value``):
plain h5py reads the rows of a lost part file as that value, without an error, whereas
:func:`open` refuses the trace.
On 10 M x 6 int64 trace-like columns gzip-1+shuffle wrote ~290 MB/s per core at a ratio
of 7.8; lzf+shuffle ~500 MB/s at 6.3, but lzf is an h5py-only filter that
h5dump, HDFView, Julia or R cannot read, while gzip is in every HDF5 build.

Which layout
------------
* ``single``: everything in ``path``. Always with one rank (unless ``consolidate=False``).
  With R > 1 ranks and serial h5py when the raw data total is below ``CONSOLIDATE_MIB``
  (64 MiB; environment ``MPINET_TRACE_CONSOLIDATE_MIB`` on rank 0 overrides it): the ranks'
  rows are gathered to rank 0 in memory, which writes ``path``. With ``consolidate=True``
  above the threshold: every rank writes a part, rank 0 copies the parts into ``path``
  block by block (bounded memory) and deletes them. Small traces are thus one file.
* ``split``: R > 1 ranks, serial h5py, above the threshold (or ``consolidate=False``).
  Rank r writes ``<name>.parts-<token>/rank{r:05d}.h5`` beside ``path``; rank 0 writes
  ``path`` whose columns are virtual datasets concatenating the parts in rank order, by
  names *relative* to the master's directory (HDF5 resolves them from there), so the file
  and its directory can move together; renaming the file alone is fine, the directory not.
* ``parallel``: h5py built with MPI, R > 1, ``parallel`` not False: one ``driver="mpio"`` file,
  structure created by all ranks, each rank writing its slice. These datasets are contiguous
  and uncompressed: HDF5 filters only under collective I/O, and h5py skips zero-size
  selections, so a rank without rows would hang a collective write (``h5repack`` compresses
  afterwards); they carry no checksums (filters need collective I/O; ``h5repack -f FLET``
  adds them). :func:`select_parallel` is the rule.

Safety
------
Nothing is written at ``path`` directly. :func:`~mpinet.trace.reserve.reserve` checks
``path`` and creates the hidden temporary file ``.<name>.tmp-<token>`` before the run
(``mpinet run`` does it in its plan phase) and every rank raises the same
:class:`TraceError` if the path is refused. Files are written under hidden names in the
same directory (that file and ``.<name>.parts-<token>.tmp/``) and fsynced; the parts
directory is renamed to its final name, then the master appears at ``path`` by ``os.link``
(exclusive: a trace another run wrote meanwhile is kept and this write fails) or, with
``force``, by ``os.replace`` of the very trace that was there when the run started: the one
commit point, so ``path`` is the old trace or the complete new one. The token is new for
every write, so a forced write never touches the parts of the trace it replaces; they are
deleted after the commit. Each step ends by exchanging every rank's outcome, so a failure
on one rank raises on all ranks (no rank is left waiting) and the temporaries are removed;
``mpinet`` removes them on SIGINT and SIGTERM too. Only a job killed outright (SIGKILL,
power loss) may leave hidden ``.<name>.tmp-*`` or ``.<name>.parts-*.tmp`` entries (safe to
delete), never a partial ``path``.
"""

from mpinet.lazy import package_getattr

#: each public name's module, imported when the name is first used (PEP 562): a command that
#: only checks a trace's path or attributes (``mpinet booksim``, a run without a trace) does not
#: load h5py's reader and writer (docs/performance.md, "mpinet booksim meshconfig, end to end")
_WHERE = {
    "Trace": "reader",
    "open_trace": "reader",
    "open": "reader:open_trace",  # mpinet.trace.open, like h5py.File or tarfile.open
    "Reservation": "reserve",
    "check_target": "reserve",
    "LAYOUT_VERSION": "writer",
    "select_layout": "writer",
    "select_parallel": "writer",
    "write_trace": "writer",
}


__getattr__ = package_getattr(__name__, _WHERE)


__all__ = [
    "LAYOUT_VERSION",
    "Reservation",
    "Trace",
    "check_target",
    "open",
    "open_trace",
    "select_layout",
    "select_parallel",
    "write_trace",
]
