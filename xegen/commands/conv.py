"""`xegen conv DESC`: compile a convolution to a native Xe kernel, verify it in the simulator, or
look at any stage on the way (descriptor, IR, each pass's output)."""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..cache import Hit, KernelCache, make_key
from ..errors import Error, UnsupportedError
from ..files import MiB, read_text
from ..passnames import BACKEND_PASSES, BACKENDS, PASSES, check_pass_names
from ..progress import Progress
from ..tune.paths import default_path

if TYPE_CHECKING:
    from ..tune.database import Database
    from ..tune.tuned import Tuned

# The compiler's modules take about two seconds to import, more than a whole run that the kernel
# cache answers: this module imports them (even hw.py, 10 ms of platform records) in the
# functions that need them, not at its top.

IR_OPTIONS = ("canonical", "print_ir", "check_ir", "print_config", "print_space")  # the IR-level options that print
MAX_BATCH_BYTES = 4 * MiB  # ~60,000 descriptors


#: the benchdnn options a batch file may set for the descriptors after them (until `--reset`)
BATCH_OPTIONS = {
    "--attr-post-ops": "attr_post_ops",
    "--attr-scales": "attr_scales",
    "--attr-zero-points": "attr_zero_points",
}


@dataclass(frozen=True)
class Entry:
    """One descriptor to work on, where it came from ("FILE:LINE", or "" for DESC), and the
    options its batch file set over the command line's (argument name, value)."""

    text: str
    source: str = ""
    options: tuple[tuple[str, str], ...] = ()

    def option(self, args: argparse.Namespace, name: str) -> str:
        return dict(self.options).get(name, getattr(args, name))

    def problem(self, args: argparse.Namespace):
        """The problem this descriptor names under the command line's options and its own."""
        from ..conv import make_problem  # (slow to import: see the top)

        return make_problem(
            self.text,
            args.dir,
            args.dt,
            self.option(args, "attr_post_ops"),
            args.stag,
            args.wtag,
            args.dtag,
            args.mb,
            self.option(args, "attr_scales"),
            self.option(args, "attr_zero_points"),
        )


def read_batch(path: str) -> list[Entry]:
    """The descriptors of a shapes file: one per line, blank lines and `#` comments skipped."""
    text = read_text(path, MAX_BATCH_BYTES, "--batch files")
    entries: list[Entry] = []
    options: dict[str, str] = {}
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
        raise Error(
            f"{source}: '{word}' is not an option a batch line may set (known: {', '.join(BATCH_OPTIONS)}, --reset)"
        )
    return {**options, BATCH_OPTIONS[name]: value}


def entries(args: argparse.Namespace) -> list[Entry]:
    given = [Entry(args.desc)] if args.desc else []
    if args.batch is not None:
        return given + read_batch(args.batch)
    if not given:
        raise Error("give a descriptor (e.g. mb1ic16ih8oc32oh8kh3ph1) or --batch FILE")
    return given


def _wants_native(args: argparse.Namespace) -> bool:
    """Compile to a native kernel: asked for, or no IR-level action given (the default job)."""
    native = (
        args.output is not None
        or args.verify
        or args.run_on_device
        or args.asm
        or args.json
        or args.print_after
        or args.print_after_all
        or args.report is not None
    )
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
    if args.verify_long and not args.verify:
        raise Error("--verify-long goes with --verify")
    if args.ray is not None and args.dump_graph is not None:
        raise Error("--dump-graph writes on the machine that compiles: not with --ray")
    if args.jobs < 1:
        raise Error(f"-j {args.jobs}: at least one worker")
    if args.report is not None:
        from ..hw import platform  # (slow to import: see the top)
        from ..network_report import check_directory  # (slow to import: see the top)

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
    other = {name for backend, names in BACKEND_PASSES.items() if backend != args.backend for name in names}
    if args.print_after_all:
        return frozenset(name for name in PASSES if not (args.no_optimize and name == "optimize") and name not in other)
    names = [name.strip() for item in args.print_after for name in item.split(",")]
    if any(not name for name in names):
        raise Error(f"--print-after needs pass names (passes: {', '.join(PASSES)})")
    if args.no_optimize and "optimize" in names:
        raise Error("--print-after=optimize: the optimize pass does not run with --no-optimize")
    chosen = check_pass_names(names)
    skipped = sorted(chosen & other)
    if skipped:
        raise Error(f"--print-after={skipped[0]}: that pass does not run with --backend {args.backend}")
    return chosen


