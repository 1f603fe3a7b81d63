"""The `xegen` command: argument parsing and error reporting around library calls.

`xegen` without a command is an argument error (one line naming the commands, status 2), as
any other missing argument is; `xegen --help` shows the help.

Each subcommand lives in `xegen/commands/<name>.py` (found automatically) and exposes `register(subparsers)`,
which adds its parser and sets `run=function(args) -> exit status`.  The commands only
translate arguments into library calls, so everything they do is callable from Python.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import pkgutil
import sys

from . import __version__, commands
from .deep import deeply
from .errors import Error

#: objects allocated before the cyclic garbage collector runs (Python's default: 700).  A compile
#: makes millions of small objects (IR nodes, e-graph rows) that live until it ends; at 700 the
#: collector ran ~400 times over them in res2a_branch2b's compile, 0.14 s of 1.8 s.
GC_THRESHOLD = 50_000

# Every module under xegen.commands is a subcommand; `xegen --help` lists them alphabetically.
COMMANDS = tuple(sorted(module.name for module in pkgutil.iter_modules(commands.__path__)))


class ArgumentParser(argparse.ArgumentParser):
    """argparse with xegen's error convention: one line on stderr, exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        sys.stderr.write(f"xegen: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)


def build_parser(only: str | None = None) -> ArgumentParser:
    """The whole command line, or, with `only` naming a command, just that command: importing
    every command module costs about half a second, which `xegen eval` should not pay."""
    parser = ArgumentParser(
        prog="xegen",
        description="An optimizing kernel compiler for Intel Xe GPUs.",
    )
    parser.add_argument("--version", action="version", version=f"xegen {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for name in (only,) if only in COMMANDS else COMMANDS:
        importlib.import_module(f"xegen.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):  # bare `xegen`: a missing argument, like any other
        parser.error(f"missing COMMAND: one of {', '.join(COMMANDS)}")
    threshold = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    try:
        return int(deeply(args.run, args) or 0)  # deep inputs: see deep.py
    except Error as error:
        sys.stderr.write(f"xegen: error: {error}\n")
        return 2
    except BrokenPipeError:  # e.g. `xegen disasm … | head` (before OSError, which it is a kind of)
        return 0
    except OSError as error:  # a missing or unreadable file named by the user
        where = f"{error.filename}: " if error.filename else ""
        sys.stderr.write(f"xegen: error: {where}{error.strerror or error}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("xegen: interrupted\n")
        return 130
    finally:
        gc.set_threshold(*threshold)
