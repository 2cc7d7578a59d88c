"""BookSim2 configuration files: ``key = value;`` read as BookSim's own parser reads them.

The syntax (BookSim2's ``config.l`` and ``config.y``, described here, not copied): a file
is one or more commands ``NAME = VALUE ;``; ``//`` starts a comment to the end of the
line; blanks, tabs and carriage returns separate tokens; a value is an integer
(``-?[0-9]+``), a real (``1.5``, ``.5``, ``1e-3``), a list ``{a,b,{c,d}}`` (written with
no blanks) or a bare string (``mesh``, ``dim_order``, ``../x.anynet``; letters, digits and
``_-/.+(){},`` after a first letter, ``_``, ``-``, ``/`` or ``.``). A command line
override ``key=value`` is parsed as the text ``key=value;``. The longest token wins and,
between equally long ones, the earlier rule, as flex does: ``1.0`` is a real, ``1e3`` a
real, ``-`` alone a string.

Values are typed by their token: an integer goes to the key's integer slot, a real to
its real slot, anything else to its string slot (BookSim keeps three maps; a key such as
``injection_rate`` has a real slot and a string slot for lists). Differences, on purpose:
an integer given to a key that has only a real slot is read as that real (BookSim says
"Unknown integer field"), and the error lines name the file and line, or the override.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from mpinet.errors import JobError
from mpinet.jobs.inputs import read_input

#: the most a configuration file may hold (BookSim's runfiles are 1-5 KiB)
CONFIG_BYTES = 1 << 20

_DIGIT_REAL = r"-?(?:[0-9]*\.)?[0-9]+(?:[eE][+-]?[0-9]+)?"
_RULES = (  # in flex's order: the longest match wins, ties to the earlier rule
    ("list", re.compile(r"\{[A-Za-z0-9_\-.(){},]+(?:,[A-Za-z0-9_\-.(){},]+)*\}")),
    ("int", re.compile(r"-?[0-9]+")),
    ("real", re.compile(r"-?[0-9]*\.[0-9]+")),
    ("real", re.compile(_DIGIT_REAL)),
    ("str", re.compile(r"[A-Za-z_\-/.][A-Za-z0-9_\-/.+({,)}]*")),
)
_SKIP = re.compile(r"//[^\n]*|[ \t\r]+")


class ConfigError(JobError):
    """A BookSim configuration that cannot be read or run (exit code 2)."""


@dataclass
class Token:
    kind: str  # list | int | real | str | a one-character punctuation ("=", ";", ...)
    text: str
    line: int


@dataclass
class Assignment:
    """One ``key = value;``: where it came from and the typed value."""

    key: str
    kind: str  # int | real | str (a list is a str, as BookSim keeps it)
    value: Any
    where: str  # "FILE:LINE" or "override 'k=v'"


@dataclass
class Config:
    """The assignments of a file and its overrides, in order (the last one of a key wins)."""

    path: str
    text: str
    assignments: list[Assignment] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)

    def given(self) -> dict[str, Assignment]:
        """Each key's last assignment (file first, then the overrides in order)."""
        return {a.key: a for a in self.assignments}


