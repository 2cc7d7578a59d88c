"""Print paper 004's Table 2 recomputed from the topology objects, as markdown.

Each network option (one line per basic module) shows the printed size, degree
and off-module links per node beside the values computed from mpinet's
topology (``mpinet.emulation.variants.table2_rows``) and a verdict. Then the
IMS emulation words: star dimensions (dilation 3) and the complete
transposition graph (constructed words and true dilation by BFS).

Usage (a few seconds; no MPI)::

    python scripts/ms_variants_table.py                  # print both tables
    python scripts/ms_variants_table.py --out docs/ms-variants.md [--check]

With ``--out`` the two tables replace the blocks between their markers in that file
(``--check``: compare only, exit 1 with a diff if the file is stale).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reports  # noqa: E402

from mpinet import perm  # noqa: E402
from mpinet.emulation.variants import (  # noqa: E402
    ct_dilation,
    ims_ct_word,
    ims_sdc_word,
    table2_rows,
    words_perm,
)
from mpinet.topology import from_spec  # noqa: E402

DOC = reports.ROOT / "docs" / "ms-variants.md"
#: the blocks of docs/ms-variants.md: (begin, end) markers of each table
WORDS = ("<!-- BEGIN scripts/ms_variants_table.py: IMS words -->",
         "<!-- END scripts/ms_variants_table.py: IMS words -->")  # fmt: skip
TABLE2 = ("<!-- BEGIN scripts/ms_variants_table.py: Table 2 -->",
          "<!-- END scripts/ms_variants_table.py: Table 2 -->")  # fmt: skip

#: IMS instances whose emulation words are tabulated (k <= 9 for the BFS)
EMULATED = ("ims:1,2,2", "ims:2,2,3", "ims:1,3,2", "ims:2,2,2", "ims:1,3,3", "ims:2+2,3,3")


def table2_markdown() -> str:
    """Table 2, printed vs computed, one row per network option."""
    out = [
        "| network | basic module | nodes (paper / computed) | degree (paper / computed) "
        "| off-module links per node (paper / computed) | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in table2_rows():
        verdict = "agrees" if r.agrees else "**DISAGREES**"
        out.append(
            f"| {r.paper_network} (`{r.spec}`) | {r.module}-star | {r.paper_nodes} / "
            f"{r.nodes_factorial} | {r.paper_degree} / {r.degree} | {r.paper_offmodule} / "
            f"{r.offmodule} | {verdict} |"
        )
    return "\n".join(out)


def emulation_markdown() -> str:
    """Star words (max length, all validated) and CT dilation per IMS instance."""
    out = [
        "| network | k | star words valid | longest star word | CT words valid "
        "| longest CT word | true CT dilation (BFS) | paper's CT claim |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for spec in EMULATED:
        t = from_spec(spec)
        k = t.k
        star = [ims_sdc_word(t, j) for j in range(2, k + 1)]
        star_ok = all(
            (words_perm(t, w) == perm.transposition(k, j - 1)).all()
            for j, w in zip(range(2, k + 1), star, strict=True)
        )
        pairs = [(i, j) for i in range(1, k + 1) for j in range(i + 1, k + 1)]
        ct = [ims_ct_word(t, i, j) for i, j in pairs]
        ct_ok = all(
            (words_perm(t, w) == perm.transposition(k, i - 1, j - 1)).all()
            for (i, j), w in zip(pairs, ct, strict=True)
        )
        dil, _ = ct_dilation(t)
        claim = 5 if t.l == 2 else 7
        out.append(
            f"| {t.paper_name} (`{spec}`) | {k} | {'yes' if star_ok else 'NO'} | "
            f"{max(map(len, star))} | {'yes' if ct_ok else 'NO'} | {max(map(len, ct))} | "
            f"{dil} | {claim} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = reports.arguments(__doc__, out_help="the page whose two blocks are replaced "
                           f"(default: print them; --check: {DOC.relative_to(reports.ROOT)})",
                           check=True)  # fmt: skip
    args = ap.parse_args(argv)
    out = args.out or (DOC if args.check else None)
    run = reports.Run(__file__, args, out)
    text = run.text(out, WORDS, TABLE2) if out else ""  # refused now, not after the work
    run.progress("Table 2")
    table2 = table2_markdown()
    run.progress("IMS emulation words (BFS for the true dilation)")
    words = emulation_markdown()
    if out is None:
        print("### Table 2 (paper 004), recomputed\n")
        print(table2)
        print("\n### IMS emulation words\n")
        print(words)
        return 0
    text = run.block(text, *WORDS, f"\n{words}\n")
    run.write(out, run.block(text, *TABLE2, f"\n{table2}\n"))
    return run.finish()


if __name__ == "__main__":
    sys.exit(main())
