"""The peers: Halide's simplifier (a small C++ harness against the `halide` wheel) and tinygrad's
symbolic simplifier; each with translation from xegen IR and back."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

from xegen import ir
from xegen.egraph import sexpr

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"


def ensure_package(module: str, package: str) -> None:
    """Bench-only dependencies: installed into the running environment when missing (and said so)."""
    try:
        importlib.import_module(module)
    except ImportError:
        print(f"bench: installing {package} (a bench-only peer, not a dependency of xegen)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", package], check=True)
        importlib.invalidate_caches()


# Halide ------------------------------------------------------------------------------------


def halide_harness() -> Path:
    """Build bench/simplify/build/halide_simplify against the halide wheel (once)."""
    ensure_package("halide", "halide")
    import halide

    root = Path(halide.__file__).resolve().parent
    binary = BUILD / "halide_simplify"
    source = HERE / "halide_simplify.cpp"
    if binary.exists() and binary.stat().st_mtime >= source.stat().st_mtime:
        return binary
    if shutil.which("g++") is None:
        raise RuntimeError("g++ is needed to build the Halide harness")
    BUILD.mkdir(exist_ok=True)
    print("bench: building the Halide harness", file=sys.stderr)
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-O1",
            f"-I{root / 'include'}",
            str(source),
            f"-L{root / 'lib64'}",
            "-lHalide",
            f"-Wl,-rpath,{root / 'lib64'}",
            "-o",
            str(binary),
        ],
        check=True,
    )
    return binary


_SYMBOLS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "mod": "%",
    "shl": "<<",
    "shr": ">>",
    "and": "&",
    "or": "|",
    "xor": "^",
    "min": "min",
    "max": "max",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "eq": "==",
    "ne": "!=",
    "land": "&&",
    "lor": "||",
}
_HALIDE_TYPES = {"s32": "int32", "u32": "uint32", "s64": "int64", "u64": "uint64", "bool": "bool"}
_SUFFIX = {"s32": "i32", "u32": "u32", "s64": "i64", "u64": "u64"}


def to_sexpr(e: ir.Expr) -> str:
    if isinstance(e, ir.Var):
        return e.name
    if isinstance(e, ir.IntImm):
        return f"{e.value}{_SUFFIX[e.type.kind]}"
    if isinstance(e, ir.BoolImm):
        return "true" if e.value else "false"
    if isinstance(e, ir.Unary):
        return _unary_sexpr({"neg": "neg", "bitnot": "~", "not": "!"}[e.op], e.a)
    if isinstance(e, ir.Binary):
        return f"({_SYMBOLS[e.op]} {to_sexpr(e.a)} {to_sexpr(e.b)})"
    if isinstance(e, ir.Ternary):
        a, b, c = (to_sexpr(x) for x in (e.a, e.b, e.c))
        return f"(+ (+ {a} {b}) {c})" if e.op == "add3" else f"(+ {a} (* {b} {c}))"
    if isinstance(e, ir.Select):
        return f"(select {to_sexpr(e.cond)} {to_sexpr(e.true_value)} {to_sexpr(e.false_value)})"
    if isinstance(e, ir.Cast):
        return f"(cast {_HALIDE_TYPES[e.type.kind]} {to_sexpr(e.value)})"
    raise ValueError(f"no Halide form for {e}")


def _unary_sexpr(op: str, e: ir.Expr) -> str:
    return f"({op} {to_sexpr(e)})"


_FROM_SYMBOL = {v: k for k, v in _SYMBOLS.items()}
_FROM_SUFFIX = {"i32": ir.S32, "u32": ir.U32, "i64": ir.S64, "u64": ir.U64}
_FROM_HALIDE_TYPE = {v: ir.Type.parse(k) for k, v in _HALIDE_TYPES.items()}


def from_sexpr(text: str, types: dict[str, ir.Type]) -> ir.Expr:
    (form,) = sexpr.read(f"({text})") if not text.startswith("(") else sexpr.read(text)
    if not text.startswith("("):
        form = form.items[0]
    return _build(form, types, {})


def _build(x, types, lets):
    if isinstance(x, sexpr.Symbol):
        name = x.name
        if name in ("true", "false"):
            return ir.BoolImm(name == "true")
        if name in lets:
            return lets[name]
        for suffix, t in _FROM_SUFFIX.items():
            if name.endswith(suffix) and name[: -len(suffix)].lstrip("-").isdigit():
                return ir.const(int(name[: -len(suffix)]), t)
        return ir.Var(name, types.get(name, ir.S32))
    head = x.head
    args = x.items[1:]
    if head == "let":
        inner = dict(lets)
        inner[args[0].name] = _build(args[1], types, lets)
        return _build(args[2], types, inner)
    if head == "cast":
        return ir.cast(_FROM_HALIDE_TYPE[args[0].name], _build(args[1], types, lets))
    if head == "select":
        return ir.select(*(_build(a, types, lets) for a in args))
    values = [_build(a, types, lets) for a in args]
    if head == "!":
        return ir.unary("not", values[0])
    if head == "~":
        return ir.unary("bitnot", values[0])
    if head == "neg":
        return ir.unary("neg", values[0])
    return ir.binary(_FROM_SYMBOL[head], values[0], values[1])


def halide_simplify(cases: list[tuple[ir.Expr, dict]]) -> list[str]:
    """Halide's simplification of each (expression, ranges), in one harness run."""
    binary = halide_harness()
    lines = []
    for e, ranges in cases:
        decls = " ".join(
            f"{v.name}:{_HALIDE_TYPES[v.type.kind]}:{ranges[v.name].start}:{ranges[v.name].stop - 1}"
            for v in ir.free_vars(e)
        )
        lines.append(f"{decls} | {to_sexpr(e)}")
    out = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


