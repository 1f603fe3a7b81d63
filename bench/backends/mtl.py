"""MTL (Xe-LPG) through the vISA back end: what works and what is missing.

xegen has no MTL platform (xegen/hw.py describes XeLP, XeHPG and XeHPC), but GenX_IR finalizes
for `-platform MTL`, and Xe-LPG runs XeHPG's instruction set without XMX.  This experiment
takes a scaled resnet_50 layer planned for XeHPG without dpas (f32, or `fma=mad`), finalizes
the vISA the back end writes for it once for DG2 and once for MTL, and runs the MTL code in
the simulator as XeHPG code (the only model it has), in xegen's zebin for XeHPG:

- whether the two finalizations differ, and how many instructions of each carry SWSB
  annotations (tokens or distances);
- the values: every output against numpy with the simulator's hazard checks off (the simulator
  completes messages at issue, so missing waits do not change values);
- the hazards XeHPG's scoreboard rules find in the MTL code.

    python bench/backends/mtl.py                   # res2a_branch2b, f32
    python bench/backends/mtl.py --layer res3a_branch1 --dt f16
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conv.shapes import RESNET, scaled, short_name  # noqa: E402
from xegen.conv import make_problem  # noqa: E402
from xegen.emit.decoder import decode  # noqa: E402
from xegen.oracles import find_tool  # noqa: E402
from xegen.pipeline import compile_problem  # noqa: E402
from xegen.verify import compare_buffers, random_inputs, run_in_simulator  # noqa: E402
from xegen.visa.finalize import FINALIZER_OPTIONS  # noqa: E402


def finalize_for(text: str, platform: str) -> tuple[bytes, str]:
    """GenX_IR's code and messages for `platform` (a GenX_IR name: MTL has no xegen Platform)."""
    with tempfile.TemporaryDirectory(prefix="xegen-mtl-") as tmp:
        Path(tmp, "k.visaasm").write_text(text)
        result = subprocess.run(
            [find_tool("GenX_IR"), "k.visaasm", "-platform", platform, "-output", "-binary", *FINALIZER_OPTIONS],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        code = Path(tmp, "k.dat")
        if not code.exists():
            raise SystemExit(f"GenX_IR -platform {platform} wrote no code: {result.stdout}{result.stderr}")
        return code.read_bytes(), result.stdout + result.stderr


def annotated(instructions) -> int:
    return sum(not inst.swsb.empty for inst in instructions)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layer", default="res2a_branch2b", help="a resnet_50 layer name (scaled down)")
    parser.add_argument("--dt", default="f32", help="data types; 16-bit ones are planned with fma=mad (no XMX)")
    args = parser.parse_args(argv)
    desc = next(d for d in RESNET if args.layer in short_name(d))
    problem = make_problem(scaled(desc), "FWD_B", args.dt, mb=1)
    compilation = compile_problem(problem, "xehpg", None if args.dt == "f32" else {"fma": "mad"}, backend="visa")
    dg2 = compilation.compiled
    code, messages = finalize_for(dg2.visa, "MTL")
    mtl = decode(code, "xehpg")
    print(
        f"{short_name(desc)} {args.dt}: DG2 {len(dg2.instructions)} instructions, {annotated(dg2.instructions)} "
        f"with SWSB; MTL {len(mtl)} instructions, {annotated(mtl)} with SWSB; same bytes: {code == dg2.code}"
    )
    undecodable = sum("invalid encoding mode" in line for line in messages.splitlines())
    print(f"GenX_IR's own disassembly of its MTL code: {undecodable} 'invalid encoding mode' errors")
    kernel = dataclasses.replace(dg2.zebin_kernel, code=code)
    swapped = dataclasses.replace(
        compilation, compiled=dataclasses.replace(dg2, code=code, instructions=tuple(mtl), zebin_kernel=kernel)
    )
    tensors = random_inputs(problem, 0)
    buffers, _ = run_in_simulator(swapped, tensors, check_hazards=False)
    comparisons = compare_buffers(swapped.kernel, buffers, tensors)
    print("values in the simulator as XeHPG code, hazard checks off: " + "; ".join(map(str, comparisons)))
    try:
        _, result = run_in_simulator(swapped, tensors, check_hazards=True)
        print(f"hazards under XeHPG's scoreboard rules: {len(result.hazards)}")
    except Exception as error:  # the simulator stops on the first hazard it cannot run past
        print(f"hazards under XeHPG's scoreboard rules: {str(error).splitlines()[0]}")
    return 0 if all(c.ok for c in comparisons) else 1


if __name__ == "__main__":
    sys.exit(main())
