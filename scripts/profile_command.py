"""An xegen command under cProfile, with the statistics of the thread that does the work.

    .venv/bin/python scripts/profile_command.py -o prof.out conv --hw xehpg --no-cache -o k.zebin DESC
    .venv/bin/python -c "import pstats; pstats.Stats('prof.out').sort_stats('tottime').print_stats(30)"

Every command runs on xegen.deep's worker thread (room for deep recursion), which
`python -m cProfile -m xegen ...` does not see: this profiles the call on that thread.  The
profiler about doubles the time of Python code (egglog's is native and is not slowed).
"""

from __future__ import annotations

import argparse
import cProfile
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, required=True, help="where to write the pstats file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the xegen command line, e.g. conv DESC -o K.zebin")
    args = parser.parse_args()

    from xegen import deep
    from xegen.cli import main as xegen_main

    unprofiled = deep._call

    def profiled(function, call_args, kwargs):
        profile = cProfile.Profile()
        profile.enable()
        try:
            return unprofiled(function, call_args, kwargs)
        finally:
            profile.disable()
            profile.dump_stats(args.output)

    deep._call = profiled
    return xegen_main(args.command)


if __name__ == "__main__":
    sys.exit(main())
