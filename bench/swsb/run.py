"""The SWSB pass against its peers, kernel by kernel.

For every IGC kernel of the test corpus (tests/emit/corpus, each device), the kernel is
decoded, stripped of all SWSB annotations and of IGC's sync.nop/sync.allrd/sync.allwr
(`strip_swsb`), and annotated again three ways:

- xegen: `assign_swsb` (timed: the best of --repeat runs);
- iga64 -Xauto-deps: IGA's own SWSB on the same stripped listing;
- IGC: the original kernel as ocloc compiled it (for reference: IGC also schedules around
  its waits, so it is not the same code).

It prints, per kernel, the sync instructions and the total instructions of each, our time,
and our throughput on a large kernel (the largest corpus kernel repeated --scale times), and
writes everything as JSON (default bench/swsb/results.json, not committed).

    python bench/swsb/run.py
    python bench/swsb/run.py --repeat 5 --scale 30 --json /tmp/swsb.json
"""

from __future__ import annotations

import argparse
import json
import platform as host
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.emit.corpus import BUILDS, Corpus  # noqa: E402
from xegen import hw as hwlib  # noqa: E402
from xegen import oracles  # noqa: E402
from xegen.emit import decode, format_kernel  # noqa: E402
from xegen.emit.decoder import decode_with_sizes  # noqa: E402
from xegen.emit.footprint import clear_caches  # noqa: E402
from xegen.emit.scoreboard import assign_swsb, count_syncs, strip_swsb  # noqa: E402
from xegen.emit.zebin import read_zebin  # noqa: E402


def best_time(function, repeat: int) -> tuple[float, object]:
    """Best wall time of `repeat` cold runs (the footprint caches emptied before each)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        clear_caches()
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def measure(build, corpus: Corpus, repeat: int) -> dict:
    platform = hwlib.platform(build.variant.device)
    kernel = read_zebin(corpus.zebin(build)).kernel(build.kernel.kernel_name)
    original, sizes = decode_with_sizes(kernel.code, platform)
    stripped = strip_swsb(original, sizes)
    seconds, ours = best_time(lambda: assign_swsb(stripped, platform), repeat)
    iga = decode(oracles.iga64_assemble(format_kernel(stripped, platform), platform, extra=("-Xauto-deps",)), platform)
    return {
        "kernel": str(build),
        "platform": platform.name,
        "program_instructions": len(stripped),
        "xegen": {"syncs": count_syncs(ours), "instructions": len(ours), "seconds": seconds},
        "iga64_auto_deps": {"syncs": count_syncs(iga), "instructions": len(iga)},
        "igc": {"syncs": count_syncs(original), "instructions": len(original)},
    }


def throughput(rows: list[dict], corpus: Corpus, scale: int, repeat: int) -> dict:
    """Our speed on a large kernel: the largest corpus kernel with everything before its
    end-of-thread send repeated `scale` times (branch offsets are relative, so every copy stays
    well formed, and every copy is reachable)."""
    largest = max(rows, key=lambda r: r["program_instructions"])
    build = next(b for b in BUILDS if str(b) == largest["kernel"])
    platform = hwlib.platform(build.variant.device)
    kernel = read_zebin(corpus.zebin(build)).kernel(build.kernel.kernel_name)
    stripped = strip_swsb(*decode_with_sizes(kernel.code, platform))
    end = next(i for i, inst in enumerate(stripped) if inst.eot)
    big = stripped[:end] * (scale - 1) + stripped
    seconds, ours = best_time(lambda: assign_swsb(big, platform), repeat)
    return {
        "kernel": f"{build} x{scale}",
        "instructions": len(big),
        "seconds": seconds,
        "instructions_per_second": len(big) / seconds,
        "syncs": count_syncs(ours),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per kernel (the best is kept)")
    parser.add_argument("--scale", type=int, default=20, help="copies of the largest kernel for the throughput run")
    parser.add_argument("--json", type=Path, default=Path(__file__).with_name("results.json"))
    args = parser.parse_args(argv)

    corpus = Corpus(Path(tempfile.gettempdir()) / "xegen-corpus-bench")
    rows = [measure(build, corpus, max(1, args.repeat)) for build in BUILDS]
    header = (
        f"{'kernel':28} {'insts':>5} | {'xegen syncs/insts':>17} {'ms':>6} | {'iga64 -Xauto-deps':>17} | "
        f"{'IGC syncs/insts':>15}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        x, i, c = r["xegen"], r["iga64_auto_deps"], r["igc"]
        print(
            f"{r['kernel']:28} {r['program_instructions']:5} | {x['syncs']:8}/{x['instructions']:<8} "
            f"{1000 * x['seconds']:6.1f} | {i['syncs']:8}/{i['instructions']:<8} | "
            f"{c['syncs']:6}/{c['instructions']:<8}"
        )
    totals = {name: sum(r[name]["syncs"] for r in rows) for name in ("xegen", "iga64_auto_deps", "igc")}
    worse = [
        r["kernel"]
        for r in rows
        if r["xegen"]["syncs"] > r["iga64_auto_deps"]["syncs"]
        or r["xegen"]["instructions"] > r["iga64_auto_deps"]["instructions"]
    ]
    print(
        f"total syncs: xegen {totals['xegen']}, iga64 -Xauto-deps {totals['iga64_auto_deps']}, IGC {totals['igc']}; "
        f"kernels where xegen is worse than iga64: {worse or 'none'}"
    )
    big = throughput(rows, corpus, max(1, args.scale), max(1, args.repeat))
    print(
        f"throughput: {big['instructions']} instructions ({big['kernel']}) in {big['seconds']:.3f} s = "
        f"{big['instructions_per_second']:.0f} instructions/s"
    )
    args.json.write_text(
        json.dumps(
            {
                "host": {"python": host.python_version(), "machine": host.machine()},
                "kernels": rows,
                "totals": totals,
                "worse_than_iga64": worse,
                "throughput": big,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.json}")
    return 1 if worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
