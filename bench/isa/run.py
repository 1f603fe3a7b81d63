"""Throughput of xegen's Xe encoder, decoder, printer and parser, next to iga64's.

The instruction stream is IGC's own kernels (compiled with ocloc for each platform and
expanded to 16-byte forms with iga64), repeated with renumbered registers to at least
--min-instructions.  Each figure is the median of --repeat runs, in wall-clock and CPU
seconds (CPU time includes iga64's, as a child process, and is the fairer figure on a busy
machine); decoding starts with empty operand caches.

    python bench/isa/run.py [--hw xehpg ...] [--repeat 5] [--min-instructions 20000]

Prints a table and writes JSON to bench/isa/results.json (not kept in git).
"""

from __future__ import annotations

import argparse
import json
import platform as host
import resource
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "emit"))

from iga_compare import IGC_KERNELS, kernel_code  # noqa: E402

from xegen import hw as hwlib  # noqa: E402
from xegen import oracles  # noqa: E402
from xegen.emit import Reg, decode, encode_kernel, format_kernel, parse_asm  # noqa: E402
from xegen.emit import decoder as decoder_module  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results.json"


def instruction_stream(platform: hwlib.Platform, minimum: int) -> bytes:
    """IGC kernels for the platform, uncompacted by iga64, repeated to `minimum`
    instructions; each copy renumbers the GRFs so that the copies are new bytes to the
    decoder's operand caches rather than repeats."""
    code = b""
    for source in IGC_KERNELS.values():
        for body in kernel_code(oracles.ocloc_compile(source, platform)).values():
            listing = oracles.iga64_disassemble(body, platform)
            code += oracles.iga64_assemble(listing, platform)
    instructions = decode(code, platform)
    copies = max(1, -(-minimum * 16 // len(code)))
    stream = bytearray(code)
    for copy in range(1, copies):
        stream += encode_kernel([_renumber(inst, copy) for inst in instructions], platform)
    return bytes(stream)


def _renumber(inst, shift: int):
    """The instruction with every GRF operand moved by `shift` registers (mod 128)."""

    def move(operand):
        if isinstance(operand, Reg) and operand.file == "r" and not operand.indirect:
            return replace(operand, number=(operand.number + shift) % 128)
        return operand

    return replace(inst, dst=move(inst.dst) if inst.dst is not None else None, srcs=tuple(move(s) for s in inst.srcs))


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (iga64): robust to a busy machine."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def median_seconds(function, repeat: int, setup=lambda: None) -> tuple[float, float]:
    """Median (wall, CPU) seconds of `function` over `repeat` runs."""
    wall, cpu = [], []
    for _ in range(repeat):
        setup()
        start, start_cpu = time.perf_counter(), _cpu_seconds()
        function()
        wall.append(time.perf_counter() - start)
        cpu.append(_cpu_seconds() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def clear_decoder_caches() -> None:
    decoder_module._DECODERS.clear()


def measure(platform: hwlib.Platform, repeat: int, minimum: int) -> dict:
    data = instruction_stream(platform, minimum)
    count = len(data) // 16
    instructions = decode(data, platform)
    listing = format_kernel(instructions, platform)
    rows = {
        "encode": median_seconds(lambda: encode_kernel(instructions, platform), repeat),
        "decode": median_seconds(lambda: decode(data, platform), repeat, clear_decoder_caches),
        "disassemble (decode + print)": median_seconds(
            lambda: format_kernel(decode(data, platform), platform), repeat, clear_decoder_caches
        ),
        "assemble (parse + encode)": median_seconds(
            lambda: encode_kernel(parse_asm(listing, platform), platform), repeat
        ),
        "iga64 -a -Xforce-no-compact": median_seconds(lambda: oracles.iga64_assemble(listing, platform), repeat),
        "iga64 -d": median_seconds(lambda: oracles.iga64_disassemble(data, platform), repeat),
    }
    return {
        "instructions": count,
        "wall_seconds": {name: wall for name, (wall, cpu) in rows.items()},
        "cpu_seconds": {name: cpu for name, (wall, cpu) in rows.items()},
        "instructions_per_cpu_second": {name: count / max(cpu, 1e-9) for name, (wall, cpu) in rows.items()},
        "instructions_per_wall_second": {name: count / wall for name, (wall, cpu) in rows.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", nargs="+", default=["xelp", "xehpg", "xehpc"], help="platforms to measure")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (the median is reported)")
    parser.add_argument("--min-instructions", type=int, default=20000, help="length of the instruction stream")
    args = parser.parse_args(argv)
    results = {"python": sys.version.split()[0], "machine": host.machine(), "platforms": {}}
    print(
        f"{'platform':8} {'operation':30} {'instructions':>12} {'wall s':>8} {'cpu s':>8} "
        f"{'instr/cpu s':>12} {'instr/wall s':>13}"
    )
    for name in args.hw:
        platform = hwlib.platform(name)
        result = measure(platform, args.repeat, args.min_instructions)
        results["platforms"][platform.name] = result
        for operation, wall in result["wall_seconds"].items():
            cpu = result["cpu_seconds"][operation]
            print(
                f"{platform.name:8} {operation:30} {result['instructions']:>12} {wall:>8.4f} {cpu:>8.4f} "
                f"{result['instructions_per_cpu_second'][operation]:>12,.0f} "
                f"{result['instructions_per_wall_second'][operation]:>13,.0f}"
            )
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
