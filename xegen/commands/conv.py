"""`xegen conv DESC`: compile a convolution to a native Xe kernel, verify it in the simulator, or
look at any stage on the way (descriptor, IR, each pass's output)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..build import check_ir
from ..conv import make_problem
from ..emit.asm_printer import disassemble
from ..errors import Error, UnsupportedError
from ..hw import platform
from ..modeling import modeled_cycles
from ..network_report import check_directory, load_peers, write_report
from ..pipeline import PASSES, build_kernel, check_pass_names, compile_problem
from ..plan import parse_overrides
from ..progress import Progress
from ..report import format_summary, summary
from ..verify import first_group_executions, verify

IR_OPTIONS = ("canonical", "print_ir", "check_ir", "print_config")  # the IR-level options that print


#: the benchdnn options a batch file may set for the descriptors after them (until `--reset`)
BATCH_OPTIONS = {"--attr-post-ops": "attr_post_ops", "--attr-scales": "attr_scales",
                 "--attr-zero-points": "attr_zero_points"}


@dataclass(frozen=True)
class Entry:
    """One descriptor to work on, where it came from ("FILE:LINE", or "" for DESC), and the
    options its batch file set over the command line's (argument name, value)."""

    text: str
    source: str = ""
    options: tuple[tuple[str, str], ...] = ()

    def option(self, args: argparse.Namespace, name: str) -> str:
        return dict(self.options).get(name, getattr(args, name))


def _read_batch(path: str) -> list[Entry]:
    """The descriptors of a shapes file: one per line, blank lines and `#` comments skipped."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise Error(f"{path}: line {line} is not UTF-8 text (byte 0x{data[error.start]:02x})") from None
    entries, options = [], {}
    for number, line in enumerate(text.splitlines(), 1):
        words, source = line.split(), f"{path}:{number}"
        if not words or words[0].startswith("#"):
            continue
        while words and words[0].startswith("--"):  # as benchdnn: an option holds for what follows
            options = _batch_option(words.pop(0), options, source)
        if words:
            entries.append(Entry(" ".join(words), source, tuple(sorted(options.items()))))
    if not entries:
        raise Error(f"{path}: no descriptors (only blank lines and # comments)")
    return entries


def _batch_option(word: str, options: dict[str, str], source: str) -> dict[str, str]:
    name, _, value = word.partition("=")
    if name == "--reset" and not value:
        return {}
    if name not in BATCH_OPTIONS:
        raise Error(f"{source}: '{word}' is not an option a batch line may set "
                    f"(known: {', '.join(BATCH_OPTIONS)}, --reset)")
    return {**options, BATCH_OPTIONS[name]: value}


def _entries(args: argparse.Namespace) -> list[Entry]:
    given = [Entry(args.desc)] if args.desc else []
    if args.batch is not None:
        return given + _read_batch(args.batch)
    if not given:
        raise Error("give a descriptor (e.g. mb1ic16ih8oc32oh8kh3ph1) or --batch FILE")
    return given


def _wants_native(args: argparse.Namespace) -> bool:
    """Compile to a native kernel: asked for, or no IR-level action given (the default job)."""
    native = (args.output is not None or args.verify or args.asm or args.json or args.print_after
              or args.print_after_all or args.report is not None)
    ir_only = any(getattr(args, name) for name in IR_OPTIONS) or args.dump_graph is not None
    return bool(native or not ir_only)


def _check_arguments(args: argparse.Namespace) -> None:
    """Refuse combinations that would silently do nothing or break --json's output."""
    for option, value in (("-o", args.output), ("--dump-graph", args.dump_graph), ("--batch", args.batch)):
        if value is not None and not value.strip():
            raise Error(f"{option} needs a name, not an empty string")
    if args.output:  # before a compile that may take a minute, not after
        output = Path(args.output)
        if args.batch is not None and output.exists() and not output.is_dir():
            raise Error(f"-o {args.output}: with --batch, -o names a directory, and this is a file")
        if args.batch is None and output.is_dir():
            raise Error(f"-o {args.output}: is a directory, not a file name")
        if args.batch is None and not output.resolve().parent.is_dir():
            raise Error(f"-o {args.output}: directory {output.parent} does not exist")
    if args.report is not None:
        check_directory(args.report)
        platform(args.hw)  # a platform the report can draw roofs of
        if args.no_model:
            raise Error("--report shows the modeled cycles: drop --no-model")
    elif args.report_peers is not None:
        raise Error("--report-peers gives peers to --report: add --report DIR")
    if args.json:
        printing = [f"--{name.replace('_', '-')}" for name in IR_OPTIONS if getattr(args, name)]
        if printing:
            raise Error(f"--json prints one JSON document; {printing[0]} prints text (run it separately)")


