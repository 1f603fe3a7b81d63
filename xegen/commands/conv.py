"""`xegen conv DESC`: compile a convolution to a native Xe kernel, verify it in the simulator, or
look at any stage on the way (descriptor, IR, each pass's output)."""

from __future__ import annotations

import argparse
import json
import textwrap
import sys
from pathlib import Path

from ..conv import build_kernel, check_ir, make_problem, parse_overrides
from ..emit.asm_printer import disassemble
from ..errors import Error
from ..pipeline import PASSES, check_pass_names, compile_problem
from ..report import format_summary, summary
from ..verify import first_group_executions, modeled_cycles, verify
from ..progress import Progress


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


def _wants_native(args: argparse.Namespace) -> bool:
    """Compile to a native kernel: asked for, or no IR-level action given (the default job)."""
    native = args.output or args.verify or args.asm or args.json or args.print_after or args.print_after_all
    ir_only = args.canonical or args.print_ir or args.check_ir or args.print_config or args.dump_graph
    return bool(native or not ir_only)


def _passes_to_print(args: argparse.Namespace) -> frozenset[str]:
    if args.print_after_all:
        return frozenset(PASSES)
    return check_pass_names([name.strip() for item in args.print_after for name in item.split(",") if name.strip()])


def _output_path(args: argparse.Namespace, index: int, kernel_name: str, batch: bool) -> Path | None:
    if not args.output:
        return None
    if not batch:
        return Path(args.output)
    folder = Path(args.output)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{index:03d}-{kernel_name}.zebin"


def run(args: argparse.Namespace) -> int:
    overrides = parse_overrides(args.config)
    printed = _passes_to_print(args)
    descriptors = _descriptors(args)
    batch = len(descriptors) > 1
    native = _wants_native(args)
    progress = Progress(len(descriptors), enabled=batch and native and not args.json)
    status, reports = 0, []
    for index, text in enumerate(descriptors):
        problem = make_problem(text, args.dir, args.dt, args.attr_post_ops, args.stag, args.wtag, args.dtag, args.mb)
        progress.start(problem.desc.name or str(problem.desc))
        if args.canonical:
            print(problem.desc)
        dump = args.dump_graph
        if dump and batch:  # one numbered directory per descriptor
            dump = str(Path(dump) / f"{index:03d}")
        if native:
            try:
                outcome, report = _compile(args, problem, overrides, printed, dump, index, batch)
            except Error as error:
                if not batch:
                    raise
                progress.clear()
                print(f"{problem.desc.name or problem.desc}: error: {error}")
                status = max(status, 1)
                continue
            status = max(status, outcome)
            reports.append(report)
        elif args.print_ir or args.check_ir or args.print_config or args.dump_graph:
            status = max(status, _ir_actions(args, problem, overrides, dump))
    progress.clear()
    if args.json:
        print(json.dumps(reports if batch else reports[0], indent=2))
    return status


def _ir_actions(args, problem, overrides, dump) -> int:
    kernel = build_kernel(problem, args.hw, overrides, dump)
    if args.print_config:
        print(problem)
        print(f"config: {kernel.config}")
        print(kernel.summary())
    if args.print_ir:
        print(kernel)
    status = 0
    if args.check_ir:
        results = check_ir(kernel, args.seed)
        for result in results:
            print(f"{problem.desc.name or problem.desc}: {result}")
        if not all(r.ok for r in results):
            status = 1
    return status


def _compile(args, problem, overrides, printed, dump, index, batch) -> tuple[int, dict]:
    def show(name: str, text: str) -> None:
        if name in printed:
            print(f"// ----- after {name} -----")
            print(text.rstrip("\n"))

    compilation = compile_problem(problem, args.hw, overrides, optimize=not args.no_optimize, show=show,
                                  dump_graph=dump)
    path = _output_path(args, index, compilation.compiled.name, batch)
    if path is not None:
        path.write_bytes(compilation.zebin())
    verification = verify(compilation, args.seed) if args.verify else None
    cycles = None
    if verification is not None:
        cycles = modeled_cycles(compilation, verification.run.executions)
    elif not args.no_model:
        cycles = modeled_cycles(compilation, first_group_executions(compilation))
    report = summary(compilation, cycles, verification)
    if path is not None:
        report["zebin"] = str(path)
    if args.asm:
        print(disassemble(compilation.compiled.code, compilation.compiled.hw, pcs=True).rstrip("\n"))
    if not args.json:
        if batch:
            print(_batch_row(report))
        else:
            print(problem)
            print(f"config: {compilation.config}")
            print(compilation.kernel.summary())
            print(format_summary(report))
            if path is not None:
                print(f"wrote {path} ({path.stat().st_size} bytes)")
    failed = verification is not None and not verification.ok
    return (1 if failed else 0), report


