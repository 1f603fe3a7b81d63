"""Parse the text form of IR (see `xegen.ir.printer`): C expressions and the statement language.

`parse_expr("2*(a+b) - a")` builds IR with C's conversions.  Errors raise `ParseError` with the
line and column.

The type of a variable: `x:u16` says it.  A plain `x` inside the scope of a `let x` or
`for (x = ...)` has that binder's type; elsewhere it has the type an annotation of `x` outside
such scopes gives (once is enough, and they must agree), or the one the `types` argument gives,
else s32.

Operators and parentheses are parsed with explicit stacks, so deep nesting (hundreds of
parentheses, a sum of thousands of terms) needs no recursion; calls, brackets and blocks nest
at most `MAX_NESTING` deep.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import Error, ParseError
from . import expr as ir
from .expr import RESERVED_WORDS, Expr, IRTypeError, Var
from .funcs import FUNCS, Func
from .stmt import ALLOC_KINDS, Alloc, Call, For, IfThenElse, Let, Seq, Stmt, Store, seq
from .types import F32, PTR, S32, TYPE_NAME, Type, hex_literal_type, literal_type

#: how deep calls, brackets (`buf.f32[...]`) and statement blocks may nest
MAX_NESTING = 100

# `x:u16`, `3:u32`: a colon after a value starts a type annotation only when a type name follows
# (so `c ? 1:2` is C's conditional)
_ANNOTATION = rf"(?::(?P<{{}}>{TYPE_NAME.pattern})(?![A-Za-z_0-9]))?"
_TOKEN = re.compile(
    rf"""
    (?P<space>[ \t\r\n]+|//[^\n]*)
  | (?P<number>0[xX][0-9a-fA-F]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|[0-9]+)
    {_ANNOTATION.format("numtype")}
  | (?P<ident>[A-Za-z_][A-Za-z_0-9]*){_ANNOTATION.format("identtype")}
  | (?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>&|^~!?:()\[\],;{{}}=.])
