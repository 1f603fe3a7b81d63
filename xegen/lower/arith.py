"""Integer arithmetic the hardware does not do in one instruction.

- 32x32-bit multiplication where `hw.has_native_dword_multiply` is False: the low half of the
  second operand multiplies into the accumulator (`mul acc0 a b:uw`), then `mach` (no AccWrEn;
  XeHPG) or `macl` (XeHPC) adds the high half and returns the low 32 bits of the product.
- The high 32 bits of a product (`mulhi`), for division by constants: `mul acc0` then `mach`
  with AccWrEn (XeLP, XeHPG), or plain `mach` where `macl` exists (XeHPC).
  mach/macl read the accumulator with their destination's region, so the destination must
  start a GRF (acc0.0 is where the `mul` wrote): others go through a GRF-aligned temporary.
- Division and remainder by a constant with multiply-high "magic numbers" (Granlund and
  Montgomery; the search below is the one in Hacker's Delight, 10-1 and 10-8), with the
  IR's definitions for 0, 1, -1 and the most negative value.
- 64-bit address arithmetic from 32-bit halves (`addc` into the accumulator's carry) where
  `hw.has_int64_arithmetic` is False.

Every sequence is checked against the IR interpreter in tests/lower/test_arith.py, and on
lane counts and placements that split it in tests/lower/test_split_accumulator.py.
"""

from __future__ import annotations

from typing import overload

from ..emit import tables as T
from ..emit.instruction import Reg
from ..errors import UnsupportedError
from ..ir.types import S32, U16, U32, Type
from .builder import Builder, accumulator_runs
from .values import Constant, Region, Value

ACC = Reg("acc", 0, 0, "d")


def _has_macl(b: Builder) -> bool:
    return T.opcode_available(T.OPCODES["macl"], b.hw)


def _low_word(value: Region) -> Region:
    """The low 16 bits of each dword lane, as :uw."""
    if value.lanes == 1 or value.stride == 0:
        return Region(value.reg, value.offset, U16, value.lanes, 0 if value.lanes > 1 else 1)
    return Region(value.reg, value.offset, U16, value.lanes, 2 * value.stride)


def _accumulator_lanes(b: Builder) -> int:
    return 2 * b.grf // 4  # dword lanes that fit two accumulator registers


@overload
def _part(v: Region, start: int, n: int) -> Region: ...
@overload
def _part(v: Constant, start: int, n: int) -> Constant: ...
@overload
def _part(v: Value, start: int, n: int) -> Value: ...
def _part(v: Value, start: int, n: int) -> Value:
    """Lanes [start, start + n) of a value (scalars and constants are seen by all of them)."""
    if isinstance(v, Constant):
        return v.broadcast(n)
    if v.lanes == 1 or v.stride == 0:
        return v.broadcast(n)
    return v.slice(start, n)


def _starts_a_grf(b: Builder, region: Region) -> bool:
    """Whether a destination sits at subregister 0 of a GRF with stride 1: there the implicit
    accumulator operand of mach/macl, which has the destination's region, is the acc0.0<1>
    the `mul` wrote (IGC moves any other destination through a temporary the same way)."""
    reg = region.reg
    placed = reg.fixed is not None or reg.alignment % b.grf == 0
    return placed and (region.offset + (reg.fixed or 0)) % b.grf == 0 and (region.lanes == 1 or region.stride == 1)


def _pairs(b: Builder, dst: Region, a: Value, c: Value, second: str, options: tuple[str, ...]) -> None:
    """`mul acc a c.low16` then `second dst a c` for each group of lanes two accumulator
    registers hold.  mach/macl read the accumulator with their destination's region, the
    register number aside (`mach r19.0` reads acc0.0, not acc1.0), so the destination starts a
    GRF (else the result goes through a GRF-aligned temporary) and the pair is split into
    aligned power-of-two runs of lanes, each one `mul` and one `mach` (a run the builder would
    split is halved first: split, the second `mul` would land where the first `mach` does not
    look, or overwrite what it reads), whose `mul` writes the accumulator elements its
    destination names: acc0.<the destination's subregister> (`mul (4) acc0.0` for lanes 8-11 of
    `mach r18.0` when a GRF holds 8 dwords, `mul acc0.4` for `mach r18.4`)."""
    step = _accumulator_lanes(b)
    for start in range(0, dst.lanes, step):
        n = min(step, dst.lanes - start)
        piece = dst.slice(start, n)
        target = piece
        if not _starts_a_grf(b, piece):
            reg = b.vregs.new(n * dst.type.size, "mulh", b.grf)
            b.program.kill(reg)
            target = Region(reg, 0, dst.type, n, 1)
        _pair_runs(b, target, a, c, start, second, options)
        if target is not piece:
            b.mov(piece, target)


