"""The papers' claims about the compared networks, and what the sweeps say about them.

Used by ``scripts/compare_report.py``. Each claim is typed from the paper (its
words are never data); its verdict is computed from the measurements in
``docs/comparison.json`` by a rule written next to it, so a rerun with other
numbers can change the verdict. "Supported", "not supported" or "partly"
always comes with the numbers and the rule that decided it.
"""

from __future__ import annotations

from collections.abc import Callable

Row = dict
Net = dict


def best_row(rows: list[Row], stem: str, model: str = "all-port") -> Row | None:
    """The row of ``stem`` under ``model`` with the highest saturation throughput."""
    mine = [r for r in rows if r["stem"] == stem and r["model"] == model]
    return max(mine, key=lambda r: r["saturation"]["throughput"], default=None)


def _row(rows: list[Row], stem: str, router: str, model: str = "all-port") -> Row | None:
    return next((r for r in rows if (r["stem"], r["router"], r["model"]) == (stem, router, model)),
                None)  # fmt: skip


def _tp(r: Row) -> float:
    return r["saturation"]["throughput"]


def _verdict(ok: bool | None) -> str:
    return {True: "**supported**", False: "**not supported**", None: "**partly**"}[ok]


def star_vs_hypercube(rows: list[Row], nets: dict[str, Net]) -> list[str]:
    s, h = best_row(rows, "star-7"), best_row(rows, "hypercube-12")
    ns, nh = nets.get("star-7"), nets.get("hypercube-12")
    if not (s and h and ns and nh):
        return []
    smaller = ns["degree"] < nh["degree"] and ns["diameter"] < nh["diameter"]
    per_port_s, per_port_h = _tp(s) / ns["degree"], _tp(h) / nh["degree"]
    ok = smaller and per_port_s >= per_port_h
    if smaller and not ok:
        ok = None
    return [
        "*Claim* (paper 000 sec. 2, paper 001 sec. 1): the star's degree and diameter grow "
        "sublogarithmically with its size, so it compares favourably with the hypercube.",
        f"*Measured*: S_7 ({ns['nodes']:,} nodes) has degree {ns['degree']} and diameter "
        f"{ns['diameter']} against the 12-cube's {nh['degree']} and {nh['diameter']} "
        f"({nh['nodes']:,} nodes); mean distance {ns['avg_distance']:.2f} against "
        f"{nh['avg_distance']:.2f}. Under uniform all-port load the star sustains "
        f"{_tp(s):.3f} packets per node per step (`{s['router']}`), the cube {_tp(h):.3f} "
        f"(`{h['router']}`): {per_port_s:.3f} against {per_port_h:.3f} per port.",
        f"*Verdict* (rule: smaller degree and diameter, and at least the throughput per port): "
        f"{_verdict(ok)}. The cube, with twice the ports, carries "
        f"{_tp(h) / _tp(s):.2f}x the star's load per node; per port built the star carries "
        f"{per_port_s / per_port_h:.2f}x the cube's."
        + (
            f" The cube's figure is capped by injection (Bernoulli traffic offers at most 1 "
            f"packet per node per step); its links alone would allow "
            f"{h['bound']['channel']:.2f}."
            if h["bound"]["limited_by"] == "injection"
            else ""
        ),
    ]


def ms_vs_star(rows: list[Row], nets: dict[str, Net]) -> list[str]:
    out = []
    s, ns = best_row(rows, "star-7"), nets.get("star-7")
    if not (s and ns):
        return []
    for stem in ("ms-3-2", "ms-2-3"):
        m, nm = best_row(rows, stem), nets.get(stem)
        if not (m and nm):
            continue
        out.append(
            f"- `{nm['spec']}`: degree {nm['degree']} against the star's {ns['degree']} at the "
            f"same {nm['nodes']:,} nodes; diameter {nm['diameter']} (star {ns['diameter']}), "
            f"degree x diameter {nm['degree'] * nm['diameter']} (star "
            f"{ns['degree'] * ns['diameter']}); all-port throughput {_tp(m):.3f} (`{m['router']}`) "
            f"against {_tp(s):.3f}: {_tp(m) / nm['degree']:.3f} against "
            f"{_tp(s) / ns['degree']:.3f} per port."
        )
    if not out:
        return []
    dd = all(nets[x]["degree"] * nets[x]["diameter"] <= ns["degree"] * ns["diameter"] * 1.25
             for x in ("ms-3-2", "ms-2-3") if x in nets)  # fmt: skip
    return [
        "*Claim* (paper 004, abstract and sec. 2): MS(l,n) has a degree considerably smaller "
        "than a star graph of the same size, with a diameter close to the lower bound for its "
        "degree, so its degree x diameter is competitive with the star's.",
        *out,
        f"*Verdict* (rule: degree x diameter within 1.25x of the star's): {_verdict(dd)}. "
        "Under load the lower degree costs throughput per node: the star's all-port links "
        "carry more packets in all, while per port the two are compared above.",
    ]


