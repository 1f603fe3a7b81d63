"""IR expressions ⇄ egglog terms of `language.egg`.

`TermBuilder.term(e)` writes an IR expression as egglog text, e.g. `a + b*2` becomes
`(Add (S32) (Var (S32) "a") (Mul (S32) (Var (S32) "b") (Const (S32) 2)))`.  Integer and bool
scalars are translated node for node; anything else (loads, float math, vectors) becomes an
`(Opaque T k)` leaf that the rules never look into.  The integer subexpressions *inside* such a
leaf (a load's offset) are still optimized: they become extra roots ("holes") and are put back
when the leaf is rebuilt.

`TermReader` turns extracted terms back into IR.

An IR operation (`ir.expr.UNARY_OPS`, `BINARY_OPS`, `TERNARY_OPS`) is the term constructor of the same
name, case aside (`add` is `Add`, `bitnot` is `BitNot`); a constructor takes one leading Ty
argument (the operands' type) unless language.egg declares none (`Not`, `LAnd`, `LOr`).  So a
new operation needs no code here: declaring its constructor in language.egg is enough.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .. import ir
from ..errors import UnsupportedError
from ..ir.expr import BINARY_OPS, TERNARY_OPS, UNARY_OPS
from ..ir.types import BOOL, INT_TYPES, Type
from .bindings import bindings
from .rules import language_signatures

#: IR type <-> egglog Ty constructor
TY_NAMES: dict[Type, str] = {t: t.kind.upper() for t in INT_TYPES} | {BOOL: "Bool"}
TY_TYPES: dict[str, Type] = {name: t for t, name in TY_NAMES.items()}


def _leading_types(inputs: tuple[str, ...]) -> int:
    return next((i for i, sort in enumerate(inputs) if sort != "Ty"), len(inputs))


#: how many leading Ty arguments each constructor has (from its declaration in language.egg)
TY_ARGUMENTS = {
    name: _leading_types(s.inputs) for name, s in language_signatures().items() if s.constructor and s.output == "Expr"
}

_IR_OPS = {op: arity for arity, ops in ((1, UNARY_OPS), (2, BINARY_OPS), (3, TERNARY_OPS)) for op in ops}
#: term constructor -> the IR operation it is (same name, case aside), and back
OPERATIONS = {name: name.lower() for name in TY_ARGUMENTS if name.lower() in _IR_OPS}
CONSTRUCTORS = {op: name for name, op in OPERATIONS.items()}
#: IR operation -> its category (ir.BINARY_OPS's: arith, int, shift, compare, logical)
CATEGORY = {
    **{op: "arith" for op in UNARY_OPS},
    "not": "logical",
    **{op: "arith" for op in TERNARY_OPS},
    **{op: category for op, (_, category) in BINARY_OPS.items()},
}


def is_term_type(t: Type) -> bool:
    """Scalar integer and bool values are what the term language describes."""
    return t.lanes == 1 and (t.is_int or t.is_bool)


def ty(t: Type) -> str:
    return f"({TY_NAMES[t]})"


def constant_bits(value: int, t: Type) -> int:
    """The i64 a `Const` holds: the value, or the two's-complement pattern of a u64."""
    if t.is_bool:
        return int(bool(value))
    return value - (1 << 64) if value >= 1 << 63 else value


def constant_value(bits: int, t: Type) -> int:
    """The IR value of a `Const` of type `t` holding `bits`."""
    if t.kind == "u64" and bits < 0:
        return bits + (1 << 64)
    return bits


def make_constant(bits: int, t: Type) -> ir.Expr:
    if t.is_bool:
        return ir.BoolImm(bool(bits))
    return ir.IntImm(constant_value(bits, t), t)


def supported(e: ir.Expr) -> bool:
    """Does this node (not its children) have a term constructor?"""
    t = e.type
    if not is_term_type(t):
        return False
    if isinstance(e, (ir.Var, ir.IntImm, ir.BoolImm)):
        return True
    if isinstance(e, ir.Unary):
        return True
    if isinstance(e, ir.Binary):
        return is_term_type(e.a.type) and is_term_type(e.b.type)
    if isinstance(e, ir.Ternary):
        return True
    if isinstance(e, ir.Select):
        return e.cond.type == BOOL
    if isinstance(e, ir.Cast):
        source = e.value.type
        if not is_term_type(source):
            return False
        return not (e.saturate and (source.is_bool or t.is_bool))
    return False


#: how deep a term nests before its lower part becomes a piece of its own (egglog's parse and
#: insertion of one term take time quadratic in its depth)
PIECE_DEPTH = 64
#: the deepest term the optimizer takes: greedy DAG extraction takes time quadratic in the depth
#: (a 2,000-deep sum: about 10 s on one core)
MAX_TERM_DEPTH = 2_000