""",
    re.VERBOSE,
)
_INTEGER = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]+")

_BINARY_LEVELS = {
    "||": (2, "lor"),
    "&&": (3, "land"),
    "|": (4, "or"),
    "^": (5, "xor"),
    "&": (6, "and"),
    "==": (7, "eq"),
    "!=": (7, "ne"),
    "<": (8, "lt"),
    "<=": (8, "le"),
    ">": (8, "gt"),
    ">=": (8, "ge"),
    "<<": (9, "shl"),
    ">>": (9, "shr"),
    "+": (10, "add"),
    "-": (10, "sub"),
    "*": (11, "mul"),
    "/": (11, "div"),
    "%": (11, "mod"),
}
_SELECT_LEVEL, _PREFIX_LEVEL = 1, 12
_PREFIX_OPS = {"-": "neg", "!": "not", "~": "bitnot"}
_FUNCTIONS = {
    **{op: 1 if op in ir.UNARY_OPS else 2 if op in ir.BINARY_OPS else 3 for op in ir.CALL_OPS},
    "broadcast": 2,
}

_EXACT_OPERATIONS = {
    **{op: 1 for op in ir.UNARY_OPS},
    **{op: 2 for op in ir.BINARY_OPS},
    **{op: 3 for op in ir.TERNARY_OPS},
}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # number, ident, op, end
    text: str
    annotation: str | None
    position: int


@dataclass(frozen=True, slots=True)
class _Literal:
    """An integer or float literal without a type annotation: C gives it its type from context.

    `type` is set where C's type is not the one the builders give a Python number (a hex literal
    of u32 range, which C makes unsigned)."""

    value: int | float
    position: int
    type: Type | None = None


@dataclass(frozen=True, slots=True)
class _Pending:
    """An operator (or an open parenthesis or `?`) waiting on the stack for its operands."""

    kind: str  # prefix, cast, binary, colon (a `?` whose `:` was seen); paren and question mark
    token: Token
    level: int = 0
    op: str = ""
    target: Type | None = None
    saturate: bool = False

    @property
    def is_marker(self) -> bool:
        return self.kind in ("paren", "question")


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


def _is_hex(number: str) -> bool:
    return number[:2] in ("0x", "0X")


def _word(token: Token) -> str | None:
    """The text of an unannotated identifier or operator token."""
    return token.text if token.kind in ("ident", "op") and token.annotation is None else None


def _free_annotations(tokens: list[Token]) -> list[Token]:
    """The annotated variables outside every `let` and `for` of the same name: the scopes the
    parser will see, found from the tokens alone (a let's name is in scope from its `;` to the
    end of its block, a loop variable in the loop's body)."""

    def ahead(i: int) -> Token:
        return tokens[min(i, len(tokens) - 1)]

    scopes: list[set[str]] = [set()]  # the names bound in each open block
    loop_names: set[str] = set()  # loop variables whose body's `{` comes next
    let_name = None  # a let's name, in scope after its `;`
    found = []
    i = 0
    while i < len(tokens):
        token, word = tokens[i], _word(tokens[i])
        if word == "let" and ahead(i + 1).kind == "ident":
            let_name = ahead(i + 1).text
            i += 2
            continue
        if word == "for" and _word(ahead(i + 1)) == "(" and ahead(i + 2).kind == "ident":
            loop_names.add(ahead(i + 2).text)
            i += 3
            continue
        if word == "{":
            scopes.append(loop_names)
            loop_names = set()
        elif word == "}" and len(scopes) > 1:
            scopes.pop()
        elif word == ";" and let_name is not None:
            scopes[-1].add(let_name)
            let_name = None
        elif token.kind == "ident" and token.annotation is not None and not any(token.text in s for s in scopes):
            found.append(token)
        i += 1
    return found


class Parser:
    def __init__(self, text: str, types: Mapping[str, Type | str] | None = None):
        self.text = text
        self.tokens = tokenize(text)
        self.index = 0
        self.depth = 0  # calls, brackets and blocks being parsed
        self.given_types = {name: Type.parse(t) if isinstance(t, str) else t for name, t in (types or {}).items()}
        self.free_types: dict[str, Type] = dict(self.given_types)  # plus the annotations
        self.bound: list[tuple[str, Type]] = []  # let and for variables in scope, innermost last
        self._collect_annotations()

    # -- token helpers ---------------------------------------------------------------------
    def _collect_annotations(self) -> None:
        """A free variable annotated anywhere has that type wherever it is free."""
        for token in _free_annotations(self.tokens):
            if token.text in ("inf", "nan"):
                continue
            t = self._annotation_type(token)
            known = self.free_types.get(token.text)
            if known is not None and known != t:
                raise self.error(token, f"'{token.text}' is {t} here but {known} elsewhere")
            self.free_types[token.text] = t

    def _annotation_type(self, token: Token) -> Type:
        assert token.annotation is not None  # (callers pass annotated tokens)
        try:
            return Type.parse(token.annotation)
        except ValueError as e:
            raise self.error(token, str(e)) from None

    def _variable_type(self, token: Token) -> Type:
        if token.annotation is not None:
            return self._annotation_type(token)
        for name, t in reversed(self.bound):
            if name == token.text:
                return t
        return self.free_types.get(token.text, S32)

    @contextmanager
    def _nested(self, token: Token):
        """Around parsing that recurses (calls, brackets, blocks): limits how deep it goes."""
        if self.depth >= MAX_NESTING:
            raise self.error(token, f"calls, brackets and blocks nest more than {MAX_NESTING} deep here")
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

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
        if message.startswith(("expected", "unexpected text")) and _word(token) == ":":
            after = next((t for t in self.tokens if t.position > token.position), token)
            if after.kind == "ident" and after.position == token.position + 1:
                # `x:u99`: a colon right after a value is meant as a type annotation
                return _error(self.text, token.position, f"unknown type '{after.text}'")
        if message.startswith("expected"):
            message = f"{message}, found {found}"
        return _error(self.text, token.position, message)

    def expect_int(self) -> int:
        token = self.next()
        if token.kind != "number" or token.annotation or not _INTEGER.fullmatch(token.text):
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
        if not TYPE_NAME.fullmatch(token.text):
            raise self.error(token, f"unknown type '{token.text}'")
        try:
            return Type.parse(token.text)
        except ValueError as e:
            raise self.error(token, str(e)) from None

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
        return self._as_expr(self._value())

    def _as_expr(self, value) -> Expr:
        if isinstance(value, _Literal):
            try:
                return ir.const(value.value, value.type)
            except IRTypeError as e:
                raise _error(self.text, value.position, str(e)) from None
        return value

    @staticmethod
    def _raw(value):
        """What the builders take: an expression, or the Python number of an untyped literal."""
        if isinstance(value, _Literal):
            return value.value if value.type is None else ir.const(value.value, value.type)
        return value

    def _value(self):
        """One expression (an `Expr`, or a `_Literal`), up to a token that cannot continue it.

        Operator precedence parsing with two stacks: `operands` holds values, `pending` the
        operators, open parentheses and `?` still waiting for operands."""
        operands: list = []
        pending: list[_Pending] = []
        with self._nested(self.peek):
            while True:
                self._operand(operands, pending)
                if not self._operator(operands, pending):
                    break
            self._reduce(operands, pending, 0)
            if pending:  # an open parenthesis or a `?` without its `:`
                raise self.error(self.peek, "expected ')'" if pending[-1].kind == "paren" else "expected ':'")
        return operands.pop()

    def _operand(self, operands: list, pending: list[_Pending]) -> None:
        """Prefix operators, casts and open parentheses, then one primary expression."""
        while True:
            token = self.peek
            word = _word(token)
            if word in _PREFIX_OPS:
                self.next()
                following = self.peek
                if (
                    word == "-"
                    and following.position == token.position + 1
                    and (
                        (following.kind == "number" and not _is_hex(following.text))
                        or (following.kind == "ident" and following.text == "inf")
                    )
                ):
                    operands.append(self.primary(negate=token))  # `-3` is one literal
                    return
                pending.append(_Pending("prefix", token, _PREFIX_LEVEL, _PREFIX_OPS[word]))
            elif word == "(" and self._is_cast():
                self.next()
                saturate = self.accept("sat")
                target = self.expect_type()
                self.expect(")")
                pending.append(_Pending("cast", token, _PREFIX_LEVEL, target=target, saturate=saturate))
            elif word == "(":
                self.next()
                pending.append(_Pending("paren", token))
            else:
                operands.append(self.primary())
                return

    def _operator(self, operands: list, pending: list[_Pending]) -> bool:
        """After an operand: take the next binary operator, `?` or `:` (closing parentheses on
        the way); False at the end of the expression."""
        while _word(self.peek) == ")":
            self._reduce(operands, pending, 0)
            if not (pending and pending[-1].kind == "paren"):
                return False  # not ours: the `)` of a call
            pending.pop()
            self.next()
        token = self.peek
        word = _word(token) if token.kind == "op" else None
        if word in _BINARY_LEVELS:
            level, op = _BINARY_LEVELS[word]
            self._reduce(operands, pending, level)
            pending.append(_Pending("binary", token, level, op))
        elif word == "?":
            self._reduce(operands, pending, _SELECT_LEVEL + 1)
            pending.append(_Pending("question", token))
        elif word == ":" and self._open_question(pending):
            self._reduce(operands, pending, 0)
            question = pending.pop()
            pending.append(_Pending("colon", question.token, _SELECT_LEVEL))
        else:
            return False
        self.next()
        return True

    @staticmethod
    def _open_question(pending: list[_Pending]) -> bool:
        # from the top down to the nearest marker only: nested ternaries keep thousands pending
        return next((p.kind == "question" for p in reversed(pending) if p.is_marker), False)

    def _reduce(self, operands: list, pending: list[_Pending], level: int) -> None:
        """Apply the pending operators that bind at least as tightly as `level`, down to the
        nearest open parenthesis or `?`."""
        while pending and not pending[-1].is_marker and pending[-1].level >= level:
            p = pending.pop()
            if p.kind == "binary":
                b, a = operands.pop(), operands.pop()
                operands.append(self._build(p.token, ir.binary, p.op, self._raw(a), self._raw(b)))
            elif p.kind == "prefix":
                operands.append(self._build(p.token, ir.unary, p.op, self._raw(operands.pop())))
            elif p.kind == "cast":
                assert p.target is not None  # (a cast names its type)
                value = self._as_expr(operands.pop())
                operands.append(self._build(p.token, ir.Cast, p.target.with_lanes(value.type.lanes), value, p.saturate))
            else:  # colon: cond ? true_value : false_value
                false_value, true_value, cond = operands.pop(), operands.pop(), operands.pop()
                operands.append(
                    self._build(p.token, ir.select, self._raw(cond), self._raw(true_value), self._raw(false_value))
                )

    def _is_cast(self) -> bool:
        """At `(type)` or `(sat type)`?"""
        ahead = self.tokens[self.index + 1 : self.index + 4]
        if ahead and _word(ahead[0]) == "sat" and ahead[0].kind == "ident":
            ahead = ahead[1:]
        return (
            len(ahead) >= 2
            and ahead[0].kind == "ident"
            and ahead[0].annotation is None
            and TYPE_NAME.fullmatch(ahead[0].text) is not None
            and _word(ahead[1]) == ")"
        )

    def _buffer(self, token: Token) -> Var:
        return self._build(token, Var, token.text, PTR)

    def _number(self, token: Token, negate: Token | None):
        text = token.text
        try:
            value: int | float = int(text, 0) if _INTEGER.fullmatch(text) else float(text)
        except ValueError:
            raise self.error(token, f"malformed number '{text}'") from None
        if negate is not None:
            value = -value
            token = Token(token.kind, "-" + text, token.annotation, negate.position)
        if token.annotation is None:
            if isinstance(value, int) and not (-(1 << 63) <= value < (1 << 64)):
                raise self.error(token, f"{value} does not fit 64 bits")
            typed = None
            if isinstance(value, int) and _is_hex(text):  # (a hex number is an integer)
                hex_type = hex_literal_type(value)
                typed = hex_type if hex_type != literal_type(value) else None
            return _Literal(value, token.position, typed)
        t = self._annotation_type(token)
        if isinstance(value, float) and not t.is_float:
            raise self.error(token, f"{text} is not an integer, so it cannot be {t}")
        if t.is_int and isinstance(value, int) and not t.can_represent(value):  # (a float raised above)
            raise self.error(token, f"{value} does not fit {t}")
        return self._build(token, ir.const, value, t)

    def primary(self, negate: Token | None = None):
        """A literal, variable, call, load or pointer; `negate` is the `-` just before a number."""
        token = self.next()
        if token.kind == "number":
            return self._number(token, negate)
        if _word(token) == "&":
            buffer = self.expect_ident("a buffer name")
            self.expect("[")
            offset = self.expression()
            self.expect("]")
            return self._build(buffer, ir.Ptr, self._buffer(buffer), offset)
        if token.kind != "ident":
            self.index -= 1
            raise self.error(token, "expected an expression")
        name = token.text
        if name in ("inf", "nan"):
            t = self._annotation_type(token) if token.annotation else F32
            value = float(name) * (-1 if negate else 1)
            return self._build(token, ir.FloatImm, value, t)
        if name in ("true", "false") and token.annotation is None:
            return ir.BoolImm(name == "true")
        if name in _FUNCTIONS and self.at("(") or name == "shuffle":
            return self._function(token)
        if self.at(".") and token.annotation is None:
            if name in _EXACT_OPERATIONS and self.tokens[self.index + 2].text == "(":
                return self._exact_operation(token)
            return self._load(token)
        if name in RESERVED_WORDS or TYPE_NAME.fullmatch(name):
            raise self.error(token, f"'{name}' is a reserved word, not a variable")
        return Var(name, self._variable_type(token))

    def _arguments(self) -> list:
        self.expect("(")
        args = [self._value()]
        while self.accept(","):
            args.append(self._value())
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
        arity = _FUNCTIONS[name]
        if len(args) != arity:
            raise self.error(token, f"{name} takes {arity} arguments, not {len(args)}")
        if name == "broadcast":
            lanes = args[1]
            if not (isinstance(lanes, _Literal) and isinstance(lanes.value, int)):
                raise self.error(token, "broadcast takes a lane count literal")
            return self._build(token, ir.Broadcast, self._as_expr(args[0]), lanes.value)
        raw = [self._raw(a) for a in args]
        if name in ir.UNARY_OPS:
            return self._build(token, ir.unary, name, *raw)
        if name in ir.BINARY_OPS:
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
        """Statements up to `closing` (or the end), as one statement.  A `let` or `alloc` scopes
        over the rest of the block; a run of them is parsed in a loop, not by recursion."""
        with self._nested(self.peek):
            scoped_heads = []  # (build the scoped statement from its body, its token, the statements before it)
            items: list[Stmt] = []
            bound_before = len(self.bound)
            while not (self.at(closing) if closing else self.peek.kind == "end"):
                if self.peek.kind == "end":
                    raise self.error(self.peek, f"expected '{closing}'")
                scoped = self._scoped_head()
                if scoped is None:
                    items.append(self.statement())
                else:
                    scoped_heads.append((*scoped, items))
                    items = []
            del self.bound[bound_before:]  # the block's lets end here
        body = seq(*items) if items else Seq(())
        for build, token, before in reversed(scoped_heads):
            body = seq(*before, self._build(token, build, body))
        return body

    def _scoped_head(self):
        """`let x = v;` or `alloc b[n] kind;`: returns a function of the body and the token, or
        None.  A let's variable is in scope from here to the end of the block."""
        token = self.peek
        if self.accept("let"):
            name = self.expect_ident("a variable name")
            value = self.expression() if self.accept("=") else None
            var = self._build(name, Var, name.text, self._binder_type(name, value))
            if value is not None and value.type != var.type:
                raise self.error(name, f"let {var.name}: {var.type} bound to a {value.type} value")
            self.expect(";")
            self.bound.append((var.name, var.type))
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
            buffer = self._buffer(name)
            return (lambda body: Alloc(buffer, size, kind.text, body)), token
        return None

    def _binder_type(self, name: Token, value: Expr | None = None) -> Type:
        """A let's or loop's variable: as annotated, else as the `types` argument says, else
        the type of the let's value, else s32."""
        if name.annotation is not None:
            return self._annotation_type(name)
        if name.text in self.given_types:
            return self.given_types[name.text]
        return value.type if value is not None else S32

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

    def _braced(self, bound: Var | None = None) -> Stmt:
        """`{ statements }`; `bound` is a loop variable in scope inside."""
        self.expect("{")
        if bound is not None:
            self.bound.append((bound.name, bound.type))
        body = self.block("}")
        if bound is not None:
            self.bound.pop()
        self.expect("}")
        return body

    def _for(self, token: Token) -> Stmt:
        self.expect("(")
        name = self.expect_ident("a loop variable")
        var = self._build(name, Var, name.text, self._binder_type(name))
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
        body = self._braced(var)
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
    if not TYPE_NAME.fullmatch(text):
        raise Error(f"unknown type '{text}': expected e.g. s32, u16, f32, bf16, s32x8")
    try:
        return Type.parse(text)
    except ValueError as e:
        raise Error(str(e)) from None