def _passes_to_print(args: argparse.Namespace) -> frozenset[str]:
    if args.print_after_all:
        return frozenset(name for name in PASSES if not (args.no_optimize and name == "optimize"))
    names = [name.strip() for item in args.print_after for name in item.split(",")]
    if any(not name for name in names):
        raise Error(f"--print-after needs pass names (passes: {', '.join(PASSES)})")
    if args.no_optimize and "optimize" in names:
        raise Error("--print-after=optimize: the optimize pass does not run with --no-optimize")
    return check_pass_names(names)


def _output_path(args: argparse.Namespace, index: int, kernel_name: str, batch: bool) -> Path | None:
    if args.output is None:
        return None
    if not batch:
        return Path(args.output)
    folder = Path(args.output)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{index:03d}-{kernel_name}.zebin"


@dataclass
class _Run:
    """What `xegen conv` was asked, and what it has gathered so far."""

    args: argparse.Namespace
    overrides: dict
    printed: frozenset[str]
    batch: bool
    native: bool
    progress: Progress
    status: int = 0

    def say(self, text: str) -> None:
        """A line on standard output, with the progress bar erased first."""
        self.progress.clear()
        print(text)

    def failed(self, entry: Entry, error: Error, problem=None) -> dict:
        """Report a layer that failed in its row (on standard error with --json), named by its
        FILE:LINE and, once parsed, its problem; the exit status becomes 1.  Returns its JSON entry."""
        names = [entry.source] if entry.source else []
        if problem is not None:
            names.append(problem.desc.name or str(problem.desc))
        line = f"{': '.join(names or [entry.text])}: error: {error}"
        if self.args.json:
            self.progress.clear()
            sys.stderr.write(line + "\n")
        else:
            self.say(line)
        self.status = max(self.status, 1)
        result = {"descriptor": entry.text}
        if entry.source:
            result["source"] = entry.source
        if problem is not None:
            result["problem"] = str(problem.desc)
        result["error"] = str(error)
        return result


def run(args: argparse.Namespace) -> int:
    _check_arguments(args)
    entries = _entries(args)
    batch = args.batch is not None
    native = _wants_native(args)
    peers = load_peers(args.report_peers) if args.report_peers is not None else None  # before compiling
    state = _Run(args, parse_overrides(args.config), _passes_to_print(args), batch, native,
                 Progress(len(entries), enabled=batch and native and not args.json))
    reports = []
    for index, entry in enumerate(entries):
        state.progress.start(entry.text)
        try:
            report = _layer(state, index, entry)
        except Error as error:
            if not batch:
                raise
            report = state.failed(entry, error)
        if report is not None:
            reports.append(report)
    state.progress.clear()
    if args.report is not None:
        _write_report(state, reports, peers)
    if args.json:
        print(json.dumps(reports if batch else reports[0], indent=2))
    return state.status


def _write_report(state: _Run, reports: list[dict], peers) -> None:
    args = state.args
    options = {"post_ops": args.attr_post_ops, "stag": args.stag, "wtag": args.wtag, "dtag": args.dtag}
    progress = Progress(len(reports) + 1, enabled=state.progress.enabled)
    page = write_report(args.report, reports, platform(args.hw), peers, args.report_peers, options, progress)
    done = f"wrote {page} ({sum(1 for r in reports if 'error' not in r)} layers, worst roofline fraction first)"
    if args.json:
        sys.stderr.write(done + "\n")
    else:
        state.say(done)