def _term_children(e: ir.Expr) -> list[ir.Expr]:
    """The subexpressions that are terms of their own inside the term of `e`."""
    if not supported(e) or isinstance(e, (ir.Var, ir.IntImm, ir.BoolImm)):
        return []
    if isinstance(e, ir.Select):
        return [e.cond, e.true_value, e.false_value]
    if isinstance(e, ir.Cast):
        return [e.value]
    return operands(e)


def operands(e: ir.Expr) -> list[ir.Expr]:
    """The direct subexpressions of `e` (every IR node below an expression is one)."""
    return [c for c in ir.children(e) if isinstance(c, ir.Expr)]


def quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class OpaqueLeaf:
    """An IR node the rules do not look into; `holes` are the term roots of its integer
    subexpressions, in the order `rebuild` visits them."""

    node: ir.Expr
    holes: list[int] = field(default_factory=list)


class _HoleFiller(ir.Mutator):
    """Rebuilds an opaque node, replacing each maximal supported subexpression by `fill(it)`."""

    def __init__(self, fill: Callable[[ir.Expr], ir.Expr]):
        self.fill = fill
        self.top = True

    def mutate(self, node):
        if node is None:
            return None
        if not self.top and isinstance(node, ir.Expr) and supported(node):
            return self.fill(node)
        self.top = False
        if isinstance(node, ir.Var):  # a buffer variable
            return node
        return self.mutate_children(node)