def _batch_row(s: dict) -> str:
    name = s["problem"]
    density = s["inner_loop_math_density"]
    verified = "" if "verify" not in s else ("  verify ok" if s["verify"]["ok"] else "  verify FAILED")
    return (f"{name}: {s['instructions']} insts, inner loop {s['inner_loop_instructions']} "
            f"(density {density if density is not None else '-'}), {s['grfs_used']} GRFs, "
            + (f", {s['modeled']['device_cycles']:.0f} cycles, {100 * s['modeled']['peak_fraction']:.1f}% of peak"
               if "modeled" in s else "") + verified)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "conv",
        help="compile a convolution (benchdnn descriptor) to a native Xe kernel; verify or inspect it",
        description=textwrap.fill(
            "Compile a benchdnn convolution descriptor for a platform: build the kernel IR, schedule "
            "it, optimize it with the e-graph rules, lower it to Xe instructions and print a summary "
            "(instructions, inner loop, sends, FMAs, GRFs, SLM, modeled cycles). -o writes the zebin, "
            "--verify runs it in the simulator against numpy, --asm disassembles it, --print-after "
            "shows a pass's output. --canonical/--print-ir/--check-ir/--print-config work on the IR "
            "alone and skip the native compile unless one of the native options is given too.", 100),
        epilog="examples:\n"
               "  xegen conv mb1ic64ih56oc64oh56kh3ph1 --hw=xehpg -o res2a.zebin --verify\n"
               "  xegen conv mb1ic16ih8oc32oh8kh3ph1 --dt=f16 --print-after=optimize,swsb\n"
               "  xegen conv --batch shapes_resnet_50 --mb=1 --dt=bf16 --json > resnet.json\n"
               "  xegen conv mb1ic16ih8oc32oh8kh3ph1 --dir=BWD_D --dt=bf16 --hw=xelp --check-ir",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("desc", nargs="?", metavar="DESC",
                        help='descriptor, e.g. g1mb1ic64ih56oc64oh56kh3ph1n"res2a" (defaults as in benchdnn)')
    parser.add_argument("--batch", metavar="FILE",
                        help="also take descriptors from FILE, one per line ('#' comments); one summary line "
                             "each, a progress bar on a terminal")
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
    native = parser.add_argument_group("native kernel")
    native.add_argument("-o", "--output", metavar="FILE",
                        help="write the zebin to FILE (with --batch: a directory, one NNN-kernel.zebin per layer)")
    native.add_argument("--verify", action="store_true",
                        help="run the kernel in the simulator (SWSB hazard checks on) on random data and compare "
                             "with numpy; exit status 1 on a mismatch or hazard")
    native.add_argument("--asm", action="store_true", help="print the kernel's disassembly (with byte addresses)")
    native.add_argument("--json", action="store_true",
                        help="print the summary as JSON (a list with --batch) instead of text")
    native.add_argument("--print-after", action="append", default=[], metavar="PASS",
                        help=f"print the output of a pass (repeatable or comma-separated): {', '.join(PASSES)}")
    native.add_argument("--print-after-all", action="store_true", help="print the output of every pass")
    native.add_argument("--no-model", action="store_true",
                        help="skip the modeled cycles (without --verify they cost a simulator run of one thread group)")
    native.add_argument("--no-optimize", action="store_true", help="skip the e-graph optimizer (for comparison)")
    ir_level = parser.add_argument_group("IR level")
    ir_level.add_argument("--canonical", action="store_true", help="print the canonical descriptor")
    ir_level.add_argument("--print-config", action="store_true", help="print the problem, config and kernel summary")
    ir_level.add_argument("--print-ir", action="store_true", help="print the kernel IR (built and scheduled)")
    ir_level.add_argument("--check-ir", action="store_true",
                          help="run the kernel IR in the interpreter on random data and compare with numpy; "
                               "prints the max error, exit status 1 on a mismatch")
    ir_level.add_argument("--dump-graph", metavar="DIR",
                          help="write the K loop's dataflow graph before and after each scheduling transform to DIR "
                               "as Graphviz DOT (and SVG when Graphviz's dot is installed); with --batch, one "
                               "numbered subdirectory per descriptor")
    parser.add_argument("--seed", type=int, default=0, help="random data seed for --verify and --check-ir (default 0)")
    parser.set_defaults(run=run)
