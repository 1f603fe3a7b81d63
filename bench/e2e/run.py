"""xegen against IGC, layer by layer of resnet_50: compile time, inner loop, modeled cycles.

For every layer of tests/data/shapes_resnet_50 at minibatch 1 (forward, one data type, one
platform), side by side in one run:

- compile time of the whole process: `xegen conv DESC -o K.zebin --no-model` against
  `ocloc compile` of the equivalent direct convolution in OpenCL C (bench/e2e/peer.py);
- inner-loop instructions and math density (FMA instructions / instructions of the loop) of both
  binaries, counted the same way (`xegen.emit.analysis` on the decoded zebins);
- modeled device cycles of both under the same model (`xegen.emit.cost` over the per-instruction
  execution counts of a simulator run of the whole grid) and the fraction of the platform's peak
  that means.  Both kernels are checked against numpy in that run.

Prints a table and writes JSON (default bench/e2e/results.json, not committed).

    python bench/e2e/run.py                               # f32 on XeHPG, every layer
    python bench/e2e/run.py --dt f16 --layers res2a,res3a --json /tmp/e2e.json
    python bench/e2e/run.py --hw xelp --dt u8:s8:f32
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.e2e import peer  # noqa: E402
from xegen import hw as hwlib  # noqa: E402
from xegen import oracles, sim  # noqa: E402
from xegen.conv import make_problem  # noqa: E402
from xegen.conv.check import compare, random_inputs  # noqa: E402
from xegen.conv.reference import convert  # noqa: E402
from xegen.emit.analysis import kernel_counts  # noqa: E402
from xegen.emit.cost import kernel_cycles  # noqa: E402
from xegen.emit.decoder import decode_with_sizes  # noqa: E402
from xegen.emit.zebin import read_zebin  # noqa: E402
from xegen.errors import Error  # noqa: E402
from xegen.pipeline import compile_problem  # noqa: E402
from xegen.report import peak_fraction  # noqa: E402
from xegen.verify import verify  # noqa: E402

SHAPES = ROOT / "tests" / "data" / "shapes_resnet_50"


def layers(selected: str) -> list[str]:
    lines = [line.strip() for line in SHAPES.read_text().splitlines()]
    descs = [line for line in lines if line and not line.startswith("#")]
    wanted = [w for w in selected.split(",") if w]
    return [d for d in descs if not wanted or any(w in d for w in wanted)]


def timed_process(argv: list[str], cwd: str) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise Error(f"{argv[0]} failed: {result.stderr.strip() or result.stdout.strip()}")
    return seconds


def binary_counts(zebin: bytes, kernel: str, hw: hwlib.Platform) -> tuple[list, dict]:
    """Counts of a binary; `math_density` is the inner loop's, or the whole kernel's when the
    compiler unrolled every loop around the multiplies (`unrolled`)."""
    instructions, sizes = decode_with_sizes(read_zebin(zebin).kernel(kernel).code, hw)
    counts = kernel_counts(instructions, sizes)
    unrolled = counts.inner is None
    density = (counts.total if unrolled else counts.inner).math_density
    return instructions, {**counts.as_dict(), "math_density": density, "unrolled": unrolled}


def xegen_side(desc: str, args, tmp: str) -> dict:
    argv = [sys.executable, "-m", "xegen", "conv", desc, "--mb", "1", "--dt", args.dt, "--hw", args.hw,
            "-o", "xegen.zebin", "--no-model"]
    seconds = timed_process(argv, tmp)
    problem = make_problem(desc, "FWD_B", args.dt, mb=1)
    compilation = compile_problem(problem, args.hw)
    zebin = compilation.zebin()
    if zebin != Path(tmp, "xegen.zebin").read_bytes():
        raise Error(f"{desc}: the command and the library compiled different bytes")
    checked = verify(compilation, seed=0)
    hw = compilation.compiled.hw
    instructions, counts = binary_counts(zebin, compilation.compiled.name, hw)
    cycles = kernel_cycles(instructions, checked.run.executions, hw)
    return {"compile_seconds": seconds, **counts, "grfs": compilation.compiled.stats.grfs_used,
            "config": str(compilation.config), "modeled": cycles.as_dict(), "device_cycles": cycles.device,
            "peak_fraction": peak_fraction(problem, hw, cycles), "verified": checked.ok}


def peer_side(desc: str, args, tmp: str) -> dict | None:
    problem = make_problem(desc, "FWD_B", args.dt, mb=1)
    if not peer.supports(problem):
        return None
    hw = hwlib.platform(args.hw)
    Path(tmp, "peer.cl").write_text(peer.opencl_source(problem))
    seconds = timed_process([oracles.find_tool("ocloc"), "compile", "-file", "peer.cl", "-device", hw.ocloc_device,
                             "-output", "peer", "-output_no_suffix", "--format", "zebin", "-q"], tmp)
    zebin = Path(tmp, "peer").read_bytes()
    tensors = random_inputs(problem, 0)
    args_in = [np.ascontiguousarray(tensors["src"].transpose(0, 2, 3, 1)),  # n h w c
               np.ascontiguousarray(tensors["wei"].transpose(2, 3, 1, 0))]  # kh kw ic oc
    dst_kind = str(problem.type_of("dst"))
    out_shape = problem.dims_of("dst")
    dst = np.zeros((out_shape[0], out_shape[2], out_shape[3], out_shape[1]),
                   dtype={"f32": np.float32, "f16": np.float16, "s32": np.int32, "s8": np.int8, "u8": np.uint8}[dst_kind])
    kernel_args = [a.reshape(-1) for a in args_in] + [dst.reshape(-1)]
    if problem.has_bias:
        kernel_args.append(np.asarray(convert(tensors["bias"], "f32"), np.float32).reshape(-1))
    global_size, local_size = peer.launch(problem)
    result = sim.run(zebin, peer.KERNEL_NAME, kernel_args, global_size, local_size, hw=hw, check_hazards=False)
    got = {"dst": dst.transpose(0, 3, 1, 2)}
    verified = all(c.ok for c in compare(problem, got, tensors))
    instructions, counts = binary_counts(zebin, peer.KERNEL_NAME, hw)
    cycles = kernel_cycles(instructions, result.executions, hw)

    return {"compile_seconds": seconds, **counts, "modeled": cycles.as_dict(), "device_cycles": cycles.device,
            "peak_fraction": peak_fraction(problem, hw, cycles), "verified": verified}


def row(name: str, ours: dict, theirs: dict | None) -> str:
    def pair(key: str, form: str) -> str:
        def show(side: dict | None) -> str:
            value = side.get(key) if side else None
            if value is None:
                return "-"
            marked = key == "math_density" and side["unrolled"]
            return format(value, form) + ("*" if marked else "")
        return f"{show(ours):>8} {show(theirs):>8}"
    verified = "ok" if ours["verified"] and (theirs is None or theirs["verified"]) else "FAILED"
    return (f"{name:<28} {pair('compile_seconds', '.2f')} {pair('inner_loop_instructions', 'd')} "
            f"{pair('math_density', '.3f')} {pair('device_cycles', '.0f')} "
            f"{pair('peak_fraction', '.1%')} {verified:>6}")


HEADER = (f"{'layer':<28} {'compile s':>17} {'inner-loop insts':>17} {'math density':>17} {'modeled cycles':>17} "
          f"{'of peak':>17} {'check':>6}\n{'':<28} " + " ".join(["   xegen      IGC"] * 5))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hw", default="xehpg", help="platform (default xehpg)")
    parser.add_argument("--dt", default="f32", help="data types, forward (default f32; f16, bf16, u8:s8:f32, ...)")
    parser.add_argument("--layers", default="", help="comma-separated substrings of layer names (default: all)")
    parser.add_argument("--json", default=str(ROOT / "bench" / "e2e" / "results.json"), help="where to write JSON")
    args = parser.parse_args()
    hw = hwlib.platform(args.hw)
    results = []
    print(f"resnet_50 forward {args.dt} at minibatch 1 on {hw.display_name}: xegen vs IGC (ocloc, OpenCL C peer)")
    print(HEADER)
    for desc in layers(args.layers):
        name = desc.split('n"')[-1].rstrip('"').replace("resnet_50:", "")
        with tempfile.TemporaryDirectory(prefix="xegen-e2e-") as tmp:
            ours = xegen_side(desc, args, tmp)
            theirs = peer_side(desc, args, tmp)
        print(row(name, ours, theirs), flush=True)
        results.append({"layer": name, "descriptor": desc, "xegen": ours, "igc": theirs})
    report = {"hw": hw.name, "dt": args.dt, "host": host.node(), "python": sys.version.split()[0],
              "ocloc": oracles.find_tool("ocloc"), "layers": results}
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print("inner-loop instructions '-': no loop around the multiplies (fully unrolled); math density then\n"
          "counts the whole kernel (marked *).  Modeled cycles: xegen.emit.cost over a simulator run of the grid.")
    print(f"wrote {args.json}")
    return 0 if all(r["xegen"]["verified"] and (r["igc"] is None or r["igc"]["verified"]) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
