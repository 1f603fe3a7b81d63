"""xegen's selected instructions as vISA assembly text (`.visaasm`).

The input is the program instruction selection builds (`xegen.lower.select_instructions`):
native Xe instructions on virtual registers, with labels, before register allocation,
scheduling and SWSB.  Each virtual register becomes a vISA general variable, each flag a
predicate variable, and each instruction its vISA counterpart, so that IGC's finalizer
(`GenX_IR`) does what our `regalloc`, scheduling and `swsb` passes do.

docs/visa.md tables how each native form maps (facts: IGC's documentation/visa, and the
`.visaasm` files IGC itself writes for OpenCL kernels).  What has no vISA form here is an
`UnsupportedError` naming it, never a silently different kernel.
"""

from __future__ import annotations

from .. import hw as hwlib
from ..emit import tables as T
from ..emit.instruction import Flag, Imm, Instruction, Reg, SendDescriptor
from ..emit.regions import three_source_region
from ..errors import UnsupportedError
from ..lower.program import Label, Op
from ..lower.values import TYPE_BYTES, VIRTUAL, VReg

VISA_VERSION = "4.1"
CARRY = "CARRY"  # stands for acc0: the carry addc (the borrow subb) writes
VECTOR = "VECTOR"  # eight lanes of a packed vector immediate
R0 = "R0"

# Native opcodes that keep their name and operand order in vISA.
SAME_NAME = frozenset(
    {
        "mov",
        "add",
        "add3",
        "dp4a",
        "and",
        "or",
        "xor",
        "not",
        "asr",
        "shl",
        "shr",
        "mul",
        "avg",
        "lzd",
        "fbl",
        "fbh",
        "cbit",
        "bfrev",
        "frc",
        "rndd",
        "rndu",
        "rnde",
        "rndz",
        "sel",
        "rol",
        "ror",
    }
)
MATH = {
    "inv": "inv",
    "sqrt": "sqrt",
    "rsqt": "rsqrt",
    "exp": "exp",
    "log": "log",
    "sin": "sin",
    "cos": "cos",
    "pow": "pow",
    "fdiv": "div",
}
CONDITIONS = {
    "eq": "eq",
    "ne": "ne",
    "gt": "gt",
    "ge": "ge",
    "lt": "lt",
    "le": "le",
    "z": "eq",
    "nz": "ne",
    "g": "gt",
    "l": "lt",
}
LSC_SFIDS = {"ugm": "ugm", "ugml": "ugml", "tgm": "tgm", "slm": "slm"}
LSC_FENCE_OPS = ("none", "evict", "invalidate", "discard", "clean", "flushl3")
LSC_SCOPES = ("group", "local", "tile", "gpu", "gpus", "sysrel", "sysacq")
LSC_FENCE_OPCODE = 0x1F
HDC_FENCE_MESSAGE = 7  # dc0 message type [18:14]
BARRIER_SIGNAL = 0x02000004  # gateway: barrier signal, mlen 1, rlen 0 (docs/messages.md)
SLM_BTI = 0xFE
DPAS_PRECISIONS = {"hf": "hf", "bf": "bf", "ub": "u8", "b": "s8"}  # operand type -> vISA precision
ALIGNMENTS = {1: "byte", 2: "word", 4: "dword", 8: "qword", 16: "oword"}
FLOAT_TYPES = frozenset({"f", "hf", "bf", "df"})


