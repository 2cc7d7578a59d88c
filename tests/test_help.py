"""Help texts and the README say only what is true: files that exist, options that exist,
every topology family (the README's examples and their output: tests/test_docs.py)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from fresh_python import run_fresh

from mpinet.cli import COMMANDS, build_parser, main
from mpinet.topology import spec_forms

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
JOB_PATH = re.compile(r"jobs/[\w.+-]+(?:/[\w.+-]+)*(?:\.toml|\.sbatch|/)")


def _commands() -> dict[str, argparse.ArgumentParser]:
    top = build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _helps() -> dict[str, str]:
    out = {"mpinet": build_parser().format_help()}
    out.update({name: p.format_help() for name, p in _commands().items()})
    return out


def _options(p: argparse.ArgumentParser) -> set[str]:
    return {o for a in p._actions for o in a.option_strings}


@pytest.mark.parametrize("where", ["help", "README.md"])
def test_every_jobs_path_mentioned_exists(where):
    texts = _helps() if where == "help" else {"README.md": README}
    found = {(name, m) for name, t in texts.items() for m in JOB_PATH.findall(t.replace("\n", " "))}
    assert found or where == "help"
    missing = sorted(f"{name}: {path}" for name, path in found if not (ROOT / path).exists())
    assert not missing, missing


def test_every_option_a_help_text_names_exists():
    """`--x` in a command's help is that command's option, or one of a command named beside it."""
    cmds = _commands()
    for name, p in cmds.items():
        own = _options(p)
        for line in p.format_help().splitlines():
            others = set().union(
                *(_options(cmds[c]) for c in re.findall(r"mpinet (\w+)", line) if c in cmds)
            )
            for opt in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
                assert opt in own | others, f"mpinet {name} --help names {opt}: {line.strip()}"


def test_routes_help_points_at_no_missing_option():
    text = _commands()["routes"].format_help()
    assert "--list" not in text and "scc-greedy" in text


def test_top_level_help_names_every_family():
    text = " ".join(build_parser().format_help().split())
    for form in spec_forms():  # ims:M,L,N and cms:C,L,N included
        assert form in text, form


def test_run_help_example_job_runs(capsys):
    """The job file of `run --help`'s second example is real and runs as shown."""
    text = _commands()["run"].format_help()
    job = next(m for m in JOB_PATH.findall(text) if "hotspot" in m)
    assert (
        main(["run", str(ROOT / job), "--trace-level", "none", "--set", "workload.packets=1"]) == 0
    )
    assert "checks" in capsys.readouterr().out


def _block(after: str, lang: str) -> str:
    """The first fenced block of ``lang`` after the text ``after`` in the README."""
    start = README.index(after)
    m = re.compile(rf"```{lang}\n(.*?)```", re.S).search(README, start)
    assert m, after
    return m.group(1)


def test_quickstart_command_runs_twice(tmp_path, monkeypatch, capsys):
    """The README's first command can be run again: the trace of the first run is replaced."""
    cmd = _block("## Quickstart", "bash").strip()
    args = cmd.split(".venv/bin/mpinet ", 1)[1].split()
    assert args[0] == "run" and "--force" in args and "--out" in args
    args[1] = str(ROOT / args[1])  # the job, from the checkout
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        assert main([*args, "--quiet"]) == 0
    assert (tmp_path / args[args.index("--out") + 1]).exists()
    assert "--force" in README[README.index(cmd) : README.index("**Install and run the whole")]


#: every --help on one screen: lines and columns (issue 34), at a terminal of COLUMNS
HELP_LINES, HELP_COLUMNS = 50, 88


@pytest.mark.parametrize("columns", [80, HELP_COLUMNS + 2])
def test_every_help_fits_a_screen(monkeypatch, columns):
    """`mpinet --help` and every command's fit in 50 lines of at most 88 columns (argparse
    lays the options out for the terminal: COLUMNS - 2); the long texts are in the manual."""
    monkeypatch.setenv("COLUMNS", str(columns))
    over = {}
    for name, text in _helps().items():
        lines = text.rstrip("\n").splitlines()
        width = max(len(line) for line in lines)
        if len(lines) > HELP_LINES or width > HELP_COLUMNS:
            over[name] = (len(lines), width)
    assert not over, f"(lines, columns) over {HELP_LINES} x {HELP_COLUMNS}: {over}"


def test_every_help_points_at_pages_that_exist():
    """A help text that sends the reader to docs/X.md names a page of the manual."""
    for name, text in _helps().items():
        for page in re.findall(r"docs/[\w/-]+\.md", text):
            assert (ROOT / page).exists(), f"mpinet {name} --help names {page}"


def test_version_names_the_package_and_what_runs_it(capsys):
    import numba

    from mpinet import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first == f"mpinet {__version__}"
    assert f"numba {numba.__version__}" in second and "mpi4py" in second