def _pair_runs(
    b: Builder, target: Region, a: Value, c: Value, start: int, second: str, options: tuple[str, ...]
) -> None:
    """The mul + `second` pairs of `target` (at a GRF's start), lanes `start`... of a and c."""
    per_acc = b.grf // 4  # dwords in one accumulator register
    xe = "d" if target.type.is_signed else "ud"

    def run(lane: int, m: int) -> tuple[Reg, list[Value], Region, list[Value]]:
        """The run's `mul` (destination, sources) and `second` (destination, sources)."""
        if isinstance(c, Constant):
            low: Value = Constant(int(c.value) & 0xFFFF, U16, m)
        else:
            low = _low_word(_part(c, start + lane, m))
        a_part = _part(a, start + lane, m)
        # target lane `lane` is subregister lane % per_acc of its GRF
        acc = Reg("acc", 0, lane % per_acc, xe)
        return acc, [a_part, low], target.slice(lane, m), [a_part, _part(c, start + lane, m)]

    def fits(lane: int, m: int) -> bool:
        acc, first, out, then = run(lane, m)
        mul = b.one_instruction("mul", acc, first, m, (xe, xe, "uw"))
        return mul and b.one_instruction(second, out, then, m, (xe, xe, xe))

    for lane, m in accumulator_runs(target.lanes, target.lanes, fits):
        acc, first, out, then = run(lane, m)
        b.alu("mul", acc, first, lanes=m, types=(xe, xe, "uw"))
        b.alu(second, out, then, options=options, types=(xe, xe, xe))


def multiply(b: Builder, dst: Region, a: Value, c: Value) -> None:
    """dst = low 32 bits of a * c (32-bit integers)."""
    if isinstance(a, Constant) and not isinstance(c, Constant):
        a, c = c, a
    if isinstance(c, Constant):
        v = int(c.value)
        if -0x8000 <= v <= 0x7FFF or (0 <= v <= 0xFFFF):
            word = "w" if -0x8000 <= v <= 0x7FFF else "uw"
            b.alu("mul", dst, [a, c], types=(None, None, word))
            return
        if b.hw.has_native_dword_multiply:
            b.alu("mul", dst, [a, c])
            return
        c = b.scalar(c)
    if isinstance(a, Constant):
        a = b.scalar(a)
    if b.hw.has_native_dword_multiply:
        b.alu("mul", dst, [a, c])
        return
    if _has_macl(b):
        _pairs(b, dst, a, c, "macl", ())
    else:
        _pairs(b, dst, a, c, "mach", ())


def multiply_high(b: Builder, dst: Region, a: Value, magic: int) -> None:
    """dst = high 32 bits of a * magic (signed when dst is signed, else unsigned)."""
    t = dst.type
    m = Constant(magic - (1 << 32) if t.is_signed and magic >= 1 << 31 else magic, t)
    if _has_macl(b):
        _pairs(b, dst, a, m, "mach", ())
    else:
        _pairs(b, dst, a, m, "mach", ("AccWrEn",))


# --- division by constants -----------------------------------------------------------------------


def signed_magic(d: int) -> tuple[int, int]:
    """(multiplier as an unsigned 32-bit pattern, shift) for signed division by d, |d| >= 2."""
    two31 = 1 << 31
    ad = abs(d)
    t = two31 + (1 if d < 0 else 0)
    anc = t - 1 - t % ad
    p = 31
    q1, r1 = two31 // anc, two31 - (two31 // anc) * anc
    q2, r2 = two31 // ad, two31 - (two31 // ad) * ad
    while True:
        p += 1
        q1, r1 = 2 * q1, 2 * r1
        if r1 >= anc:
            q1, r1 = q1 + 1, r1 - anc
        q2, r2 = 2 * q2, 2 * r2
        if r2 >= ad:
            q2, r2 = q2 + 1, r2 - ad
        delta = ad - r2
        if not (q1 < delta or (q1 == delta and r1 == 0)):
            break
    magic = (q2 + 1) & 0xFFFFFFFF
    if d < 0:
        magic = (-magic) & 0xFFFFFFFF
    return magic, p - 32


def unsigned_magic(d: int) -> tuple[int, int, bool]:
    """(multiplier, shift, needs the 33-bit fix-up) for unsigned division by d >= 2."""
    two31, two32 = 1 << 31, 1 << 32
    nc = two32 - 1 - (two32 - d) % d
    p = 31
    q1, r1 = two31 // nc, two31 - (two31 // nc) * nc
    q2, r2 = (two31 - 1) // d, (two31 - 1) - ((two31 - 1) // d) * d
    add = False
    while True:
        p += 1
        if r1 >= nc - r1:
            q1, r1 = 2 * q1 + 1, 2 * r1 - nc
        else:
            q1, r1 = 2 * q1, 2 * r1
        if r2 + 1 >= d - r2:
            if q2 >= two31 - 1:
                add = True
            q2, r2 = 2 * q2 + 1, 2 * r2 + 1 - d
        else:
            if q2 >= two31:
                add = True
            q2, r2 = 2 * q2, 2 * r2 + 1
        delta = d - 1 - r2
        if not (p < 64 and (q1 < delta or (q1 == delta and r1 == 0))):
            break
    return (q2 + 1) & 0xFFFFFFFF, p - 32, add