def clip_text(text: str, limit: int = 60) -> str:
    """A token or a line as a message shows it: printable, at most ``limit`` characters."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tokens(text: str, where: str) -> list[Token]:
    """The tokens of ``text``; ``where`` names the file for the errors."""
    out, pos, line, n = [], 0, 1, len(text)
    while pos < n:
        if text[pos] == "\n":
            line, pos = line + 1, pos + 1
            continue
        m = _SKIP.match(text, pos)
        if m:
            pos = m.end()
            continue
        best, kind = 0, ""
        for k, rx in _RULES:
            m = rx.match(text, pos)
            if m and m.end() - pos > best:
                best, kind = m.end() - pos, k
        if best == 0:  # any other character is a token of its own (the grammar refuses it)
            out.append(Token(text[pos], text[pos], line))
            pos += 1
            continue
        out.append(Token(kind, text[pos : pos + best], line))
        pos += best
    return out


def parse(text: str, where: str, *, override: bool = False) -> list[Assignment]:
    """The assignments of one text (a file's, or an override's with ``;`` appended).

    Raises
    ------
    ConfigError
        ``FILE:LINE: syntax error at 'x': expected ...``, naming the token met.
    """
    toks = tokens(text, where)

    def place(t: Token | None) -> str:
        if override:
            return where
        return f"{where}:{t.line if t is not None else text.count(chr(10)) + 1}"

    def fail(t: Token | None, expected: str) -> ConfigError:
        met = "the end of the file" if t is None else repr(clip_text(t.text, 40))
        if override and t is None:
            met = "the end of the override"
        return ConfigError(f"{place(t)}: syntax error at {met}: expected {expected}")

    if not toks:
        raise ConfigError(
            f"{where}: {'is empty' if override else 'has no assignment'}: "
            "BookSim configurations are 'key = value;' lines"
        )
    out, i = [], 0
    while i < len(toks):
        name = toks[i]
        if name.kind != "str":
            raise fail(name, "a key name")
        eq = toks[i + 1] if i + 1 < len(toks) else None
        if eq is None or eq.kind != "=":
            raise fail(eq, f"'=' after {clip_text(name.text, 40)!r}")
        val = toks[i + 2] if i + 2 < len(toks) else None
        if val is None or val.kind not in ("list", "int", "real", "str"):
            raise fail(val, f"a value for {clip_text(name.text, 40)!r}")
        semi = toks[i + 3] if i + 3 < len(toks) else None
        if semi is None or semi.kind != ";":
            raise fail(semi, f"';' after the value of {clip_text(name.text, 40)!r}")
        out.append(_assignment(name.text, val, place(name)))
        i += 4
    return out


def _assignment(key: str, tok: Token, where: str) -> Assignment:
    if tok.kind == "int":
        try:
            v = int(tok.text)
        except ValueError:  # pragma: no cover - the regex admits digits only
            v = 0
        if not -(2**31) <= v < 2**31:  # BookSim's atoi: an int
            raise ConfigError(
                f"{where}: {key} = {clip_text(tok.text)} is out of range for an integer"
            )
        return Assignment(key, "int", v, where)
    if tok.kind == "real":
        return Assignment(key, "real", float(tok.text), where)
    return Assignment(key, "str", tok.text, where)


def split_list(text: str) -> list[str]:
    """BookSim's list reading: ``{a,b,{c,d}}`` -> ``['a', 'b', '{c,d}']``; ``a`` -> ``['a']``."""
    if not text.startswith("{"):
        return [text] if text else []
    out, depth, start = [], 0, 1
    for i, c in enumerate(text[1:], 1):
        if c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif c in ",}" and not depth:
            if i > start:
                out.append(text[start:i])
            start = i + 1
    return out


def read_config(path: str, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read ``path`` (at most :data:`CONFIG_BYTES`) and apply the ``key=value`` overrides.

    Raises
    ------
    ConfigError
        The file is missing, unreadable, binary, not UTF-8 or not BookSim syntax; an
        override has no ``=`` or is not ``key=value``.
    """
    if os.path.isdir(path):  # read_input's own words are a job file's
        raise ConfigError(f"BookSim configuration {path} is a directory, not a file")
    data = read_input(path, "BookSim configuration", CONFIG_BYTES,
                      hint="a BookSim configuration is a small text file")  # fmt: skip
    if b"\0" in data:
        raise ConfigError(f"BookSim configuration {path} is binary, not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"BookSim configuration {path} is not UTF-8 text (byte 0x{data[exc.start]:02x} "
            f"at offset {exc.start})"
        ) from None
    cfg = Config(path=str(path), text=text)
    cfg.assignments = parse(text.removeprefix("\ufeff"), str(path))
    for o in overrides:
        shown = clip_text(o)
        if "=" not in o:
            raise ConfigError(f"override {shown!r} is not key=value (BookSim's form, e.g. k=4)")
        cfg.assignments += parse(o + ";", f"override {shown!r}", override=True)
        cfg.overrides.append(o)
    return cfg