def _output_path(args: argparse.Namespace, index: int, kernel_name: str, batch: bool) -> Path | None:
    if args.output is None:
        return None
    if not batch:
        return Path(args.output)
    return Path(args.output) / f"{index:03d}-{kernel_name}.zebin"


@dataclass(frozen=True)
class Task:
    """One descriptor for `run_layer`, which may run in another process or on another machine:
    everything it needs travels with it (the tuned configuration was looked up by the driver)."""

    args: argparse.Namespace
    index: int
    entry: Entry
    batch: bool
    native: bool
    tuned: Tuned | None = None
    cache_key: str | None = None  # where the native kernel goes in the kernel cache (None: not cached)
    hit: Hit | None = None  # the kernel cache's entry: no compile


@dataclass
class Output:
    """What one descriptor printed, its JSON report, the files to write and its exit status."""

    lines: list[tuple[str, str]] = field(default_factory=list)  # (stdout or stderr, text)
    report: dict | None = None
    files: list[tuple[str, bytes]] = field(default_factory=list)
    status: int = 0
    error: Error | None = None  # not in a batch: the error ends the command


class _Run:
    """One descriptor's work: what it was asked and what it has gathered so far."""

    def __init__(self, task: Task):
        self.task, self.args, self.batch, self.native = task, task.args, task.batch, task.native
        self.printed = _passes_to_print(self.args)
        self.output = Output()

    @functools.cached_property
    def overrides(self) -> dict:
        from ..plan import parse_overrides  # (slow to import: see the top)

        return parse_overrides(self.args.config)

    def say(self, text: str) -> None:
        self.output.lines.append(("stdout", text))

    def fail(self) -> None:
        """The exit status becomes 1 (a mismatch, a hazard, a failed layer of a batch)."""
        self.output.status = 1

    def failed(self, error: Error, problem=None) -> dict:
        """Report a layer that failed in its row (on standard error with --json), named by its
        FILE:LINE and, once parsed, its problem; the exit status becomes 1.  Returns its JSON entry."""
        entry = self.task.entry
        names = [entry.source] if entry.source else []
        if problem is not None:
            names.append(problem.desc.name or str(problem.desc))
        line = f"{': '.join(names or [entry.text])}: error: {error}"
        self.output.lines.append(("stderr" if self.args.json else "stdout", line))
        self.fail()
        result = {"descriptor": entry.text}
        if entry.source:
            result["source"] = entry.source
        if problem is not None:
            result["problem"] = str(problem.desc)
        result["error"] = str(error)
        return result


def run_layer(task: Task) -> Output:
    """Everything asked for one descriptor (in whichever process runs it)."""
    state = _Run(task)
    try:
        report = _layer(state, task.index, task.entry)
    except Error as error:
        if not task.batch:
            state.output.error = error
            return state.output
        report = state.failed(error)
    state.output.report = report
    return state.output


