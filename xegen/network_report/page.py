"""The report's HTML page: one self-contained file, its images beside it by relative name.

Every text that comes from the user (layer names, descriptors, file names, error messages, the
bench's kernel labels) is escaped.  No dates or times: the same layers give the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ..hw import Platform
from .layers import Layer
from .peers import PeerKernel

STYLE = """\
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }
th { background: #f0f0f0; }
td.text, th.text { text-align: left; }
code { font-size: 0.9em; }
section.layer { border-top: 1px solid #999; margin-top: 1.5em; }
p.note { color: #555; font-size: 0.9em; }
"""


def _cycles(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _cell(text: str, text_cell: bool = False) -> str:
    return f'<td class="text">{text}</td>' if text_cell else f"<td>{text}</td>"


def _image(name: str, alt: str, pixels: tuple[int, int]) -> str:
    return f'<img src="{escape(name)}" alt="{escape(alt)}" width="{pixels[0]}" height="{pixels[1]}">'


def peer_labels(layers: Sequence[Layer]) -> list[str]:
    """Every peer kernel's label, in the order they first appear."""
    labels: list[str] = []
    for layer in layers:
        labels += [peer.label for peer in layer.peers if peer.label not in labels]
    return labels


def _summary_table(ranked: Sequence[Layer], labels: list[str]) -> list[str]:
    head = [
        "#",
        '<th class="text">layer</th>',
        "roofline fraction",
        '<th class="text">bound</th>',
        "modeled cycles",
        "roofline cycles",
        "instructions",
    ]
    head += [f"{escape(label)}: cycles (xegen ÷)" for label in labels]
    if labels:
        head.append("xegen ÷ best peer")
    lines = [
        '<table id="layers">',
        "<thead><tr>" + "".join(h if h.startswith("<th") else f"<th>{h}</th>" for h in head) + "</tr></thead>",
        "<tbody>",
    ]
    for rank, layer in enumerate(ranked, 1):
        m = layer.modeled
        cells = [
            _cell(str(rank)),
            _cell(f'<a href="#{layer.anchor}">{escape(layer.name)}</a>', True),
            _cell(_fraction(m["roofline_fraction"])),
            _cell(escape(m["bound"]), True),
            _cell(_cycles(m["device_cycles"])),
            _cell(f"{_cycles(m['roofline_cycles'])} ({escape(m['roofline_bound'])})"),
            _cell(str(layer.summary["instructions"])),
        ]
        by_label = {peer.label: peer for peer in layer.peers}
        for label in labels:
            peer = by_label.get(label)
            if peer is None:
                cells.append(_cell(""))
            elif peer.measured:
                cells.append(_cell(f"{_cycles(peer.device_cycles)} ({_ratio(layer.ratio(peer))})"))
            else:
                cells.append(_cell(escape(peer.why_not.split(":")[0]), True))
        if labels:
            cells.append(_cell(_ratio(layer.ratio(layer.best_peer()))))
        lines.append(f'<tr class="layer" data-layer="{layer.index}">' + "".join(cells) + "</tr>")
    return lines + ["</tbody>", "</table>"]


def _peer_table(layer: Layer) -> list[str]:
    lines = [
        '<table class="peers">',
        '<tr><th class="text">kernel</th><th>modeled cycles</th>'
        '<th class="text">bound</th><th>roofline fraction</th><th>instructions</th><th>xegen ÷ kernel</th></tr>',
    ]
    m = layer.modeled
    rows: list[tuple[str, PeerKernel | None]] = [("xegen", None)] + [(peer.label, peer) for peer in layer.peers]
    for label, peer in rows:
        if peer is None:
            values = [
                _cycles(m["device_cycles"]),
                escape(m["bound"]),
                _fraction(m["roofline_fraction"]),
                str(layer.summary["instructions"]),
                "",
            ]
        elif not peer.measured:
            lines.append(
                f'<tr>{_cell(escape(label), True)}<td class="text" colspan="5">{escape(peer.why_not)}</td></tr>'
            )
            continue
        else:
            values = [
                _cycles(peer.device_cycles),
                escape(peer.bound or ""),
                _fraction(peer.roofline_fraction),
                str(peer.instructions),
                _ratio(layer.ratio(peer)),
            ]
        lines.append(
            "<tr>"
            + _cell(escape(label), True)
            + _cell(values[0])
            + _cell(values[1], True)
            + "".join(_cell(v) for v in values[2:])
            + "</tr>"
        )
    return lines + ["</table>"]


def _detail(rank: int, layer: Layer, pixels: tuple[int, int]) -> list[str]:
    s, m = layer.summary, layer.modeled
    where = f"layer {layer.index} of the batch" + (f", {escape(s['source'])}" if s.get("source") else "")
    terms = "".join(f"<th>{escape(name)}</th>" for name in m["terms"])
    values = "".join(_cell(_cycles(value)) for value in m["terms"].values())
    moved, occupancy = m["bytes"], m["occupancy"]
    inner = (
        f"inner loop {s['inner_loop_instructions']} instructions ({s['inner_loop_sends']} sends, "
        f"{s['inner_loop_fma']} FMA)"
        if s["inner_loop_instructions"]
        else "no loop around the multiplies"
    )
    return [
        f'<section class="layer" id="{layer.anchor}">',
        f"<h3>{rank}. {escape(layer.name)}</h3>",
        f'<p class="note">{where}: <code>{escape(s["problem"])}</code>, {escape(s["direction"])} {escape(s["dt"])}; '
        f"kernel <code>{escape(s['kernel'])}</code>, config <code>{escape(s['config'])}</code></p>",
        _image(f"{layer.anchor}.png", f"roofline position of {layer.name}", pixels),
        f"<p>{_fraction(m['roofline_fraction'])} of the roofline: {_cycles(m['device_cycles'])} modeled cycles, "
        f"{escape(m['bound'])} bound; the problem's roofline {_cycles(m['roofline_cycles'])} cycles "
        f"({escape(m['roofline_bound'])} bound); arithmetic intensity {layer.intensity:.2f} operations per byte, "
        f"{layer.attained:,.1f} G operations/s modeled of the {layer.roofs.rate(layer.intensity):,.1f} the roof "
        f"allows; {_fraction(m['peak_fraction'])} of the FMA peak.</p>",
        '<table class="terms"><tr><th class="text">modeled term</th>'
        + terms
        + '</tr><tr><th class="text">device cycles</th>'
        + values
        + "</tr></table>",
        f"<p>{s['instructions']} instructions, {inner}; {s['sends']} sends, {s['fma_instructions']} FMA "
        f"instructions; {s['grfs_used']} of {s['grf_count']} GRFs, SLM {s['slm_bytes']} bytes. Bytes: compulsory "
        f"{moved['compulsory']:,}, requested {moved['requested']:,}, L3 {moved['l3']:,}, DRAM {moved['dram']:,}. "
        f"{occupancy['wave_threads_per_eu']} of {occupancy['threads_per_eu']} threads per EU, "
        f"{occupancy['groups_per_subslice']} groups per subslice ({escape(occupancy['limit'])} limit), "
        f"{occupancy['waves']} wave(s).</p>",
        *(_peer_table(layer) if layer.peers else []),
        "</section>",
    ]


def _failed(entries: Sequence[dict]) -> list[str]:
    if not entries:
        return []
    lines = [
        '<h2 id="failed">Layers that failed</h2>',
        '<table id="failures">',
        '<tr><th class="text">where</th><th class="text">descriptor</th><th class="text">error</th></tr>',
    ]
    for entry in entries:
        lines.append(
            "<tr>"
            + _cell(escape(entry.get("source", "")), True)
            + _cell(f"<code>{escape(entry.get('problem', entry['descriptor']))}</code>", True)
            + _cell(escape(entry["error"]), True)
            + "</tr>"
        )
    return lines + ["</table>"]


def render(
    ranked: Sequence[Layer],
    failed: Sequence[dict],
    hw: Platform,
    peers_source: str | None,
    network_pixels: tuple[int, int],
    layer_pixels: tuple[int, int],
) -> str:
    """The page: totals, the whole-network plot, the layers worst first, each layer's detail, failures."""
    labels = peer_labels(ranked)
    device = sum(layer.modeled["device_cycles"] for layer in ranked)
    roofline = sum(layer.modeled["roofline_cycles"] for layer in ranked)
    title = f"xegen network report: {len(ranked)} layer{'' if len(ranked) == 1 else 's'} on {hw.display_name}"
    roofs = sorted({(layer.roofs.compute, layer.roofs.bandwidth) for layer in ranked})
    roof_text = "; ".join(f"compute {c:,.0f} G operations/s, DRAM {b:,.1f} GB/s" for c, b in roofs)
    peers_text = (
        f" Peers from <code>{escape(peers_source)}</code> (bench/e2e/run.py), for the layers it measured: "
        "each kernel's modeled cycles and xegen's over them (&gt; 1: xegen is slower)."
        if peers_source
        else ""
    )
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        f"<style>\n{STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{escape(hw.display_name)} ({escape(hw.memory.sku)}): {roof_text}. Modeled by xegen's cost model "
        "(docs/model.md); the roofline is each problem's own lower bound: its multiply-adds at the peak rate or "
        "its compulsory bytes at DRAM bandwidth, whichever takes longer. Sorted by roofline fraction, the worst "
        f"first.{peers_text}</p>",
    ]
    if ranked:
        lines += [
            f"<p>The whole network: {_cycles(device)} modeled cycles against {_cycles(roofline)} roofline "
            f"cycles, {_fraction(roofline / device if device else 0.0)} of the roofline"
            f"{'' if not failed else f' ({len(failed)} failed layer(s) not counted)'}.</p>",
            _image("network.png", "every layer on the roofline, numbered as in the table", network_pixels),
            "<h2>Layers, worst first</h2>",
            *_summary_table(ranked, labels),
            "<h2>Each layer</h2>",
        ]
        for rank, layer in enumerate(ranked, 1):
            lines += _detail(rank, layer, layer_pixels)
    lines += _failed(failed)
    return "\n".join(lines + ["</body>", "</html>", ""])
