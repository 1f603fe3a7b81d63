"""`xegen conv DESC`: convolution problems, their kernel IR, and checking that IR against numpy."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..conv import build_kernel, check_ir, make_problem, parse_overrides
from ..errors import Error


def _descriptors(args: argparse.Namespace) -> list[str]:
    if args.batch:
        with open(args.batch, encoding="utf-8") as handle:
            lines = [line.strip() for line in handle]
        descs = [line for line in lines if line and not line.startswith("#")]
        if args.desc:
            descs.insert(0, args.desc)
        return descs
    if not args.desc:
        raise Error("give a descriptor (e.g. mb1ic16ih8oc32oh8kh3ph1) or --batch FILE")
    return [args.desc]


def run(args: argparse.Namespace) -> int:
    overrides = parse_overrides(args.config)
    status = 0
    descriptors = _descriptors(args)
    for index, text in enumerate(descriptors):
        problem = make_problem(text, args.dir, args.dt, args.attr_post_ops, args.stag, args.wtag, args.dtag, args.mb)
        wants_kernel = args.print_ir or args.check_ir or args.print_config or args.dump_graph or not args.canonical
        if args.canonical:
            print(problem.desc)
        if not wants_kernel:
            continue
        dump = args.dump_graph
        if dump and len(descriptors) > 1:  # one numbered directory per descriptor
            dump = str(Path(dump) / f"{index:03d}")
        kernel = build_kernel(problem, args.hw, overrides, dump)
        if args.print_config or not (args.canonical or args.print_ir or args.check_ir):
            print(problem)
            print(f"config: {kernel.config}")
            print(kernel.summary())
        if args.print_ir:
            print(kernel)
        if args.check_ir:
            results = check_ir(kernel, args.seed)
            for result in results:
                print(f"{problem.desc.name or problem.desc}: {result}")
            if not all(r.ok for r in results):
                status = 1
    return status


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "conv",
        help="build a convolution kernel's IR from a benchdnn descriptor; print or check it",
        description="Parse a benchdnn convolution descriptor, build the kernel IR for a platform and "
                    "print it, or run it in the IR interpreter against a numpy reference (--check-ir). "
                    "Without --canonical/--print-ir/--check-ir, prints the problem and its configuration.",
        epilog="example: xegen conv mb1ic16ih8oc32oh8kh3ph1 --dir=BWD_D --dt=bf16 --hw=xelp --check-ir",
    )
    parser.add_argument("desc", nargs="?", metavar="DESC",
                        help='descriptor, e.g. g1mb1ic64ih56oc64oh56kh3ph1n"res2a" (defaults as in benchdnn)')
    parser.add_argument("--batch", metavar="FILE", help="also take descriptors from FILE, one per line ('#' comments)")
    parser.add_argument("--dir", default="FWD_B", metavar="DIR",
                        help="direction: FWD_B (default, with bias), FWD_D, FWD_I, BWD_D, BWD_W, BWD_WB")
    parser.add_argument("--dt", default="f32", metavar="DT",
                        help="data types: f32 (default), f16, bf16, or SRC:WEI:DST such as u8:s8:f32, s8:s8:s8")
    parser.add_argument("--stag", default="any", help="src layout tag, e.g. nhwc, nchw, nChw16c (default any)")
    parser.add_argument("--wtag", default="any", help="weights layout tag, e.g. hwio, oihw, OIhw16i16o (default any)")
    parser.add_argument("--dtag", default="any", help="dst layout tag (default any: channels last)")
    parser.add_argument("--attr-post-ops", default="", metavar="OPS", help="post-op: relu (forward only)")
    parser.add_argument("--mb", type=int, default=None, metavar="N", help="override the descriptor's minibatch")
    parser.add_argument("--hw", default="xehpg", metavar="HW", help="platform: xehpg (default), xelp, xehpc")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key (repeatable): fma, simd, tg_m, tg_n, m_tile, n_tile, k_block, "
                             "k_split, slm, slm_bufs, gmem_bufs, grf")
    parser.add_argument("--canonical", action="store_true", help="print the canonical descriptor")
    parser.add_argument("--print-config", action="store_true", help="print the problem, config and kernel summary")
    parser.add_argument("--print-ir", action="store_true", help="print the kernel IR")
    parser.add_argument("--check-ir", action="store_true",
                        help="run the kernel IR in the interpreter on random data and compare with numpy; "
                             "prints the max error, exit status 1 on a mismatch")
    parser.add_argument("--seed", type=int, default=0, help="random data seed for --check-ir (default 0)")
    parser.add_argument("--dump-graph", metavar="DIR",
                        help="write the K loop's dataflow graph before and after each scheduling transform to DIR "
                             "as Graphviz DOT (and SVG when Graphviz's dot is installed); with --batch, one "
                             "numbered subdirectory per descriptor")
    parser.set_defaults(run=run)
