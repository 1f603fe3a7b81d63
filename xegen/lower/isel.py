"""Instruction selection for statements: lets, allocations, loops, ifs, stores and calls.

Control flow is uniform (the IR describes one hardware thread), so it becomes scalar
branches:

- `for`: the counter in a register, `cmp` + predicated `jmpi` at the bottom (a do-while); a
  guard in front when the trip count is not known to be at least one.  A loop is unrolled
  (its variable substituted by constants) when its body indexes a GRF buffer with the loop
  variable, which registers cannot do, or when the IR asks for it (`unroll(0)` fully,
  `unroll(n)` by n when n divides the constant trip count).
- `if`: the condition into a flag, `(~f0.0) jmpi` over the then-part.

Each `jmpi` is recorded in `branches` (`xegen.lower.counts.Branch`: what it is, with the IR
expressions of trip counts and conditions and the lets they use), so that execution counts
can be computed without running the kernel.

`let` binds the value's register (no copy unless the value aliases a GRF buffer, whose bytes
may change later); a GRF `alloc` is one virtual register, its scope starting with a marker
that ends the liveness of whatever it held; SLM allocations get consecutive offsets.
"""

from __future__ import annotations

from ..emit.instruction import CondModifier, Predicate, Reg
from ..errors import UnsupportedError
from ..ir import expr as E
from ..ir import funcs as F
from ..ir import stmt as S
from ..ir.types import S32
from ..ir.visitor import free_vars, substitute_stmt, walk
from .abi import Abi, Deferred
from .builder import Builder
from .calls import Calls
from .counts import Branch
from .expressions import Binding, Expressions, GlobalBuffer, GrfBuffer, SlmBuffer, constant_lanes
from .inductions import LoopInductions
from .messages import Messages
from .values import Constant, Region

MAX_UNROLLED_STATEMENTS = 20000  # nodes of IR a full unroll may produce
SLM_ALIGNMENT = 64


class _Unbound:
    """What a name a scope binds was bound to before: nothing."""


UNBOUND = _Unbound()


