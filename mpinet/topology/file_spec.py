"""The ``file:[FORMAT:]PATH`` spec of a network read from a file, as text only.

The formats and the split are here, below the reader (:mod:`mpinet.netfile`), so that
the job schema can anchor a job file's relative path without loading the readers.
"""

from __future__ import annotations

#: the formats a network file may be read as (``file:FORMAT:PATH``)
FORMATS = ("edgelist", "graphml", "anynet")


def split_file_spec(rest: str) -> tuple[str, str]:
    """``"graphml:net.xml"`` -> ``("graphml:", "net.xml")``; ``"net.xml"`` -> ``("", ...)``.

    ``rest`` is the spec after ``file:``; the format prefix is kept as written (with its
    colon) so the spec can be put together again.
    """
    head, sep, tail = rest.partition(":")
    if sep and head.lower() in FORMATS:
        return head + sep, tail
    return "", rest
