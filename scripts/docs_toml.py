"""TOML blocks of the documentation, validated as job files are (part of ``scripts/docs.py``).

A ``toml`` block is a job or a part of one (a ``[model]`` section alone): the keys, types
and ranges of :mod:`mpinet.jobs.spec` (``validate`` for a whole job, ``check_section`` and
``check_value`` for its parts) and the choices of the string keys
(``scripts/gen_reference.py``'s :func:`choices`, read from the registries). Marker options:
``keys=all`` (the block names every key of the schema), ``defaults`` (a key with a default
shows it, but those of ``examples=KEY,...``).
"""

from __future__ import annotations

import tomllib

import gen_reference
from docs_blocks import Block

from mpinet.jobs import spec


def check_toml(b: Block) -> list[str]:
    """What is wrong with a TOML block: syntax, unknown keys, types, ranges, choices; with
    ``keys=all`` a schema key it leaves out, with ``defaults`` a default it misstates."""
    try:
        raw = tomllib.loads("\n".join(b.body))
    except tomllib.TOMLDecodeError as exc:
        return [f"{b.id}: not valid TOML: {exc}"]
    given = {f"{s}.{k}" if isinstance(v, dict) else s: v2
             for s, v in raw.items() for k, v2 in (v.items() if isinstance(v, dict) else [(s, v)])
             if s in spec.SCHEMA}  # fmt: skip
    try:
        if "topology" in raw:
            spec.validate(raw, source=b.id)
        for key, value in raw.items():
            if key not in spec.SCHEMA:
                raise spec.JobError(f"{b.id}: unknown key {key!r}; valid: {', '.join(spec.SCHEMA)}")
            if isinstance(spec.SCHEMA[key], dict):
                spec.check_section(b.id, key, value)
            else:
                spec.check_value(b.id, key, value)
    except spec.JobError as exc:
        return [str(exc)]
    table = gen_reference.choices()
    errors = [f"{b.id}: {k} = {v!r} is not one of {', '.join(table[k])}"
              for k, v in given.items() if not gen_reference.accepts(k, v, table)]  # fmt: skip
    every = {(f"{s}.{k}" if isinstance(v, dict) else s): d
             for s, v in spec.SCHEMA.items()
             for k, d in (v.items() if isinstance(v, dict) else [(s, v)])}  # fmt: skip
    if b.opts.get("keys") == "all":
        errors += [
            f"{b.id}: the block lacks the key {k} (keys=all)" for k in every if k not in given
        ]
    if b.opts.get("defaults"):
        examples = str(b.opts.get("examples", "")).split(",")
        for k, v in given.items():
            default = every[k][1]
            if isinstance(default, (str, int, float)) and k not in examples and v != default:
                errors.append(f"{b.id}: {k} = {v!r} but its default is {default!r} (defaults)")
    return errors
