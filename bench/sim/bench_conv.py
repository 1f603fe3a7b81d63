"""Simulator throughput on a convolution: lane-instructions per second.

Compiles the corpus' direct NCHW convolution (tests/emit/corpus/convolution.cl, every shape
a runtime argument) with ocloc for XeLP, XeHPG and XeHPC, runs it in xegen's simulator on a
moderately large problem (default mb1 ic16 56x56 oc16 3x3 s1 p1, one work-item per output),
checks the result against numpy, and reports:

- lane-instructions per second (instructions executed x their SIMD width, summed over
  threads, divided by wall time), with and without SWSB hazard checks;
- the peer: numpy's own convolution of the same problem (einsum per filter tap), as a
  reference point for "how far is the simulator from plain numpy".

    python bench/sim/bench_conv.py                       # table, and JSON in bench/sim/results.json
    python bench/sim/bench_conv.py --ic 32 --hw dg2 --json /tmp/sim.json
"""

from __future__ import annotations

import argparse
import json
import platform as host
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from xegen import oracles, sim  # noqa: E402

SOURCE = ROOT / "tests" / "emit" / "corpus" / "convolution.cl"
DEVICES = {"xelp": "tgllp", "xehpg": "dg2", "xehpc": "pvc"}


def reference(src: np.ndarray, weights: np.ndarray, stride: int, pad: int, out_h: int, out_w: int) -> np.ndarray:
    padded = np.pad(src.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((src.shape[0], weights.shape[0], out_h, out_w))
    for kh in range(weights.shape[2]):
        for kw in range(weights.shape[3]):
            window = padded[:, :, kh : kh + stride * out_h : stride, kw : kw + stride * out_w : stride]
            out += np.einsum("nchw,kc->nkhw", window, weights[:, :, kh, kw].astype(np.float64))
    return out.astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hw", action="append", choices=sorted(DEVICES), help="platform(s); default all three")
    parser.add_argument("--mb", type=int, default=1)
    parser.add_argument("--ic", type=int, default=16)
    parser.add_argument("--oc", type=int, default=16)
    parser.add_argument("--size", type=int, default=56, help="input height and width")
    parser.add_argument("--kernel", type=int, default=3, help="filter height and width")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration (the best is kept)")
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("results.json"))
    args = parser.parse_args(argv)

    stride, pad = 1, args.kernel // 2
    out = (args.size + 2 * pad - args.kernel) // stride + 1
    rng = np.random.default_rng(0)
    src = rng.standard_normal((args.mb, args.ic, args.size, args.size)).astype(np.float32)
    weights = rng.standard_normal((args.oc, args.ic, args.kernel, args.kernel)).astype(np.float32)

    started = time.perf_counter()
    for _ in range(args.repeat):
        expected = reference(src, weights, stride, pad, out, out)
    numpy_seconds = (time.perf_counter() - started) / args.repeat
    macs = args.mb * args.oc * out * out * args.ic * args.kernel * args.kernel

    rows = []
    for name in args.hw or sorted(DEVICES):
        zebin = oracles.ocloc_compile(SOURCE.read_text(), DEVICES[name])
        for hazards in (False, True):
            best = None
            for _ in range(args.repeat):
                dst = np.zeros((args.mb, args.oc, out, out), dtype=np.float32)
                values = [
                    src,
                    weights,
                    dst,
                    args.ic,
                    args.size,
                    args.size,
                    args.oc,
                    args.kernel,
                    args.kernel,
                    stride,
                    pad,
                    out,
                    out,
                ]
                started = time.perf_counter()
                result = sim.run(
                    zebin,
                    "conv2d_nchw",
                    values,
                    (-(-out * out // 32) * 32, args.oc, args.mb),
                    (32, 1, 1),
                    name,
                    check_hazards=hazards,
                )
                seconds = time.perf_counter() - started
                error = float(np.abs(dst - expected).max())
                if best is None or seconds < best[0]:
                    best = (seconds, result, error)
            seconds, result, error = best
            rows.append(
                {
                    "platform": name,
                    "hazard_checks": hazards,
                    "simd": result.simd,
                    "threads": result.threads,
                    "instructions": result.instructions,
                    "lane_instructions": result.lane_instructions,
                    "seconds": round(seconds, 4),
                    "lane_instructions_per_second": result.lane_instructions / seconds,
                    "max_abs_error_vs_numpy": error,
                }
            )

    problem = f"mb{args.mb} ic{args.ic} {args.size}x{args.size} oc{args.oc} {args.kernel}x{args.kernel} s1 p{pad}"
    print(f"direct convolution {problem}: {macs / 1e6:.1f} M multiply-adds; numpy einsum peer {numpy_seconds:.3f} s")
    print(
        f"{'platform':8} {'hazards':8} {'SIMD':>4} {'threads':>8} {'instructions':>13} {'lane-instr':>12} "
        f"{'seconds':>8} {'M lane-instr/s':>15} {'max |err|':>10}"
    )
    for r in rows:
        print(
            f"{r['platform']:8} {'on' if r['hazard_checks'] else 'off':8} {r['simd']:>4} {r['threads']:>8} "
            f"{r['instructions']:>13} {r['lane_instructions']:>12} {r['seconds']:>8.3f} "
            f"{r['lane_instructions_per_second'] / 1e6:>15.1f} {r['max_abs_error_vs_numpy']:>10.2e}"
        )
    report = {
        "benchmark": "xegen.sim lane-instructions per second, corpus direct convolution",
        "problem": problem,
        "multiply_adds": macs,
        "numpy_peer_seconds": numpy_seconds,
        "host": {"python": host.python_version(), "machine": host.machine(), "numpy": np.__version__},
        "results": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