def run(args: argparse.Namespace) -> int:
    _check_arguments(args)
    layers = entries(args)
    batch = args.batch is not None
    native = _wants_native(args)
    _passes_to_print(args)
    cache = _kernel_cache(args, native)
    keys: list[str | None] = [_cache_key(args, entry) if cache else None for entry in layers]
    hits = [_answer(cache.get(key)) if cache and key else None for key in keys]
    if not all(hits):  # something to compile
        from ..plan import parse_overrides  # (slow to import: see the top)

        parse_overrides(args.config)  # bad options fail before any work (each layer parses them again)
    peers = None
    if args.report_peers is not None:  # read before compiling
        from ..network_report import load_peers  # (slow to import: see the top)

        peers = load_peers(args.report_peers)
    database = _tuning_database(args) if native and not all(hits) else None
    tasks = [
        Task(args, index, entry, batch, native, None if hit else _tuned(database, args, entry), key, hit)
        for index, (entry, key, hit) in enumerate(zip(layers, keys, hits, strict=True))
    ]
    progress = Progress(len(tasks), enabled=batch and native and not args.json)
    reports, status = [], 0
    for output in _outputs(args, tasks, batch, progress):
        progress.clear()
        for path, data in output.files:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(data)
        for stream, text in output.lines:
            print(text, file=sys.stderr if stream == "stderr" else sys.stdout)
        if output.error is not None:
            raise output.error
        status = max(status, output.status)
        if output.report is not None:
            reports.append(output.report)
    progress.clear()
    if args.report is not None:
        _write_report(args, reports, peers, progress.enabled)
    if args.json:
        print(json.dumps(reports if batch else reports[0], indent=2))
    return status


def _outputs(args, tasks: list[Task], batch: bool, progress: Progress):
    """The tasks' outputs in their order: run here one by one, or on the backend `-j`/`--ray` name
    (outputs kept until those before them are in)."""
    if not batch or (args.jobs == 1 and args.ray is None) or all(task.hit for task in tasks):
        for task in tasks:
            progress.start(task.entry.text)
            yield run_layer(task)
        return
    from ..tune.backends import Lost, make_backend  # (slow to import: see the top)

    backend = make_backend(args.jobs, args.ray, function=run_layer)
    try:
        for index, task in enumerate(tasks):
            if task.hit is None:  # the cache's answers are read here
                backend.submit(index, task)
        finished: dict[int, Output] = {}
        done = sum(1 for task in tasks if task.hit)
        for turn in range(len(tasks)):
            if tasks[turn].hit is not None:
                yield run_layer(tasks[turn])
                continue
            while turn not in finished:
                index, output = backend.next()
                if isinstance(output, Lost):
                    output = _lost(tasks[index], output.reason)
                done += 1
                progress.finished(done, len(tasks), tasks[index].entry.text)
                finished[index] = output
            yield finished.pop(turn)
    finally:
        backend.close()


def _lost(task: Task, reason: str) -> Output:
    """The row of a layer whose worker kept dying."""
    state = _Run(task)
    state.output.report = state.failed(Error(reason))
    return state.output


def _tuning_path(args) -> Path | None:
    """The tuning database `xegen conv` reads, unless --no-tuned or --config say otherwise."""
    if args.no_tuned or args.config:
        return None
    return Path(args.db or default_path())


def _tuning_database(args) -> Database | None:
    from ..tune.database import Database  # (slow to import: see the top)

    path = _tuning_path(args)
    return None if path is None else Database.existing(path)


def _tuned(database: Database | None, args, entry: Entry) -> Tuned | None:
    if database is None:
        return None
    from ..hw import platform  # (slow to import: see the top)

    try:
        problem = entry.problem(args)
        hw = platform(args.hw)
    except Error:
        return None  # the layer reports its own error
    found = database.lookup(problem, hw.name)
    if found is None:
        return None
    from ..tune.tuned import Tuned  # (slow to import: see the top)

    return Tuned(found, str(database.path))


#: options whose output the kernel cache does not hold: with any of them, every layer compiles
UNCACHED = ("verify", "run_on_device", "asm", "print_after", "print_after_all", "dump_graph", *IR_OPTIONS)


def _kernel_cache(args: argparse.Namespace, native: bool) -> KernelCache | None:
    """The kernel cache, or None when it is not used: --no-cache, no native kernel, or an option
    that needs the compilation itself (its IR, its disassembly, a run)."""
    if args.no_cache or not native or any(getattr(args, name) for name in UNCACHED):
        return None
    return KernelCache(args.cache_dir)


