"""One description per Xe platform: the single source of truth for hardware facts.

Everything that differs between XeLP, XeHPG and XeHPC lives here as data: register file
shape, SIMD widths, which instructions exist, software-scoreboard (SWSB) layout, message
families, latencies and throughputs.  The cost models of `xegen.egraph`, the configs of
`xegen.conv`, the encoder of `xegen.emit` and the simulator all read these records; none of
them compares platform names.

Numbers marked "modeled" are a cost model's estimates, not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from .errors import Error


def _frozen(mapping: dict) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Platform:
    name: str  # the name users type: "xehpg"
    display_name: str  # "XeHPG"
    aliases: tuple[str, ...]  # other names users know: codenames, iga64 and ocloc names
    iga_platform: str  # iga64 -p= value
    ocloc_device: str  # ocloc -device value

    # Register files.
    grf_bytes: int  # bytes per GRF
    grf_counts: tuple[int, ...]  # GRF counts a kernel may request (large-GRF mode where 256)
    flag_registers: int  # f0..f(n-1), each 32 bits
    accumulators: int  # acc0..acc(n-1)
    simd_widths: tuple[int, ...]  # dispatch SIMD widths a kernel may use

    # Instructions that exist.
    has_add3: bool
    has_bfn: bool
    has_dpas: bool
    has_dpasw: bool
    has_madm: bool
    dpas_exec_size: int  # 0 when there is no dpas
    systolic_depth: int  # dpas K depth in dwords (8)
    has_native_dword_multiply: bool  # mul d*d -> d in one instruction (XeLP); else emulated
    has_int64_arithmetic: bool  # :q/:uq ALU instructions (else 64-bit math is emulated with 32-bit ops)
    has_fp64: bool  # :df arithmetic
    has_integer_mad: bool  # integer mad (a + b*c, c a word or 16-bit immediate) in one instruction

    # The native instruction encoding (xegen.emit.fields): "gen12" (XeLP, XeHP, XeHPG) or "xehpc",
    # which moves the SWSB, execution-size, channel-offset, flag and predicate fields and widens
    # byte subregisters for 64-byte registers.
    instruction_layout: str

    # Software scoreboard (SWSB).
    swsb_bits: int  # width of the SWSB field in the instruction (bits 8 and up): 8 or 10
    swsb_tokens: int  # SBID tokens: 16 or 32
    swsb_pipes: tuple[str, ...]  # in-order pipes that distances can name ("" = the single pipe)
    swsb_max_distance: int
    math_is_out_of_order: bool  # math is token-tracked (XeLP..XeHPG) or an in-order pipe (XeHPC)

    # Messages.
    has_lsc: bool  # load/store cache messages (ugm, slm, tgm)
    data_messages: str  # what IGC uses for data on this platform: "hdc" or "lsc"
    eot_sfid: str  # shared function of the end-of-thread message: "ts" or "gtwy"
    max_message_simd: int  # widest SIMD a single LSC/HDC data message covers
    max_block_message_bytes: int  # largest block (transposed/oword) message: HDC 8 owords, LSC d32x64t / d64x64t

    # Thread groups.
    max_work_group_size: int  # work items per group (threads x SIMD) the runtime accepts
    max_slm_bytes: int  # shared local memory one thread group may allocate

    # Zebin notes (.note.intelgt.compat).
    product_family: int
    gfx_core: int

    # Machine size for peak-throughput estimates (modeled; public spec-sheet numbers).
    eu_count: int
    eus_per_subslice: int  # EUs of one subslice / Xe-core, which runs a thread group's threads
    clock_ghz: float
    fma_per_clock_per_eu: Mapping[str, int]  # per data-type kind: "f32", "f16", "bf16", "int8"

    # Latencies in cycles from issue to result (modeled).
    latency: Mapping[str, int]

    # Instruction cache size at which kernels start missing (bytes).
    icache_bytes: int

    # Issue throughput per EU (modeled; xegen.emit.cost's instruction-level cycle model):
    alu_bytes_per_clock: int  # operand bytes the ALU pipes take per clock (SIMD8 x 4 B on XeLP/XeHPG)
    math_cycles_per_alu_cycle: int  # extended math (inv, sqrt, ...) runs at a fraction of ALU rate
    load_store_bytes_per_clock: float  # data a message moves per clock, the Xe core's L1/SLM share per EU
    # Bytes of payload one thread's message moves per cycle through the EU's send port (modeled):
    # how long a single send keeps the unit busy in xegen.schedule's per-thread loop model.  The
    # sustained rate per EU, all threads sharing the L1/SLM, is load_store_bytes_per_clock above.
    message_bytes_per_cycle: int

    # Integer cost model (modeled): instructions issued for one SIMD operation of each kind, the
    # data xegen.egraph's cost models are built from.  Keys:
    #   alu         add, sub, and/or/xor/not, neg, shifts, min/max, cmp, sel on <= 32-bit values
    #   alu64       the same on 64-bit values (and, or, xor, add, sub, mov)
    #   shift64     a 64-bit shift
    #   compare64   a 64-bit comparison, min or max
    #   mul         a 32-bit multiply by a 16-bit operand (word immediate): native everywhere
    #   mul32       a 32x32-bit multiply where it is native (has_native_dword_multiply)
    #   mul32_emulated  the sequence replacing it where it is not (mul by low and high word, add)
    #   mul64       a 64-bit multiply (emulated)
    #   div         32-bit division or remainder by a variable (emulated)
    #   div_const   32-bit division by a constant that is not a power of two (magic-number sequence)
    #   div64       64-bit division or remainder by a variable (emulated)
    #   add3, mad   the three-source instructions (used only where they exist)
    #   convert     sign or zero extension to a wider type (a mov)
    #   imm64       materializing an immediate that does not fit 32 bits (a mov)
    integer_cost: Mapping[str, int]

    # How the runtime starts threads: COMPUTE_WALKER (XeHP+: inline data, the kernel's prologue
    # loads the rest) or GPGPU_WALKER (XeLP: the hardware pushes local ids and cross-thread data
    # into the GRF).
    compute_walker: bool = True

    # In-order results are visible without an SWSB wait once this many later instructions have
    # issued (IGC's SWSB_MAX_*_DEPENDENCE_DISTANCE): ALU results, 64-bit results, in-order math.
    swsb_latency: tuple[tuple[str, int], ...] = (("alu", 11), ("alu64", 15), ("math", 18))

    # The SWSB pass (xegen.emit.scoreboard) drops an in-order dependency once this many later
    # instructions have issued *in the producer's own pipe* (nGEN's auto-SWSB timeouts; IGA uses
    # 10/14/18): ALU results, 64-bit (long pipe) results, in-order math (XeHPC).
    swsb_pipe_timeout: tuple[tuple[str, int], ...] = (("alu", 11), ("alu64", 15), ("math", 19))

    # Which instructions go down the long (L) pipe: "any_64bit_operand" (XeHPG: a 64-bit
    # destination or source; on XeLP it makes the result "long" for write-after-write ordering) or
    # "float64_destination" (XeHPC: only :df destinations; 64-bit integers use the I pipe).
    swsb_long_pipe_rule: str = "any_64bit_operand"

    # GRF banks (a performance fact, not legality; nGEN's Bundle::locate): register rN is in bank
    # bit `grf_bank_bit` of N.  dpas src0 and src2, or all three sources of a three-source
    # instruction, in one bank are read in extra cycles (xegen.emit.lower.banks).
    grf_bank_bit: int = 0

    # A write of bytes into a GRF reads and rewrites the whole register (XeHPC), so it depends on
    # everything that touches that register (IGA's hasReadModifiedWriteOnByteDst).
    byte_writes_read_modify_write: bool = False

    # A distance may be written without a pipe (`@n`, meaning the pipes of the instruction's
    # operand types) in the combined distance+token forms.  XeHPC hardware does not allow it
    # (IGA: "Cannot use @1 on XeHPC-XT, must explicitly set pipe type A@1 or L@1").
    swsb_bare_distance_allowed: bool = True

    @property
    def swsb_named_pipes(self) -> bool:
        """Distances name an in-order pipe (`F@2`); XeLP has one pipe and writes `@2`."""
        return len(self.swsb_pipes) > 1

    @property
    def max_grf_count(self) -> int:
        return max(self.grf_counts)

    def peak_fma_per_clock(self, kind: str) -> int:
        """FMA operations per clock for the whole device (modeled)."""
        return self.fma_per_clock_per_eu[kind] * self.eu_count

    def __str__(self) -> str:
        return self.display_name


_COMMON_LATENCY = {
    "alu": 4,  # in-order integer/float ALU result latency
    "alu64": 8,  # 64-bit integer ALU (long pipe)
    "math": 20,  # extended math (inv, sqrt, idiv, ...)
    "send_slm": 40,
    "send_global": 300,
    "send_global_cached": 120,  # a global load whose cache lines a prefetch already brought in
    "barrier": 30,
}

# Integer costs shared by the platforms (modeled: instruction counts of the sequences IGC emits).
_COMMON_INTEGER_COST = {
    "alu": 1,
    "alu64": 2,  # emulated with 32-bit halves (addc/add) where there is no native 64-bit integer ALU
    "shift64": 4,
    "compare64": 3,
    "mul": 1,
    "mul32": 1,
    "mul32_emulated": 3,
    "mul64": 8,
    "div": 20,
    "div_const": 6,  # mul + mach (emulated on XeHP+) + shifts + sign fix-up
    "div64": 60,
    "add3": 1,
    "mad": 1,
    "convert": 1,
    "imm64": 1,
}

XELP = Platform(
    name="xelp",
    display_name="XeLP",
    aliases=("gen12lp", "tgl", "tgllp", "dg1", "12p1"),
    iga_platform="12p1",
    ocloc_device="tgllp",
    grf_bytes=32,
    grf_counts=(128,),
    flag_registers=2,
    accumulators=8,
    simd_widths=(8, 16, 32),
    has_add3=False,
    has_bfn=False,
    has_dpas=False,
    has_dpasw=False,
    has_madm=False,
    dpas_exec_size=0,
    systolic_depth=0,
    has_native_dword_multiply=True,
    has_int64_arithmetic=False,  # iga64 -Wall rejects :q and :df operands on 12p1
    has_fp64=False,
    has_integer_mad=False,
    instruction_layout="gen12",
    swsb_bits=8,
    swsb_tokens=16,
    swsb_pipes=("",),
    swsb_max_distance=7,
    math_is_out_of_order=True,
    has_lsc=False,
    data_messages="hdc",
    eot_sfid="ts",
    max_message_simd=16,
    max_block_message_bytes=128,
    max_work_group_size=512,
    max_slm_bytes=64 * 1024,
    product_family=29,  # IGFX_TIGERLAKE_LP, as IGC writes for tgllp
    gfx_core=18,  # IGFX_GEN12LP_CORE
    eu_count=96,
    eus_per_subslice=16,
    clock_ghz=1.35,
    fma_per_clock_per_eu=_frozen({"f32": 8, "f16": 16, "bf16": 8, "int8": 32}),
    latency=_frozen({**_COMMON_LATENCY, "dpas": 0}),
    icache_bytes=48 * 1024,
    alu_bytes_per_clock=32,
    math_cycles_per_alu_cycle=4,
    load_store_bytes_per_clock=4.0,
    message_bytes_per_cycle=32,
    compute_walker=False,
    integer_cost=_frozen({**_COMMON_INTEGER_COST, "div_const": 4, "shift64": 4, "compare64": 3}),
)

XEHPG = Platform(
    name="xehpg",
    display_name="XeHPG",
    aliases=("dg2", "acm", "arc", "12p71"),
    iga_platform="12p71",
    ocloc_device="dg2",
    grf_bytes=32,
    grf_counts=(128, 256),
    flag_registers=2,
    accumulators=8,
    simd_widths=(8, 16, 32),
    has_add3=True,
    has_bfn=True,
    has_dpas=True,
    has_dpasw=True,
    has_madm=True,
    dpas_exec_size=8,
    systolic_depth=8,
    has_native_dword_multiply=False,
    has_int64_arithmetic=False,  # DG2 has no native 64-bit integer ALU (IGC emulates it)
    has_fp64=False,
    has_integer_mad=True,
    instruction_layout="gen12",
    swsb_bits=8,
    swsb_tokens=16,
    swsb_pipes=("F", "I", "L"),
    swsb_max_distance=7,
    math_is_out_of_order=True,
    has_lsc=True,
    data_messages="lsc",
    eot_sfid="gtwy",
    max_message_simd=16,
    max_block_message_bytes=256,
    max_work_group_size=1024,
    max_slm_bytes=64 * 1024,
    product_family=1270,  # IGFX_DG2
    gfx_core=0xC07,  # IGFX_XE_HPG_CORE
    eu_count=512,
    eus_per_subslice=16,
    clock_ghz=2.1,
    fma_per_clock_per_eu=_frozen({"f32": 8, "f16": 64, "bf16": 64, "int8": 128}),
    latency=_frozen({**_COMMON_LATENCY, "dpas": 16}),
    icache_bytes=96 * 1024,
    alu_bytes_per_clock=32,
    math_cycles_per_alu_cycle=4,
    load_store_bytes_per_clock=8.0,
    message_bytes_per_cycle=64,
    integer_cost=_frozen({**_COMMON_INTEGER_COST, "shift64": 4, "compare64": 3}),
    grf_bank_bit=1,  # banks alternate every two registers
)

XEHPC = Platform(
    name="xehpc",
    display_name="XeHPC",
    aliases=("pvc", "12p72"),
    iga_platform="12p72",
    ocloc_device="pvc",
    grf_bytes=64,
    grf_counts=(128, 256),
    flag_registers=4,
    accumulators=16,
    simd_widths=(16, 32),
    has_add3=True,
    has_bfn=True,
    has_dpas=True,
    has_dpasw=False,
    has_madm=True,
    dpas_exec_size=16,
    systolic_depth=8,
    has_native_dword_multiply=False,
    has_int64_arithmetic=True,
    has_fp64=True,
    has_integer_mad=True,
    instruction_layout="xehpc",
    swsb_bits=10,
    swsb_tokens=32,
    swsb_pipes=("F", "I", "L", "M"),
    swsb_max_distance=7,
    math_is_out_of_order=False,
    has_lsc=True,
    data_messages="lsc",
    eot_sfid="gtwy",
    max_message_simd=32,
    max_block_message_bytes=512,
    max_work_group_size=1024,
    max_slm_bytes=128 * 1024,
    product_family=1271,  # IGFX_PVC
    gfx_core=0xC08,  # IGFX_XE_HPC_CORE
    eu_count=1024,
    eus_per_subslice=8,
    clock_ghz=1.6,
    fma_per_clock_per_eu=_frozen({"f32": 16, "f16": 256, "bf16": 256, "int8": 512}),
    latency=_frozen({**_COMMON_LATENCY, "dpas": 8}),
    icache_bytes=80 * 1024,
    alu_bytes_per_clock=64,
    math_cycles_per_alu_cycle=4,
    load_store_bytes_per_clock=16.0,
    message_bytes_per_cycle=128,
    # 64-bit add and logic run natively in the integer pipe (IGC: hasPartialInt64Support / QW add)
    integer_cost=_frozen({**_COMMON_INTEGER_COST, "alu64": 1, "shift64": 2, "compare64": 2, "mul64": 6}),
    swsb_long_pipe_rule="float64_destination",
    byte_writes_read_modify_write=True,
    swsb_bare_distance_allowed=False,
)

PLATFORMS: tuple[Platform, ...] = (XELP, XEHPG, XEHPC)
DEFAULT = XEHPG


def platform(name: str | Platform) -> Platform:
    """Look a platform up by name or alias (case-insensitive); raise a clear error otherwise."""
    if isinstance(name, Platform):
        return name
    key = name.strip().lower()
    for p in PLATFORMS:
        if key == p.name or key in p.aliases:
            return p
    known = ", ".join(p.name for p in PLATFORMS)
    raise Error(f"unknown hardware '{name}': expected one of {known}")