def test_the_switching_options_are_defined_once():
    """run, sweep and deadlock offer the same --switching and --vc-policy, whose words come
    from the lists the program checks against (model_names, the policies' registry)."""
    from mpinet.model_names import SWITCHING, VC_POLICY_NAMES
    from mpinet.routing.vc_policies import VC_POLICIES

    assert tuple(VC_POLICIES) == VC_POLICY_NAMES  # the names --help lists without numba
    cmds = _commands()
    for name in ("run", "sweep", "deadlock"):
        acts = {o: a for a in cmds[name]._actions for o in a.option_strings}
        assert {"--switching", "--vcs", "--vc-policy"} <= set(acts), name
        assert "|".join(VC_POLICIES) in acts["--vc-policy"].help, name
        if name != "deadlock":
            assert {"--flits", "--vc-buffer"} <= set(acts)
            assert acts["--switching"].help == " | ".join(SWITCHING)
    assert cmds["deadlock"]._option_string_actions["--switching"].choices == SWITCHING


def test_help_imports_no_numpy_no_numba_and_starts_no_mpi():
    """``mpinet --help`` and every command's ``--help``, in a fresh process: numpy and numba
    (0.1 and 0.2 s of CPU) and mpi4py are never imported (docs/performance.md, session 13)."""
    code = (
        "import sys\n"
        "from mpinet.cli import COMMANDS, main\n"
        "for argv in [['--help'], *[[c, '--help'] for c in COMMANDS]]:\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "    heavy = sorted(m for m in ('numpy', 'numba', 'mpi4py') if m in sys.modules)\n"
        "    print(' '.join(argv), heavy, file=sys.stderr)\n"
    )
    r = run_fresh(code)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 + len(COMMANDS)
    assert all(line.endswith(" []") for line in lines), lines


def _refusal(argv, capsys):
    assert main(argv) == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "flag, key, value",
    [
        ("--switching", "model.switching", "teleport"),
        ("--vc-policy", "model.vc_policy", "fastest"),
        ("--router-model", "model.router", "oq"),
    ],
)
def test_a_switching_flag_is_refused_as_its_key(capsys, flag, key, value):
    base = ["run", "--topology", "star:4", "--router", "shortest", "--quiet", "--flits", "2"]
    by_flag = _refusal([*base, flag, value], capsys)
    by_set = _refusal([*base, "--set", f"{key}={value}"], capsys)
    assert by_flag == by_set and value in by_flag


def test_switching_flags_run_what_the_keys_run(capsys):
    """--switching/--flits/--vcs/--vc-buffer/--vc-policy give the run their keys give."""
    import json

    base = ["run", "--topology", "star:4", "--router", "shortest", "--packets", "2", "--json"]
    flags = ["--switching", "wormhole", "--flits", "4", "--vcs", "3", "--vc-buffer", "2",
             "--vc-policy", "hops"]  # fmt: skip
    keys = [
        f"--set=model.{k}={v}"
        for k, v in zip(
            ("switching", "flits", "vcs", "vc_buffer", "vc_policy"), flags[1::2], strict=True
        )
    ]
    runs = []
    for extra in (flags, keys):
        assert main([*base, *extra]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    want = {"mode": "wormhole", "flits": 4, "vcs": 3, "vc_buffer": 2, "vc_policy": "hops"}
    assert {k: runs[0]["switching"][k] for k in want} == want
    assert runs[0]["switching"] == runs[1]["switching"]
    assert runs[0]["stats"]["latency"] == runs[1]["stats"]["latency"]
    assert runs[0]["stats"]["transmissions"] == runs[1]["stats"]["transmissions"]


def test_router_model_flag_runs_what_the_key_runs(capsys):
    """--router-model iq runs BookSim's input-queued router, as model.router = "iq" does."""
    import json

    base = ["run", "--topology", "mesh:3,2", "--router", "dor", "--switching", "wormhole",
            "--flits", "4", "--vcs", "2", "--packets", "2", "--json"]  # fmt: skip
    runs = []
    for extra in (["--router-model", "iq"], ["--set", "model.router=iq"], []):
        assert main([*base, *extra]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0]["stats"]["latency"] == runs[1]["stats"]["latency"]
    # the iq pipeline makes every packet slower than the ideal router's
    assert runs[0]["stats"]["latency"]["mean"] > runs[2]["stats"]["latency"]["mean"]


def test_run_help_switching_example_runs(capsys):
    """The flit example of `run --help` (continuation lines joined) runs and passes."""
    text = _commands()["run"].format_help().replace("\\\n", " ")
    line = next(s for s in text.splitlines() if "--switching" in s and "mpinet run" in s)
    args = line.split("mpinet run", 1)[1].split()
    assert "--flits" in args and main(["run", *args, "--quiet", "--json"]) == 0
    assert '"mode": "wormhole"' in capsys.readouterr().out