def _layer(state: _Run, index: int, entry: Entry) -> dict | None:
    """Everything asked for one descriptor; the native summary (None without a native compile)."""
    args = state.args
    problem = make_problem(entry.text, args.dir, args.dt, entry.option(args, "attr_post_ops"), args.stag, args.wtag,
                           args.dtag, args.mb, entry.option(args, "attr_scales"),
                           entry.option(args, "attr_zero_points"))
    if args.canonical:
        state.say(str(problem.desc))
    dump = args.dump_graph
    if dump is not None and state.batch:  # one numbered directory per descriptor
        dump = str(Path(dump) / f"{index:03d}")
    try:
        if args.print_config or args.print_ir or args.check_ir or (dump is not None and not state.native):
            _ir_actions(state, problem, None if state.native else dump)  # a native compile dumps its own
        if state.native:
            report = _compile(state, problem, dump, index)
            return {"source": entry.source, **report} if entry.source else report
    except Error as error:
        if not state.batch:
            raise
        return state.failed(entry, error, problem)
    return None


def _ir_actions(state: _Run, problem, dump) -> None:
    args = state.args
    kernel = build_kernel(problem, args.hw, state.overrides, dump)
    if args.print_config:
        state.say(f"{problem}\nconfig: {kernel.config}\n{kernel.summary()}")
    if args.print_ir:
        state.say(str(kernel))
    if dump is not None:
        drawn = sorted(Path(dump).glob(f"{kernel.name}-*"))
        state.say(f"graphs: {len(drawn)} files in {dump}: " + ", ".join(path.name for path in drawn))
    if args.check_ir:
        results = check_ir(kernel, args.seed)
        for result in results:
            state.say(f"{problem.desc.name or problem.desc}: {result}")
        if not all(r.ok for r in results):
            state.status = max(state.status, 1)


def _compile(state: _Run, problem, dump, index) -> dict:
    args = state.args
    passes: dict[str, str] = {}

    def show(name: str, text: str) -> None:
        if name in state.printed:
            if args.json:
                passes[name] = text
            else:
                state.say(f"// ----- after {name} -----\n{text.rstrip(chr(10))}")

    compilation = compile_problem(problem, args.hw, state.overrides, optimize=not args.no_optimize,
                                  show=show if state.printed else None,  # (rendering a pass's output costs)
                                  dump_graph=dump)
    path = _output_path(args, index, compilation.compiled.name, state.batch)
    if path is not None:
        path.write_bytes(compilation.zebin())
    verification = verify(compilation, args.seed) if args.verify else None
    cycles, counts = None, "static"
    if not args.no_model:
        try:
            executions = compilation.compiled.executions(compilation.kernel.grid)
        except UnsupportedError:  # a branch on loaded data: only a run counts it
            executions, counts = first_group_executions(compilation), "simulator"
        cycles = modeled_cycles(compilation, executions)
    report = summary(compilation, cycles, verification, counts)
    if cycles is not None and verification is not None:
        # the static counts are the simulator's, or the model is not what it claims
        report["verify"]["static_counts_match"] = executions == verification.run.executions
        if not report["verify"]["static_counts_match"]:
            state.status = max(state.status, 1)
    if path is not None:
        report["zebin"] = str(path)
    listing = disassemble(compilation.compiled.code, compilation.compiled.hw, pcs=True).rstrip("\n") \
        if args.asm else None
    if verification is not None and not verification.ok:
        state.status = max(state.status, 1)
    if args.json:
        return {**report, **({"after": passes} if passes else {}), **({"asm": listing} if listing else {})}
    if listing is not None:
        state.say(listing)
    if state.batch:
        state.say(_batch_row(report))
    else:
        state.say(f"{problem}\nconfig: {compilation.config}\n{compilation.kernel.summary()}\n{format_summary(report)}")
        if path is not None:
            state.say(f"wrote {path} ({path.stat().st_size} bytes)")
    return report


def _batch_row(s: dict) -> str:
    density = s["inner_loop_math_density"]
    parts = [f"{s['instructions']} insts",
             f"inner loop {s['inner_loop_instructions']} (density {density if density is not None else '-'})",
             f"{s['grfs_used']} GRFs"]
    if "modeled" in s:
        m = s["modeled"]
        parts += [f"{m['device_cycles']:.0f} cycles ({m['bound']})", f"{100 * m['roofline_fraction']:.1f}% of roofline",
                  f"{100 * m['peak_fraction']:.1f}% of peak"]
    if "verify" in s:
        parts.append("verify ok" if s["verify"]["ok"] else "verify FAILED")
    return f"{s['problem']}: " + ", ".join(parts)