def _cache_key(args: argparse.Namespace, entry: Entry) -> str:
    """The key of a layer's kernel: the request as given (the descriptor and every option that
    makes the problem, the platform, the configuration and what the summary holds) and the tuning
    database it would read (its files' size and time: a tuner's write changes the key).  Keyed
    by the request rather than the canonical problem, which takes the compiler's imports."""
    problem_options = ("dir", "dt", "stag", "wtag", "dtag", "mb", "attr_post_ops", "attr_scales", "attr_zero_points")
    tuning = _tuning_path(args)
    fields = {
        "command": "conv",
        "descriptor": entry.text,
        **{name: entry.option(args, name) for name in problem_options},
        "hw": args.hw,
        "config": args.config,
        "optimize": not args.no_optimize,
        "model": not args.no_model,
        "lead": args.lead,
        "tuning": None if tuning is None else [_file_state(tuning), _file_state(Path(f"{tuning}-wal"))],
    }
    if args.backend != "native":  # another back end's kernel, and the finalizer installed (native keys unchanged)
        finalizer = shutil.which("GenX_IR")
        fields.update(backend=args.backend, finalizer=None if finalizer is None else _file_state(Path(finalizer)))
    return make_key(fields)


def _answer(hit: Hit | None) -> Hit | None:
    """A cache entry that holds what `_cached` reads (else a miss: compiled and stored again)."""
    if hit is None:
        return None
    data = hit.data
    usable = (
        isinstance(data.get("report"), dict)
        and isinstance(data.get("text"), str)
        and isinstance(data.get("kernel"), str)
    )
    return hit if usable else None


def _file_state(path: Path) -> list | None:
    try:
        state = path.stat()
    except OSError:
        return None
    return [str(path.resolve()), state.st_size, state.st_mtime_ns]


def _write_report(args, reports: list[dict], peers, show_progress: bool) -> None:
    from ..hw import platform  # (slow to import: see the top)
    from ..network_report import write_report  # (slow to import: see the top)

    options = {"post_ops": args.attr_post_ops, "stag": args.stag, "wtag": args.wtag, "dtag": args.dtag}
    progress = Progress(len(reports) + 1, enabled=show_progress)
    page = write_report(args.report, reports, platform(args.hw), peers, args.report_peers, options, progress)
    done = f"wrote {page} ({sum(1 for r in reports if 'error' not in r)} layers, worst roofline fraction first)"
    print(done, file=sys.stderr if args.json else sys.stdout)


def _layer(state: _Run, index: int, entry: Entry) -> dict | None:
    """Everything asked for one descriptor; the native summary (None without a native compile)."""
    args = state.args
    if state.task.hit is not None:
        report = _cached(state, index, state.task.hit)
        return {"source": entry.source, **report} if entry.source else report
    problem = entry.problem(args)
    if args.canonical:
        state.say(str(problem.desc))
    dump = args.dump_graph
    if dump is not None and state.batch:  # one numbered directory per descriptor
        dump = str(Path(dump) / f"{index:03d}")
    try:
        if args.print_space:
            from ..tune.space import format_space  # (slow to import: see the top)

            state.say(format_space(problem, args.hw, state.overrides))
        if args.print_config or args.print_ir or args.check_ir or (dump is not None and not state.native):
            _ir_actions(state, problem, None if state.native else dump)  # a native compile dumps its own
        if state.native:
            report = _compile(state, problem, dump, index)
            return {"source": entry.source, **report} if entry.source else report
    except Error as error:
        if not state.batch:
            raise
        return state.failed(error, problem)
    return None


def _ir_actions(state: _Run, problem, dump) -> None:
    from ..build import check_ir  # (slow to import: see the top)
    from ..pipeline import build_kernel, build_lead  # (slow to import: see the top)

    args = state.args
    kernel = (build_lead if args.lead else build_kernel)(problem, args.hw, state.overrides, dump)
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
            state.fail()


