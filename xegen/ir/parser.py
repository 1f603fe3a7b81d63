"""Parse the text form of IR (see `xegen.ir.printer`): C expressions and the statement language.

`parse_expr("2*(a+b) - a")` builds IR with C's conversions.  Variables are s32 unless annotated
(`x:u16`, once is enough) or typed by the `types` argument.  Errors raise `ParseError` with the
line and column.
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass, fields
from typing import Mapping

from ..errors import Error, ParseError
from . import expr as ir
from .expr import Expr, IRTypeError, Var
from .funcs import FUNCS, Func
from .stmt import ALLOC_KINDS, Alloc, Call, For, IfThenElse, Let, Seq, Stmt, Store, seq
from .types import F32, PTR, S32, Type, is_type_name, literal_type

_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\n]+|//[^\n]*)
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+)(?::(?P<numtype>[a-z0-9]+))?
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*)(?::(?P<identtype>[a-z][a-z0-9]*))?
  | (?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^~!?:()\[\],;{}=.])
""", re.VERBOSE)

_BINARY_LEVELS = {
    "||": (2, "lor"), "&&": (3, "land"), "|": (4, "or"), "^": (5, "xor"), "&": (6, "and"),
    "==": (7, "eq"), "!=": (7, "ne"), "<": (8, "lt"), "<=": (8, "le"), ">": (8, "gt"), ">=": (8, "ge"),
    "<<": (9, "shl"), ">>": (9, "shr"), "+": (10, "add"), "-": (10, "sub"),
    "*": (11, "mul"), "/": (11, "div"), "%": (11, "mod"),
}
_KEYWORDS = {"true", "false", "inf", "nan", "min", "max", "add3", "mad", "broadcast", "shuffle",
             "let", "for", "if", "else", "alloc", "null", "sat", "unroll", "stride"}


_EXACT_OPERATIONS = {**{op: 1 for op in ir.UNARY_OPS}, **{op: 2 for op in ir.BINARY_OPS},
                     **{op: 3 for op in ir.TERNARY_OPS}}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # number, ident, op, end
    text: str
    annotation: str | None
    position: int


@dataclass(frozen=True, slots=True)
class _Literal:
    """An integer or float literal without a type annotation: C gives it its type from context."""

    value: int | float
    position: int


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(text):
        m = _TOKEN.match(text, position)
        if m is None:
            raise _error(text, position, f"unexpected character {text[position]!r}")
        if m.group("space") is None:
            if m.group("number") is not None:
                tokens.append(Token("number", m.group("number"), m.group("numtype"), position))
            elif m.group("ident") is not None:
                tokens.append(Token("ident", m.group("ident"), m.group("identtype"), position))
            else:
                tokens.append(Token("op", m.group("op"), None, position))
        position = m.end()
    tokens.append(Token("end", "", None, len(text)))
    return tokens


def _error(text: str, position: int, message: str) -> ParseError:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return ParseError(message, text, line, column)


def _parse_type(text: str) -> Type:
    return Type.parse(text)