class _Variables:
    """The `.decl`s: one variable per virtual register, aliases per type, predicates."""

    def __init__(self, vregs: list[VReg], hw: hwlib.Platform):
        self.vregs = {r.id: r for r in vregs}
        self.hw = hw
        self.types: dict[object, dict[str, None]] = {}  # root -> types used (ordered)
        # one predicate per flag and execution size (xegen reuses f0.0 for conditions of one
        # channel and masks of sixteen; a jump must not read a wider mask's stale bits)
        self.flags: dict[tuple[Flag, int], None] = {}
        self.temporaries: dict[tuple[Flag, int], None] = {}
        self.inputs: dict[int, VReg] = {}

    def register(self, reg: Reg, root: object) -> str:
        self.types.setdefault(root, {})[reg.type] = None
        return self.name(root, reg.type)

    def name(self, root: object, type_: str) -> str:
        base = root if isinstance(root, str) else f"VR{root}"
        return base if type_ == "ud" else f"{base}_{type_}"

    def flag(self, flag: Flag, width: int) -> str:
        """The predicate standing for `flag` as instructions of `width` channels use it."""
        self.flags[(flag, width)] = None
        return f"P{flag.reg}_{flag.subreg}_{width}"

    def temporary(self, flag: Flag, width: int) -> str:
        self.temporaries[(flag, width)] = None
        return f"T{flag.reg}_{flag.subreg}_{width}"

    def declarations(self) -> list[str]:
        g = self.hw.grf_bytes
        lines = []
        for root, types in self.types.items():
            if root == R0:  # aliases of the predefined r0, one per type
                lines += [
                    f".decl {self.name(R0, t)} v_type=G type={t} num_elts={g // TYPE_BYTES[t]} align=GRF alias=<%r0, 0>"
                    for t in types
                ]
                continue
            if root == CARRY:  # acc0 holds up to 32 dwords; so does its stand-in
                size, align = 32 * 4, "GRF"
            elif root == VECTOR:
                size, align = 16, "GRF"
            else:
                assert isinstance(root, int)  # a virtual register's id
                reg = self.vregs[root]
                size = max(reg.size, reg.reserved)
                align = "GRF" if reg.alignment >= g else ALIGNMENTS[reg.alignment]
            unit = max(4, *(TYPE_BYTES[t] for t in types))
            size = -(-size // unit) * unit
            base = self.name(root, "ud")
            lines.append(f".decl {base} v_type=G type=ud num_elts={size // 4} align={align}")
            lines += [
                f".decl {self.name(root, t)} v_type=G type={t} num_elts={size // TYPE_BYTES[t]} "
                f"align={align} alias=<{base}, 0>"
                for t in types
                if t != "ud"
            ]
        for flag, size in sorted(self.flags, key=lambda f: (f[0].reg, f[0].subreg, f[1])):
            lines.append(f".decl {self.flag(flag, size)} v_type=P num_elts={size}")
        for flag, size in sorted(self.temporaries, key=lambda f: (f[0].reg, f[0].subreg, f[1])):
            lines.append(f".decl {self.temporary(flag, size)} v_type=P num_elts={size}")
        for reg in sorted(self.inputs.values(), key=lambda r: r.fixed or 0):
            lines.append(f".input {self.name(reg.id, 'ud')} offset={reg.fixed} size={reg.size}")
        return lines


class _Translation:
    def __init__(self, program, hw: hwlib.Platform):
        self.program = program
        self.hw = hw
        self.g = hw.grf_bytes
        self.vars = _Variables(program.vregs.regs, hw)
        fixed = {r.id: r for r in program.vregs.regs if r.fixed is not None}
        self.r0_id = next((i for i, r in fixed.items() if r.fixed == 0), None)
        eot_sources = {
            op.inst.srcs[0].number
            for op in program.ops
            if op.inst is not None and op.inst.send is not None and op.inst.eot
        }
        self.eot_regs = eot_sources
        self.pushed = {i: r for i, r in fixed.items() if i != self.r0_id and i not in eot_sources}
        self.fence_responses: set[int] = set()
        self.pending_multiplies = 0  # `mul acc0` halves waiting for their mach/macl
        self.barrier_signals = 0  # gateway signals waiting for their sync.bar
        self.lines: list[str] = []
        self.written: dict[Flag, int | None] = {}  # the width each flag was last written at (None: any)
        self.widths: dict[Flag, list[int]] = {}  # every width each flag is used at
        for op in program.ops:
            inst = op.inst
            for flag in _flags_used(inst) if inst is not None else ():
                self.widths.setdefault(flag, [])
                if inst.exec_size not in self.widths[flag]:
                    self.widths[flag].append(inst.exec_size)

    # Operands -----------------------------------------------------------------------------------

    def root(self, reg: Reg) -> object:
        if reg.file == VIRTUAL:
            if reg.number == self.r0_id:
                return R0
            if reg.number in self.pushed:
                self.vars.inputs[reg.number] = self.pushed[reg.number]
            return reg.number
        if reg.file == "acc" and reg.number == 0 and reg.subreg == 0:
            return CARRY
        raise UnsupportedError(
            f"register file '{reg.file}' ({reg.file}{reg.number}.{reg.subreg}) has no vISA form in this back end"
        )

    def place(self, reg: Reg) -> tuple[str, int, int]:
        """(variable, row, column) of a register operand."""
        if reg.file == "cr":
            return "%cr0", 0, reg.subreg
        if reg.file == "null":
            return "%null", 0, 0
        root = self.root(reg)
        name = self.vars.register(reg, root)
        byte = reg.subreg * TYPE_BYTES[reg.type]
        return name, byte // self.g, byte % self.g // TYPE_BYTES[reg.type]

    def dst(self, operand: Reg | None) -> str:
        reg = _reg(operand)
        name, row, col = self.place(reg)
        return f"{name}({row},{col})<{reg.hstride or 1}>"

    def src(self, inst: Instruction, index: int) -> str:
        operand = inst.srcs[index]
        if isinstance(operand, Imm):
            return immediate(operand)
        name, row, col = self.place(operand)
        if inst.info.format == T.TERNARY:
            v, w, h = three_source_region(operand, index)
        else:
            v, w, h = operand.vstride or 0, operand.width or 1, operand.hstride or 0
        if inst.exec_size == 1:
            v, w, h = 0, 1, 0
        modifier = ""
        if operand.neg or operand.abs:
            if inst.opcode in ("and", "or", "xor", "not"):
                raise UnsupportedError(f"a logical NOT operand of '{inst.opcode}' has no vISA form here")
            modifier = {(True, False): "(-)", (False, True): "(abs)", (True, True): "(-abs)"}[
                (operand.neg, operand.abs)
            ]
        return f"{modifier}{name}({row},{col})<{v};{w},{h}>"

    def as_ud(self, operand: Reg | Imm | None) -> Reg:
        """The same bytes as a :ud operand (the subregister counts elements of the type)."""
        reg = _reg(operand)
        byte = reg.subreg * TYPE_BYTES[reg.type]
        if byte % 4:
            raise UnsupportedError(f"a message or dpas operand at byte {byte} of a register is not dword-aligned")
        return Reg(reg.file, reg.number, byte // 4, "ud")

    def raw(self, operand: Reg | Imm | None) -> str:
        reg = _reg(operand)
        if reg.file == "null":
            return "%null.0"
        name, row, col = self.place(self.as_ud(reg))
        return f"{name}.{row * self.g + col * 4}"

    def read_flag(self, flag: Flag, width: int) -> str:
        if self.written.get(flag, width) not in (None, width):
            raise UnsupportedError(f"flag {flag} is read by {width} channels after {self.written[flag]} wrote it")
        return self.vars.flag(flag, width)

    def write_flag(self, flag: Flag, width: int) -> str:
        self.written[flag] = width
        return self.vars.flag(flag, width)

    def predicate(self, inst: Instruction) -> str:
        p = inst.predicate
        if p is None:
            return ""
        if p.mode:
            raise UnsupportedError(f"predicate mode '.{p.mode}' has no vISA form in this back end")
        return f"({'!' if p.invert else ''}{self.read_flag(p.flag, inst.exec_size)}) "

    def exec(self, inst: Instruction) -> str:
        if inst.channel_offset:
            raise UnsupportedError("instructions with a channel offset are not supported by the vISA back end")
        return f"(M1{'_NM' if inst.no_mask else ''}, {inst.exec_size})"

    # Instructions -------------------------------------------------------------------------------

    def emit(self, text: str) -> None:
        self.lines.append("    " + text)

    def op(self, op: Op) -> None:
        inst = op.inst
        if inst is None:
            return
        if isinstance(inst.dst, Reg) and inst.dst.file == VIRTUAL and inst.dst.number in self.eot_regs:
            return  # r0's copy for the end of thread: the finalizer writes its own
        opcode = inst.opcode
        if self.pending_multiplies and not (opcode in ("mach", "macl") or _multiplies_into_acc(inst)):
            raise UnsupportedError(f"'{opcode}' between a multiply into acc0 and its mach/macl")
        if opcode == "jmpi":
            self.emit(f"{self.predicate(inst)}jmp (M1_NM, 1) {op.target}")
        elif opcode == "sync":
            if inst.function != "bar" or self.barrier_signals != 1:
                raise UnsupportedError(f"sync.{inst.function} other than a barrier's wait after its signal")
            self.barrier_signals = 0
            self.emit("barrier")
        elif inst.send is not None:
            self.send(inst)
        elif opcode == "cmp":
            self.compare(inst)
        elif opcode == "and" and _file(inst.dst) == "f":
            self.mask_flag(inst)
        elif opcode == "mov" and _file(inst.srcs[0]) == "f":
            self.save_flag(inst)
        elif opcode == "mov" and _file(inst.dst) == "f":
            value = inst.srcs[0]
            if not isinstance(value, Imm) or inst.predicate is not None:
                raise UnsupportedError("only immediates are moved into flags by the vISA back end")
            flag = Flag(_reg(inst.dst).number, _reg(inst.dst).subreg)
            for width in self.widths[flag]:  # every width reads the value set here
                self.emit(f"setp (M1_NM, {width}) {self.vars.flag(flag, width)} {immediate(Imm(value.value, 'ud'))}")
            self.written[flag] = None
        elif opcode == "mov" and _file(inst.dst) == "null":
            sources = inst.srcs[0]
            if not (isinstance(sources, Reg) and sources.file == VIRTUAL and sources.number in self.fence_responses):
                raise UnsupportedError("a move into null other than a fence's wait")
        elif _multiplies_into_acc(inst):
            self.pending_multiplies += 1  # the low half of a 32x32 multiply: vISA's mul/mulh does it whole
        elif opcode in ("mach", "macl"):
            self.multiply_pair(inst)
        elif opcode in ("dpas", "dpasw"):
            self.dpas(inst)
        else:
            self.alu(inst)

    def modifiers(self, inst: Instruction) -> str:
        if inst.cond_modifier is not None and inst.opcode != "sel":
            raise UnsupportedError(f"a condition modifier on '{inst.opcode}' has no vISA form in this back end")
        return ".sat" if inst.saturate else ""

    def alu(self, inst: Instruction) -> None:
        opcode = inst.opcode
        if any(isinstance(src, Imm) and src.type in ("uv", "v", "vf") for src in inst.srcs):
            self.vector_immediate(inst)
            return
        sources = [self.src(inst, i) for i in range(len(inst.srcs))]
        if opcode in ("addc", "subb"):  # vISA names the carry (or borrow) acc0 holds: a variable
            if "AccWrEn" not in inst.options:
                raise UnsupportedError(f"{opcode} without its carry in acc0")
            carry = Reg(VIRTUAL, 0, 0, "ud").stride(1)
            name = self.vars.register(carry, CARRY)
            self.emit(
                f"{self.predicate(inst)}{opcode} {self.exec(inst)} {self.dst(inst.dst)} {name}(0,0)<1> "
                + " ".join(sources)
            )
            return
        if opcode == "mad":
            name, sources = "mad", [sources[1], sources[2], sources[0]]
        elif opcode == "math":
            if inst.function not in MATH:
                raise UnsupportedError(f"math.{inst.function} has no vISA form in this back end")
            name = MATH[inst.function]
        elif opcode == "sel" and inst.cond_modifier is not None:
            cond = inst.cond_modifier.cond
            if cond in ("l", "lt"):
                name = "min"
            elif cond in ("ge",):
                name = "max"
            else:
                raise UnsupportedError(f"sel.{cond} has no vISA form in this back end")
            if inst.predicate is not None:
                raise UnsupportedError("a predicated min/max")
            self.emit(
                f"{name}{'.sat' if inst.saturate else ''} {self.exec(inst)} {self.dst(inst.dst)} " + " ".join(sources)
            )
            return
        elif opcode in SAME_NAME:
            name = opcode
        else:
            raise UnsupportedError(f"instruction '{opcode}' has no vISA form in this back end")
        self.emit(
            f"{self.predicate(inst)}{name}{self.modifiers(inst)} {self.exec(inst)} {self.dst(inst.dst)} "
            + " ".join(sources)
        )

    def multiply_pair(self, inst: Instruction) -> None:
        """`mul acc0, a, c.low16` then `mach`/`macl dst, a, c`: the low 32 bits of a * c (macl;
        mach without AccWrEn where the platform has no macl) or the high 32 bits (mach with
        AccWrEn; plain mach where macl exists).  vISA's mul and mulh take the whole operands."""
        if not self.pending_multiplies:
            raise UnsupportedError(f"'{inst.opcode}' without a multiply into acc0 before it")
        self.pending_multiplies -= 1
        has_macl = T.opcode_available(T.OPCODES["macl"], self.hw)
        high = inst.opcode == "mach" and ("AccWrEn" in inst.options or has_macl)
        sources = " ".join(self.src(inst, i) for i in range(2))
        self.emit(f"{self.predicate(inst)}{'mulh' if high else 'mul'} {self.exec(inst)} {self.dst(inst.dst)} {sources}")

    def mask_flag(self, inst: Instruction) -> None:
        """`and fD, fS, mask`: keep the channels `mask` (an immediate, or a flag saved in a
        register) names of a condition.  The predicates take the width fS was written at, or
        every width the flag is used at after a `setp` wrote all of them."""
        source, mask = inst.srcs
        if not (isinstance(source, Reg) and source.file == "f") or inst.predicate:
            raise UnsupportedError("only a flag and'ed with a mask is supported in a flag")
        flag, target = Flag(source.number, source.subreg), Flag(_reg(inst.dst).number, _reg(inst.dst).subreg)
        if flag not in self.written:
            raise UnsupportedError(f"flag {flag} is masked before it is written")
        widths = self.widths_written(flag)
        bits = immediate(Imm(mask.value, "ud")) if isinstance(mask, Imm) else self.scalar(mask)
        for width in widths:
            temp = self.vars.temporary(target, width)
            self.emit(f"setp (M1_NM, {width}) {temp} {bits}")
            self.emit(f"and (M1_NM, {width}) {self.vars.flag(target, width)} {self.vars.flag(flag, width)} {temp}")
        self.written[target] = widths[0] if len(widths) == 1 else None

    def save_flag(self, inst: Instruction) -> None:
        """`mov rN, fS`: a condition's bits into a register (restored by `mask_flag`)."""
        source = _reg(inst.srcs[0])
        flag = Flag(source.number, source.subreg)
        widths = self.widths_written(flag) if flag in self.written else []
        if len(widths) != 1 or inst.predicate is not None or inst.exec_size != 1:
            raise UnsupportedError(f"flag {flag} is saved where its width is not known")
        self.emit(f"mov (M1_NM, 1) {self.dst(inst.dst)} {self.vars.flag(flag, widths[0])}")

    def widths_written(self, flag: Flag) -> list[int]:
        width = self.written[flag]
        return self.widths[flag] if width is None else [width]

    def scalar(self, reg: Reg) -> str:
        name, row, col = self.place(reg)
        return f"{name}({row},{col})<0;1,0>"

    def vector_immediate(self, inst: Instruction) -> None:
        """A packed vector immediate (eight 4-bit elements) moved into fewer than eight lanes
        goes through a temporary moved whole: GenX_IR (1.0.12504) folds `mov a:uw, 0x76543210:uv`
        of 4 lanes and a following `add b:d, a:uw, 0` into `mov b:d, 0x3020100:uv`, which the
        hardware reads as 0, 0, 1, 0 (our simulator found it; docs/visa.md)."""
        value = inst.srcs[0]
        if inst.opcode != "mov" or not isinstance(value, Imm) or value.type == "vf":
            raise UnsupportedError(f"'{inst.opcode}' with a vector immediate has no vISA form in this back end")
        if inst.exec_size == 8:
            self.emit(
                f"{self.predicate(inst)}mov{self.modifiers(inst)} {self.exec(inst)} {self.dst(inst.dst)} "
                f"{immediate(value)}"
            )
            return
        lanes = Reg(VIRTUAL, 0, 0, "w" if value.type == "v" else "uw")
        temp = self.vars.register(lanes, VECTOR)
        n = inst.exec_size
        self.emit(f"mov (M1_NM, 8) {temp}(0,0)<1> {immediate(value)}")
        self.emit(
            f"{self.predicate(inst)}mov{self.modifiers(inst)} {self.exec(inst)} {self.dst(inst.dst)} "
            f"{temp}(0,0)<{n};{n},1>"
        )

    def compare(self, inst: Instruction) -> None:
        cm = inst.cond_modifier
        if cm is None or (inst.dst is not None and not inst.dst.is_null):
            raise UnsupportedError("a compare that writes a register (not only a flag)")
        if cm.cond not in CONDITIONS:
            raise UnsupportedError(f"condition '{cm.cond}' has no vISA form in this back end")
        width = inst.exec_size
        sources = " ".join(self.src(inst, i) for i in range(2))
        p = inst.predicate
        if p is None:
            target = self.write_flag(cm.flag, width)
            self.emit(f"cmp.{CONDITIONS[cm.cond]} {self.exec(inst)} {target} {sources}")
            return
        # vISA has no predicated compare: compare into a temporary, then merge it as the
        # hardware would (channels the predicate disables keep the flag's old bit)
        if p.mode:
            raise UnsupportedError(f"predicate mode '.{p.mode}' has no vISA form in this back end")
        guard = self.read_flag(p.flag, width)
        target = self.read_flag(cm.flag, width)
        temp = self.vars.temporary(cm.flag, width)
        self.emit(f"cmp.{CONDITIONS[cm.cond]} {self.exec(inst)} {temp} {sources}")
        if p.flag == cm.flag:  # a chain of conditions: and (or, under an inverted predicate)
            self.emit(f"{'or' if p.invert else 'and'} {self.exec(inst)} {target} {target} {temp}")
        elif p.invert:
            raise UnsupportedError("a compare predicated on another flag, inverted")
        else:
            self.emit(f"xor {self.exec(inst)} {temp} {temp} {target}")
            self.emit(f"and {self.exec(inst)} {temp} {temp} {guard}")
            self.emit(f"xor {self.exec(inst)} {target} {target} {temp}")
        self.written[cm.flag] = width

    def dpas(self, inst: Instruction) -> None:
        weights, activations = (DPAS_PRECISIONS.get(inst.srcs[i].type) for i in (1, 2))
        if weights is None or activations is None:
            raise UnsupportedError(
                f"dpas on {inst.srcs[1].type} x {inst.srcs[2].type} has no vISA form in this back end"
            )
        dst, src0 = inst.dst, inst.srcs[0]
        name, row, col = self.place(self.as_ud(inst.srcs[2]))
        self.emit(
            f"{inst.opcode}.{weights}.{activations}.{inst.systolic_depth}.{inst.repeat_count} {self.exec(inst)} "
            f"{self.raw_typed(dst)} {self.raw_typed(src0)} {self.raw(inst.srcs[1])} {name}({row},{col})"
        )

    def raw_typed(self, operand: Reg | Imm | None) -> str:
        reg = _reg(operand)
        name, row, col = self.place(reg)
        return f"{name}.{row * self.g + col * TYPE_BYTES[reg.type]}"

    def send(self, inst: Instruction) -> None:
        desc = _message(inst)
        if desc.desc_in_a0 or desc.exdesc_a0 is not None:
            raise UnsupportedError("a send with descriptors in a0 has no vISA form in this back end")
        if inst.eot:
            self.emit("ret (M1_NM, 1)")
            return
        if desc.sfid == "gtwy":
            if desc.desc != BARRIER_SIGNAL or inst.predicate is not None:
                raise UnsupportedError(f"gateway message 0x{desc.desc:08x} has no vISA form in this back end")
            self.barrier_signals += 1  # its sync.bar becomes vISA's barrier
            return
        if desc.sfid in LSC_SFIDS and desc.desc & 0x3F == LSC_FENCE_OPCODE:
            self.fence_response(inst)
            op, scope = desc.desc >> 12 & 7, desc.desc >> 9 & 7
            self.emit(f"lsc_fence.{LSC_SFIDS[desc.sfid]}.{LSC_FENCE_OPS[op]}.{LSC_SCOPES[scope]}")
            return
        if desc.sfid == "dc0" and desc.desc >> 14 & 0x1F == HDC_FENCE_MESSAGE:
            self.fence_response(inst)
            self.emit("fence_local.E" if desc.desc & 0xFF == SLM_BTI else "fence_global.E")
            return
        sfid = T.sfids(self.hw)[desc.sfid]
        mlen, rlen = desc.message_length, desc.response_length
        src1 = _reg(inst.srcs[1]) if len(inst.srcs) > 1 else Reg("null", 0, 0, "ud")
        src1_len = desc.src1_length if desc.src1_length is not None else desc.exdesc >> 6 & 0x1F
        if src1.is_null:
            src1_len = 0
        dst = inst.dst if inst.dst is not None and rlen else Reg("null", 0, 0, "ud")
        self.emit(
            f"{self.predicate(inst)}raw_sends.{sfid}.{mlen}.{src1_len}.{rlen} {self.exec(inst)} "
            f"0x{desc.exdesc:x}:ud 0x{desc.desc:x}:ud {self.raw(inst.srcs[0])} {self.raw(src1)} {self.raw(dst)}"
        )

    def fence_response(self, inst: Instruction) -> None:
        if isinstance(inst.dst, Reg) and inst.dst.file == VIRTUAL:
            self.fence_responses.add(inst.dst.number)

    def run(self) -> list[str]:
        for item in self.program.items:
            if isinstance(item, Label):
                self.lines.append(f"{item.name}:")
            else:
                self.op(item)
        return self.lines


def _reg(operand: Reg | Imm | None) -> Reg:
    """A register operand, where the translation needs one."""
    if not isinstance(operand, Reg):
        raise UnsupportedError(f"operand {operand} where the vISA back end needs a register")
    return operand


def _file(operand: Reg | Imm | None) -> str:
    return operand.file if isinstance(operand, Reg) else ""


def _message(inst: Instruction) -> SendDescriptor:
    if inst.send is None:
        raise UnsupportedError(f"'{inst.opcode}' without a message descriptor")
    return inst.send


def _multiplies_into_acc(inst: Instruction) -> bool:
    return inst.opcode == "mul" and inst.dst is not None and inst.dst.file == "acc"


def _flags_used(inst: Instruction) -> list[Flag]:
    used = [inst.predicate.flag] if inst.predicate else []
    used += [inst.cond_modifier.flag] if inst.cond_modifier else []
    if inst.dst is not None and inst.dst.file == "f":
        used.append(Flag(inst.dst.number, inst.dst.subreg))
    return used


def immediate(imm: Imm) -> str:
    if imm.type in FLOAT_TYPES or imm.type in ("uv", "v", "vf"):
        return f"0x{imm.value:x}:{imm.type}"
    if T.TYPES[imm.type].is_signed:
        return f"{imm.signed_value}:{imm.type}"
    return f"0x{imm.value:x}:{imm.type}"


def translate(program, name: str, hw: hwlib.Platform, simd: int) -> str:
    """The vISA text of `program` (instructions on virtual registers) as kernel `name`,
    dispatched at SIMD `simd`."""
    work = _Translation(program, hw)
    body = work.run()
    if work.pending_multiplies or work.barrier_signals:
        raise UnsupportedError("a multiply into acc0 without its mach/macl, or a barrier signal without its wait")
    header = [
        f".version {VISA_VERSION}",
        f'.kernel "{name}"',
        *work.vars.declarations(),
        '.kernel_attr Target="cm"',
        f".kernel_attr SimdSize={simd}",
        f'.function "{name}_0"',
        f"{name}_0:",
    ]
    return "\n".join(header + body) + "\n"
