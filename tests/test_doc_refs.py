"""Quoted references to a section of a page name a section that exists.

Docstrings, comments, help texts and pages point at a section by its title:
``docs/performance.md, "The flit engine"``, ``README, "Quickstart"``,
``docs/switching.md ("Virtual-channel policies")``, or in a page
``[the reliability notes](reliability.md) ("Faults")``. When a section moves or is renamed
such a pointer goes stale silently; here every one of them in ``mpinet/``, ``scripts/``,
``tests/``, ``docs/`` and README.md is resolved to its page, and that page must have a
heading whose title is the quoted text (or starts with it, followed by `` (`` or ``:``,
as in ``## The packet engine (`mpinet bench`)``).

A link with an anchor in the code (``docs/commands.md#mpinet-routes`` in a help text) must
name a heading of that page too; the manual's own links are checked by its strict build.

A quoted text with no page before it (``("The estimate")``) is not checked: the same form
quotes output labels, environment variables and BookSim's messages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pymdownx.slugs import slugify

ROOT = Path(__file__).resolve().parents[1]
#: where pointers are looked for (docs/history/ is a dated log: its pointers are of their day)
SOURCES = ("mpinet", "scripts", "tests", "docs", "README.md")
SKIP = ("docs/history/", "tests/test_doc_refs.py")  # this file's examples are not pointers

#: a page: ``README``, ``README.md``, a path ending in ``.md``, or a Markdown link to one
_PAGE = (
    r"(?:\[[^\]\n]*\]\((?P<link>[\w./-]+\.md)(?:#[\w-]*)?\)"
    r"|(?P<path>\bREADME(?:\.md)?\b|(?<![\w/.-])(?:\.\./)?(?:[\w-]+/)*[\w-]+\.md\b))"
)
#: then ``, "X"``, ``: "X"``, `` "X"`` or ``("X")``, and more titles after commas (not
#: ``README's "X"``: that form quotes a sentence of the page, not a section)
_TITLES = r'(?P<titles>"[^"\n]{2,80}"(?:(?:,\s*|\s+and\s+|,\s+and\s+)"[^"\n]{2,80}")*)'
REF = re.compile(_PAGE + r"[,:]?\s(?:\s*\()?" + _TITLES)
TITLE = re.compile(r'"([^"\n]{2,80})"')
#: a line break inside a comment, a docstring or a string literal continued on the next line:
#: joined, so a title may span two lines
_BREAK = re.compile(r"""(?:(["'])\s*\n\s*\1|\s*\n\s*(?:#:?\s*)?)""")


def _files() -> list[Path]:
    out = []
    for name in SOURCES:
        p = ROOT / name
        files = [p] if p.is_file() else sorted([*p.rglob("*.py"), *p.rglob("*.md")])
        out += [f for f in files if not any(s in f.relative_to(ROOT).as_posix() for s in SKIP)]
    return out


def _page(src: Path, m: re.Match) -> Path:
    """The page a pointer names: a link relative to its page, a path from the repository's root
    (``docs/...``, README) or, in a page of docs/, relative to that page."""
    if m["link"]:
        return (src.parent / m["link"]).resolve()
    path = m["path"]
    if path.startswith("README"):
        return ROOT / "README.md"
    if src.suffix == ".md" and (src.parent / path).exists():
        return (src.parent / path).resolve()
    return ROOT / path


#: the bold title a paragraph or list item starts with
BOLD = r"(?:[-*]\s+)?\*\*([^*]+?)\.?\*\*"


def _plain(heading: str) -> str:
    """A heading's text as a reader sees it: no backticks, emphasis or link targets."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[`*]", "", text).strip()


def headings(page: Path) -> list[str]:
    """The titles of a page's sections: its headings (``#`` lines outside fenced blocks) and
    the bold title a paragraph or a list item starts with (``**Deadlock** (...)``)."""
    out, fenced = [], False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            continue
        elif m := re.match(r"#{1,6}\s+(.+?)\s*#*$", line) or re.match(BOLD, line):
            out.append(_plain(m[1]))
    return out


def has_section(titles: list[str], quoted: str) -> bool:
    """``quoted`` is a section's title, its first words (``"Published bounds"`` for
    ``## Published bounds for the star graph``) or what follows its colon (``"the slowdown"``
    for ``## Paper 004: the slowdown``)."""
    q = _plain(" ".join(quoted.split()))
    return any(
        t == q or (t.startswith(q) and t[len(q)] in " (:,") or t.endswith(": " + q) for t in titles
    )


def _join(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with its line breaks (and a comment's ``#``) joined into one space, and the
    (offset in the joined text, line) where each of its lines starts."""
    parts, lines, pos, at, line = [], [(0, 1)], 0, 0, 1
    for m in _BREAK.finditer(text):
        parts.append(text[pos : m.start()] + " ")
        at += m.start() - pos + 1
        pos = m.end()
        if "\n" in m[0]:
            line += m[0].count("\n")
            lines.append((at, line))
    parts.append(text[pos:])
    return "".join(parts), lines


def references_in(text: str, src: Path) -> list[tuple[int, Path, str]]:
    """(line, page, title) of every quoted section pointer in ``text``, read as ``src``."""
    joined, lines = _join(text)
    out = []
    for m in REF.finditer(joined):
        line = max(ln for at, ln in lines if at <= m.start())
        out += [(line, _page(src, m), " ".join(t.split())) for t in TITLE.findall(m["titles"])]
    return out


def references(src: Path) -> list[tuple[int, Path, str]]:
    """(line, page, title) of every quoted section pointer in the file ``src``."""
    return references_in(src.read_text(), src)


def test_the_pattern_finds_each_form_and_only_those():
    src = ROOT / "docs" / "x.md"

    def found(text: str) -> list[tuple[str, str]]:
        return [(p.name, t) for _, p, t in references_in(text, src)]

    assert found('see docs/switching.md, "Deadlock".') == [("switching.md", "Deadlock")]
    # a title broken over two lines of a comment
    assert found('docs/switching.md ("Virtual-channel\n    # policies")') == [
        ("switching.md", "Virtual-channel policies")
    ]
    assert found('the README "Quickstart", README, "Tests"') == [
        ("README.md", "Quickstart"),
        ("README.md", "Tests"),
    ]
    assert found('[the log](history/performance-log.md): "Ab", "Bc" and "Cd"') == [
        ("performance-log.md", "Ab"),
        ("performance-log.md", "Bc"),
        ("performance-log.md", "Cd"),
    ]
    assert found('[r](reliability.md) ("Faults") has') == [("reliability.md", "Faults")]
    # quoted text without a page, or a page without a quoted title, is no pointer
    assert found('prints ("Total run time") and docs/performance.md (the floor)') == []
    assert found('DESIGN.md\'s "all packets injected" is a quotation') == []
    assert [ln for ln, _, _ in references_in('a\nb\n# docs/a.md, "Xy"', src)] == [3]


def test_has_section_reads_headings_as_a_reader_does(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "# Top\n\n## The packet engine (`mpinet bench`)\n\n```text\n# not a heading\n```\n"
        "### **Limits**: what is refused\n\n**Deadlock** (`engine/deadlock.py`): a paragraph\n"
        "- **Total exchange.** An item, and **Bold inside** a line\n"
    )
    titles = headings(page)
    assert titles == [
        "Top",
        "The packet engine (mpinet bench)",
        "Limits: what is refused",
        "Deadlock",
        "Total exchange",
    ]
    assert has_section(titles, "The packet engine")
    assert has_section(titles, "The packet")  # its first words
    assert has_section(titles, "Limits")
    assert has_section(titles, "Deadlock")
    assert not has_section(titles, "The pack")  # a prefix ends where a word does
    assert not has_section(titles, "not a heading")
    assert not has_section(titles, "Bold inside")
    assert has_section(titles, "what is refused")  # after the colon
    assert not has_section(titles, "is refused")


POINTERS = [(f, *r) for f in _files() for r in references(f)]


def test_pointers_were_found():
    # the forms are in use: an empty list would mean the pattern stopped matching them
    assert len(POINTERS) > 20


@pytest.mark.parametrize(
    "src,line,page,title",
    [pytest.param(*p, id=f"{p[0].relative_to(ROOT)}:{p[1]}") for p in POINTERS],
)
def test_a_quoted_section_exists_in_its_page(src, line, page, title):
    where = f"{src.relative_to(ROOT)}:{line}"
    assert page.exists(), f'{where} points at {page.relative_to(ROOT)}, "{title}": no such page'
    rel = page.relative_to(ROOT)
    assert has_section(headings(page), title), (
        f'{where} points at {rel}, "{title}": {rel} has no such heading'
    )


#: ``docs/P.md#anchor`` in the code (a help text, a comment): the manual's own links are
#: checked by ``mkdocs build --strict``, these are not
ANCHOR = re.compile(r"(?<![\w/.-])(docs/[\w/.-]+\.md)#([\w-]+)")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, as the manual's slugify makes them (mkdocs.yml)."""
    slug = slugify(case="lower")
    text = page.read_text()
    fenced = re.sub(r"(?ms)^```.*?^```", "", text)
    return {slug(_plain(m[1]), "-") for m in re.finditer(r"(?m)^#{1,6}\s+(.+?)\s*#*$", fenced)}


CODE_ANCHORS = [
    (f, text.count("\n", 0, m.start()) + 1, m[1], m[2])
    for f in _files()
    if f.suffix == ".py"
    for text in [f.read_text()]
    for m in ANCHOR.finditer(text)
]


def test_anchors_are_read_as_the_manual_makes_them(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# T\n\n## mpinet routes\n\n## The packet engine (`mpinet bench`)\n")
    assert anchors(page) == {"t", "mpinet-routes", "the-packet-engine-mpinet-bench"}
    assert [m[2] for m in ANCHOR.finditer("see docs/commands.md#mpinet-routes.")] == [
        "mpinet-routes"
    ]


@pytest.mark.parametrize(
    "src,line,page,anchor",
    [pytest.param(*a, id=f"{a[0].relative_to(ROOT)}:{a[1]}") for a in CODE_ANCHORS],
)
def test_an_anchor_named_in_the_code_exists(src, line, page, anchor):
    where = f"{src.relative_to(ROOT)}:{line}"
    assert (ROOT / page).exists(), f"{where} links {page}#{anchor}: no such page"
    assert anchor in anchors(ROOT / page), f"{where} links {page}#{anchor}: no such heading"