class StatementLowering(Expressions):
    def __init__(self, builder: Builder, abi: Abi):
        super().__init__(builder)
        self.abi = abi
        self.r0 = abi.r0
        self.messages: Messages = Messages(self)
        self.calls = Calls(self)
        self.slm_bytes = 0
        self.buffer_regs: set[int] = set()
        self.uses_barriers = False
        self.uses_atomics = False
        self.uses_dpas = False
        self.branches: list[Branch] = []  # one per jmpi, in program order
        self.let_values: dict[str, tuple[E.Var, E.Expr] | None] = {}  # in scope; None: a loop variable

    # --- kernel -------------------------------------------------------------------------------
    def kernel(self, body: S.Stmt) -> None:
        names = {n.name for n in walk(body) if isinstance(n, E.Var)}
        bindings = self.abi.prologue(names)
        deferred = {name: b for name, b in bindings.items() if isinstance(b, Deferred)}
        self.env.update({name: b for name, b in bindings.items() if not isinstance(b, Deferred)})
        for name, d in deferred.items():  # thread ids from the hardware's thread index
            self.env[name] = self._immutable(self.value(d.expr))
        self.messages.plan(body)
        self.statement(body)
        self.abi.end_of_thread()

    # --- statements ---------------------------------------------------------------------------
    def statement(self, s: S.Stmt) -> None:
        self.forget_computed()
        getattr(self, "_s_" + type(s).__name__)(s)

    def _s_Seq(self, s: S.Seq) -> None:
        for item in s.stmts:
            self.statement(item)

    def _scoped(self, name: str, binding, body: S.Stmt) -> None:
        saved = self.env.get(name, UNBOUND)
        saved_let = self.let_values.get(name, UNBOUND)
        self.env[name] = binding
        self.let_values[name] = None
        try:
            self.statement(body)
        finally:
            if isinstance(saved, _Unbound):
                self.env.pop(name, None)
            else:
                self.env[name] = saved
            if isinstance(saved_let, _Unbound):
                self.let_values.pop(name, None)
            else:
                self.let_values[name] = saved_let

    def _definitions(self, *exprs: E.Expr) -> tuple[tuple[E.Var, E.Expr], ...]:
        """The lets in scope that `exprs` read, directly or through one another, each before
        the lets that read it."""
        order, done = [], set()
        stack = [(v, False) for e in exprs for v in reversed(free_vars(e))]
        while stack:
            var, expanded = stack.pop()
            definition = self.let_values.get(var.name)
            if definition is None or var.name in done:
                continue
            if expanded:
                done.add(var.name)
                order.append(definition)
            else:
                stack.append((var, True))
                stack.extend((v, False) for v in reversed(free_vars(definition[1])) if v.name not in done)
        return tuple(order)

    def _s_Let(self, s: S.Let) -> None:
        # Chains of lets run thousands deep after scheduling and CSE: bind them in a loop, not by recursion.
        saved: list[tuple[str, Binding | _Unbound]] = []
        saved_lets: list[tuple[str, tuple[E.Var, E.Expr] | None | _Unbound]] = []
        pointers: list[tuple[tuple[str, E.Var], Region | None]] = []
        body: S.Stmt = s
        try:
            while isinstance(body, S.Let):
                s = body
                name = s.var.name
                if s.value is None:
                    if name not in self.env:
                        raise UnsupportedError(f"external variable '{name}' is neither a kernel argument nor an id")
                else:
                    saved.append((name, self.env.get(name, UNBOUND)))
                    saved_lets.append((name, self.let_values.get(name, UNBOUND)))
                    self.env[name] = self._let_value(s)
                    self.let_values[name] = (s.var, s.value)
                    pointers += self.messages.bind_pointers(s.var)
                body = s.body
            self.statement(body)
        finally:
            self.messages.unbind_pointers(pointers)
            for name, old in reversed(saved):
                if isinstance(old, _Unbound):
                    self.env.pop(name, None)
                else:
                    self.env[name] = old
            for name, old_let in reversed(saved_lets):
                if isinstance(old_let, _Unbound):
                    self.let_values.pop(name, None)
                else:
                    self.let_values[name] = old_let

    def _let_value(self, s: S.Let):
        assert s.value is not None  # (an external variable's let binds no value)
        if s.var.name in self.env:  # a name bound anew: the values computed may read the old one
            self.forget_computed()
        if s.var.type.is_bool:
            value = self.value(s.value)
            return value if isinstance(value, Constant) else self._immutable(value)
        return self._immutable(self.value(s.value))

    def _immutable(self, v):
        """`v`, copied into a fresh register if its bytes belong to a GRF buffer (which later
        stores may change) or carry a source modifier."""
        if isinstance(v, Region) and (v.reg.id in self.buffer_regs or v.negate):
            lanes = v.lanes if v.stride else 1
            out = self.b.temp(v.type, lanes)
            self._copy(out, v if v.stride or v.lanes == 1 else Region(v.reg, v.offset, v.type, 1, 1, v.negate))
            return out if v.stride or v.lanes == 1 else out.broadcast(v.lanes)
        return v

    def _s_Alloc(self, s: S.Alloc) -> None:
        if s.kind == "grf":
            reg = self.b.grfs(-(-s.size // self.b.grf), s.buffer.name)
            self.buffer_regs.add(reg.id)
            self.b.program.kill(reg)
            self._scoped(s.buffer.name, GrfBuffer(reg, s.size), s.body)
        elif s.kind == "slm":
            base = -(-self.slm_bytes // SLM_ALIGNMENT) * SLM_ALIGNMENT
            self.slm_bytes = base + s.size
            self._scoped(s.buffer.name, SlmBuffer(base, s.size), s.body)
        else:
            raise UnsupportedError(f"allocating global memory ('{s.buffer.name}') inside a kernel is not supported")

    def _s_Store(self, s: S.Store) -> None:
        bound = self.buffer(s.buffer)
        if isinstance(bound, GrfBuffer):
            return self._grf_store(bound, s)
        self.messages.store_statement(s.buffer, s.offset, s.value, s.stride, s.mask)

    def _grf_store(self, buffer: GrfBuffer, s: S.Store) -> None:
        t = s.value.type
        if s.offset.type.lanes > 1:
            offsets = constant_lanes(self, s.offset)
            value = self.value(s.value)
            if s.mask is not None:
                raise UnsupportedError("a masked scatter into GRF registers is not supported")
            for lane, offset in enumerate(offsets):
                dst = self.grf_destination(buffer, s.buffer.name, offset, t.scalar, 1, None)
                self._copy(
                    dst,
                    value.lane(lane)
                    if isinstance(value, Region) and value.lanes > 1 and value.stride
                    else value
                    if isinstance(value, Constant) or value.lanes == 1
                    else Region(value.reg, value.offset, value.type),
                )
            return
        offset = self.constant_int(s.offset, f"the offset into GRF buffer '{s.buffer.name}'")
        dst = self.grf_destination(buffer, s.buffer.name, offset, t.scalar, t.lanes, s.stride)
        if s.mask is None or (isinstance(s.mask, E.BoolImm) and s.mask.value):
            self.into(s.value, dst)
            return
        if isinstance(s.mask, E.BoolImm):
            return
        value = self.value(s.value)
        flag = self.conditions.flag(s.mask, t.lanes)
        self._copy(dst, value, predicate=Predicate(flag))

    def _s_IfThenElse(self, s: S.IfThenElse) -> None:
        cond = s.cond
        if isinstance(cond, E.BoolImm):
            branch = s.then_case if cond.value else s.else_case
            if branch is not None:
                self.statement(branch)
            return
        flag = self.conditions.flag(cond, 1)
        otherwise = self.b.new_label("else")
        self.branches.append(Branch("if", cond=cond, lets=self._definitions(cond)))
        self.b.jump(otherwise, Predicate(flag, invert=True))
        self.statement(s.then_case)
        if s.else_case is not None:
            end = self.b.new_label("endif")
            self.branches.append(Branch("else"))
            self.b.jump(end)
            self.b.label(otherwise)
            self.statement(s.else_case)
            self.b.label(end)
        else:
            self.b.label(otherwise)

    def _s_For(self, s: S.For) -> None:
        init, bound = self.value(s.init), self.value(s.bound)
        constant = isinstance(init, Constant) and isinstance(bound, Constant)
        if isinstance(init, Constant) and isinstance(bound, Constant):  # (constant)
            trips = int(bound.value) - int(init.value)
            if trips <= 0:
                return
            if self._must_unroll(s) or s.unroll == 0:
                return self._unrolled(s, int(init.value), trips)
            if s.unroll > 1 and trips % s.unroll == 0 and trips > s.unroll:
                return self._partially_unrolled(s, int(init.value), trips)
        elif self._must_unroll(s):
            raise UnsupportedError(
                f"loop '{s.var.name}' indexes GRF registers with its variable, so it must be "
                f"unrolled, but its bounds are not known at compile time"
            )
        bound = self._immutable(bound)
        counter = self.b.temp(s.var.type.scalar, name=s.var.name)
        self.b.mov(counter, init)
        top, end = self.b.new_label("loop"), self.b.new_label("end")
        flag = self.b.scratch_flag()
        # induction registers are set here, before the guard: its count of executions is the
        # code's in front of the loop (lower/counts.py)
        outer = self.inductions
        self.inductions = LoopInductions(s.var, s.init, s.body, len(self.b.program.items))
        if not constant:
            self.b.alu("cmp", Reg("null", 0, 0, "d"), [counter, bound], cond=CondModifier("ge", flag))
            self.branches.append(Branch("guard"))
            self.b.jump(end, Predicate(flag))
        self.b.label(top)
        try:
            self._scoped(s.var.name, counter, s.body)
            self.inductions.step_all(self)
        finally:
            self.inductions = outer
        self.b.alu("add", counter, [counter, Constant(1, s.var.type)])
        self.b.alu("cmp", Reg("null", 0, 0, "d"), [counter, bound], cond=CondModifier("lt", flag))
        self.branches.append(
            Branch("loop", var=s.var, init=s.init, bound=s.bound, lets=self._definitions(s.init, s.bound))
        )
        self.b.jump(top, Predicate(flag))
        self.b.label(end)

    def _must_unroll(self, s: S.For) -> bool:
        """Whether the body indexes a GRF buffer with an offset that depends on the loop variable."""
        var = s.var
        grf_names = {name for name, b in self.env.items() if isinstance(b, GrfBuffer)}
        grf_names |= {n.buffer.name for n in walk(s.body) if isinstance(n, S.Alloc) and n.kind == "grf"}
        for node in walk(s.body):
            offset = None
            if isinstance(node, (E.Load, E.Ptr, S.Store)) and node.buffer.name in grf_names:
                offset = node.offset
            if offset is not None and any(isinstance(n, E.Var) and n == var for n in walk(offset)):
                return True
        return False

    def _unrolled(self, s: S.For, init: int, trips: int) -> None:
        size = sum(1 for _ in walk(s.body))
        if size * trips > MAX_UNROLLED_STATEMENTS:
            raise UnsupportedError(f"unrolling loop '{s.var.name}' ({trips} iterations) would be too large")
        for i in range(init, init + trips):
            self.statement(substitute_stmt(s.body, {s.var: E.const(i, s.var.type)}))

    def _partially_unrolled(self, s: S.For, init: int, trips: int) -> None:
        n = s.unroll
        outer = E.Var(s.var.name + "_u", s.var.type)
        copies = [substitute_stmt(s.body, {s.var: E.const(init, s.var.type) + outer * n + k}) for k in range(n)]
        self._s_For(S.For(outer, E.const(0, s.var.type), E.const(trips // n, s.var.type), S.seq(*copies)))

    def _s_Call(self, s: S.Call) -> None:
        f = s.func
        if isinstance(f, F.Send):
            if f.op == "atomic":
                self.uses_atomics = True
            self.messages.call(f, s.args)
        elif isinstance(f, F.Dpas):
            self.uses_dpas = True
            self.calls.dpas(f, s.args)
        elif isinstance(f, F.Mad):
            self.calls.mad(f, s.args)
        elif isinstance(f, F.Dp4a):
            self.calls.dp4a(f, s.args)
        elif isinstance(f, F.Reorder):
            self.calls.reorder(f, s.args)
        elif isinstance(f, F.Barrier):
            self.uses_barriers = True
            self.calls.signal()
            self.calls.wait()
        elif isinstance(f, F.Signal):
            self.uses_barriers = True
            self.calls.signal()
        elif isinstance(f, F.Wait):
            self.uses_barriers = True
            self.calls.wait()
        elif isinstance(f, F.Fence):
            self.calls.fence(f)
        elif isinstance(f, F.EndOfThread):
            self.abi.end_of_thread()
        else:
            raise UnsupportedError(f"call '{f.name}' is not supported")


__all__ = ["StatementLowering", "GlobalBuffer", "S32"]