def _compile(state: _Run, problem, dump, index) -> dict:
    from ..emit.asm_printer import disassemble  # (slow to import: see the top)
    from ..modeling import modeled_cycles  # (slow to import: see the top)
    from ..report import format_summary, summary  # (slow to import: see the top)
    from ..tune.tuned import compile_tuned, describe  # (slow to import: see the top)
    from ..verify import check_verify_time, first_group_executions, verify  # (slow to import: see the top)
    from ..visa import VisaCompiledKernel  # (slow to import: see the top)

    args = state.args
    passes: dict[str, str] = {}

    def show(name: str, text: str) -> None:
        if name in state.printed:
            if args.json:
                passes[name] = text
            else:
                state.say(f"// ----- after {name} -----\n{text.rstrip(chr(10))}")

    compilation, tuned = compile_tuned(
        problem,
        args.hw,
        state.overrides,
        state.task.tuned,
        optimize=not args.no_optimize,
        show=show if state.printed else None,  # (rendering a pass's output costs)
        dump_graph=dump,
        backend=args.backend,
        choose=not args.lead,
    )
    path = _output_path(args, index, compilation.compiled.name, state.batch)
    if path is not None:
        state.output.files.append((str(path), compilation.zebin()))
    if args.verify:  # a long run says so first; one of hours is refused unless --verify-long
        seconds = check_verify_time(compilation, args.verify_long)
        if seconds > 60:  # at once, not with the layer's output: the run is about to take minutes
            sys.stderr.write(f"xegen: note: --verify: about {seconds / 60:.0f} minutes of simulation\n")
    verification = verify(compilation, args.seed) if args.verify else None
    cycles, counts = None, "static"
    if not args.no_model:
        try:
            executions = compilation.compiled.executions(compilation.kernel.grid)
        except UnsupportedError:  # a branch on loaded data, or the vISA back end's branches: a run counts
            executions, counts = (
                (verification.run.executions if verification is not None else first_group_executions(compilation)),
                "simulator",
            )
        cycles = modeled_cycles(compilation, executions)
    report = summary(compilation, cycles, verification, counts)
    if args.backend != "native":  # (the native back end's summaries stay as they were)
        report["backend"] = args.backend
    if tuned is not None:
        report["tuned"] = tuned
    if cycles is not None and verification is not None and counts == "static":
        # the static counts are the simulator's, or the model is not what it claims
        report["verify"]["static_counts_match"] = executions == verification.run.executions
        if not report["verify"]["static_counts_match"]:
            state.fail()
    about = f"\n{describe(tuned)}" if tuned is not None else ""
    text = f"{problem}\nconfig: {compilation.config}{about}\n{compilation.kernel.summary()}\n{format_summary(report)}"
    if state.task.cache_key is not None:  # (only what the cache can answer gets a key: no run, no listing)
        KernelCache(args.cache_dir).put(
            state.task.cache_key,
            compilation.zebin(),
            {"kernel": compilation.compiled.name, "report": report, "text": text},
        )
    if path is not None:
        report["zebin"] = str(path)
    if args.run_on_device:
        from ..api import Kernel  # the API and the OpenCL runtime: only when asked for

        device_run = Kernel(compilation).verify_on_device(args.seed)
        report["device"] = device_run.to_json()
        if not device_run.ok:
            state.fail()
    listing = None
    if args.asm:  # the vISA back end shows the vISA it handed to the finalizer
        compiled = compilation.compiled
        listing = (
            compiled.visa
            if isinstance(compiled, VisaCompiledKernel)
            else disassemble(compiled.code, compiled.hw, pcs=True)
        ).rstrip("\n")
    if verification is not None and not verification.ok:
        state.fail()
    if args.json:
        return {**report, **({"after": passes} if passes else {}), **({"asm": listing} if listing else {})}
    if listing is not None:
        state.say(listing)
    _summary(state, report, text, path, len(compilation.zebin()))
    if args.run_on_device:
        state.say(device_run.describe())
    return report


