"""`xegen eval EXPR --var NAME=VALUE`: evaluate an expression with the reference interpreter."""

from __future__ import annotations

import argparse
import re

from ..errors import Error
from ..ir import evaluate, format_expr, parse_expr, parse_type
from ..ir.printer import format_float
from ..ir.semantics import scalar_value
from ..ir.types import Type

_VAR = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z_0-9]*)(?::(?P<type>\w+))?=(?P<value>.+)$")


def parse_binding(text: str) -> tuple[str, Type | None, int | float | bool]:
    """`NAME=VALUE` or `NAME:TYPE=VALUE` (VALUE: integer, 0x hex, float, true/false)."""
    m = _VAR.match(text.strip())
    if m is None:
        raise Error(f"--var '{text}' is not NAME=VALUE or NAME:TYPE=VALUE")
    t = parse_type(m.group("type")) if m.group("type") else None
    raw = m.group("value").strip()
    value: int | float | bool
    if raw in ("true", "false"):
        value = raw == "true"
    else:
        try:
            value = int(raw, 0)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                raise Error(f"--var {m.group('name')}: '{raw}' is not a number") from None
    return m.group("name"), t, value


def format_value(value, t: Type) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v, t) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value, t)
    return str(value)


def bindings_of(texts: list[str]) -> tuple[dict[str, Type], dict[str, int | float | bool]]:
    """The types and values of `--var` options; a name may be bound once."""
    types: dict[str, Type] = {}
    values: dict[str, int | float | bool] = {}
    for text in texts:
        name, t, value = parse_binding(text)
        if name in values:
            raise Error(f"--var {name} is given twice")
        if t is not None and t.is_ptr:
            raise Error(f"--var {name}: a ptr (buffer) variable has no value here")
        values[name] = value
        if t is not None:
            types[name] = t
    return types, values


def run(args: argparse.Namespace) -> int:
    types, values = bindings_of(args.var)
    expression = parse_expr(args.expr, types)
    if expression.type.is_ptr:
        raise Error(f"'{args.expr}' is a buffer (ptr): it has no value")
    result = evaluate(expression, values)
    if args.show_ir:
        print(f"{format_expr(expression)}  : {expression.type}")
    print(format_value(scalar_value(result, expression.type), expression.type))
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate an expression with xegen's reference semantics",
        description="Evaluate a C expression with Xe integer semantics (wrap-around at the type width,\n"
        "truncating / and %, masked shift counts). Variables are s32 unless typed.",
        epilog='example: xegen eval "2*(a+b) - a" --var a=3 --var b=4\n\n'
        "An EXPR that starts with '-' and has no space (-x, -(a+b)) looks like an option:\n"
        "put it last, after --:  xegen eval --var x=1 -- -x",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("expr", metavar="EXPR", help="the expression, e.g. '(u32)x >> 3' or 'x:u16 * 3'")
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME[:TYPE]=VALUE",
        help="bind a variable (once per name; repeat for more names); TYPE is s32 unless "
        "given, e.g. --var x:u8=200; a bool takes true, false, 0 or 1, and a vector "
        "variable gets VALUE in every lane",
    )
    parser.add_argument("--show-ir", action="store_true", help="also print the parsed IR and its type")
    parser.set_defaults(run=run)
