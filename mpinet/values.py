"""One validator for every value mpinet is given, one strict JSON printer, one table printer.

Every number mpinet accepts — a job key (file or ``--set``), a command-line
flag, an environment variable, a ``--faults`` item, a topology parameter
(:func:`check_int`) — is checked by a :class:`Range`:

* integers are Python (or numpy) integers, never ``True``/``False``, never a
  float such as ``8.0`` (except where a topology parameter allows a whole float);
* real numbers are finite: NaN and infinities are refused everywhere (TOML can
  spell them ``nan`` and ``inf``, and ``float("1e400")`` is infinite);
* each has a closed, open or half-open range, and the message names the value,
  the range and what was given, in one of two forms::

      NAME must be in RANGE[ UNIT][ (WHAT)], got VALUE       (a number out of range)
      NAME must be KIND RANGE[ UNIT], got 'TEXT'             (not a number of that kind)

Environment variables (:data:`ENV`) are read only through :func:`env_number`;
:func:`check_environment` validates every one that is set, once, before any
work (``mpinet.cli.get_comm``, agreed by every rank). An empty variable counts
as unset.

:func:`json_text` is the one printer of ``--json`` output: NaN and infinities
become ``null``, numpy scalars and arrays plain Python, and ``allow_nan=False``
makes anything missed fail loudly instead of printing bare ``NaN``.

:func:`label_rows` prints the label/value rows of every command's report and
:func:`channel_text` a channel of a deadlock cycle, one notation for all of them.

Bottom layer: no MPI, no file I/O; imports only :mod:`mpinet.errors`. numpy is not
imported here (``mpinet --help`` builds its parsers with these validators and runs no
numpy): a numpy value can only come from a process that has imported numpy, so the
checks read numpy's types from ``sys.modules`` (:func:`_numpy`).
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mpinet.errors import MpinetError, TopologyError


def _numpy() -> Any:
    """numpy's module if this process has imported it, else None (then no value is numpy's)."""
    return sys.modules.get("numpy")


def _num(v: float) -> str:
    """A bound as the messages show it: ``1,048,576``, ``0.1``, ``9,223,372,036,854,775,807``."""
    if isinstance(v, numbers.Integral):
        return f"{int(v):,}"
    if float(v).is_integer() and abs(v) < 1e18:
        return f"{int(v):,}"
    return f"{v:g}"


@dataclass(frozen=True)
class Range:
    """The valid values of one number: kind, bounds (``None``: unbounded), unit.

    Parameters
    ----------
    lo, hi : bounds, inclusive unless ``open_lo`` / ``open_hi``
    integer : an integer (else a finite real number)
    unit : shown after the range (``seconds``, ``MiB``)
    what : what the number is, shown after a range error (``a probability``)
    """

    lo: float | None = None
    hi: float | None = None
    integer: bool = False
    open_lo: bool = False
    open_hi: bool = False
    unit: str = ""
    what: str = ""

    def text(self) -> str:
        """``in [1, 1,048,576]``, ``in (0, 1]``, ``>= 0``, ``<= 5`` (then the unit)."""
        lo, hi = self.lo, self.hi
        if lo is not None and hi is not None:
            left, right = "(["[not self.open_lo], ")]"[not self.open_hi]
            out = f"in {left}{_num(lo)}, {_num(hi)}{right}"
        elif lo is not None:
            out = f"{'>' if self.open_lo else '>='} {_num(lo)}"
        elif hi is not None:
            out = f"{'<' if self.open_hi else '<='} {_num(hi)}"
        else:
            out = "" if self.integer else "finite"
        return f"{out} {self.unit}".strip()

    def noun(self) -> str:
        """``an integer``, ``a number``, ``a probability``, ``a number of seconds``."""
        if self.what:
            return self.what
        base = "an integer" if self.integer else "a number"
        return f"{base} of {self.unit}" if self.unit else base

    def holds(self, v: float) -> bool:
        """Whether the (finite) number ``v`` is in the range."""
        if self.lo is not None and (v <= self.lo if self.open_lo else v < self.lo):
            return False
        return not (self.hi is not None and (v >= self.hi if self.open_hi else v > self.hi))

    def _type_error(self, name: str, value: Any, error: type[Exception]) -> Exception:
        rng = self.text()
        if self.unit and not self.what:  # the unit is in the noun: "a number of seconds"
            rng = rng[: -len(self.unit) - 1]
        return error(
            f"{_lead(name)}must be {' '.join(filter(None, (self.noun(), rng)))}, got {value!r}"
        )

    def _range_error(self, name: str, shown: str, error: type[Exception]) -> Exception:
        what = f" ({self.what})" if self.what else ""
        return error(f"{_lead(name)}must be {self.text() or self.noun()}{what}, got {shown}")

    def check(
        self,
        name: str,
        value: Any,
        *,
        error: type[Exception] = MpinetError,
        whole: bool = False,
        text: bool = False,
    ) -> Any:
        """``value`` as an int or float in the range, or ``error`` naming ``name``.

        ``whole``: an integer may be given as a whole float (``3.0``);
        ``text``: strings are parsed (:meth:`parse`) instead of refused.
        """
        if text and isinstance(value, str):
            return self.parse(name, value, error=error)
        np = _numpy()
        is_bool = isinstance(value, bool) or (np is not None and isinstance(value, np.bool_))
        if is_bool or not isinstance(value, numbers.Real):
            raise self._type_error(name, value, error)
        if self.integer:
            if isinstance(value, numbers.Integral):
                v: Any = int(value)
            elif whole and math.isfinite(value) and float(value).is_integer():
                v = int(value)
            elif math.isfinite(value):
                raise self._type_error(name, value, error)
            else:
                raise self._range_error(name, str(float(value)), error)
        else:
            v = float(value)
            if not math.isfinite(v):
                raise self._range_error(name, str(v), error)
        if not self.holds(v):
            raise self._range_error(name, str(value), error)
        return v

    def parse(self, name: str, text: str, *, error: type[Exception] = MpinetError) -> Any:
        """A number written as text (a flag, an environment variable, a ``--faults`` item)."""
        s = str(text).strip()
        try:
            v: Any = int(s) if self.integer else float(s)
        except ValueError:
            raise self._type_error(name, text, error) from None
        if not self.integer and not math.isfinite(v):
            raise self._range_error(name, s, error)
        if not self.holds(v):
            raise self._range_error(name, s, error)
        return v


def _lead(name: str) -> str:
    return f"{name} " if name else ""


# -- the common cases ---------------------------------------------------------------------------
def integer(
    name: str,
    value: Any,
    lo: int | None = None,
    hi: int | None = None,
    *,
    error: type[Exception] = MpinetError,
) -> int:
    """``value`` as an int in ``[lo, hi]`` (``None``: unbounded), else ``error``."""
    return Range(lo, hi, integer=True).check(name, value, error=error)


def finite(
    name: str,
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
    *,
    open_lo: bool = False,
    open_hi: bool = False,
    unit: str = "",
    error: type[Exception] = MpinetError,
) -> float:
    """``value`` as a finite float in the range, else ``error`` (NaN and inf never pass)."""
    return Range(lo, hi, open_lo=open_lo, open_hi=open_hi, unit=unit).check(
        name, value, error=error
    )


def probability(
    name: str,
    value: Any,
    *,
    open_lo: bool = False,
    open_hi: bool = False,
    error: type[Exception] = MpinetError,
) -> float:
    """``value`` as a probability in [0, 1] (ends open as asked), else ``error``."""
    return prob_range(open_lo, open_hi).check(name, value, error=error)


def check_int(name: str, value: object, lo: int, hi: int | None = None) -> int:
    """Return ``value`` as an int, or raise naming ``name`` and ``[lo, hi]``.

    The one validator (:class:`Range`) with a topology's manners:
    a :class:`TopologyError`, strings of digits and whole floats accepted.

    Parameters
    ----------
    name : str
        Argument name used in the message, e.g. ``"n in scc:N"``.
    value : object
        Value to check; strings of decimal digits are accepted.
    lo, hi : int
        Inclusive bounds; ``hi=None`` means unbounded.
    """
    return Range(lo, hi, integer=True).check(
        name, value, error=TopologyError, whole=True, text=True
    )


def prob_range(open_lo: bool = False, open_hi: bool = False) -> Range:
    """The :class:`Range` of a probability with the given open ends."""
    return Range(0, 1, open_lo=open_lo, open_hi=open_hi, what="a probability")


# -- sizes --------------------------------------------------------------------------------------
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+))?\s*([kKmMgGtTpP]?)(?:i?[bB])?\s*")


def short_size(n: int) -> str:
    """``1M``, ``1P``, ``1536K``: a byte count in the largest unit that divides it."""
    for unit in "PTGMK":
        scale = _UNITS[unit.lower()]
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}"


def parse_size(name: str, text: str, lo: int = 1, hi: int = 2**63 - 1, *, error=MpinetError) -> int:
    """``"512M"``, ``"2G"``, ``"1.5GiB"``, ``"1000"``, ``"1e9"`` -> bytes in ``[lo, hi]``."""
    m = _SIZE.fullmatch(str(text))
    v = math.nan
    if m:
        mant, exp, unit = m.groups()
        v = float(mant + (f"e{exp}" if exp else "")) * _UNITS[unit.lower()]
    if not (math.isfinite(v) and lo <= v <= hi):
        raise error(
            f"{name} must be a size in bytes from {short_size(lo)} to {short_size(hi)}, such as "
            f"512M, 2G or 1.5GiB, got {text!r}"
        )
    return int(v)


# -- environment variables ----------------------------------------------------------------------
@dataclass(frozen=True)
class EnvVar:
    """One environment variable mpinet reads: its range and what it sets."""

    range: Range
    meaning: str
    size: bool = False  # a size with a unit (``512M``), in bytes


#: the watchdog's timeout (``--timeout``, ``$MPINET_TIMEOUT``): 0.1 s to one week
TIMEOUT = Range(0.1, 7 * 24 * 3600, unit="seconds")

#: every environment variable mpinet reads, with its valid range
ENV: dict[str, EnvVar] = {
    "MPINET_TIMEOUT": EnvVar(
        TIMEOUT,
        "watchdog: seconds a rank may wait in one collective (default 900; 0.1 s to one week)",
    ),
    "MPINET_MEMORY_LIMIT": EnvVar(
        Range(1 << 20, 1 << 50, integer=True, unit="bytes"),
        "the memory mpinet may plan with, when below MemAvailable",
        size=True,
    ),
    "MPINET_TRACE_CONSOLIDATE_MIB": EnvVar(
        Range(0, 1 << 20, unit="MiB"),
        "a split trace's data below this is gathered into one file (default 64; up to 1 TiB)",
    ),
    "MPINET_PROGRESS_DELAY": EnvVar(
        Range(0, 24 * 3600, unit="seconds"),
        "seconds before the first progress line (default 2; up to a day)",
    ),
    "MPINET_TEST_FAIL_RANK": EnvVar(
        Range(0, 2**31 - 1, integer=True), "tests: the rank whose collective phase fails"
    ),
    "MPINET_TEST_OOM_RANK": EnvVar(
        Range(0, 2**31 - 1, integer=True),
        "tests: the rank whose collective phase runs out of memory (MemoryError)",
    ),
    "MPINET_TEST_EXPORT_DELAY": EnvVar(
        Range(0, 3600, unit="seconds"),
        "tests: seconds mpinet export sleeps after writing, before it publishes the file",
    ),
    "MPINET_TEST_WRITE_DELAY": EnvVar(
        Range(0, 3600, unit="seconds"), "tests: seconds the trace writer sleeps before writing"
    ),
}


def env_number(var: str, default: Any = None, environ: Mapping[str, str] | None = None) -> Any:
    """The value of ``$var`` checked against :data:`ENV`, or ``default`` when unset or empty.

    Raises
    ------
    MpinetError
        ``MPINET_TIMEOUT must be in [0.1, 604,800] seconds, got 1e-9``.
    """
    spec = ENV[var]
    text = (os.environ if environ is None else environ).get(var, "")
    if not text.strip():
        return default
    if spec.size:
        return parse_size(var, text, int(spec.range.lo), int(spec.range.hi))
    return spec.range.parse(var, text)


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Validate every variable of :data:`ENV` that is set (the first refusal is raised)."""
    for var in ENV:
        env_number(var, None, environ)


