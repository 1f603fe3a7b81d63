"""`xegen.conv_problem` and `xegen.compile`: the Kernel against what the command line and
independent sources say (numpy, iga64, ocloc, the interpreter)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import numpy as np
import pytest

import xegen
from xegen import hw, oracles
from xegen.cli import main
from xegen.plan import formulate
from xegen.plan.heuristic import choose_config

DESC = "mb1ic16ih6oc32oh6kh1"  # a 1x1 convolution: numpy's einsum is its reference
HW = "xehpg"


@pytest.fixture(scope="module")
def kernel() -> xegen.Kernel:
    return xegen.compile(xegen.conv_problem(DESC), hw=HW)


def cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(list(argv)) == 0
    return out.getvalue()


def test_import_xegen_loads_no_compiler():
    code = "import sys, xegen; print(sorted(m for m in sys.modules if m.startswith('xegen')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "xegen.api" not in loaded and "xegen.pipeline" not in loaded and "egglog" not in loaded
    assert hasattr(xegen, "compile") and "compile" in dir(xegen)
    with pytest.raises(AttributeError):
        _ = xegen.no_such_name


def test_the_package_is_typed():
    from pathlib import Path

    assert (Path(xegen.__file__).parent / "py.typed").is_file()


def test_conv_problem_takes_tags_post_ops_and_minibatch():
    problem = xegen.conv_problem(
        "mb4ic16ih8oc32oh8kh3ph1", dir="FWD_D", dt="bf16", tags={"src": "nchw", "wei": "oihw"}, post_ops="relu", mb=2
    )
    assert problem.desc.mb == 2 and problem.direction == "FWD_D" and problem.relu
    assert (problem.stag, problem.wtag, problem.dtag) == ("nchw", "oihw", "any")
    assert problem.layout_of("src").tag == "abcd"  # nchw in oneDNN's positional form
    with pytest.raises(xegen.Error, match="'bias' is not a tensor"):
        xegen.conv_problem(DESC, tags={"bias": "a"})


def test_the_zebin_is_the_command_lines_and_ocloc_accepts_it(kernel, tmp_path, ocloc):
    cli("conv", DESC, "--hw", HW, "-o", str(tmp_path / "cli.zebin"))
    assert kernel.zebin == (tmp_path / "cli.zebin").read_bytes()
    assert kernel.save(tmp_path / "api.zebin").read_bytes() == kernel.zebin
    valid, output = oracles.ocloc_validate(kernel.zebin)
    assert valid, output


def test_the_summary_is_the_json_summary(kernel):
    document = json.loads(cli("conv", DESC, "--hw", HW, "--json"))
    mine = kernel.summary.to_dict()
    for timing in (document, mine):
        timing.pop("compile_seconds")
    assert mine == document
    assert kernel.summary.modeled.device_cycles == document["modeled"]["device_cycles"]
    assert kernel.summary.instructions == document["instructions"]
    with pytest.raises(AttributeError, match="no 'nonsense'"):
        _ = kernel.summary.nonsense


def test_the_listing_assembles_back_to_the_code_with_iga64(kernel, iga64):
    code = kernel.compilation.compiled.code
    assert xegen.assemble(kernel.asm, hw=HW) == code
    assert oracles.iga64_assemble(xegen.disassemble(code, hw=HW), HW) == code


def test_the_launch_shape_and_arguments(kernel):
    problem = kernel.problem
    assert kernel.global_size == tuple(
        groups * items for groups, items in zip(kernel.grid, kernel.local_size, strict=True)
    )
    names = [a.name for a in kernel.arguments]
    assert names == ["src", "wei", "dst", "bias"]
    zebin = xegen.read_zebin(kernel.zebin).kernels[0]
    # where each buffer's address lands (a stateful buffer's `arg_bypointer` carries none: its
    # `buffer_address` does)
    assert [(p.arg_index, p.offset, p.size) for p in zebin.payload_arguments if p.size] == [
        (i, a.payload_offset, a.payload_size) for i, a in enumerate(kernel.arguments)
    ]
    assert zebin.execution_env.required_work_group_size == kernel.local_size
    by_name = {a.name: a for a in kernel.arguments}
    # f32 tensors: 4 bytes per element of the logical shape (channels-last layouts have no padding)
    assert by_name["src"].bytes == 4 * 1 * 16 * 6 * 6 and by_name["src"].dims == (1, 16, 6, 6)
    assert by_name["wei"].bytes == 4 * 32 * 16 and by_name["dst"].role == "output"
    assert by_name["bias"].bytes == 4 * 32 and by_name["bias"].role == "input"
    assert all(a.type == "f32" for a in kernel.arguments)
    assert by_name["src"].layout == problem.layout_of("src").tag


def test_run_matches_numpy_and_checks_its_inputs(kernel):
    rng = np.random.default_rng(5)
    src = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
    wei = rng.standard_normal((32, 16, 1, 1)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    dst = kernel.run(src=src, wei=wei, bias=bias)["dst"]
    expected = (
        np.einsum("nchw,oc->nohw", src.astype(np.float64), wei[:, :, 0, 0].astype(np.float64))
        + bias[None, :, None, None]
    )
    assert dst.shape == (1, 32, 6, 6)
    assert np.max(np.abs(dst - expected)) < 1e-4
    with pytest.raises(xegen.Error, match="'dst' is not one of them"):
        kernel.run(src=src, wei=wei, bias=bias, dst=dst)
    with pytest.raises(xegen.Error, match="'wei' has shape"):
        kernel.run(src=src, wei=wei[:16], bias=bias)
    with pytest.raises(xegen.Error, match="reads 'bias'"):
        kernel.run(src=src, wei=wei)


def test_verify_compares_with_numpy(kernel):
    verification = kernel.verify(seed=3)
    assert verification.ok and [c.name for c in verification.comparisons][0] == "dst"


def test_ir_after_each_pass_is_what_print_after_prints(kernel):
    printed = cli("conv", DESC, "--hw", HW, "--print-after=optimize,swsb")
    for name in ("optimize", "swsb"):
        text = kernel.ir_after(name)
        assert text.rstrip("\n") in printed
    assert "e-graph" in kernel.ir_after("optimize") and "for" in kernel.ir_after("build")
    with pytest.raises(xegen.ConfigError, match="unknown pass 'nope'"):
        kernel.ir_after("nope")
    unoptimized = xegen.compile(kernel.problem, hw=HW, optimize=False)
    with pytest.raises(xegen.Error, match="did not run"):
        unoptimized.ir_after("optimize")


def test_config_fixes_keys_of_the_heuristic():
    problem = xegen.conv_problem(DESC)
    assert "m_tile=8 " in xegen.compile(problem, hw="xelp", config={"m_tile": 8}).config
    assert "k_block=8 " in xegen.compile(problem, hw="xelp", config="k_block=8").config
    with pytest.raises(xegen.ConfigError, match="unknown config key 'tile'"):
        xegen.compile(problem, hw="xelp", config={"tile": 8})


def test_html_shows_the_summary(kernel):
    page = kernel._repr_html_()
    assert page.startswith("<table") and kernel.name in page and "cycles" in page
    assert str(kernel.summary.instructions) in page
    assert kernel.name in repr(kernel) and "native:" in str(kernel)


def test_run_zebin_is_xegen_run_on_buffers_laid_out_by_hand(kernel):
    rng = np.random.default_rng(7)
    src = rng.standard_normal((1, 16, 6, 6)).astype(np.float32)
    wei = rng.standard_normal((32, 16, 1, 1)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    assert [a.layout for a in kernel.arguments[:3]] == ["acdb", "cdba", "acdb"]  # nhwc, hwio, nhwc
    buffers = [
        np.ascontiguousarray(src.transpose(0, 2, 3, 1)).ravel(),
        np.ascontiguousarray(wei.transpose(2, 3, 1, 0)).ravel(),
        np.full(32 * 36, np.nan, np.float32),
        bias,
    ]
    result = xegen.run_zebin(kernel.zebin, kernel.name, buffers, kernel.global_size, kernel.local_size)
    assert result.hazards == [] and result.groups == int(np.prod(kernel.grid))
    dst = buffers[2].reshape(1, 6, 6, 32).transpose(0, 3, 1, 2)
    expected = np.einsum("nchw,oc->nohw", src.astype(np.float64), wei[:, :, 0, 0]) + bias[None, :, None, None]
    assert np.max(np.abs(dst - expected)) < 1e-4


def test_check_ir_runs_the_optimized_ir_in_the_interpreter(kernel):
    comparisons = kernel.check_ir(seed=2)
    assert comparisons and all(c.ok for c in comparisons) and comparisons[0].elements == 32 * 36


def test_graphs_are_the_dump_graph_files(kernel, tmp_path):
    graphs = kernel.graphs(tmp_path / "graphs")
    assert graphs and all(g.dot.read_text().startswith("digraph") for g in graphs)
    for graph in graphs:
        assert (graph._repr_svg_() is None) == (graph.svg is None)
        if graph.svg is not None:
            assert "<svg" in graph._repr_svg_()


def test_evaluate_is_xegen_eval():
    assert xegen.evaluate("x * 3", x=5) == 15
    assert xegen.evaluate("x + 1", x=2**31 - 1) == -(2**31)  # s32 wraps
    assert xegen.evaluate("x / 2", types={"x": "u8"}, x=255) == 127
    assert cli("eval", "-7 / 2").strip() == str(xegen.evaluate("-7 / 2")) == "-3"  # truncating division


def test_lead_compiles_the_heuristic_s_first_configuration():
    """XeLP f32 at 14x14, where the model takes another M tile than the heuristic's first:
    `lead=True` gives the first (`choose_config`), as --lead does."""
    desc = "mb1ic16ih14oc32oh14kh3ph1"
    first = choose_config(formulate(xegen.conv_problem(desc)), hw.platform("xelp"))
    lead = xegen.compile(desc, "xelp", lead=True, tuned=False)
    chosen = xegen.compile(desc, "xelp", tuned=False)
    assert lead.config == str(first) != chosen.config
    assert lead.verify().ok