def ms_balance(rows: list[Row], nets: dict[str, Net]) -> list[str]:
    out, ratios = [], []
    for stem in ("ms-3-2", "ms-2-3"):
        r = _row(rows, stem, "ms-balls-to-boxes")
        if r is None:
            continue
        pc = r["bound"]["per_class"]
        means = {c: v["mean_load"] for c, v in pc.items()}
        ratio = max(means.values()) / min(means.values())
        ratios.append(ratio)
        loads = ", ".join(f"{c} {v:.3f}" for c, v in means.items())
        out.append(f"- `{r['spec']}` (l = {nets[stem]['spec'].split(':')[1].split(',')[0]}): "
                   f"mean load per link per unit load: {loads}; ratio {ratio:.2f}.")  # fmt: skip
    if not out:
        return []
    ok = all(x <= 2.0 for x in ratios)
    return [
        "*Claim* (paper 004, Cor. 3.3): under uniform traffic with balls-to-boxes routing the "
        "expected load of nucleus and intercluster links is balanced within a constant factor "
        "when l = Theta(n).",
        *out,
        f"*Verdict* (rule: the two classes' mean loads within 2x, from the router's own routes, "
        f"exact): {_verdict(ok)}.",
    ]


def scc_vs_ccc(rows: list[Row], nets: dict[str, Net]) -> list[str]:
    s, c = best_row(rows, "scc-6"), best_row(rows, "ccc-9")
    ns, nc = nets.get("scc-6"), nets.get("ccc-9")
    if not (s and c and ns and nc):
        return []
    close = abs(ns["diameter"] - nc["diameter"]) <= 0.15 * nc["diameter"]
    return [
        "*Claim* (paper 001, abstract and sec. 6): for even n an n-SCC and a CCC of similar "
        "size have about the same diameter; both have degree 3.",
        f"*Measured*: SCC_6 ({ns['nodes']:,} nodes) has diameter {ns['diameter']} and mean "
        f"distance {ns['avg_distance']:.2f}; the 9-CCC ({nc['nodes']:,} nodes) "
        f"{nc['diameter']} and {nc['avg_distance']:.2f}. All-port throughput: SCC_6 "
        f"{_tp(s):.3f} (`{s['router']}`), CCC {_tp(c):.3f} (`{c['router']}`); zero-load "
        f"latency {s['zero_load_latency']:.2f} against {c['zero_load_latency']:.2f}.",
        f"*Verdict* (rule: diameters within 15 %): {_verdict(close)}. The paper's case for "
        "the SCC also assumes fast local links; mpinet gives every link capacity 1, so its "
        "numbers are the pessimistic side of that argument.",
    ]


def fccn_simple_routing(rows: list[Row], nets: dict[str, Net]) -> list[str]:
    a, b = _row(rows, "fccn-4", "fccn-shortest"), _row(rows, "fccn-4", "fccn-sroute")
    if not (a and b):
        return []
    lat = b["zero_load_latency"] / a["zero_load_latency"]
    tput = _tp(b) / _tp(a) if _tp(a) else float("inf")
    ok = lat <= 1.3 and tput >= 0.8
    return [
        "*Claim* (paper 002, sec. 1 and 6): the simple routing algorithm is justified: at "
        "least 80 % of its routes are shortest, the others at most 30 % longer on average.",
        f"*Measured* on the 4-FCCN: `fccn-sroute`'s mean route is {b['zero_load_latency']:.2f} "
        f"steps against {a['zero_load_latency']:.2f} for shortest paths ({lat:.3f}x); under "
        f"all-port load it sustains {_tp(b):.3f} packets per node per step against "
        f"{_tp(a):.3f} ({tput:.2f}x).",
        f"*Verdict* (rule: mean route at most 1.3x and throughput at least 0.8x of shortest "
        f"paths): {_verdict(ok)}. {_hot_links(a, b)}",
    ]


def _hot_links(a: Row, b: Row) -> str:
    """What limits both routers: the class with the lowest bound, hottest link against mean."""
    pa, pb = a["bound"]["per_class"], b["bound"]["per_class"]
    cls = min(pa, key=lambda c: pa[c]["bound"])
    ra = pa[cls]["max_load"] / pa[cls]["mean_load"]
    rb = pb[cls]["max_load"] / pb[cls]["mean_load"]
    more = "more" if _tp(b) > _tp(a) else "less"
    fa, fb = (100 * r["saturation"]["throughput_fraction_of_bound"] for r in (a, b))
    return (
        f"Under load the simple routing does {more}, not less, than shortest paths "
        f"({_tp(b) / _tp(a):.2f}x): both are limited by {cls} links, and the hottest {cls} link "
        f"carries {ra:.1f}x its class's mean load under `{a['router']}` against {rb:.1f}x under "
        f"`{b['router']}` (they sustain {fa:.0f} % and {fb:.0f} % of their own bounds)."
    )