class TermBuilder:
    """Translates IR expressions into term text, collecting opaque leaves and their holes.

    `rename` maps a variable to the name it has in the e-graph (kernels give every binder a
    unique name so that shadowed variables stay apart)."""

    def __init__(self, rename: Callable[[ir.Var], str] | None = None):
        self.rename = rename or (lambda v: v.name)
        self.opaque: list[OpaqueLeaf] = []
        self.roots: list[str] = []  # term text of every root, holes included
        self._root_index: dict[str, int] = {}
        self.variables: dict[str, ir.Var] = {}  # e-graph name -> IR variable
        self.pieces: list[str] = []  # `(let $pieceN TERM)` commands the roots refer to, in order
        #: the text and depth of every expression met so far whose term is its own text in full
        #: (no opaque leaf, no piece): a kernel's roots share most of their subexpressions, and
        #: such a term reads the same each time it is met, so it is built once
        self._plain: dict[ir.Expr, tuple[str, int]] = {}

    def add_root(self, e: ir.Expr) -> int:
        """Add a supported expression as a root; returns its root index (an expression met
        before shares its root: adding a term to egglog costs a command each)."""
        text = self.term(e)
        index = self._root_index.get(text)
        if index is None:
            index = self._root_index[text] = len(self.roots)
            self.roots.append(text)
        return index

    def add_opaque_root(self, e: ir.Expr) -> OpaqueLeaf:
        """An expression that is not a term itself (a vector store value): only its integer
        subexpressions become roots."""
        return self._opaque(e)

    def term(self, e: ir.Expr) -> str:
        """The term text of `e`: built bottom-up with an explicit stack (no recursion), and cut
        into `pieces` wherever it nests PIECE_DEPTH deep, because egglog parses and adds a term in
        time quadratic in its depth."""
        # id of a node below e -> (text, depth in its piece, depth, whether it holds an opaque leaf)
        done: dict[int, tuple[str, int, int, bool]] = {}
        stack: list[tuple[ir.Expr, bool]] = [(e, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in done and not done[id(node)][3]:  # (an opaque leaf gets an index per occurrence)
                continue
            if not expanded:
                plain = self._plain.get(node)
                if plain is not None:
                    done[id(node)] = (plain[0], plain[1], plain[1], False)
                    continue
            below = _term_children(node)
            if below and not expanded:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(below))  # first child first, as
                continue  # opaque leaves are numbered
            parts = [done[id(child)] for child in below]
            text = self._node_text(node, [part[0] for part in parts])
            depth = 1 + max((part[1] for part in parts), default=0)
            total_depth = 1 + max((part[2] for part in parts), default=0)
            if total_depth > MAX_TERM_DEPTH:
                raise UnsupportedError(
                    f"the expression nests more than {MAX_TERM_DEPTH} levels deep, the most the "
                    "e-graph optimizer takes (its extraction time grows with the square of "
                    "the depth)"
                )
            if depth >= PIECE_DEPTH:
                name = f"$piece{len(self.pieces)}"
                self.pieces.append(f"(let {name} {text})")
                text, depth = name, 1
            opaque = not supported(node) or any(part[3] for part in parts)
            done[id(node)] = (text, depth, total_depth, opaque)
            if not opaque and total_depth < PIECE_DEPTH:  # (then nothing below was cut into a piece)
                self._plain[node] = (text, depth)
        return done[id(e)][0]

    def _node_text(self, e: ir.Expr, below: list[str]) -> str:
        """The text of node `e` over the texts of its `_term_children`."""
        if not supported(e):
            if not is_term_type(e.type):
                raise ValueError(f"{e} cannot be a term")
            index = len(self.opaque)
            self._opaque(e)
            return f"(Opaque {ty(e.type)} {index})"
        if isinstance(e, ir.Var):
            name = self.rename(e)
            self.variables[name] = e
            return f"(Var {ty(e.type)} {quote(name)})"
        if isinstance(e, ir.IntImm):
            return f"(Const {ty(e.type)} {constant_bits(e.value, e.type)})"
        if isinstance(e, ir.BoolImm):
            return f"(Const (Bool) {int(e.value)})"
        if isinstance(e, (ir.Unary, ir.Binary, ir.Ternary)):
            name = CONSTRUCTORS[e.op]
            parts = [name, *([ty(e.a.type)] if TY_ARGUMENTS[name] else []), *below]
            return "(" + " ".join(parts) + ")"
        if isinstance(e, ir.Select):
            return f"(Select {ty(e.type)} {' '.join(below)})"
        if isinstance(e, ir.Cast):
            head = "SatCast" if e.saturate else "Cast"
            return f"({head} {ty(e.type)} {ty(e.value.type)} {below[0]})"
        raise AssertionError(f"unhandled supported node {type(e).__name__}")

    def _opaque(self, e: ir.Expr) -> OpaqueLeaf:
        leaf = OpaqueLeaf(e)
        self.opaque.append(leaf)

        def collect(sub: ir.Expr) -> ir.Expr:
            leaf.holes.append(self.add_root(sub))
            return sub

        _HoleFiller(collect).mutate(e)
        return leaf


def rebuild_opaque(leaf: OpaqueLeaf, root_value: Callable[[int], ir.Expr]) -> ir.Expr:
    """The opaque node with each hole replaced by its optimized expression."""
    holes = iter(leaf.holes)
    return _HoleFiller(lambda _sub: root_value(next(holes))).mutate(leaf.node)


def build_node(op: str, t: Type | None, args: list, types: list[Type] | None = None) -> ir.Expr:
    """The IR node for term constructor `op` with already-built children `args`.

    `t` is the constructor's Ty argument (the source type of a cast is in `types`)."""
    if op in OPERATIONS:
        node = {1: ir.Unary, 2: ir.Binary, 3: ir.Ternary}[len(args)]
        return node(OPERATIONS[op], *args)
    if op == "Select":
        return ir.Select(args[0], args[1], args[2])
    if op in ("Cast", "SatCast"):
        if t is None:
            raise ValueError(f"a {op} term without its target type")
        return ir.Cast(t, args[0], op == "SatCast")
    raise ValueError(f"no IR node for term constructor {op}")


class TermReader:
    """Builds IR from extracted terms (egglog's TermDag), mapping names back to variables and
    opaque indices back to nodes."""

    def __init__(self, variables: Mapping[str, ir.Var], opaque: Callable[[int], ir.Expr]):
        self.variables = variables
        self.opaque = opaque

    def leaf(self, op: str, t: Type | None, literal) -> ir.Expr:
        if op == "Var":
            return self.variables[literal]
        if op == "Const":
            if t is None:
                raise ValueError("a Const term without its type")
            return make_constant(literal, t)
        if op == "Opaque":
            return self.opaque(literal)
        raise ValueError(f"{op} is not a leaf")

    def from_termdag(self, dag, term_id: int) -> ir.Expr:
        """Convert an egglog TermDag term (from egglog's own extractor)."""
        eb = bindings()  # loaded at the first saturation, not with xegen (bindings.py)

        memo: dict[int, ir.Expr] = {}

        def convert(tid: int):
            if tid in memo:
                return memo[tid]
            term = dag.get(tid)
            if isinstance(term, eb.TermLit):
                value = term.value
                result = value.value if hasattr(value, "value") else value
            elif isinstance(term, eb.TermApp):
                if term.name in TY_TYPES:
                    result = TY_TYPES[term.name]
                else:
                    parts = [convert(a) for a in term.args]
                    n_types = TY_ARGUMENTS[term.name]
                    types, children = parts[:n_types], parts[n_types:]
                    t = types[0] if types else None
                    if term.name in ("Var", "Const", "Opaque"):
                        result = self.leaf(term.name, t, children[0])
                    else:
                        result = build_node(term.name, t, children, types)
            else:
                raise ValueError(f"unexpected term {term!r}")
            memo[tid] = result
            return result

        return convert(term_id)
