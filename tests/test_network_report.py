"""`xegen conv --batch FILE --report DIR`: the network report, opened in headless Chromium.

The page is built for a small batch of scaled resnet_50 layers, one layer with a name full of HTML,
a line that fails, and peers from a bench JSON written here.  Chromium loads a copy of the page
with a script that records, once the page has loaded, each image's natural width; the verdicts
come from the DOM Chromium dumps: the table's rows, in the order the summaries' roofline fractions
give, the names as text (escaped, not markup), the peers' cells, and every image decoded at its
size.  The same page with one image deleted shows that image at width 0, so the check can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conv.shapes import RESNET, scaled, short_name
from xegen import hw as hwlib
from xegen.cli import main
from xegen.network_report import load_peers, write_report
from xegen.network_report.layers import make_layer

ODD_NAME = 'odd <b>&amp; "name" $x$'
LOADED = """<script>
window.addEventListener("load", () => {
  for (const image of document.images) image.setAttribute("data-natural-width", image.naturalWidth);
  document.body.setAttribute("data-loaded", "yes");
});
</script>
</body>"""


def layer(name: str):
    """The scaled resnet_50 layer `name` (its descriptor names it resnet_50:NAME*COUNT)."""
    return scaled(next(d for d in RESNET if short_name(d).split("*")[0] == name))


class Dom(HTMLParser):
    """The parts of a dumped DOM the test reads: the summary table's rows (their data-layer and
    cells' text), the images' attributes, the body's attributes, the header cells."""

    def __init__(self, text: str):
        super().__init__()
        self.rows: list[tuple[str, list[str]]] = []
        self.images: list[dict] = []
        self.body: dict = {}
        self.headers: list[str] = []
        self._table = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = attrs.get("id")
        elif tag == "img":
            self.images.append(attrs)
        elif tag == "body":
            self.body = attrs
        elif self._table == "layers" and tag == "tr" and "data-layer" in attrs:
            self.rows.append((attrs["data-layer"], []))
        elif self._table == "layers" and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell)
            if tag == "th":
                self.headers.append(text)
            elif self.rows:
                self.rows[-1][1].append(text)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def dump_dom(chromium: str, page: Path, profile: Path) -> Dom:
    checked = page.with_name("checked.html")
    checked.write_text(page.read_text(encoding="utf-8").replace("</body>", LOADED), encoding="utf-8")
    argv = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--dump-dom",
        checked.as_uri(),
    ]
    # the timeout only guards against a hang; the verdicts come from the DOM
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return Dom(result.stdout)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A report of three layers (and a failing line) on XeLP, with peers for one of them; the
    summaries from --json of the same run."""
    tmp = tmp_path_factory.mktemp("report")
    shapes = tmp / "shapes"
    odd = f'mb1ic16ih4oc16oh4kh1n"{ODD_NAME}"'
    shapes.write_text(
        f"# three scaled layers\n{layer('res2a_branch2b')}\n{odd}\nnot-a-descriptor\n{layer('res4a_branch2b')}\n",
        encoding="utf-8",
    )
    peers = tmp / "peers.json"
    peers.write_text(
        json.dumps(
            {
                "cases": [
                    {
                        "hw": "xelp",
                        "direction": "FWD_B",
                        "dt": "f32",
                        "kernels": {"xegen": "xegen", "fast": "Peer <A>", "absent": "Peer B"},
                        "layers": [
                            {
                                "problem": str(layer("res2a_branch2b")),
                                "fast": {
                                    "verified": True,
                                    "device_cycles": 1000.0,
                                    "bound": "memory",
                                    "roofline_fraction": 0.5,
                                    "instructions": 123,
                                },
                                "absent": {"unsupported": "not this layer"},
                            }
                        ],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "xegen",
            "conv",
            "--batch",
            str(shapes),
            "--hw",
            "xelp",
            "--json",
            "--report",
            str(tmp / "out"),
            "--report-peers",
            str(peers),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1, result.stderr  # the failing line
    assert "shapes:4: error:" in result.stderr and "wrote" in result.stderr
    return tmp, json.loads(result.stdout), peers


def test_the_page_renders_its_table_and_images_in_chromium(report, chromium, tmp_path):
    tmp, summaries, _ = report
    dom = dump_dom(chromium, tmp / "out" / "index.html", tmp_path / "profile")
    assert dom.body.get("data-loaded") == "yes"
    compiled = [(s["modeled"]["roofline_fraction"], index) for index, s in enumerate(summaries, 1) if "error" not in s]
    assert len(compiled) == 3
    assert [int(layer) for layer, _ in dom.rows] == [index for _, index in sorted(compiled)]  # worst first
    names = {int(layer): cells[1] for layer, cells in dom.rows}
    assert names[2] == ODD_NAME  # text, not markup
    assert (names[1], names[4]) == (layer("res2a_branch2b").name, layer("res4a_branch2b").name)
    for layer_index, cells in dom.rows:
        modeled = summaries[int(layer_index) - 1]["modeled"]
        assert cells[2] == f"{100 * modeled['roofline_fraction']:.1f}%" and cells[3] == modeled["bound"]
    # the peers: one column per kernel, filled for the layer the bench measured
    assert "Peer <A>: cycles (xegen ÷)" in dom.headers and "Peer B: cycles (xegen ÷)" in dom.headers
    row = dict(dom.rows)["1"]
    ratio = summaries[0]["modeled"]["device_cycles"] / 1000.0
    assert row[-3:] == [f"1,000 ({ratio:.2f})", "not run", f"{ratio:.2f}"]
    assert dict(dom.rows)["4"][-3:] == ["", "", "-"]
    # every image decoded at the size the page gives it: the network and one per layer
    assert sorted(image["src"] for image in dom.images) == [
        "layer-001.png",
        "layer-002.png",
        "layer-004.png",
        "network.png",
    ]
    for image in dom.images:
        assert int(image["data-natural-width"]) == int(image["width"]) > 0


def test_a_missing_image_is_seen(report, chromium, tmp_path):
    tmp, _, _ = report
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in (tmp / "out").iterdir():
        if path.name != "layer-002.png":
            copy.joinpath(path.name).write_bytes(path.read_bytes())
    dom = dump_dom(chromium, copy / "index.html", tmp_path / "profile")
    widths = {image["src"]: int(image["data-natural-width"]) for image in dom.images}
    assert widths["layer-002.png"] == 0 and widths["network.png"] == 800


def test_the_same_summaries_give_the_same_bytes(report, tmp_path):
    tmp, summaries, peers = report
    write_report(str(tmp_path), summaries, hwlib.XELP, load_peers(str(peers)), str(peers))
    first = {path.name: path.read_bytes() for path in (tmp / "out").iterdir() if path.name != "checked.html"}
    again = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert first.keys() == again.keys() and first == again


def test_a_layer_sits_at_its_roofline_fraction_of_the_roof(report):
    """The plotted rate over the roof above the layer is roofline cycles / device cycles."""
    _, summaries, _ = report
    for index, summary in enumerate(summaries, 1):
        if "error" in summary:
            continue
        point = make_layer(index, summary, hwlib.XELP)
        modeled = summary["modeled"]
        assert point.attained / point.roofs.rate(point.intensity) == pytest.approx(
            modeled["roofline_cycles"] / modeled["device_cycles"], rel=1e-9
        )
        # the compute roof is XeLP's f32 peak: 8 FMAs x 96 EUs x 2 operations x 1.35 GHz
        assert point.roofs.compute == pytest.approx(8 * 96 * 2 * 1.35)


def test_matplotlib_is_imported_only_for_a_report():
    code = (
        "import sys; from xegen.cli import main; "
        "status = main(['conv', 'mb1ic8ih4oc8oh4kh1', '--hw', 'xelp']); "
        "print(status, 'matplotlib' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.splitlines()[-1] == "0 False", result.stdout + result.stderr


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--report-peers", "peers.json"], "--report-peers gives peers to --report: add --report DIR"),
        (["--report", "a_file"], "--report a_file: is a file, not a directory"),
        (["--report", ""], "--report needs a directory name"),
        (["--report", "out", "--no-model"], "--report shows the modeled cycles: drop --no-model"),
        (["--report", "out", "--report-peers", "a_file"], "--report-peers a_file: not JSON"),
        (
            ["--report", "out", "--report-peers", "peers.json"],
            "--report-peers peers.json: not the JSON of python bench/e2e/run.py",
        ),
        (["--report", "out", "--report-peers", "missing.json"], "--report-peers missing.json: No such file"),
    ],
)
def test_report_arguments_are_checked_before_compiling(arguments, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("a_file").write_text("text\n")
    Path("peers.json").write_text(json.dumps({"cases": [{"hw": "xelp"}]}))
    assert main(["conv", "mb1ic8ih4oc8oh4kh1", *arguments]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"xegen: error: {message}") and err.count("\n") == 1
    assert not Path("out").exists()
