"""What a trace's counts count: packets (the packet engine) or flits (the flit engine).

Layout 1.2 traces of ``mpinet run`` say it in root attributes: ``load_unit`` (``"packets"``
or ``"flits"``: the unit of ``/links/load``, ``/steps/transmissions`` and
``/steps/cross_rank``) and, for flit runs, ``switching``, ``flits``, ``vcs``, ``vc_buffer``,
``vc_policy``. Older traces (layout 1.0/1.1) lack them: :func:`switching_of` derives them
from the stored job's ``[model]`` keys by the rule of ``mpinet.engine.models.switching_model``
(any switching key set runs the flit engine), restated here so that a trace keeps reading
whatever later mpinet versions refuse at planning time.
"""

from __future__ import annotations

from typing import Any

from mpinet.errors import CorruptTraceError

MODES = ("store-and-forward", "cut-through", "wormhole")
UNITS = ("packets", "flits")
#: the switching attributes of a layout 1.2 flit trace
KEYS = ("switching", "flits", "vcs", "vc_buffer", "vc_policy")


def _int(path: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 16:
        raise CorruptTraceError(
            f"trace {path}: attribute {key} = {value!r} is not a count in [1, 65,536]; "
            "the trace is damaged"
        )
    return value


def from_job(job: dict | None) -> dict[str, Any] | None:
    """The switching of the job's ``[model]`` (None: the packet engine ran)."""
    m = (job or {}).get("model") if isinstance(job, dict) else None
    if not isinstance(m, dict):
        return None
    sw, nf, nv = m.get("switching"), m.get("flits"), m.get("vcs")
    nb, pol = m.get("vc_buffer"), m.get("vc_policy")
    mode = "store-and-forward" if sw is None else str(sw)
    flits = 1 if nf is None else nf
    vcs = 1 if nv is None else nv
    flit = mode != "store-and-forward" or flits != 1 or vcs != 1
    if not (flit or nb is not None or pol is not None):
        return None
    buf = (4 if mode == "wormhole" else flits) if nb is None else nb
    return {"mode": mode, "flits": flits, "vcs": vcs, "vc_buffer": buf,
            "vc_policy": "any" if pol is None else str(pol)}  # fmt: skip


def _stated(job: Any) -> dict[str, Any]:
    """The switching keys the job's ``[model]`` sets explicitly (not null)."""
    m = job.get("model") if isinstance(job, dict) else None
    if not isinstance(m, dict):
        return {}
    names = {"switching": "mode", "flits": "flits", "vcs": "vcs", "vc_buffer": "vc_buffer",
             "vc_policy": "vc_policy"}  # fmt: skip
    return {names[k]: m[k] for k in names if m.get(k) is not None}


def switching_of(tr: Any, attrs: dict) -> dict[str, Any] | None:
    """``{mode, flits, vcs, vc_buffer, vc_policy, load_unit, source}`` of a flit trace, or
    None for a packet trace; ``source`` says where it was read (``"attributes"`` or, for
    traces before layout 1.2, ``"job"``).

    Raises
    ------
    CorruptTraceError
        A ``load_unit`` or switching attribute no run writes, or attributes that contradict
        the stored job (one of them is damaged).
    """
    unit = attrs.get("load_unit")
    try:
        job = tr.job
    except CorruptTraceError:
        job = None  # an unreadable job is reported by what needs it; here the attributes rule
    derived = from_job(job)
    if unit is None:  # before layout 1.2: the job says which engine ran
        if derived is None:
            return None
        if derived["mode"] not in MODES:
            raise CorruptTraceError(
                f"trace {tr.path}: its job's model.switching = {derived['mode']!r} is not one "
                f"of {', '.join(MODES)}; the trace is damaged"
            )
        flits = _int(tr.path, "job model.flits", derived["flits"])
        _int(tr.path, "job model.vcs", derived["vcs"])
        caps = _job_capacities(job, attrs)
        return {**derived, "flits": flits, "capacities": caps, "load_unit": "flits",
                "source": "job"}  # fmt: skip
    if unit not in UNITS:
        raise CorruptTraceError(
            f"trace {tr.path}: attribute load_unit = {unit!r} is neither 'packets' nor 'flits'; "
            "the trace is damaged"
        )
    if unit == "packets":
        if derived is not None:
            raise CorruptTraceError(
                f"trace {tr.path}: attribute load_unit = 'packets', but its job ran "
                f"{derived['mode']} of {derived['flits']}-flit packets on the flit engine; "
                "the trace is damaged"
            )
        return None
    if derived is None and isinstance((job or {}).get("model"), dict):
        raise CorruptTraceError(
            f"trace {tr.path}: attribute load_unit = 'flits', but its job sets no switching "
            "key (the packet engine ran); the trace is damaged"
        )
    if missing := [k for k in KEYS if k not in attrs]:
        raise CorruptTraceError(
            f"trace {tr.path}: a flit trace (load_unit = 'flits') lacks attribute "
            f"{missing[0]}; the trace is damaged"
        )
    mode = attrs["switching"]
    if mode not in MODES:
        raise CorruptTraceError(
            f"trace {tr.path}: attribute switching = {mode!r} is not one of {', '.join(MODES)}; "
            "the trace is damaged"
        )
    out = {"mode": mode, "flits": _int(tr.path, "flits", attrs["flits"]),
           "vcs": _int(tr.path, "vcs", attrs["vcs"]),
           "vc_buffer": _int(tr.path, "vc_buffer", attrs["vc_buffer"]),
           "vc_policy": str(attrs["vc_policy"])}  # fmt: skip
    # only the keys the job sets: a default may change between versions, a stated key not
    given = _stated(job)
    if bad := [k for k in given if given[k] != out[k]]:
        key = bad[0]
        raise CorruptTraceError(
            f"trace {tr.path}: attribute {'switching' if key == 'mode' else key} = "
            f"{out[key]!r}, but its job says {given[key]!r}; the trace is damaged"
        )
    caps = attrs.get("capacities")
    if caps is None:
        caps = _job_capacities(job, attrs)
    elif (
        not isinstance(caps, list)
        or not caps
        or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in caps)
    ):
        raise CorruptTraceError(
            f"trace {tr.path}: attribute capacities = {caps!r:.60} is not a list of flits per "
            "step >= 1; the trace is damaged"
        )
    return {**out, "capacities": caps, "load_unit": "flits", "source": "attributes"}