def borel_dense(rows: list[Row], nets: dict[str, Net]) -> list[str]:
    deg4 = {k: v for k, v in nets.items() if v["degree"] == 4}
    if "borel-71" not in deg4 or len(deg4) < 2:
        return []
    nb = deg4["borel-71"]
    lines = [
        f"`{v['spec']}` {v['nodes']:,} nodes, diameter {v['diameter']}, mean distance "
        f"{v['avg_distance']:.2f}" for v in sorted(deg4.values(), key=lambda v: v["diameter"])
    ]  # fmt: skip
    ok = all(nb["diameter"] < v["diameter"] for k, v in deg4.items() if k != "borel-71")
    b2, cr = _row(rows, "borel-71", "borel-two-phase"), _row(rows, "borel-71", "borel-cr")
    out = [
        "*Claim* (paper 003, abstract): Borel Cayley graphs are the densest known degree-4 "
        "graphs for diameters 7 to 13; two-phase routing keeps paths within 2D with an average "
        "close to D, CR routing makes long paths.",
        "*Measured* (degree-4 networks here): " + "; ".join(lines) + ".",
    ]
    if b2 and cr:
        t = _row(rows, "borel-71", "borel-table")
        out.append(
            f"Mean route (zero-load latency): table {t['zero_load_latency']:.2f}, two-phase "
            f"{b2['zero_load_latency']:.2f}, CR {cr['zero_load_latency']:.2f} (diameter "
            f"{nb['diameter']}); all-port throughput {_tp(t):.3f}, {_tp(b2):.3f}, {_tp(cr):.3f}."
            if t
            else ""
        )
    out.append(
        f"*Verdict* (rule: the smallest diameter among the degree-4 networks here, at about "
        f"the same size): {_verdict(ok)}."
    )
    if b2 and cr:
        d = nb["diameter"]
        mean2 = b2["zero_load_latency"]
        ok2 = mean2 <= 1.25 * d and cr["zero_load_latency"] > mean2
        out.append(
            f"*Verdict on the routers* (rule: two-phase mean route within 1.25 D, CR's longer): "
            f"{_verdict(ok2)}. Two-phase averages {mean2 / d:.2f} D; CR's long routes also "
            f"cost {_tp(b2) / max(_tp(cr), 1e-12):.0f}x in all-port throughput against "
            f"two-phase."
        )
    return out


def ms_vs_ccc(rows: list[Row], nets: dict[str, Net]) -> list[str]:
    c, nc = best_row(rows, "ccc-9"), nets.get("ccc-9")
    m, nm = best_row(rows, "ms-2-3"), nets.get("ms-2-3")
    if not (c and m and nc and nm):
        return []
    ok = nm["diameter"] < nc["diameter"] and _tp(m) > _tp(c)
    return [
        "*Claim* (paper 004, sec. 1): the CCC has constant degree, but its diameter and "
        "algorithmic properties are not as good as those of MS networks.",
        f"*Measured*: MS(2,3) ({nm['nodes']:,} nodes, degree {nm['degree']}) has diameter "
        f"{nm['diameter']} and sustains {_tp(m):.3f} (`{m['router']}`); the 9-CCC "
        f"({nc['nodes']:,} nodes, degree {nc['degree']}) {nc['diameter']} and {_tp(c):.3f}.",
        f"*Verdict* (rule: smaller diameter and higher all-port throughput): {_verdict(ok)}; "
        f"per port {_tp(m) / nm['degree']:.3f} against {_tp(c) / nc['degree']:.3f}.",
    ]


#: (title, check) in the order the report prints them
CLAIMS: list[tuple[str, Callable[[list[Row], dict[str, Net]], list[str]]]] = [
    ("Star graph against hypercube", star_vs_hypercube),
    ("Macro-star against star", ms_vs_star),
    ("Macro-star link balance", ms_balance),
    ("SCC against CCC", scc_vs_ccc),
    ("FCCN simple routing", fccn_simple_routing),
    ("Borel Cayley graphs are dense", borel_dense),
    ("Macro-star against CCC", ms_vs_ccc),
]


def claims_markdown(rows: list[Row], nets: dict[str, Net]) -> list[str]:
    out = []
    for title, check in CLAIMS:
        lines = [x for x in check(rows, nets) if x]
        if lines:
            out += [f"### {title}", ""]
            for x in lines:  # one paragraph each (bullets stay a list)
                out += [x, ""]
    return out
