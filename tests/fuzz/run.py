"""Fuzz one reader with atheris (libFuzzer for Python), coverage-guided.

    python tests/fuzz/run.py TARGET [libFuzzer options] [CORPUS_DIR ...]

TARGET is one of tests/fuzz/targets.py's TARGETS; the options are libFuzzer's (-runs=N for a
number of executions, -seed=N, -max_len=N, -rss_limit_mb=N).  New inputs go into the first
corpus directory.  An input that makes the target raise anything but an `xegen.Error` is a
finding: libFuzzer prints the traceback, saves the input as crash-<sha1> and exits non-zero.
`tests/fuzz/test_fuzz.py` runs every target this way."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).parent))
with atheris.instrument_imports(include=["xegen"]):  # coverage of xegen's code guides the search
    import targets

from xegen import Error  # noqa: E402
from xegen.deep import deeply  # noqa: E402


def main() -> None:
    target = targets.TARGETS[sys.argv[1]]

    def one_input(data: bytes) -> None:
        try:
            deeply(target, data)  # as the CLI runs commands: the same recursion bound
        except Error:
            pass

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