def _job_capacities(job: Any, attrs: dict) -> list[int] | None:
    """Flits per step of each port: the job's ``model.capacity`` by port class (default 1),
    or None when the job or the port classes are not stored."""
    m = job.get("model") if isinstance(job, dict) else None
    classes = attrs.get("port_classes")
    if not isinstance(m, dict) or not isinstance(classes, list) or not classes:
        return None
    cap = m.get("capacity") or {}
    if not isinstance(cap, dict):
        return None
    out = [cap.get(c, 1) for c in classes]
    ok = all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in out)
    return out if ok else None


def describe(sw: dict | None) -> str:
    """One phrase: ``wormhole: 16 flits per packet, 2 VCs of 4 flits, vc_policy any``."""
    if sw is None:
        return "store-and-forward of whole packets (packet engine)"
    return (
        f"{sw['mode']}: {sw['flits']} flit(s) per packet, {sw['vcs']} VC(s) of "
        f"{sw['vc_buffer']} flits per link, vc_policy {sw['vc_policy']}"
    )


def short(sw: dict | None) -> str:
    """For a figure's title: ``wormhole L=16 V=2 B=4 any`` (empty for packet traces)."""
    if sw is None:
        return ""
    return f"{sw['mode']} L={sw['flits']} V={sw['vcs']} B={sw['vc_buffer']} {sw['vc_policy']}"
