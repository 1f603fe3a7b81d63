"""Hypothesis strategies for valid Xe instructions, per platform.

The rules here are written from IGA's operation models (legal type combinations, which
instructions take predicates, condition modifiers, saturation and source modifiers) and
from probing iga64: every generated instruction is one that `iga64 -a` accepts and
encodes without silently dropping a field.  The encoder is not consulted, so the tests
that compare our bytes with iga64's check the encoder independently.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from xegen import hw as hwlib
from xegen.emit import fields
from xegen.emit.instruction import CondModifier, Flag, Imm, Instruction, Predicate, Reg, SendDescriptor, Swsb

XELP, XEHPG, XEHPC = hwlib.XELP, hwlib.XEHPG, hwlib.XEHPC

INT = ("ub", "b", "uw", "w", "ud", "d")
INT_NO_BYTE = ("uw", "w", "ud", "d")
Q = ("uq", "q")
SIZE = {
    "ub": 1,
    "b": 1,
    "uw": 2,
    "w": 2,
    "ud": 4,
    "d": 4,
    "uq": 8,
    "q": 8,
    "hf": 2,
    "f": 4,
    "df": 8,
    "bf": 2,
    "tf32": 4,
    "bf8": 1,
}


def _is_xehpc(p: hwlib.Platform) -> bool:
    return p.instruction_layout == fields.XEHPC


def _has_bf(p: hwlib.Platform) -> bool:
    return p.has_dpas


# ---------------------------------------------------------------------------------------
# Type rules: (destination types, source types) pairs per opcode, after IGA's models.


def _float_pairs(p):
    pairs = [(("f",), ("f",)), (("hf",), ("hf",)), (("df",), ("df",))]
    if _has_bf(p):
        pairs.append((("bf", "f"), ("bf", "f")))
    return pairs


def _for_platform(rules, p: hwlib.Platform):
    """XeLP has no 64-bit integer or double arithmetic: drop those types there."""
    if p.has_dpas:
        return rules
    out = []
    for dsts, srcs in rules:
        dsts = tuple(t for t in dsts if SIZE.get(t, 4) < 8)
        srcs = tuple(t for t in srcs if SIZE.get(t, 4) < 8)
        if dsts and srcs:
            out.append((dsts, srcs))
    return out


def binary_type_rules(op: str, p: hwlib.Platform) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    return _for_platform(_binary_type_rules(op, p), p)


def _binary_type_rules(op: str, p: hwlib.Platform) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    arith = [(INT, INT), (Q, INT_NO_BYTE + Q), (INT_NO_BYTE, Q)] + _float_pairs(p)
    logic = [(INT, INT), (Q, INT_NO_BYTE + Q), (INT_NO_BYTE, Q)]
    rules = {
        "add": arith,
        "sel": arith,
        "cmp": arith,
        "avg": [(INT, INT)],
        "mul": ([(("ub", "b", "uw", "w", "ud", "d"), ("ub", "b"))] if not _is_xehpc(p) else [])
        + [(("uw", "w", "ud", "d"), ("uw", "w")), (("ud", "d"), ("uw", "w", "ud", "d")), (Q, ("ud", "d"))]
        + _float_pairs(p),
        "cmpn": [(INT, INT), (("f",), ("f",)), (("hf",), ("hf",)), (("df",), ("df",))],
        "and": logic,
        "or": logic,
        "xor": logic,
        "shl": logic,
        "asr": logic,
        "shr": [(("ub", "uw", "ud"), ("ub", "uw", "ud")), (("uq",), ("uw", "ud", "uq"))],
        "rol": [(("uw", "ud"), ("uw", "ud"))],
        "ror": [(("uw", "ud"), ("uw", "ud"))],
        "addc": [(("ud",), ("ud",))],
        "subb": [(("ud",), ("ud",))],
        "mach": [(("d",), ("d",)), (("ud",), ("ud",))],
        "macl": [(("d",), ("d",)), (("ud",), ("ud",))],
        "mac": [(INT_NO_BYTE, ("ub", "b", "uw", "w")), (("f",), ("f",)), (("hf",), ("hf",))],
        "movi": [(("d",), ("d",)), (("ud",), ("ud",))],
        "bfi1": [(("ud",), ("ud",)), (("d",), ("d",))],
        "srnd": [(("hf",), ("f",))],
    }
    return rules[op]


def unary_type_rules(op: str, p: hwlib.Platform):
    return _for_platform(_unary_type_rules(op, p), p)


def _unary_type_rules(op: str, p: hwlib.Platform):
    mov = [
        (INT, INT),
        (("f",), INT),
        (INT, ("f",)),
        (("f",), ("f",)),
        (("hf",), INT),
        (("hf",), ("f",)),
        (INT, ("hf",)),
        (("f",), ("hf",)),
        (("hf",), ("hf",)),
        (("df", "f", "uq", "q", "uw", "w", "ud", "d"), ("df",)),
        (("df",), ("f", "uq", "q", "uw", "w", "ud", "d")),
        (("uq", "q", "f", "uw", "w", "ud", "d"), Q),
    ]
    if _has_bf(p):
        mov.append((("bf",), ("f",)))
    if _is_xehpc(p):
        mov.append((("tf32",), ("f",)))
        mov.append((("bf8",), ("hf",)))
        mov.append((("hf",), ("bf8",)))
    rules = {
        "mov": mov,
        "not": [(INT, INT), (Q, INT_NO_BYTE + Q)],
        "frc": [(("f",), ("f",))],
        "rndu": [(("f",), ("f",))],
        "rndd": [(("f",), ("f",))],
        "rnde": [(("f",), ("f",))],
        "rndz": [(("f",), ("f",))],
        "lzd": [(("ud",), INT)],
        "fbh": [(("ud",), ("ud", "d"))],
        "fbl": [(("ud",), ("ud",))],
        "cbit": [(("ud",), ("ub", "uw", "ud"))],
        "bfrev": [(("ud",), ("ud",))],
    }
    return rules[op]


def ternary_type_rules(op: str, p: hwlib.Platform):
    return _for_platform(_ternary_type_rules(op, p), p)


def _ternary_type_rules(op: str, p: hwlib.Platform):
    floats = [(("f",), ("f",)), (("hf",), ("hf",)), (("df",), ("df",))]
    if _has_bf(p):  # bfloat16 mixed with float (XeHPG and later)
        floats.append((("bf", "f"), ("bf", "f")))
    rules = {
        "mad": floats + [(("uw", "w"), ("ub", "b")), (INT_NO_BYTE, INT_NO_BYTE)],
        "add3": [(INT_NO_BYTE, INT_NO_BYTE)],
        "bfn": [(("ud", "uw"), ("ud", "uw"))],
        "csel": [(("f",), ("f",)), (("hf",), ("hf",)), (("ud", "d"), ("ud", "d")), (("uw", "w"), ("uw", "w"))],
        "bfe": [(("ud",), ("ud",)), (("d",), ("d",))],
        "bfi2": [(("ud",), ("ud",)), (("d",), ("d",))],
        "dp4a": [(("ud", "d"), ("ud", "d"))],
    }
    return rules[op]


# ---------------------------------------------------------------------------------------
# Common pieces


def flags(p: hwlib.Platform):
    return st.builds(Flag, st.integers(0, p.flag_registers - 1), st.integers(0, 1))


def predicate_modes(p: hwlib.Platform):
    if _is_xehpc(p):
        return ("", "any", "all")
    return (
        "",
        "anyv",
        "allv",
        "any2h",
        "all2h",
        "any4h",
        "all4h",
        "any8h",
        "all8h",
        "any16h",
        "all16h",
        "any32h",
        "all32h",
    )


@st.composite
def predicates(draw, p: hwlib.Platform, flag: Flag | None = None):
    if not draw(st.booleans()):
        return None
    return Predicate(flag or draw(flags(p)), draw(st.booleans()), draw(st.sampled_from(predicate_modes(p))))


def exec_sizes(p: hwlib.Platform, max_size: int = 32, widest_type: str | None = None):
    """Execution sizes; with `widest_type`, only those that keep an operand within two
    GRFs (iga64's regioning rule 1.1)."""
    if widest_type is not None:
        max_size = min(max_size, 2 * grf_limit(p) // SIZE.get(widest_type, 4))
    return st.sampled_from([s for s in (1, 2, 4, 8, 16, 32) if s <= max_size])


def _widest(*type_lists) -> str:
    return max((t for types in type_lists for t in types), key=lambda t: SIZE.get(t, 4))


def channel_offsets(p: hwlib.Platform, exec_size: int):
    step = 8 if _is_xehpc(p) else 4
    top = 24 if _is_xehpc(p) else 28
    return st.sampled_from([o for o in range(0, top + 1, step)])


def swsb_values(p: hwlib.Platform, kind: str):
    """kind: "send", "ooo" (dpas; math where token-tracked), "inorder"."""
    tokens = st.integers(0, p.swsb_tokens - 1)
    dist = st.integers(1, 7)
    pipes = ["", "A", *p.swsb_pipes] if p.swsb_named_pipes else [""]
    options = [
        st.just(Swsb()),
        st.builds(Swsb, dist, st.sampled_from(pipes)),
        st.builds(lambda t, m: Swsb(token=t, token_mode=m), tokens, st.sampled_from(["set", "dst", "src"])),
    ]
    if _is_xehpc(p):
        combined = {
            "send": [("A", "set"), ("F", "set"), ("I", "set")],
            "ooo": [("", "set"), ("", "src"), ("", "dst")],
            "inorder": [("", "dst"), ("", "src"), ("A", "dst")],
        }[kind]
        options.append(st.just(Swsb(no_acc_sb_set=True)))
    else:
        pipe = "A" if kind == "send" and p.swsb_named_pipes else ""
        combined = [(pipe, "dst" if kind == "inorder" else "set")]
    options.append(st.builds(lambda d, t, pm: Swsb(d, pm[0], t, pm[1]), dist, tokens, st.sampled_from(combined)))
    return st.one_of(*options)


def op_kind(op: str, p: hwlib.Platform) -> str:
    if op in ("send", "sendc"):
        return "send"
    if op in ("dpas", "dpasw") or (op == "math" and p.math_is_out_of_order):
        return "ooo"
    return "inorder"


def common_options(p: hwlib.Platform, accwren: bool = True):
    choices = ["Atomic", "Breakpoint"] + (["AccWrEn"] if accwren and not _is_xehpc(p) else [])
    return st.lists(st.sampled_from(choices), unique=True, max_size=2).map(tuple)


# ---------------------------------------------------------------------------------------
# Operands


def grf_limit(p):
    return 32 if not _is_xehpc(p) else 64


@st.composite
def grf_operand(draw, p, type_name, align: int = 1, max_reg: int = 255):
    size = SIZE[type_name]
    limit = grf_limit(p) // size
    sub = draw(st.integers(0, limit - 1))
    while (sub * size) % align:
        sub -= 1
    return Reg("r", draw(st.integers(0, max_reg)), sub, type_name)


@st.composite
def arf_operand(draw, p, type_name):
    """A plausible architecture register for a type: acc, null, a0, f, sr0, cr0, ..."""
    size = SIZE[type_name]
    acc_count = p.accumulators
    acc_bytes = 64 if _is_xehpc(p) else 32
    choices = [("acc", acc_count, acc_bytes), ("null", 1, 0)]
    if 2 <= size <= 4:  # the control registers are accessed at least 16 bits at a time
        choices += [
            ("a", 1, 32),
            ("f", p.flag_registers, 4),
            ("sr", 2, 16),
            ("cr", 1, 12),
            ("n", 1, 12),
            ("tm", 1, 20),
            ("tdr", 1, 16),
            ("dbg", 1, 8),
        ]
        if not p.has_dpas:  # the stack pointer exists on XeLP only
            choices += [("sp", 1, 16)]
        if size == 4:  # whole 32-bit registers (iga64 mis-encodes sub-dword msg subregisters)
            choices += [("ce", 1, 0), ("ip", 1, 0), ("msg", 8, 4)]
    if size == 8:
        choices += [("a", 1, 32), ("sr", 2, 16)]
    file, count, nbytes = draw(st.sampled_from(choices))
    number = draw(st.integers(0, count - 1)) if count > 1 else 0
    sub = draw(st.integers(0, max(0, nbytes // size - 1))) if nbytes else 0
    return Reg(file, number, sub, type_name)


def _hstrides_for_dst():
    return st.sampled_from([1, 1, 1, 2, 4])


@st.composite
def legal_region(draw, p, exec_size: int, type_name: str, subreg: int):
    """A <v;w,h> source region that follows the regioning rules iga64 checks (-Wregions):
    width <= exec size; when width == exec size and h != 0, v == w*h; SIMD1 reads <0;1,0>;
    v == h == 0 means width 1; a row of `width` elements stays inside one GRF."""
    if exec_size == 1:
        return 0, 1, 0
    per_grf = grf_limit(p) // SIZE.get(type_name, 4)
    for _ in range(20):
        width = draw(st.sampled_from([w for w in (1, 2, 4, 8, 16) if w <= exec_size]))
        h = draw(st.sampled_from([0, 1, 2, 4]))
        if width == 1:
            h = 0
        if width == exec_size and h:
            v = width * h
        else:
            v = draw(st.sampled_from([0, 1, 2, 4, 8, 16, 32]))
        if v == 0 and h == 0:
            width = 1
        if v > 32 or subreg + (width - 1) * h >= per_grf:
            continue
        return v, width, h
    return 0, 1, 0


@st.composite
def dst_operand(draw, p, type_name, allow_arf=True, allow_indirect=True):
    kind = draw(st.sampled_from(["grf"] * 6 + (["arf"] if allow_arf else []) + (["ind"] if allow_indirect else [])))
    hs = draw(_hstrides_for_dst())
    if kind == "ind":
        lo, hi = (-1024, 1023) if _is_xehpc(p) else (-512, 511)
        return Reg(
            "r",
            0,
            0,
            type_name,
            None,
            None,
            hs,
            indirect=True,
            addr_subreg=draw(st.integers(0, 15)),
            addr_offset=draw(st.integers(lo, hi)),
        )
    reg = draw(arf_operand(p, type_name)) if kind == "arf" else draw(grf_operand(p, type_name))
    return replace(reg, hstride=hs)


@st.composite
def src_operand(draw, p, type_name, exec_size, info_mods: bool, bitwise: bool, allow_indirect=True, index=0):
    reg = draw(_src_operand(p, type_name, exec_size, info_mods, bitwise, allow_indirect))
    if index == 1 and _is_xehpc(p):  # XeHPC src1 has no odd byte offsets
        if reg.indirect:
            reg = replace(reg, addr_offset=reg.addr_offset & ~1)
        elif (reg.subreg * SIZE[reg.type]) % 2:
            reg = replace(reg, subreg=reg.subreg - 1)
    return reg


@st.composite
def _src_operand(draw, p, type_name, exec_size, info_mods: bool, bitwise: bool, allow_indirect=True):
    kind = draw(st.sampled_from(["grf"] * 6 + ["arf"] + (["ind"] if allow_indirect else [])))
    neg = abs_ = False
    if info_mods:
        neg = draw(st.booleans())
        abs_ = draw(st.booleans())
    if kind == "ind":
        v, w, h = draw(legal_region(p, exec_size, type_name, 0))
        lo, hi = (-1024, 1023) if _is_xehpc(p) else (-512, 511)
        vxh = draw(st.booleans())
        return Reg(
            "r",
            0,
            0,
            type_name,
            None if vxh else v,
            w,
            h,
            neg,
            abs_,
            indirect=True,
            addr_subreg=draw(st.integers(0, 15)),
            addr_offset=draw(st.integers(lo, hi)),
        )
    reg = draw(arf_operand(p, type_name)) if kind == "arf" else draw(grf_operand(p, type_name))
    v, w, h = draw(legal_region(p, exec_size, type_name, reg.subreg))
    return replace(reg, vstride=v, width=w, hstride=h, neg=neg, abs=abs_)


IMM_BITS = {"uw": 16, "w": 16, "ud": 32, "d": 32, "uq": 64, "q": 64, "hf": 16, "f": 32, "df": 64}


@st.composite
def immediate(draw, type_name):
    if type_name in ("uv", "v", "vf"):
        return Imm(draw(st.integers(0, 0xFFFFFFFF)), type_name)
    bits = IMM_BITS[type_name]
    value = draw(
        st.one_of(st.integers(0, (1 << bits) - 1), st.sampled_from([0, 1, 2, (1 << bits) - 1, 1 << (bits - 1)]))
    )
    if type_name in ("hf", "f", "df") and draw(st.booleans()):
        from xegen.emit.floats import float_to_bits

        value = float_to_bits(
            draw(st.sampled_from([0.0, -0.0, 1.0, -1.5, 0.5, 2.0, 1e-7, 3.25, 65504.0, 1e30])), type_name
        )
        if type_name == "hf" and value & 0x7C00 == 0x7C00:
            value = 0x3C00
    return Imm(value, type_name)


# ---------------------------------------------------------------------------------------
# Instruction classes


def _ops_on(p: hwlib.Platform, ops: list[str]) -> list[str]:
    from xegen.emit import tables as T

    return [o for o in ops if T.opcode_available(T.OPCODES[o], p)]


BINARY_OPS = [
    "add",
    "mul",
    "avg",
    "sel",
    "cmp",
    "cmpn",
    "and",
    "or",
    "xor",
    "shl",
    "shr",
    "asr",
    "rol",
    "ror",
    "addc",
    "subb",
    "mach",
    "mac",
    "macl",
    "movi",
    "bfi1",
    "srnd",
]
UNARY_OPS = ["mov", "not", "frc", "rndu", "rndd", "rnde", "rndz", "lzd", "fbh", "fbl", "cbit", "bfrev"]
TERNARY_OPS = ["mad", "add3", "bfn", "csel", "bfe", "bfi2", "dp4a"]


@st.composite
def basic_instructions(draw, p: hwlib.Platform):
    from xegen.emit import tables as T

    op = draw(st.sampled_from(_ops_on(p, UNARY_OPS + BINARY_OPS)))
    info = T.OPCODES[op]
    unary = info.format == T.UNARY
    rules = unary_type_rules(op, p) if unary else binary_type_rules(op, p)
    dst_types, src_types = draw(st.sampled_from(rules))
    dst_t = draw(st.sampled_from(dst_types))
    nsrc = 1 if unary else 2
    types = [draw(st.sampled_from(src_types)) for _ in range(nsrc)]
    exec_size = draw(exec_sizes(p, widest_type=_widest([dst_t], types)))
    flag = draw(flags(p))
    pred = draw(predicates(p, flag)) if info.predication else None
    cond = None
    last_imm64 = False
    srcs = []
    for i in range(nsrc):
        t = types[i]
        last = i == nsrc - 1
        if (
            last
            and draw(st.integers(0, 3)) == 0
            and t not in ("ub", "b", "bf", "bf8", "tf32")
            and not (nsrc == 2 and SIZE[t] == 8)
        ):
            if unary and op == "mov" and dst_t in INT_NO_BYTE + ("f",) and draw(st.integers(0, 4)) == 0:
                vector_types = ["uv", "v"] if dst_t in INT_NO_BYTE else ["vf"]
                srcs.append(draw(immediate(draw(st.sampled_from(vector_types)))))
            else:
                srcs.append(draw(immediate(t)))
            last_imm64 = unary and srcs[-1].type in ("q", "uq", "df")
        else:
            srcs.append(draw(src_operand(p, t, exec_size, info.source_modifiers, info.bitwise, index=i)))
    if info.cond_modifier and not last_imm64 and draw(st.booleans()):
        cond = CondModifier(draw(st.sampled_from(["eq", "ne", "gt", "ge", "lt", "le", "ov", "un"])), flag)
    dst = draw(dst_operand(p, dst_t))
    return Instruction(
        op,
        exec_size,
        draw(channel_offsets(p, exec_size)),
        dst,
        tuple(srcs),
        pred,
        draw(st.booleans()),
        cond,
        info.saturate and draw(st.booleans()),
        swsb=draw(swsb_values(p, "inorder")),
        options=draw(common_options(p)),
    )


@st.composite
def math_instructions(draw, p: hwlib.Platform):
    from xegen.emit import tables as T

    functions = [f for f in T.MATH_FUNCTIONS if T.math_available(f, p)]
    fn = draw(st.sampled_from(functions))
    exec_size = draw(exec_sizes(p, 16, widest_type="df"))
    flag = draw(flags(p))
    kind = op_kind("math", p)
    if fn in T.MATH_MACROS:
        t = draw(st.sampled_from(["f", "df"] if p.has_dpas else ["f"]))
        v = 0 if exec_size == 1 else 1
        dst = Reg("r", draw(st.integers(0, 255)), 0, t, None, None, 1, mme=draw(st.integers(0, 7)))
        srcs = tuple(
            Reg(
                "r",
                draw(st.integers(0, 255)),
                0,
                t,
                v,
                1,
                0,
                draw(st.booleans()),
                draw(st.booleans()),
                mme=draw(st.integers(0, 8)),
            )
            for _ in range(2 if fn == "invm" else 1)
        )
        pred = draw(predicates(p, flag))
        return Instruction(
            "math",
            exec_size,
            draw(channel_offsets(p, exec_size)),
            dst,
            srcs,
            pred,
            draw(st.booleans()),
            CondModifier("eo", flag),
            draw(st.booleans()),
            fn,
            swsb=draw(swsb_values(p, kind)),
            options=draw(common_options(p)),
        )
    t = "ud" if fn in ("idiv", "iqot", "irem") else draw(st.sampled_from(["f", "hf"] + (["df"] if p.has_dpas else [])))
    nsrc = 2 if fn in T.MATH_TWO_SOURCES else 1
    srcs = []
    integer = t == "ud"
    for i in range(nsrc):
        if i == nsrc - 1 and not integer and t != "df" and draw(st.integers(0, 4)) == 0:
            srcs.append(draw(immediate(t)))
        else:
            srcs.append(draw(src_operand(p, t, exec_size, not integer, False, allow_indirect=False, index=i)))
    dst = draw(dst_operand(p, t, allow_indirect=False))
    return Instruction(
        "math",
        exec_size,
        draw(channel_offsets(p, exec_size)),
        dst,
        tuple(srcs),
        draw(predicates(p, flag)),
        draw(st.booleans()),
        None,
        not integer and draw(st.booleans()),
        fn,
        swsb=draw(swsb_values(p, kind)),
        options=draw(common_options(p)),
    )


TERNARY_SRC_REGIONS = [(0, 0), (1, 0), (4, 1), (8, 1), (8, 2), (4, 2), (0, 1), (1, 0)]


@st.composite
def ternary_operand(draw, p, t, index, exec_size, mods: bool):
    file = draw(st.sampled_from(["r"] * 5 + ["acc"]))
    size = SIZE[t]
    align = 2 if _is_xehpc(p) else 1
    reg = draw(grf_operand(p, t, align=max(align, size)))
    if file == "acc":
        reg = replace(reg, file="acc", number=draw(st.integers(0, p.accumulators - 1)))
    neg = mods and draw(st.booleans())
    abs_ = mods and draw(st.booleans())
    if index == 2:
        return replace(reg, vstride=None, width=None, hstride=draw(st.sampled_from([0, 1, 1, 2, 4])), neg=neg, abs=abs_)
    v, h = draw(st.sampled_from(TERNARY_SRC_REGIONS))
    return replace(reg, vstride=v, width=None, hstride=h, neg=neg, abs=abs_)


@st.composite
def ternary_instructions(draw, p: hwlib.Platform):
    from xegen.emit import tables as T

    op = draw(st.sampled_from(_ops_on(p, TERNARY_OPS)))
    info = T.OPCODES[op]
    dst_types, src_types = draw(st.sampled_from(ternary_type_rules(op, p)))
    dst_t = draw(st.sampled_from(dst_types))
    exec_size = draw(exec_sizes(p, widest_type=_widest([dst_t], src_types)))
    flag = draw(flags(p))
    is_float = dst_t in ("f", "hf", "df", "bf")
    srcs = []
    for i in range(3):
        t = draw(st.sampled_from(src_types))
        if i != 1 and draw(st.integers(0, 4)) == 0 and SIZE[t] <= 4:
            imm_t = draw(st.sampled_from(["hf"] if is_float else ["w", "uw"]))
            if not (is_float and dst_t == "df"):
                srcs.append(draw(immediate(imm_t)))
                continue
        srcs.append(draw(ternary_operand(p, t, i, exec_size, info.source_modifiers)))
    dst_size = SIZE[dst_t]
    align = 8 if not p.has_lsc else (2 if _is_xehpc(p) else 1)
    dst = draw(grf_operand(p, dst_t, align=max(align, dst_size)))
    if draw(st.integers(0, 5)) == 0:
        dst = replace(dst, file="acc", number=draw(st.integers(0, p.accumulators - 1)))
    dst = replace(dst, vstride=None, width=None, hstride=draw(st.sampled_from([1, 1, 2])))
    cond = None
    if info.cond_modifier and draw(st.booleans()):
        conds = ["eq", "gt", "lt"] if op == "bfn" else ["eq", "ne", "gt", "ge", "lt", "le", "ov", "un"]
        cond = CondModifier(draw(st.sampled_from(conds)), flag)
    function = draw(st.integers(0, 255)) if op == "bfn" else None
    return Instruction(
        op,
        exec_size,
        draw(channel_offsets(p, exec_size)),
        dst,
        tuple(srcs),
        draw(predicates(p, flag)) if info.predication else None,
        draw(st.booleans()),
        cond,
        info.saturate and draw(st.booleans()),
        function,
        swsb=draw(swsb_values(p, "inorder")),
        options=draw(common_options(p)),
    )


@st.composite
def madm_instructions(draw, p: hwlib.Platform):
    t = draw(st.sampled_from(["f", "df"]))
    exec_size = draw(exec_sizes(p, 16))
    scalar = exec_size == 1

    def operand(index):
        file = draw(st.sampled_from(["r", "r", "r", "acc"]))
        number = draw(st.integers(0, 255)) if file == "r" else draw(st.integers(0, p.accumulators - 1))
        if index == 2:
            v, h = None, 1
        else:
            v, h = (0 if scalar else 1), 0
        return Reg(
            file,
            number,
            0,
            t,
            v,
            None,
            h,
            index >= 0 and draw(st.booleans()),
            index >= 0 and draw(st.booleans()),
            mme=draw(st.integers(0, 8)),
        )

    dst = replace(operand(-1), vstride=None, hstride=1, neg=False, abs=False, mme=draw(st.integers(0, 8)))
    return Instruction(
        "madm",
        exec_size,
        draw(channel_offsets(p, exec_size)),
        dst,
        (operand(0), operand(1), operand(2)),
        draw(predicates(p)),
        draw(st.booleans()),
        swsb=draw(swsb_values(p, "inorder")),
        options=draw(common_options(p)),
    )


@st.composite
def dpas_instructions(draw, p: hwlib.Platform):
    op = draw(st.sampled_from(["dpas", "dpasw"] if p.has_dpasw else ["dpas"]))
    if draw(st.booleans()):
        dst_t = draw(st.sampled_from(["d", "ud"]))
        src0_t = draw(st.sampled_from(["d", "ud"]))
        src_choices = ["ub", "b", "u4", "s4", "u2", "s2"]
        t1, t2 = draw(st.sampled_from(src_choices)), draw(st.sampled_from(src_choices))
    else:
        pairs = [("f", "hf"), ("hf", "hf"), ("f", "bf"), ("bf", "bf")]
        dst_t, ab = draw(st.sampled_from(pairs))
        src0_t = draw(st.sampled_from(["f", dst_t]))
        t1 = t2 = ab
        if _is_xehpc(p) and draw(st.integers(0, 3)) == 0:
            dst_t = src0_t = "f"
            t1 = t2 = draw(st.sampled_from(["tf32", "bf8"]))
    depths = [2, 4, 8] if _is_xehpc(p) else [1, 2, 4, 8]
    align = 2 if _is_xehpc(p) else 1

    def reg(t, subreg_ok):
        size = SIZE.get(t, 1)
        sub = 0
        if subreg_ok and t not in ("u4", "s4", "u2", "s2"):
            sub = draw(st.integers(0, grf_limit(p) // size - 1))
            while (sub * size) % align:
                sub -= 1
        return Reg("r", draw(st.integers(0, 255)), sub, t)

    # dst, src0 and src1 start on a register (iga64 warns otherwise); src2 may not
    src0 = reg(src0_t, False) if draw(st.integers(0, 4)) else Reg("null", 0, 0, src0_t)
    dst = replace(reg(dst_t, False), hstride=1)
    srcs = (
        replace(src0, vstride=1, hstride=0),
        replace(reg(t1, False), vstride=1, hstride=0),
        replace(reg(t2, True), hstride=1),
    )
    return Instruction(
        op,
        p.dpas_exec_size,
        0,
        dst,
        srcs,
        None,
        draw(st.booleans()),
        systolic_depth=draw(st.sampled_from(depths)),
        repeat_count=draw(st.integers(1, 8)),
        swsb=draw(swsb_values(p, "ooo")),
        options=draw(st.lists(st.sampled_from(["Atomic", "Breakpoint"]), unique=True).map(tuple)),
    )


@st.composite
def send_instructions(draw, p: hwlib.Platform):
    from xegen.emit import tables as T

    sfid = draw(st.sampled_from(sorted(T.sfids(p))))
    exec_size = draw(exec_sizes(p))

    def reg():
        return Reg("null", 0, 0, "ud") if draw(st.integers(0, 4)) == 0 else Reg("r", draw(st.integers(0, 255)), 0, "ud")

    desc_in_a0 = draw(st.integers(0, 5)) == 0
    desc = 0 if desc_in_a0 else draw(st.integers(0, 0xFFFFFFFF))
    options = []
    if draw(st.integers(0, 4)) == 0:
        options.append("EOT")
    if not _is_xehpc(p) and draw(st.integers(0, 4)) == 0:
        options.append("Serialize")
    exdesc_a0 = None
    exdesc = 0
    length = None
    if draw(st.integers(0, 4)) == 0:
        exdesc_a0 = draw(st.integers(0, 7))
        if p.has_lsc and draw(st.booleans()):
            options.append("ExBSO")
            length = draw(st.integers(0, 31))
            if draw(st.booleans()):
                options.append("CPS")
    elif p.has_lsc:
        exdesc = draw(st.integers(0, 0xFFFFFFFF)) & ~0x7FF
        length = draw(st.integers(0, 31))
    else:
        exdesc = draw(st.integers(0, 0xFFFFFFFF)) & ~0x3F
    src1 = reg()
    if length is not None:
        length = 0 if src1.file == "null" else min(length, 256 - src1.number)
    msg = SendDescriptor(sfid, desc, exdesc, desc_in_a0, exdesc_a0, length)
    return Instruction(
        draw(st.sampled_from(["send", "sendc"])),
        exec_size,
        draw(channel_offsets(p, exec_size)),
        reg(),
        (reg(), src1),
        draw(predicates(p)),
        draw(st.booleans()),
        swsb=draw(swsb_values(p, "send")),
        options=tuple(options + list(draw(st.lists(st.sampled_from(["Atomic", "Breakpoint"]), unique=True)))),
        send=msg,
    )


@st.composite
def sync_instructions(draw, p: hwlib.Platform):
    functions = ["nop", "allrd", "allwr", "bar", "host"] + (["fence"] if _is_xehpc(p) else [])
    fn = draw(st.sampled_from(functions))
    immediate_ok = fn in ("allrd", "allwr") or (fn == "bar" and _is_xehpc(p))
    if immediate_ok and draw(st.booleans()):
        src = Imm(draw(st.integers(0, 0xFFFFFFFF)), "ud")
    else:
        src = Reg("null", 0, 0, "ud", 0, 1, 0)
    return Instruction(
        "sync",
        1,
        0,
        None,
        (src,),
        None,
        draw(st.booleans()),
        function=fn,
        swsb=draw(swsb_values(p, "inorder")),
        options=draw(st.lists(st.sampled_from(["Atomic", "Breakpoint"]), unique=True).map(tuple)),
    )


BRANCH_OPS = [
    "jmpi",
    "if",
    "else",
    "endif",
    "while",
    "break",
    "cont",
    "goto",
    "join",
    "halt",
    "call",
    "calla",
    "ret",
    "brd",
    "brc",
]


@st.composite
def branch_instructions(draw, p: hwlib.Platform, ops: list[str] = BRANCH_OPS):
    """Branches with targets given as instruction indices (resolved by `kernels`)."""
    from xegen.emit import tables as T

    op = draw(st.sampled_from(ops))
    info = T.OPCODES[op]
    exec_size = 1 if op == "jmpi" else draw(exec_sizes(p))
    offset = 0 if op == "jmpi" else draw(channel_offsets(p, exec_size))
    pred = draw(predicates(p)) if info.predication else None
    no_mask = True if op == "jmpi" else draw(st.booleans())
    branch_control = info.branch_control and draw(st.booleans())
    jip = draw(st.integers(0, 10**6))  # target index, resolved later
    uip = draw(st.integers(0, 10**6)) if info.format == T.JIP_UIP else None
    dst = None
    srcs = ()

    def breg():
        return Reg("r", draw(st.integers(0, 255)), draw(st.integers(0, grf_limit(p) // 4 - 1)), "d", 0, 1, 0)

    if info.format in (T.CALL, T.CALLA):
        dst = breg()
    if info.format == T.RET or (info.format in (T.JUMP, T.CALL) and draw(st.integers(0, 3)) == 0):
        srcs = (breg(),)
        jip = uip = None
    return Instruction(
        op,
        exec_size,
        offset,
        dst,
        srcs,
        pred,
        no_mask,
        function=None,
        swsb=draw(swsb_values(p, "inorder")),
        options=draw(st.lists(st.sampled_from(["Atomic", "Breakpoint"]), unique=True).map(tuple)),
        jip=jip,
        uip=uip,
        branch_control=branch_control,
    )


def nullary_instructions(p: hwlib.Platform):
    return st.one_of(
        st.builds(lambda s: Instruction("nop", swsb=s), swsb_values(p, "inorder")),
        st.just(Instruction("illegal")),
    )


def instructions(p: hwlib.Platform):
    """Any valid instruction of the platform (branch targets are indices, see `kernels`)."""
    classes = [
        basic_instructions(p),
        basic_instructions(p),
        basic_instructions(p),
        math_instructions(p),
        ternary_instructions(p),
        ternary_instructions(p),
        send_instructions(p),
        sync_instructions(p),
        branch_instructions(p),
        nullary_instructions(p),
    ]
    if p.has_madm:
        classes.append(madm_instructions(p))
    if p.has_dpas:
        classes.append(dpas_instructions(p))
    return st.one_of(*classes)


@st.composite
def kernels(draw, p: hwlib.Platform, min_size: int = 1, max_size: int = 200):
    """A list of instructions whose branch targets land on instructions of the list."""
    from xegen.emit import tables as T

    insts = draw(st.lists(instructions(p), min_size=min_size, max_size=max_size))
    n = len(insts)
    out = []
    for i, inst in enumerate(insts):
        fmt = T.OPCODES[inst.opcode].format
        if inst.jip is not None:
            if fmt == T.CALLA:
                inst = replace(inst, jip=16 * (inst.jip % (n + 1)))
            else:
                inst = replace(
                    inst,
                    jip=16 * (inst.jip % (n + 1)) - 16 * i,
                    uip=None if inst.uip is None else 16 * (inst.uip % (n + 1)) - 16 * i,
                )
        out.append(inst)
    return out