def _cached(state: _Run, index: int, hit: Hit) -> dict:
    """What `_compile` gives, from the kernel cache's entry: the same file, the same summary
    (and, with --json, `"cache": "hit"`: its compile_seconds are those of the compile that stored it)."""
    report = dict(hit.data["report"])
    path = _output_path(state.args, index, hit.data["kernel"], state.batch)
    if path is not None:
        state.output.files.append((str(path), hit.zebin))
        report["zebin"] = str(path)
    if state.args.json:
        return {**report, "cache": "hit"}
    _summary(state, report, hit.data["text"], path, len(hit.zebin))
    return report


def _summary(state: _Run, report: dict, text: str, path: Path | None, zebin_bytes: int) -> None:
    """A native kernel's summary: its row in a batch, else its text and the file written."""
    if state.batch:
        state.say(_batch_row(report))
        return
    state.say(text)
    if path is not None:
        state.say(f"wrote {path} ({zebin_bytes} bytes)")


def _batch_row(s: dict) -> str:
    density = s["inner_loop_math_density"]
    parts = [
        f"{s['instructions']} insts",
        f"inner loop {s['inner_loop_instructions']} (density {density if density is not None else '-'})",
        f"{s['grfs_used']} GRFs",
    ]
    if "modeled" in s:
        m = s["modeled"]
        parts += [
            f"{m['device_cycles']:.0f} cycles ({m['bound']})",
            f"{100 * m['roofline_fraction']:.1f}% of roofline",
            f"{100 * m['peak_fraction']:.1f}% of peak",
        ]
    if "verify" in s:
        parts.append("verify ok" if s["verify"]["ok"] else "verify FAILED")
    if "tuned" in s:
        parts.append("tuned" if s["tuned"]["used"] else "tuned config failed: the heuristic's")
    return f"{s['problem']}: " + ", ".join(parts)