def _seed(text: str) -> int:
    """--seed: a non-negative integer (numpy's generators take no negative seeds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: the seed must be at least 0")
    return value


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
               "  xegen conv --batch shapes_resnet_50 --mb=1 --hw=xelp --report resnet50-xelp\n"
               "  xegen conv mb1ic16ih8oc32oh8kh3ph1 --dir=BWD_D --dt=bf16 --hw=xelp --check-ir",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("desc", nargs="?", metavar="DESC",
                        help='descriptor, e.g. g1mb1ic64ih56oc64oh56kh3ph1n"res2a" (defaults as in benchdnn)')
    parser.add_argument("--batch", metavar="FILE",
                        help="also take descriptors from FILE, one per line ('#' comments); one row each, a "
                             "progress bar on a terminal; a bad line or failing layer is reported in its row "
                             "(FILE:LINE) and the run goes on, exit status 1; as in benchdnn, --attr-post-ops=, "
                             "--attr-scales= and --attr-zero-points= before a descriptor set it for the lines "
                             "after (--reset: back to the command line's)")
    parser.add_argument("--dir", default="FWD_B", metavar="DIR",
                        help="direction: FWD_B (default, with bias), FWD_D, FWD_I, BWD_D, BWD_W, BWD_WB")
    parser.add_argument("--dt", default="f32", metavar="DT",
                        help="data types: f32 (default), f16, bf16, or SRC:WEI:DST such as u8:s8:f32, s8:s8:s8")
    parser.add_argument("--stag", default="any", help="src layout tag, e.g. nhwc, nchw, nChw16c (default any)")
    parser.add_argument("--wtag", default="any", help="weights layout tag, e.g. hwio, oihw, OIhw16i16o (default any)")
    parser.add_argument("--dtag", default="any", help="dst layout tag (default any: channels last)")
    parser.add_argument("--attr-post-ops", default="", metavar="OPS",
                        help="post-op chain as benchdnn spells it, ops joined by '+' (forward only): "
                             "sum[:SCALE[:ZERO_POINT[:DT]]], ELTWISE[:ALPHA[:BETA[:SCALE]]] (relu, clip, linear, ...), "
                             "BINARY:DT[:POLICY[:TAG]] (add, sub, mul, min, max, ge, ...), prelu[:POLICY]")
    parser.add_argument("--attr-scales", default="", metavar="SCALES",
                        help="int8 scales as benchdnn spells them, ARG:POLICY[:SCALE] joined by '+': "
                             "src:common:S, wei:common:S or wei:per_oc, dst:common:S")
    parser.add_argument("--attr-zero-points", default="", metavar="ZPS",
                        help="int8 zero points as benchdnn spells them: dst:common:Z or dst:per_oc")
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
                        help="print the summary as one JSON document on standard output (a list with --batch; "
                             "--asm and --print-after go in it as 'asm' and 'after'); errors go to standard error")
    native.add_argument("--print-after", action="append", default=[], metavar="PASS",
                        help=f"print the output of a pass (repeatable or comma-separated): {', '.join(PASSES)}")
    native.add_argument("--print-after-all", action="store_true", help="print the output of every pass that runs")
    native.add_argument("--report", metavar="DIR",
                        help="write DIR/index.html and its PNG plots: each layer on the platform's roofline, sorted "
                             "worst roofline fraction first, with its modeled terms (and its peers with --report-peers)")
    native.add_argument("--report-peers", metavar="FILE",
                        help="the JSON python bench/e2e/run.py wrote: its peer kernels' numbers beside each layer of "
                             "--report that it measured (the same problem on the same platform)")
    native.add_argument("--no-model", action="store_true",
                        help="skip the modeled cycles (counted from the kernel's loops, no simulator run)")
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
    parser.add_argument("--seed", type=_seed, default=0,
                        help="random data seed (at least 0) for --verify and --check-ir (default 0)")
    parser.set_defaults(run=run)