# -- argparse -----------------------------------------------------------------------------------
def arg(rng: Range, name: str = "") -> Callable[[str], Any]:
    """An argparse ``type=``: the text parsed and checked against ``rng``.

    argparse prefixes the message with ``argument --FLAG:``; ``name`` adds the
    job key the flag sets (``workload.rate``), so the line names both.
    """

    def parse(text: str) -> Any:
        try:
            return rng.parse(name, text)
        except MpinetError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = "integer" if rng.integer else "number"
    return parse


# -- strict JSON --------------------------------------------------------------------------------
def json_safe(x: Any) -> Any:
    """A JSON-safe copy: NaN and infinities -> None, numpy scalars and arrays -> Python."""
    np = _numpy()
    if np is not None and isinstance(x, np.ndarray):
        x = x.tolist()
    elif np is not None and isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def label_rows(rows: list[tuple[str, Any]], indent: str = "") -> list[str]:
    """``label  value`` lines, the values aligned two spaces after the longest label."""
    width = max((len(k) for k, _ in rows), default=0)
    return [f"{indent}{k:<{width}}  {v}" for k, v in rows]


def channel_text(c: Mapping[str, Any]) -> str:
    """One channel of a deadlock cycle: ``node --port--> next``, then its VC or class.

    ``c`` holds ``node``, ``port`` and ``next`` (labels) and ``vc`` (the flit engine's
    and the VC analysis' channels) or ``class`` (a buffer class; ``None``: no classes).
    """
    out = f"{c['node']} --{c['port']}--> {c['next']}"
    if c.get("vc") is not None:
        return f"{out} (VC {c['vc']})"
    return out if c.get("class") is None else f"{out} (class {c['class']})"


def json_text(obj: Any, **kw: Any) -> str:
    """``obj`` as strict JSON (RFC 8259: no NaN, no Infinity); a value missed fails loudly."""
    return json.dumps(json_safe(obj), allow_nan=False, **kw)
