"""What each command writes, and how an existing file of that kind is recognised.

``--force`` replaces a file only when it is of the writing command's own kind: a trace
replaces a trace, a sweep file a sweep file, an export an export of the same format, a
figure a figure mpinet drew, a report the report its script generated. Anything else (the
job file, a notes file, another tool's output) is refused with or without ``--force``.
Recognising reads at most a few KiB of the file. The HDF5 kinds (``trace``, ``sweep``),
recognised by their root attributes, are registered by :mod:`mpinet.outputs.hdf5`, which
imports h5py: the commands that write or read HDF5 load it, ``mpinet --help`` does not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from mpinet.errors import MpinetError, OutputError

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


def file_head(path: str) -> bytes:
    """The first :data:`HEAD_BYTES` of ``path`` (empty if it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return b""


_ANYNET_LINE = re.compile(rb"router \d+ node \d+( router \d+ \d+)*")


def is_anynet(path: str) -> bool:
    """A BookSim2 anynet file as ``mpinet export`` writes it (the format has no comments)."""
    lines = file_head(path).split(b"\n")[:-1] or [b""]
    return all(_ANYNET_LINE.fullmatch(ln) for ln in lines[:64])


def is_mpinet_graphml(path: str) -> bool:
    head = file_head(path)
    return head.lstrip().startswith(b"<?xml") and b"<graphml" in head and b'"spec"' in head


def is_mpinet_edgelist(path: str) -> bool:
    return file_head(path).startswith(b"# mpinet ")


def is_mpinet_figure(path: str) -> bool:
    """A PNG or SVG figure mpinet drew (its metadata names mpinet: :data:`FIGURE_TAG`)."""
    head = file_head(path)
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
        return token in file_head(path)

    name = os.path.basename(script)
    return Kind(f"report:{name}", f"report of {name}", "report.md", recognise,
                plural=f"reports of {name}")  # fmt: skip


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