def integer_at_least(minimum: int, subject: str = ""):
    """An argparse type: an integer of at least `minimum` (`subject` names it in the error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value}: {subject}must be at least {minimum}")
        return value

    return parse


seed_argument = integer_at_least(0, "the seed ")  # numpy's generators take no negative seeds


def add_problem_options(parser) -> None:
    """The options that make a descriptor a problem on a platform (`xegen conv` and `xegen tune`)."""
    parser.add_argument(
        "--dir",
        default="FWD_B",
        metavar="DIR",
        help="direction: FWD_B (default, with bias), FWD_D, FWD_I, BWD_D, BWD_W, BWD_WB",
    )
    parser.add_argument(
        "--dt",
        default="f32",
        metavar="DT",
        help="data types: f32 (default), f16, bf16, or SRC:WEI:DST such as u8:s8:f32, s8:s8:s8",
    )
    parser.add_argument("--stag", default="any", help="src layout tag, e.g. nhwc, nchw, nChw16c (default any)")
    parser.add_argument(
        "--wtag",
        default="any",
        help="weights layout tag, e.g. hwio, oihw, OIhw16i16o, OIhw8i16o2i (default any: the summary's "
        "layouts say what it became, for dpas forward kernels per platform)",
    )
    parser.add_argument("--dtag", default="any", help="dst layout tag (default any: channels last)")
    parser.add_argument(
        "--attr-post-ops",
        default="",
        metavar="OPS",
        help="post-op chain as benchdnn spells it, ops joined by '+' (forward only): "
        "sum[:SCALE[:ZERO_POINT[:DT]]], ELTWISE[:ALPHA[:BETA[:SCALE]]] (relu, clip, linear, ...), "
        "BINARY:DT[:POLICY[:TAG]] (add, sub, mul, min, max, ge, ...), prelu[:POLICY]",
    )
    parser.add_argument(
        "--attr-scales",
        default="",
        metavar="SCALES",
        help="int8 scales as benchdnn spells them, ARG:POLICY[:SCALE] joined by '+': "
        "src:common:S, wei:common:S or wei:per_oc, dst:common:S",
    )
    parser.add_argument(
        "--attr-zero-points",
        default="",
        metavar="ZPS",
        help="int8 zero points as benchdnn spells them, joined by '+': src:common:Z (a value of "
        "src's type), dst:common:Z or dst:per_oc",
    )
    parser.add_argument("--mb", type=int, default=None, metavar="N", help="override the descriptor's minibatch")
    parser.add_argument("--hw", default="xehpg", metavar="HW", help="platform: xehpg (default), xelp, xehpc")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key (repeatable): plan (gemm, depthwise, first, swapped), fma, simd, tg_m, tg_n, "
        "tg_k, m_tile, n_tile, k_block, k_split, slm, slm_bufs, gmem_bufs, grf",
    )


def add_worker_options(group) -> None:
    """-j and --ray (`xegen conv --batch` and `xegen tune`)."""
    group.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="worker processes on this machine (default 1: in this process)",
    )
    group.add_argument(
        "--ray",
        metavar="auto|local|ADDRESS",
        help="run on Ray instead (pip install 'xegen[ray]'): 'auto' joins the cluster this machine "
        "belongs to (ray start), 'local' starts a private instance with -j CPUs, or a cluster's "
        "address such as ray://head:10001",
    )


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
            "alone and skip the native compile unless one of the native options is given too.",
            100,
        ),
        epilog="examples:\n"
        "  xegen conv mb1ic64ih56oc64oh56kh3ph1 --hw=xehpg -o res2a.zebin --verify\n"
        "  xegen conv mb1ic16ih8oc32oh8kh3ph1 --dt=f16 --print-after=optimize,swsb\n"
        "  xegen conv --batch shapes_resnet_50 --mb=1 --dt=bf16 --json > resnet.json\n"
        "  xegen conv --batch shapes_resnet_50 --mb=1 --hw=xelp --report resnet50-xelp\n"
        "  xegen conv mb1ic16ih8oc32oh8kh3ph1 --dir=BWD_D --dt=bf16 --hw=xelp --check-ir",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "desc",
        nargs="?",
        metavar="DESC",
        help='descriptor, e.g. g1mb1ic64ih56oc64oh56kh3ph1n"res2a" (defaults as in benchdnn)',
    )
    parser.add_argument(
        "--batch",
        metavar="FILE",
        help="also take descriptors from FILE, one per line ('#' comments); one row each, a "
        "progress bar on a terminal; a bad line or failing layer is reported in its row "
        "(FILE:LINE) and the run goes on, exit status 1; as in benchdnn, --attr-post-ops=, "
        "--attr-scales= and --attr-zero-points= before a descriptor set it for the lines "
        "after (--reset: back to the command line's)",
    )
    add_problem_options(parser)
    parser.add_argument(
        "--lead",
        action="store_true",
        help="compile the heuristic's first configuration alone, none of the kernels the model would choose "
        "among (other tiles, plans, weights layouts, the swapped product): faster to compile, maybe slower to run",
    )
    native = parser.add_argument_group("native kernel")
    native.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the zebin to FILE (with --batch: a directory, one NNN-kernel.zebin per layer)",
    )
    native.add_argument(
        "--verify",
        action="store_true",
        help="run the kernel in the simulator (SWSB hazard checks on) on random data and compare "
        "with numpy; exit status 1 on a mismatch or hazard",
    )
    native.add_argument(
        "--verify-long",
        action="store_true",
        help="run --verify even when it is estimated to take over 10 minutes of simulation "
        "(without it, such a run is refused, naming the estimate)",
    )
    native.add_argument(
        "--run-on-device",
        action="store_true",
        help="run the kernel on the first Intel GPU through Intel's OpenCL runtime on random data and "
        "compare with numpy; exit status 1 on a mismatch (see docs/python.md for a runtime "
        "without hardware, where the launch is only enqueued)",
    )
    native.add_argument(
        "--backend",
        choices=BACKENDS,
        default="native",
        help="code generator after instruction selection: native (default: xegen's register "
        "allocation, SWSB and encoder) or visa (the selected instructions as vISA assembly, "
        "finalized by IGC's GenX_IR from libigc-tools; same .ze_info and dispatch ABI)",
    )
    native.add_argument(
        "--asm",
        action="store_true",
        help="print the kernel's disassembly (with byte addresses); with --backend visa, the vISA "
        "assembly given to GenX_IR",
    )
    native.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON document on standard output (a list with --batch; "
        "--asm and --print-after go in it as 'asm' and 'after'); errors go to standard error",
    )
    native.add_argument(
        "--print-after",
        action="append",
        default=[],
        metavar="PASS",
        help=f"print the output of a pass (repeatable or comma-separated): {', '.join(PASSES)}",
    )
    native.add_argument("--print-after-all", action="store_true", help="print the output of every pass that runs")
    native.add_argument(
        "--report",
        metavar="DIR",
        help="write DIR/index.html and its PNG plots: each layer on the platform's roofline, sorted "
        "worst roofline fraction first, with its modeled terms (and its peers with --report-peers)",
    )
    native.add_argument(
        "--report-peers",
        metavar="FILE",
        help="the JSON python bench/e2e/run.py wrote: its peer kernels' numbers beside each layer of "
        "--report that it measured (the same problem on the same platform)",
    )
    native.add_argument(
        "--no-model",
        action="store_true",
        help="skip the modeled cycles (counted from the kernel's loops, no simulator run)",
    )
    native.add_argument("--no-optimize", action="store_true", help="skip the e-graph optimizer (for comparison)")
    native.add_argument(
        "--no-cache",
        action="store_true",
        help="compile even when the kernel cache holds the kernel, and do not store it (the cache is "
        "not used with --verify, --run-on-device, --asm, --print-after, --dump-graph or the IR "
        "options either)",
    )
    native.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="the kernel cache's directory (default $XEGEN_CACHE_DIR, else "
        "$XDG_CACHE_HOME/xegen/kernels, i.e. ~/.cache/xegen/kernels)",
    )
    ir_level = parser.add_argument_group("IR level")
    ir_level.add_argument("--canonical", action="store_true", help="print the canonical descriptor")
    ir_level.add_argument("--print-config", action="store_true", help="print the problem, config and kernel summary")
    ir_level.add_argument("--print-ir", action="store_true", help="print the kernel IR (built and scheduled)")
    ir_level.add_argument(
        "--check-ir",
        action="store_true",
        help="run the kernel IR in the interpreter on random data and compare with numpy; "
        "prints the max error, exit status 1 on a mismatch",
    )
    ir_level.add_argument(
        "--print-space",
        action="store_true",
        help="print the configuration space a tuner searches (xegen tune): every knob's values, "
        "what the legality checks prune, the legal configurations (the heuristic's first)",
    )
    ir_level.add_argument(
        "--dump-graph",
        metavar="DIR",
        help="write the K loop's dataflow graph before and after each scheduling transform to DIR "
        "as Graphviz DOT (and SVG when Graphviz's dot is installed); with --batch, one "
        "numbered subdirectory per descriptor",
    )
    tuning = parser.add_argument_group("tuning and workers")
    tuning.add_argument(
        "--db",
        metavar="PATH",
        help="tuning database to take tuned configurations from (default $XEGEN_TUNING_DB, else "
        "~/.cache/xegen/tuning.sqlite); see xegen tune",
    )
    tuning.add_argument(
        "--no-tuned", action="store_true", help="ignore the tuning database: compile the heuristic's configuration"
    )
    add_worker_options(tuning)
    parser.add_argument(
        "--seed",
        type=seed_argument,
        default=0,
        help="random data seed (at least 0) for --verify and --check-ir (default 0)",
    )
    parser.set_defaults(run=run)