# tinygrad ----------------------------------------------------------------------------------


def tinygrad_simplify(e: ir.Expr, ranges: dict) -> ir.Expr:
    ensure_package("tinygrad", "tinygrad")
    from tinygrad.uop.ops import UOp

    variables = {v.name: UOp.variable(v.name, ranges[v.name].start, ranges[v.name].stop - 1) for v in ir.free_vars(e)}
    uop = _to_uop(e, variables)
    simplified = uop.simplify() if hasattr(uop, "simplify") else uop
    return _from_uop(simplified, {v.name: v for v in ir.free_vars(e)})


def _to_uop(e: ir.Expr, variables):

    if isinstance(e, ir.Var):
        return variables[e.name]
    if isinstance(e, (ir.IntImm, ir.BoolImm)):
        return int(e.value) if isinstance(e, ir.IntImm) else bool(e.value)
    if isinstance(e, ir.Ternary):
        a, b, c = (_to_uop(x, variables) for x in (e.a, e.b, e.c))
        return a + b + c if e.op == "add3" else a + b * c
    if isinstance(e, ir.Select):
        return _lift(_to_uop(e.cond, variables)).where(
            _to_uop(e.true_value, variables), _to_uop(e.false_value, variables)
        )
    if isinstance(e, ir.Cast):
        return _to_uop(e.value, variables)  # the corpus only casts bools to s32 and s32 to s32
    if isinstance(e, ir.Unary):
        a = _to_uop(e.a, variables)
        return {"neg": lambda: -a, "bitnot": lambda: a ^ -1, "not": lambda: _lift(a).logical_not()}[e.op]()
    a, b = _to_uop(e.a, variables), _to_uop(e.b, variables)
    op = e.op
    if op == "min":
        return _lift(a).minimum(b) if hasattr(_lift(a), "minimum") else (_lift(a) < b).where(a, b)
    if op == "max":
        return _lift(a).maximum(b)
    if op in ("lt", "gt", "le", "ge"):
        a, b = (b, a) if op in ("gt", "le") else (a, b)
        less = _lift(a) < b
        return less if op in ("lt", "gt") else less.logical_not()
    if op == "eq":
        return _lift(a).eq(b)
    if op == "ne":
        return _lift(a).ne(b)
    if op == "land":
        return _lift(a) & b
    if op == "lor":
        return _lift(a) | b
    return {
        "add": lambda: a + b,
        "sub": lambda: a - b,
        "mul": lambda: a * b,
        "div": lambda: a // b,
        "mod": lambda: a % b,
        "shl": lambda: a << b,
        "shr": lambda: a >> b,
        "and": lambda: a & b,
        "or": lambda: a | b,
        "xor": lambda: a ^ b,
    }[op]()


def _lift(x):
    """A Python constant as a UOp (so that comparison methods exist on it)."""
    from tinygrad import dtypes
    from tinygrad.uop.ops import UOp

    if isinstance(x, UOp):
        return x
    return UOp.const(dtypes.bool if isinstance(x, bool) else dtypes.weakint, x)


def _from_uop(u, variables):
    from tinygrad.uop.ops import Ops

    memo = {}

    def go(x):
        key = id(x)
        if key in memo:
            return memo[key]
        op = x.op
        if op == Ops.CONST:
            value = x.arg
            result = ir.BoolImm(bool(value)) if isinstance(value, bool) else ir.const(int(value), ir.S32)
        elif op.name in ("BUFFER", "DEFINE_VAR"):  # a variable (tinygrad 0.14 spells it BUFFER)
            name = x.arg.name if hasattr(x.arg, "name") else x.arg[0]
            result = variables[name]
        else:
            s = [go(c) for c in x.src]
            # floor division and modulus equal C's on the non-negative dividends of the corpus (the
            # bench checks every peer result by evaluation anyway)
            table = {
                "ADD": "add",
                "SUB": "sub",
                "MUL": "mul",
                "FLOORDIV": "div",
                "CDIV": "div",
                "FLOORMOD": "mod",
                "CMOD": "mod",
                "MOD": "mod",
                "SHL": "shl",
                "SHR": "shr",
                "AND": "and",
                "OR": "or",
                "XOR": "xor",
                "MAX": "max",
                "CMPLT": "lt",
                "CMPNE": "ne",
                "CMPEQ": "eq",
            }
            if op.name in table:
                name = table[op.name]
                if name in ("and", "or") and s[0].type.is_bool:
                    name = "land" if name == "and" else "lor"
                result = ir.binary(name, s[0], s[1])
            elif op == Ops.WHERE:
                result = ir.select(s[0], s[1], s[2])
            elif op == Ops.NEG:
                result = ir.unary("neg", s[0]) if not s[0].type.is_bool else ir.unary("not", s[0])
            elif op == Ops.CAST:
                result = ir.cast(ir.S32 if "int" in str(x.dtype) else ir.BOOL, s[0])
            else:
                raise ValueError(f"no IR for tinygrad {op}")
        memo[key] = result
        return result

    return go(u)
