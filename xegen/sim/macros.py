"""The IEEE math macros: math.invm, math.rsqtm and madm (IGC's fp64 division and square root on
XeHPC, e.g. `math.invm (16) (eo)f3.0 r116.mme0 r9.nomme r5.nomme` then ten madm; :f forms too).

What the hardware guarantees and IGC relies on: the sequence ends in a correctly rounded
a / b or sqrt(a) (in cr0's rounding mode).  How it gets there — its initial approximation
tables and how many extra bits the mme registers carry — is not public, so the simulator
models the macros by their arithmetic, exactly:

- `math.invm dst src0 src1` (a / b) and `math.rsqtm dst src0` (sqrt a), with the (eo) flag
  modifier: when the operands are special (a zero, an infinity or a NaN; for rsqtm also a
  negative number) the result is final — the IEEE quotient or root goes to dst and the
  channel's flag bit is set ("early out": IGC skips its madm refinement there).  Otherwise
  the flag bit is cleared and dst.mmeK gets the start of the iteration: 1/b (rounded to
  the extended precision below), or 1/sqrt(a) to double precision.
- `madm dst src0 src1 src2` is src0 + src1 * src2 computed exactly.  Written with an mme
  register (`r100.mme4`), the value keeps its extended precision (round to nearest
  even, no exponent limit): the register gets it rounded to a double, mme4 the rest.  A
  source `rN.mmeK` reads that extended value while rN still holds the double written with
  it.  Written with `.nomme`, the exact value is rounded once to a double in cr0's rounding
  mode (denormals flushed unless cr0 keeps them) — the last step of every sequence.

The same holds for the :f forms.  Extended values keep the type's mantissa plus EXTRA_BITS =
11 bits (64 for :df), a modeling choice: with it every sequence IGC emits gives the IEEE
result (an exact quotient or root leaves a zero residual, so the directed rounding modes are
right too); the hardware's own count is not public.  Exact arithmetic runs per channel in
Python (fractions), which is slow but only macros pay for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..emit.instruction import Instruction, Reg
from ..emit.regions import three_source_region
from . import fpround
from .errors import SimulationError
from .flags import FlagWriter
from .operands import Destination, source

if TYPE_CHECKING:
    from .machine import Machine

MME_REGISTERS = 8  # mme0-7; operand mme 8 is "nomme"
EXTRA_BITS = 11  # bits an mme-extended value keeps beyond its type's mantissa (a modeling choice)


@dataclass(frozen=True)
class Format:
    """A float type of the macros: :df (IGC's double division and square root) or :f."""

    name: str
    mantissa_bits: int  # with the implicit bit
    min_exponent: int  # of the smallest normal number
    max_exponent: int
    dtype: type[np.floating]

    @property
    def min_normal(self) -> Fraction:
        return Fraction(2) ** self.min_exponent

    @property
    def mme_precision(self) -> int:
        return self.mantissa_bits + EXTRA_BITS


FORMATS = {"df": Format("df", 53, -1022, 1023, np.float64), "f": Format("f", 24, -126, 127, np.float32)}


@dataclass
class Extension:
    """What one mme register extends: the register bytes it was written with, the values
    they held then (the value rounded to the type), and the exact values (Fractions; None where
    never written)."""

    where: tuple[str, int]  # (file, byte offset of channel 0)
    shadow: np.ndarray  # (threads, channels) float64: what the register held
    exact: np.ndarray  # (threads, channels) object


class MacroState:
    """The mme registers of a batch's threads."""

    def __init__(self) -> None:
        self.registers: dict[int, Extension] = {}


def compile_macro(inst: Instruction, m: Machine, mask_of):
    """`mask_of()` gives the instruction's channel mask (None: every channel), as the ALU computes it."""
    mask = _channel_mask(inst, m, mask_of)
    if inst.opcode == "madm":
        return _madm(inst, m, mask)
    if inst.function == "invm":
        return _invm_rsqtm(inst, m, mask, divide=True)
    return _invm_rsqtm(inst, m, mask, divide=False)


def _channel_mask(inst: Instruction, m: Machine, mask_of):
    threads, n = m.files.threads, inst.exec_size

    def mask() -> np.ndarray:
        mask = mask_of()
        return np.ones((threads, n), dtype=bool) if mask is None else np.broadcast_to(mask, (threads, n))

    return mask


def _operands(inst: Instruction) -> tuple[Format, Reg, list[Reg]]:
    """The format, destination and sources of a macro, all registers of one type."""
    operands = (inst.dst, *inst.srcs)
    registers = [op for op in operands if isinstance(op, Reg)]
    types = {reg.type for reg in registers}
    if len(registers) != len(operands) or len(types) != 1 or next(iter(types)) not in FORMATS:
        raise SimulationError(
            f"{inst.opcode}{f'.{inst.function}' if inst.function else ''} operands must be "
            "registers of one type, :f or :df"
        )
    return FORMATS[next(iter(types))], registers[0], registers[1:]


def _byte_offset(reg: Reg, m: Machine, fmt: Format) -> tuple[str, int]:
    return reg.file, m.files.register_base(reg.file, reg.number) + reg.subreg * np.dtype(fmt.dtype).itemsize


def _extended_reader(reg: Reg, inst: Instruction, m: Machine, index: int, fmt: Format):
    """Reads a source's channels as exact values (Fractions; NaN, infinities and zeros as floats)."""
    region = three_source_region(reg, index) if inst.opcode == "madm" else None
    plain = Reg(reg.file, reg.number, reg.subreg, fmt.name, reg.vstride, reg.width, reg.hstride)
    read, _ = source(plain, inst.exec_size, m.files, region=region, where=f"src{index}")
    state: MacroState = m.macros
    where = _byte_offset(reg, m, fmt)
    mme = reg.mme if reg.mme is not None and reg.mme < MME_REGISTERS else None
    negate = reg.neg

    def reader(threads: np.ndarray, lanes: np.ndarray) -> list:
        held = np.broadcast_to(read(), (m.files.threads, inst.exec_size))[threads, lanes]
        ext = state.registers.get(mme) if mme is not None else None
        values = []
        for k, value in enumerate(held):
            exact = None
            if ext is not None and ext.where == where:
                t, lane = threads[k], lanes[k]
                if ext.exact[t, lane] is not None and ext.shadow[t, lane] == value:
                    exact = ext.exact[t, lane]
            if exact is None:  # zeros stay floats, keeping their sign for the IEEE special cases
                exact = Fraction(float(value)) if np.isfinite(value) and value != 0 else float(value)
            if reg.abs:
                exact = abs(exact)
            values.append(-exact if negate else exact)
        return values

    return reader


def _writer(dst: Reg, inst: Instruction, m: Machine, fmt: Format):
    """Stores exact per-channel values into dst (and its mme register)."""
    store = Destination(
        Reg(dst.file, dst.number, dst.subreg, fmt.name, hstride=dst.hstride or 1), inst.exec_size, m.files
    )
    mme = dst.mme if dst.mme is not None and dst.mme < MME_REGISTERS else None
    where = _byte_offset(dst, m, fmt)
    threads_n, n = m.files.threads, inst.exec_size

    def write(threads: np.ndarray, lanes: np.ndarray, values: list, final: bool) -> None:
        mode = m.mode
        keep = mode.keeps(np.dtype(fmt.dtype))
        rounded = np.zeros((threads_n, n), dtype=fmt.dtype)
        for k, value in enumerate(values):
            if isinstance(value, float):  # NaN, infinity or a signed zero
                rounded[threads[k], lanes[k]] = value
            elif final:
                rounded[threads[k], lanes[k]] = round_to_format(value, fmt, mode.rounding, keep)
            else:
                rounded[threads[k], lanes[k]] = round_to_format(value, fmt, fpround.RNE, True)
        mask = np.zeros((threads_n, n), dtype=bool)
        mask[threads, lanes] = True
        store.store_raw(rounded, mask)
        if mme is None:
            return
        ext = m.macros.registers.get(mme)
        if ext is None or ext.where != where:
            ext = Extension(where, np.zeros((threads_n, n)), np.full((threads_n, n), None, dtype=object))
            m.macros.registers[mme] = ext
        for k, value in enumerate(values):
            t, lane = threads[k], lanes[k]
            ext.shadow[t, lane] = rounded[t, lane]
            ext.exact[t, lane] = None if isinstance(value, float) else value

    return write


def _madm(inst: Instruction, m: Machine, mask):
    fmt, dst, srcs = _operands(inst)
    readers = [_extended_reader(src, inst, m, i, fmt) for i, src in enumerate(srcs)]
    write = _writer(dst, inst, m, fmt)
    final = dst.mme is None or dst.mme >= MME_REGISTERS

    def run():
        threads, lanes = np.nonzero(mask())
        if threads.size == 0:
            return
        a, b, c = ([_zero_as_exact(v) for v in r(threads, lanes)] for r in readers)
        results: list[Fraction | float] = []
        for x, y, z in zip(a, b, c, strict=True):
            if isinstance(x, float) or isinstance(y, float) or isinstance(z, float):
                results.append(float(x) + float(y) * float(z))  # a NaN or infinity: IEEE arithmetic
                continue
            exact = x + y * z
            results.append(exact if final else round_significant(exact, fmt.mme_precision))
        write(threads, lanes, results, final)

    return run


def _invm_rsqtm(inst: Instruction, m: Machine, mask, divide: bool):
    fmt, dst, srcs = _operands(inst)
    readers = [_extended_reader(src, inst, m, i, fmt) for i, src in enumerate(srcs)]
    write = _writer(dst, inst, m, fmt)
    flag = None
    if inst.cond_modifier is not None:
        if inst.cond_modifier.cond != "eo":
            raise SimulationError(f"math.{inst.function} with condition .{inst.cond_modifier.cond} (only (eo))")
        flag = FlagWriter(m.files.flags, inst.cond_modifier.flag, inst.exec_size, inst.channel_offset)

    def run():
        enabled = mask()
        threads, lanes = np.nonzero(enabled)
        if threads.size == 0:
            return
        keep = m.mode.keeps(np.dtype(fmt.dtype))
        operands = [[_flush(v, keep, fmt) for v in r(threads, lanes)] for r in readers]
        results, early = [], np.zeros(enabled.shape, dtype=bool)
        for k in range(threads.size):
            a = operands[0][k]
            special = any(_special(v) for v in (operands[0][k], operands[1][k])) if divide else _special(a) or a < 0
            if special:
                early[threads[k], lanes[k]] = True
                x = fmt.dtype(float(a))
                with np.errstate(all="ignore"):
                    value = x / fmt.dtype(float(operands[1][k])) if divide else np.sqrt(x)
                results.append(Fraction(float(value)) if np.isfinite(value) and value != 0 else float(value))
            elif divide:
                results.append(round_significant(1 / operands[1][k], fmt.mme_precision))
            else:  # 1/sqrt(a) to double precision: the sequence doubles its accuracy
                results.append(Fraction(float(1.0 / np.sqrt(np.float64(float(a))))))
        write(threads, lanes, results, False)
        if flag is not None:
            flag(early, enabled)

    return run


def _zero_as_exact(value):
    """madm computes with zeros exactly; only NaN and infinity take IEEE arithmetic."""
    return Fraction(0) if isinstance(value, float) and value == 0 else value


def _special(value) -> bool:
    return isinstance(value, float) or value == 0


def _flush(value, keep_denormals: bool, fmt: Format):
    """An operand's value, denormals read as zero unless cr0 keeps them."""
    if keep_denormals or isinstance(value, float) or abs(value) >= fmt.min_normal:
        return value
    return 0.0 if value > 0 else -0.0


def round_significant(value: Fraction, bits: int) -> Fraction:
    """`value` rounded to `bits` significant bits, to nearest even, with no exponent limit."""
    if value == 0:
        return value
    sign = -1 if value < 0 else 1
    num, den = abs(value.numerator), value.denominator
    exponent = num.bit_length() - den.bit_length()  # 2^exponent <= |value| < 2^(exponent + 2)
    if num < den << exponent if exponent >= 0 else (num << -exponent) < den:
        exponent -= 1
    shift = bits - 1 - exponent  # |value| * 2^shift has `bits` integer bits
    scaled_num, scaled_den = (num << shift, den) if shift >= 0 else (num, den << -shift)
    quotient, remainder = divmod(scaled_num, scaled_den)
    if 2 * remainder > scaled_den or (2 * remainder == scaled_den and quotient & 1):
        quotient += 1
    return sign * Fraction(quotient) / (Fraction(2) ** shift)


def round_to_format(value: Fraction, fmt: Format, rounding: int, keep_denormals: bool) -> float:
    """An exact nonzero value rounded once to the format in a rounding mode (fpround.RNE, RU,
    RD, RTZ): denormals when they are kept (else a signed zero), infinity or the largest
    finite number past the range, as IEEE 754 says for each mode."""
    negative = value < 0
    magnitude = -value if negative else value
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1  # now 2^exponent <= magnitude < 2^(exponent + 1)
    quantum = max(exponent, fmt.min_exponent) - (fmt.mantissa_bits - 1)
    scaled = magnitude / Fraction(2) ** quantum
    integer, remainder = divmod(scaled.numerator, scaled.denominator)
    if remainder:
        away = {
            fpround.RNE: 2 * remainder > scaled.denominator or (2 * remainder == scaled.denominator and integer & 1),
            fpround.RU: not negative,
            fpround.RD: negative,
            fpround.RTZ: False,
        }[rounding]
        integer += int(away)
    largest = (2**fmt.mantissa_bits - 1) * Fraction(2) ** (fmt.max_exponent - fmt.mantissa_bits + 1)
    result = integer * Fraction(2) ** quantum
    if result > largest:
        to_infinity = (
            rounding == fpround.RNE
            or (rounding == fpround.RU and not negative)
            or (rounding == fpround.RD and negative)
        )
        out = float("inf") if to_infinity else float(largest)
    elif not keep_denormals and result < fmt.min_normal:
        out = 0.0
    else:
        out = float(result)
    return float(fmt.dtype(-out if negative else out))