def _shift_of(d: int) -> int | None:
    return d.bit_length() - 1 if d > 0 and d & (d - 1) == 0 else None


def divide(b: Builder, x: Value, d: int, t: Type, want: str, quotient: Region | None = None) -> Value:
    """x / d (`want` "quotient") or x % d ("remainder") for a constant d, with the IR's
    definitions (truncation toward zero; x / 0 = all ones, x % 0 = x; MIN / -1 = MIN).  A
    remainder takes x / d from `quotient` where it needs it and the caller has it already."""
    lanes = x.lanes if isinstance(x, Region) else 1
    if t.bits != 32:
        raise UnsupportedError(f"division of {t} values is not supported (32-bit integers only)")
    if isinstance(x, Constant):
        raise AssertionError("constant division is folded before lowering")
    if d == 0:
        return Constant(-1 if t.is_signed else t.max, t, lanes) if want == "quotient" else x
    if d == 1 or (d == -1 and t.is_signed):
        if want == "remainder":
            return Constant(0, t, lanes)
        if d == 1:
            return x
        out = b.temp(t, lanes)
        b.mov(out, -x)
        return out
    if quotient is not None and want == "remainder":
        q = quotient
    else:
        q = _quotient_signed(b, x, d, lanes) if t.is_signed else _quotient_unsigned(b, x, d, lanes)
    if want == "quotient":
        return q
    r = b.temp(t, lanes)
    if not t.is_signed:
        d &= 0xFFFFFFFF
        shift = _shift_of(d)
        if shift is not None:
            b.alu("and", r, [x, Constant(d - 1, U32)])
            return r
    elif b.hw.has_integer_mad and -0x8000 <= -d <= 0x7FFF:
        b.alu("mad", r, [x, q, Constant(-d, t)])  # x + q * (-d)
        return r
    product = b.temp(t, lanes)
    multiply(b, product, q, Constant(d, t))
    b.alu("add", r, [x, -product])
    return r


def _quotient_signed(b: Builder, x: Region, d: int, lanes: int) -> Region:
    ad = abs(d)
    shift = _shift_of(ad)
    q = b.temp(S32, lanes)
    if shift is not None:
        # q = (x + (x < 0 ? 2^k - 1 : 0)) >> k, arithmetic
        bias = b.temp(S32, lanes)
        b.alu("asr", bias, [x, Constant(31, U32)], types=("d", "d", "ud"))
        b.alu("shr", bias, [bias, Constant(32 - shift, U32)], types=("ud", "ud", "ud"))
        b.alu("add", q, [x, bias])
        b.alu("asr", q, [q, Constant(shift, U32)], types=("d", "d", "ud"))
    else:
        magic, s = signed_magic(ad)
        multiply_high(b, q, x, magic)
        if magic >= 1 << 31:
            b.alu("add", q, [q, x])
        if s:
            b.alu("asr", q, [q, Constant(s, U32)], types=("d", "d", "ud"))
        sign = b.temp(S32, lanes)
        b.alu("shr", sign, [x, Constant(31, U32)], types=("ud", "ud", "ud"))
        b.alu("add", q, [q, sign])
    if d < 0:
        b.mov(q, -q)
    return q


def _quotient_unsigned(b: Builder, x: Region, d: int, lanes: int) -> Region:
    d &= 0xFFFFFFFF
    q = b.temp(U32, lanes)
    shift = _shift_of(d)
    if shift is not None:
        b.alu("shr", q, [x, Constant(shift, U32)])
        return q
    if d >= 1 << 31:  # the quotient is 0 or 1: x >= d
        # x >= d needs x >= 2^31, and then x - d does not wrap as a signed value: bit 31 of
        # x & ~(x - d).  No flag: a predicated sel cannot run a piece of a vector that starts
        # at a lane off a multiple of 4 (3 lanes split as 2 + 1)
        b.alu("add", q, [x, Constant((1 << 32) - d, U32)])
        b.alu("and", q, [-q, x])
        b.alu("shr", q, [q, Constant(31, U32)])
        return q
    magic, s, add = unsigned_magic(d)
    multiply_high(b, q, x, magic)
    if add:
        t = b.temp(U32, lanes)
        b.alu("add", t, [x, -q])
        b.alu("shr", t, [t, Constant(1, U32)])
        b.alu("add", q, [t, q])
        if s > 1:
            b.alu("shr", q, [q, Constant(s - 1, U32)])
    elif s:
        b.alu("shr", q, [q, Constant(s, U32)])
    return q
