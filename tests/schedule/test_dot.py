"""Pictures: DOT text of a graph, the files --dump-graph writes, SVG when Graphviz is installed."""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict

import pytest

from xegen import cli, hw, pipeline
from xegen.conv import make_problem
from xegen.errors import Error
from xegen.ir import S32, Call, For, Names, Send, Var, buffer, const, load, ptr, seq, store
from xegen.lower import RegisterAllocationError
from xegen.pipeline import build_kernel
from xegen.schedule import GraphDump, build_graph, flatten_loop, to_dot
from xegen.schedule import dot as dot_module

IDX = Var("i")
R0, R1, SRC = buffer("r0"), buffer("r1"), buffer("src")


def small_graph():
    k = Var("k")
    body = seq(
        Call(Send("load", "block", "global", S32, 8), (ptr(SRC, k * 4), ptr(R0, 0), None)),
        store(R1, 0, load(R1, 0, "s32x8") + load(R0, 0, "s32x8")),
        store(R1, 32, load(R0, 0, "s32x8") + load(R1, 0, "s32x8")),
    )
    from xegen.ir import Let

    loop = For(IDX, const(0), const(4), Let(k, IDX * 8, body))
    return build_graph(flatten_loop(loop, Names(loop)), hw.XEHPG, {"r0": "grf", "r1": "grf"})


def test_dot_text_has_every_node_and_edge_with_its_style():
    graph = small_graph()
    text = to_dot(graph, "title")
    assert text.startswith("digraph schedule {") and text.rstrip().endswith("}")
    nodes = re.findall(r"^  n(\d+) \[label=", text, re.M)
    assert sorted(map(int, nodes)) == sorted(graph.nodes)
    edges = re.findall(r"^  n(\d+) -> n(\d+) \[(.*)\];$", text, re.M)
    styles = {(int(u), int(v)): attributes for u, v, attributes in edges}
    assert "style=solid" in styles[0, 1] and 'label="RAW"' in styles[0, 1]  # load -> use, same iteration
    assert 'label="RAW/WAW d=1"' in styles[1, 1]  # the accumulation carried to the next iteration
    assert graph.has_edge(1, 0) and (1, 0) not in styles  # a carried WAR is implied: not drawn
    assert graph.has_edge(0, 2) and (0, 2) not in styles  # neither is 0 -> 2, implied by 0 -> 1 -> 2
    assert "g2r_load" in text and "header" in text and "let k = i * 8" in text
    assert text == to_dot(small_graph(), "title")  # deterministic


def test_graph_dump_writes_numbered_files(tmp_path, monkeypatch):
    monkeypatch.setattr(dot_module.shutil, "which", lambda name: None)  # as if Graphviz were missing
    dump = GraphDump(tmp_path / "graphs", "k-")
    dump.write("first", small_graph())
    dump.write("second", small_graph())
    assert sorted(p.name for p in (tmp_path / "graphs").iterdir()) == ["k-00-first.dot", "k-01-second.dot"]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed (SVG is optional)")
def test_svg_when_graphviz_is_installed(tmp_path):
    dump = GraphDump(tmp_path)
    dump.write("loop", small_graph())
    svg = (tmp_path / "00-loop.svg").read_text()
    assert "<svg" in svg and "g2r_load" in svg


def test_an_unwritable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(Error, match="--dump-graph: cannot create directory"):
        GraphDump(blocker / "sub")


def test_conv_dump_graph_writes_before_and_after_each_transform(tmp_path, capsys):
    status = cli.main(
        [
            "conv",
            "mb1ic16ih6oc32oh6kh3ph1",
            "--dt=f16",
            "--config",
            "slm=1,tg_m=2,tg_n=2,tg_k=1",
            "--dump-graph",
            str(tmp_path),
        ]
    )
    assert status == 0
    names = sorted(p.name for p in tmp_path.glob("*.dot"))
    assert names == [
        f"conv_fwd_b_f16_xehpg-{i:02d}-{step}.dot"
        for i, step in enumerate(["hoist-before", "hoist-after", "multi-buffer-before", "multi-buffer-after"])
    ]
    after = (tmp_path / names[-1]).read_text()
    assert "signal" in after and "wait" in after and "prefetch" in after and "barrier" not in after
    before = (tmp_path / names[2]).read_text()
    assert "barrier" in before and "signal" not in before
    if shutil.which("dot"):
        assert len(list(tmp_path.glob("*.svg"))) == 4
    said = capsys.readouterr().out  # the user is told where the pictures are
    assert said.startswith(f"graphs: {len(list(tmp_path.iterdir()))} files in {tmp_path}: ")
    assert all(name in said for name in names)


def test_conv_dump_graph_in_batch_mode_uses_one_directory_per_descriptor(tmp_path):
    batch = tmp_path / "shapes"
    batch.write_text("mb1ic8ih4oc8oh4kh3ph1\n# a comment\nmb1ic8ih4oc16oh4kh1\n")
    status = cli.main(["conv", "--batch", str(batch), "--dt=f32", "--dump-graph", str(tmp_path / "out")])
    assert status == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["000", "001"]
    for folder in ("000", "001"):  # f32 mad, single-buffered: hoisting is tried all the same
        assert list((tmp_path / "out" / folder).glob("*-00-hoist-before.dot"))


def test_a_configuration_given_up_for_the_registers_leaves_no_graphs(tmp_path, monkeypatch):
    attempts = []

    compile_kernel = pipeline.compile_kernel

    def fits_the_fourth_time(spec, hw, trace=None):  # the register allocator, as if three did not fit
        attempts.append(spec)
        if len(attempts) <= 3:
            raise RegisterAllocationError("kernel needs 130 GRFs, has 128", 130 * 32, 128 * 32)
        return compile_kernel(spec, hw, trace=trace)

    monkeypatch.setattr(pipeline, "compile_kernel", fits_the_fourth_time)
    # the weights' layout given: `any` would compile a second kernel in the other layout
    problem = make_problem("mb1ic16ih6oc32oh6kh3ph1", "FWD_B", "f16", wtag="cdba")
    compilation = pipeline.compile_problem(
        problem,
        "xehpg",
        # one shape of the plain product (plan=swapped would be a second kernel)
        {"plan": "gemm", "slm": 1, "tg_m": 2, "tg_n": 2, "tg_k": 1, "m_tile": 16, "n_tile": 16, "k_block": 16},
        optimize=False,
        dump_graph=tmp_path / "compiled",
    )
    assert len(compilation.fallbacks) == 3
    build_kernel(problem, "xehpg", asdict(compilation.config), dump_graph=tmp_path / "alone")
    alone = {p.name: p.read_text() for p in (tmp_path / "alone").iterdir()}
    assert alone and {p.name: p.read_text() for p in (tmp_path / "compiled").iterdir()} == alone
