"""xegen's Halide-style IR: types, expressions, statements, hardware functions, their text
form, and the reference interpreter that defines what they mean.

    from xegen.ir import var, parse_expr, evaluate
    a, b = var("a"), var("b")
    e = 2 * (a + b) - a           # builds IR with C's promotion rules
    parse_expr("2*(a+b) - a") == e
    evaluate(e, {"a": 3, "b": 4})  # -> array(11, dtype=int32)
"""

from .execute import execute
from .expr import (
    Binary,
    BoolImm,
    Broadcast,
    Cast,
    Expr,
    FloatImm,
    IntImm,
    IRTypeError,
    Load,
    Node,
    Ptr,
    Select,
    Shuffle,
    Ternary,
    Unary,
    Var,
    add3,
    as_expr,
    binary,
    buffer,
    cast,
    const,
    load,
    logical_and,
    logical_not,
    logical_or,
    mad,
    max_,
    min_,
    ptr,
    select,
    ternary,
    unary,
    var,
)
from .funcs import Barrier, Dp4a, Dpas, EndOfThread, Fence, Func, Mad, Reorder, Send, Signal, Wait
from .interpret import Evaluator, evaluate
from .memory import SlmRaceError
from .parser import parse_expr, parse_stmt, parse_type
from .printer import format_expr, format_stmt
from .stmt import Alloc, Call, For, IfThenElse, Let, Seq, Stmt, Store, for_, let, pointer_arg, seq, store
from .types import (
    BF16,
    BOOL,
    F16,
    F32,
    F64,
    FLOAT_TYPES,
    INT_TYPES,
    PTR,
    S8,
    S16,
    S32,
    S64,
    SCALAR_TYPES,
    U8,
    U16,
    U32,
    U64,
    Type,
    common_type,
    promote,
)
from .visitor import (
    Mutator,
    Names,
    StmtMutator,
    StmtVisitor,
    Visitor,
    children,
    expressions,
    free_vars,
    node_count,
    stable_hash,
    statements,
    substitute,
    substitute_stmt,
    walk,
)

__all__ = [
    "execute", "Binary", "BoolImm", "Broadcast", "Cast", "Expr", "FloatImm", "IntImm", "IRTypeError", "Load", "Node",
    "Ptr", "Select", "Shuffle", "Ternary", "Unary", "Var", "add3", "as_expr", "binary", "buffer", "cast", "const",
    "load", "logical_and", "logical_not", "logical_or", "mad", "max_", "min_", "ptr", "select", "ternary", "unary",
    "var", "Barrier", "Dp4a", "Dpas", "EndOfThread", "Fence", "Func", "Mad", "Reorder", "Send", "Signal", "Wait",
    "Evaluator", "evaluate", "SlmRaceError", "parse_expr", "parse_stmt", "parse_type", "format_expr", "format_stmt",
    "Alloc", "Call", "For", "IfThenElse", "Let", "Seq", "Stmt", "Store", "for_", "let", "pointer_arg", "seq", "store",
    "BF16", "BOOL", "F16", "F32", "F64", "FLOAT_TYPES", "INT_TYPES", "PTR", "S8", "S16", "S32", "S64", "SCALAR_TYPES",
    "U8", "U16", "U32", "U64", "Type", "common_type", "promote", "Mutator", "Names", "StmtMutator", "StmtVisitor",
    "Visitor", "children", "expressions", "free_vars", "node_count", "stable_hash", "statements", "substitute",
    "substitute_stmt", "walk",
]
