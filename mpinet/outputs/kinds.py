"""What each command writes, and how an existing file of that kind is recognised.

``--force`` replaces a file only when it is of the writing command's own kind: a trace
replaces a trace, a sweep file a sweep file, an export an export of the same format, a
figure a figure mpinet drew, a report the report its script generated. Anything else (the
job file, a notes file, another tool's output) is refused with or without ``--force``.
Recognising reads at most a few KiB of the file, or its HDF5 root attributes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from mpinet.errors import MpinetError, OutputError, TraceError

#: bytes of a text or image file read to recognise it
HEAD_BYTES = 1 << 16


@dataclass(frozen=True)
class Kind:
    """One kind of output.

    Attributes
    ----------
    name : str
        Registry key (``"trace"``).
    noun : str
        What the messages call one (``"sweep file"``).
    example : str
        A file name the messages suggest (``"run.h5"``).
    recognise : callable
        ``recognise(path) -> bool``: the existing file is of this kind (``--force`` may
        replace it).
    error : type
        The error class of the refusals (:class:`~mpinet.errors.TraceError` for traces).
    plural : str
        The noun's plural (default: ``noun + "s"``).
    force_hint : str
        How the messages name the way to replace a file.
    """

    name: str
    noun: str
    example: str
    recognise: Callable[[str], bool]
    error: type[MpinetError] = OutputError
    plural: str = ""
    force_hint: str = "--force"

    def __post_init__(self) -> None:
        if not self.plural:
            object.__setattr__(self, "plural", self.noun + "s")


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add ``kind`` to :data:`KINDS` (a later kind of the same name replaces it)."""
    KINDS[kind.name] = kind
    return kind


def get(name: str) -> Kind:
    """The registered kind ``name``."""
    try:
        return KINDS[name]
    except KeyError:
        raise OutputError(f"unknown output kind {name!r}; known: {', '.join(KINDS)}") from None


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return b""


def _h5_attrs(path: str, *keys: str) -> dict | None:
    """The root attributes ``keys`` of an HDF5 file, or None if it is not one."""
    if not os.path.isfile(path) or not _head(path).startswith(b"\x89HDF\r\n\x1a\n"):
        return None
    try:
        import h5py

        with h5py.File(path, "r") as f:
            return {k: f.attrs[k] for k in keys if k in f.attrs}
    except Exception:  # unreadable or damaged: not something --force may replace
        return None


def is_mpinet_trace(path: str) -> bool:
    """True if ``path`` is an HDF5 file whose root attributes name an mpinet trace."""
    a = _h5_attrs(path, "layout_version", "mpinet_version", "kind")
    return (
        a is not None
        and {"layout_version", "mpinet_version"} <= a.keys()
        and (a.get("kind") != "sweep")
    )


def is_sweep_file(path: str) -> bool:
    """True if ``path`` is a file of ``mpinet sweep --out``."""
    a = _h5_attrs(path, "kind", "mpinet_version")
    return a is not None and a.get("kind") == "sweep" and "mpinet_version" in a


_ANYNET_LINE = re.compile(rb"router \d+ node \d+( router \d+ \d+)*")


def is_anynet(path: str) -> bool:
    """A BookSim2 anynet file as ``mpinet export`` writes it (the format has no comments)."""
    lines = _head(path).split(b"\n")[:-1] or [b""]
    return all(_ANYNET_LINE.fullmatch(ln) for ln in lines[:64])


def is_mpinet_graphml(path: str) -> bool:
    head = _head(path)
    return head.lstrip().startswith(b"<?xml") and b"<graphml" in head and b'"spec"' in head


def is_mpinet_edgelist(path: str) -> bool:
    return _head(path).startswith(b"# mpinet ")


def is_mpinet_figure(path: str) -> bool:
    """A PNG or SVG figure mpinet drew (its metadata names mpinet: :data:`FIGURE_TAG`)."""
    head = _head(path)
    return (head.startswith(b"\x89PNG") or b"<svg" in head) and FIGURE_TAG.encode() in head


#: the text mpinet puts in a figure's metadata (PNG ``Software``, SVG ``Creator``)
FIGURE_TAG = "mpinet (figure)"


def figure_metadata(ext: str) -> dict[str, str]:
    """``savefig(metadata=...)`` that makes :func:`is_mpinet_figure` recognise the file."""
    return {"Software": FIGURE_TAG} if ext == "png" else {"Creator": FIGURE_TAG}


def report_kind(script: str) -> Kind:
    """The Markdown (or JSON) file a report script regenerates: one that names the script."""
    token = os.path.basename(script).encode()

    def recognise(path: str) -> bool:
        return token in _head(path)

    name = os.path.basename(script)
    return Kind(f"report:{name}", f"report of {name}", "report.md", recognise,
                plural=f"reports of {name}")  # fmt: skip


def _trace_error() -> type[MpinetError]:
    return TraceError


TRACE = register(
    Kind(
        "trace",
        "trace",
        "run.h5",
        is_mpinet_trace,
        _trace_error(),
        force_hint="--force (force=True)",
    )  # fmt: skip
)
SWEEP = register(Kind("sweep", "sweep file", "sweep.h5", is_sweep_file))
FIGURE = register(Kind("figure", "figure", "figure.png", is_mpinet_figure))


def is_mpinet_export(path: str) -> bool:
    """A network file of ``mpinet export``, in any of its formats (all are export's kind)."""
    return is_mpinet_edgelist(path) or is_mpinet_graphml(path) or is_anynet(path)


EXPORTS = {
    fmt: register(Kind(f"export:{fmt}", noun, example, is_mpinet_export))
    for fmt, noun, example in (
        ("anynet", "anynet file", "net.anynet"),
        ("graphml", "GraphML file", "net.graphml"),
        ("edgelist", "edge list", "net.txt"),
    )
}