class Parser:
    def __init__(self, text: str, types: Mapping[str, Type | str] | None = None):
        self.text = text
        self.tokens = tokenize(text)
        self.index = 0
        self.types: dict[str, Type] = {}
        for name, t in (types or {}).items():
            self.types[name] = Type.parse(t) if isinstance(t, str) else t
        self._collect_annotations()

    # -- token helpers ---------------------------------------------------------------------
    def _collect_annotations(self) -> None:
        """A variable annotated anywhere has that type everywhere."""
        for token in self.tokens:
            if token.kind != "ident" or token.annotation is None or token.text in ("inf", "nan"):
                continue
            t = self._annotation_type(token)
            known = self.types.get(token.text)
            if known is not None and known != t:
                raise self.error(token, f"'{token.text}' is {t} here but {known} elsewhere")
            self.types[token.text] = t

    def _annotation_type(self, token: Token) -> Type:
        try:
            return _parse_type(token.annotation)
        except ValueError:
            raise self.error(token, f"unknown type '{token.annotation}'") from None

    @property
    def peek(self) -> Token:
        return self.tokens[self.index]

    def next(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at(self, text: str) -> bool:
        token = self.peek
        return token.kind in ("op", "ident") and token.text == text and token.annotation is None

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.index += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        if not self.at(text):
            raise self.error(self.peek, f"expected '{text}'")
        return self.next()

    def error(self, token: Token, message: str) -> ParseError:
        found = "the end of the input" if token.kind == "end" else f"'{token.text}'"
        if message.startswith("expected"):
            message = f"{message}, found {found}"
        return _error(self.text, token.position, message)

    def expect_int(self) -> int:
        token = self.next()
        if token.kind != "number" or token.annotation or not re.fullmatch(r"\d+|0[xX][0-9a-fA-F]+", token.text):
            raise self.error(token, "expected an integer")
        return int(token.text, 0)

    def expect_ident(self, what: str = "a name") -> Token:
        token = self.next()
        if token.kind != "ident":
            self.index -= 1
            raise self.error(token, f"expected {what}")
        return token

    def expect_type(self) -> Type:
        token = self.expect_ident("a type")
        if not is_type_name(token.text):
            raise self.error(token, f"unknown type '{token.text}'")
        return Type.parse(token.text)

    def done(self) -> None:
        if self.peek.kind != "end":
            raise self.error(self.peek, "unexpected text after the end")

    # -- expressions -----------------------------------------------------------------------
    def _build(self, token: Token, build, *args):
        try:
            return build(*args)
        except IRTypeError as e:
            raise _error(self.text, token.position, str(e)) from None

    def expression(self) -> Expr:
        return self._as_expr(self.select())

    def _as_expr(self, value) -> Expr:
        if isinstance(value, _Literal):
            try:
                return ir.const(value.value)
            except IRTypeError as e:
                raise _error(self.text, value.position, str(e)) from None
        return value

    @staticmethod
    def _raw(value):
        """What the builders take: an expression, or the Python number of an untyped literal."""
        return value.value if isinstance(value, _Literal) else value

    def select(self):
        cond = self.binary(2)
        if self.at("?"):
            token = self.next()
            true_value = self.select()
            self.expect(":")
            false_value = self.select()
            return self._build(token, ir.select, self._raw(cond), self._raw(true_value), self._raw(false_value))
        return cond

    def binary(self, min_level: int):
        left = self.unary()
        while True:
            token = self.peek
            level = _BINARY_LEVELS.get(token.text) if token.kind == "op" else None
            if level is None or level[0] < min_level:
                return left
            self.next()
            right = self.binary(level[0] + 1)
            left = self._build(token, ir.binary, level[1], self._raw(left), self._raw(right))

    def unary(self):
        token = self.peek
        if token.kind == "op" and token.text in ("-", "!", "~"):
            self.next()
            following = self.peek
            if token.text == "-" and following.position == token.position + 1 and (
                    following.kind == "number" or following.text == "inf"):
                return self.primary(negate=True)
            operand = self.unary()
            op = {"-": "neg", "!": "not", "~": "bitnot"}[token.text]
            return self._build(token, ir.unary, op, self._raw(operand))
        if token.kind == "op" and token.text == "&":
            self.next()
            name = self.expect_ident("a buffer name")
            self.expect("[")
            offset = self.expression()
            self.expect("]")
            return self._build(name, ir.Ptr, self._buffer(name), offset)
        if token.kind == "op" and token.text == "(" and self._is_cast():
            self.next()
            saturate = self.accept("sat")
            target = self.expect_type()
            self.expect(")")
            value = self._as_expr(self.unary())
            return self._build(token, ir.Cast, target.with_lanes(value.type.lanes), value, saturate)
        return self.primary()

    def _is_cast(self) -> bool:
        """At `(type)` or `(sat type)`?"""
        ahead = self.tokens[self.index + 1:self.index + 4]
        if ahead and ahead[0].kind == "ident" and ahead[0].text == "sat" and ahead[0].annotation is None:
            ahead = ahead[1:]
        return (len(ahead) >= 2 and ahead[0].kind == "ident" and ahead[0].annotation is None
                and is_type_name(ahead[0].text) and ahead[1].kind == "op" and ahead[1].text == ")")

    def _buffer(self, token: Token) -> Var:
        return Var(token.text, PTR)

    def _number(self, token: Token, negate: bool):
        text = token.text
        try:
            value: int | float = int(text, 0) if re.fullmatch(r"\d+|0[xX][0-9a-fA-F]+", text) else float(text)
        except ValueError:
            raise self.error(token, f"malformed number '{text}'") from None
        if negate:
            value = -value
        if token.annotation is None:
            if isinstance(value, int) and not (-(1 << 63) <= value < (1 << 64)):
                raise self.error(token, f"{value} does not fit 64 bits")
            return _Literal(value, token.position)
        t = self._annotation_type(token)
        if isinstance(value, float) and not t.is_float:
            raise self.error(token, f"{text} is not an integer, so it cannot be {t}")
        if t.is_int and not t.can_represent(value):
            raise self.error(token, f"{value} does not fit {t}")
        return self._build(token, ir.const, value, t)

    def primary(self, negate: bool = False):
        token = self.next()
        if token.kind == "number":
            return self._number(token, negate)
        if token.kind == "op" and token.text == "(":
            inner = self.select()
            self.expect(")")
            return inner
        if token.kind != "ident":
            self.index -= 1
            raise self.error(token, "expected an expression")
        name = token.text
        if name in ("inf", "nan"):
            t = self._annotation_type(token) if token.annotation else F32
            value = float(name) * (-1 if negate else 1)
            return self._build(token, ir.FloatImm, value, t)
        if negate:
            raise self.error(token, "expected a number")
        if name in ("true", "false") and token.annotation is None:
            return ir.BoolImm(name == "true")
        if name in ("min", "max", "add3", "mad", "broadcast", "shuffle") and self.at("(") or name == "shuffle":
            return self._function(token)
        if self.at(".") and token.annotation is None:
            if name in _EXACT_OPERATIONS and self.tokens[self.index + 2].text == "(":
                return self._exact_operation(token)
            return self._load(token)
        if name in _KEYWORDS or is_type_name(name):
            raise self.error(token, f"'{name}' is a reserved word, not a variable")
        return Var(name, self.types.get(name, S32))

    def _arguments(self) -> list:
        self.expect("(")
        args = [self.select()]
        while self.accept(","):
            args.append(self.select())
        self.expect(")")
        return args

    def _function(self, token: Token):
        name = token.text
        if name == "shuffle":
            self.expect("<")
            indices = [self.expect_int()]
            while self.accept(","):
                indices.append(self.expect_int())
            self.expect(">")
            vectors = [self._as_expr(a) for a in self._arguments()]
            return self._build(token, ir.Shuffle, tuple(vectors), tuple(indices))
        args = self._arguments()
        arity = {"min": 2, "max": 2, "add3": 3, "mad": 3, "broadcast": 2}[name]
        if len(args) != arity:
            raise self.error(token, f"{name} takes {arity} arguments, not {len(args)}")
        if name == "broadcast":
            lanes = args[1]
            if not (isinstance(lanes, _Literal) and isinstance(lanes.value, int)):
                raise self.error(token, "broadcast takes a lane count literal")
            return self._build(token, ir.Broadcast, self._as_expr(args[0]), lanes.value)
        raw = [self._raw(a) for a in args]
        if name in ("min", "max"):
            return self._build(token, ir.binary, name, *raw)
        return self._build(token, ir.ternary, name, *raw)

    def _exact_operation(self, token: Token) -> Expr:
        """`add.s8(a, b)`: the operation on operands of exactly that type, no promotion."""
        self.expect(".")
        t = self.expect_type()
        args = [self._as_expr(a) for a in self._arguments()]
        arity = _EXACT_OPERATIONS[token.text]
        if len(args) != arity:
            raise self.error(token, f"{token.text} takes {arity} operands, not {len(args)}")
        if args[0].type.scalar != t:
            raise self.error(token, f"{token.text}.{t} applied to a {args[0].type} operand")
        node = {1: ir.Unary, 2: ir.Binary, 3: ir.Ternary}[arity]
        return self._build(token, node, token.text, *args)

    def _load(self, token: Token) -> Expr:
        self.expect(".")
        t = self.expect_type()
        self.expect("[")
        offset = self.expression()
        stride = None
        if self.accept(","):
            self.expect("stride")
            self.expect("=")
            stride = self.expect_int()
        self.expect("]")
        return self._build(token, ir.Load, self._buffer(token), offset, t, stride)

    # -- statements ------------------------------------------------------------------------
    def block(self, closing: str | None) -> Stmt:
        """Statements up to `closing` (or the end), as one statement."""
        items: list[Stmt] = []
        while not (self.at(closing) if closing else self.peek.kind == "end"):
            if self.peek.kind == "end":
                raise self.error(self.peek, f"expected '{closing}'")
            scoped = self._scoped_head()
            if scoped is not None:
                build, token = scoped
                body = self.block(closing)
                items.append(self._build(token, build, body))
                break
            items.append(self.statement())
        return seq(*items) if items else Seq(())

    def _scoped_head(self):
        """`let x = v;` or `alloc b[n] kind;`: returns a function of the body, or None."""
        token = self.peek
        if self.accept("let"):
            name = self.expect_ident("a variable name")
            value = None
            if self.accept("="):
                value = self.expression()
                # an unannotated let variable takes its value's type
                self.types.setdefault(name.text, value.type)
            var = Var(name.text, self.types.get(name.text, S32))
            if value is not None:
                if value.type != var.type:
                    raise self.error(name, f"let {var.name}: {var.type} bound to a {value.type} value")
            self.expect(";")
            return (lambda body: Let(var, value, body)), token
        if self.accept("alloc"):
            name = self.expect_ident("a buffer name")
            self.expect("[")
            size = self.expect_int()
            self.expect("]")
            kind = self.expect_ident("a memory kind")
            if kind.text not in ALLOC_KINDS:
                raise self.error(kind, f"memory kind must be one of {', '.join(ALLOC_KINDS)}")
            self.expect(";")
            return (lambda body: Alloc(self._buffer(name), size, kind.text, body)), token
        return None

    def statement(self) -> Stmt:
        token = self.peek
        if self.accept("{"):
            inner = self.block("}")
            self.expect("}")
            return inner
        if self.accept("for"):
            return self._for(token)
        if self.accept("if"):
            self.expect("(")
            cond = self.expression()
            self.expect(")")
            then_case = self._braced()
            else_case = self._braced() if self.accept("else") else None
            return self._build(token, IfThenElse, cond, then_case, else_case)
        name = self.expect_ident("a statement")
        if name.text in FUNCS and (self.at("<") or self.at("(")):
            return self._call(name)
        return self._store(name)

    def _braced(self) -> Stmt:
        self.expect("{")
        body = self.block("}")
        self.expect("}")
        return body

    def _for(self, token: Token) -> Stmt:
        self.expect("(")
        name = self.expect_ident("a loop variable")
        var = Var(name.text, self.types.get(name.text, S32))
        self.expect("=")
        init = self.expression()
        self.expect(";")
        again = self.expect_ident("the loop variable")
        if again.text != name.text:
            raise self.error(again, f"expected the loop variable '{name.text}'")
        self.expect("<")
        bound = self.expression()
        self.expect(")")
        unroll = 1
        if self.accept("unroll"):
            self.expect("(")
            unroll = 0 if self.accept("full") else self.expect_int()
            self.expect(")")
        body = self._braced()
        return self._build(token, For, var, init, bound, body, unroll)

    def _store(self, name: Token) -> Stmt:
        self.expect("[")
        offset = self.expression()
        stride = None
        if self.accept(","):
            self.expect("stride")
            self.expect("=")
            stride = self.expect_int()
        self.expect("]")
        self.expect("=")
        value = self.expression()
        mask = self.expression() if self.accept("if") else None
        self.expect(";")
        return self._build(name, Store, self._buffer(name), offset, value, stride, mask)

    def _call(self, name: Token) -> Stmt:
        cls = FUNCS[name.text]
        attributes: dict[str, object] = {}
        if self.accept("<"):
            hints = typing.get_type_hints(cls)
            while True:
                key = self.expect_ident("an attribute name")
                if key.text not in hints or key.text == "name":
                    raise self.error(key, f"{name.text} has no attribute '{key.text}'")
                self.expect("=")
                attributes[key.text] = self._attribute(hints[key.text])
                if not self.accept(","):
                    break
            self.expect(">")
        try:
            func: Func = cls(**attributes)
        except TypeError as e:
            raise self.error(name, f"{name.text}: {e}") from None
        except IRTypeError as e:
            raise self.error(name, str(e)) from None
        self.expect("(")
        args: list[Expr | None] = []
        if not self.at(")"):
            while True:
                args.append(None if self.accept("null") else self.expression())
                if not self.accept(","):
                    break
        self.expect(")")
        self.expect(";")
        return self._build(name, Call, func, tuple(args))

    def _attribute(self, hint) -> object:
        token = self.peek
        if hint is bool:
            if self.accept("true"):
                return True
            if self.accept("false"):
                return False
            raise self.error(token, "expected true or false")
        if hint is int:
            negative = self.accept("-")
            value = self.expect_int()
            return -value if negative else value
        if hint is Type:
            return self.expect_type()
        if self.at('"'):
            raise self.error(token, "unexpected quote")
        return self.expect_ident("a word").text


def parse_expr(text: str, types: Mapping[str, Type | str] | None = None) -> Expr:
    """Parse a C expression into IR."""
    parser = Parser(text, types)
    if parser.peek.kind == "end":
        raise parser.error(parser.peek, "expected an expression")
    result = parser.expression()
    parser.done()
    return result


def parse_stmt(text: str, types: Mapping[str, Type | str] | None = None) -> Stmt:
    """Parse the statement language into IR."""
    parser = Parser(text, types)
    result = parser.block(None)
    parser.done()
    return result


def parse_type(text: str) -> Type:
    try:
        return Type.parse(text)
    except ValueError:
        raise Error(f"unknown type '{text}': expected e.g. s32, u16, f32, bf16, s32x8") from None
