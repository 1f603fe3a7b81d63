"""One description per Xe platform: the single source of truth for hardware facts.

Everything that differs between XeLP, XeHPG and XeHPC lives here as data: register file
shape, SIMD widths, which instructions exist, software-scoreboard (SWSB) layout, message
families, latencies and throughputs.  The cost models of `xegen.egraph`, the configs of
`xegen.conv`, the encoder of `xegen.emit` and the simulator all read these records; none of
them compares platform names.

Numbers marked "modeled" are a cost model's estimates, not measurements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .errors import Error


def _frozen(mapping: dict) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class MemorySystem:
    """What the modeled cycles (`xegen.emit.cost`) need beyond the EUs: the memory roofline, thread
    residency and send latencies of one product of a platform.

    `sku` names the product whose spec sheet these numbers come from; the same product's numbers
    are the platform's `eu_count`, `clock_ghz` and `fma_per_clock_per_eu`.  Each platform record
    cites its sources where it sets them; "estimated" marks a number no public source gives.
    OCC is Intel's GPU Occupancy Calculator, whose per-device table is public in oneAPI-samples
    (https://github.com/oneapi-src/oneAPI-samples, Tools/GPU-Occupancy-Calculator/index.html)."""

    sku: str
    dram_gb_per_second: float  # peak DRAM bandwidth, 10^9 bytes per second
    last_level_cache_bytes: int  # the largest cache on the GPU's side of DRAM
    threads_per_eu: int  # hardware threads an EU holds in the 128-GRF mode (a 256-GRF kernel: half)
    slm_bytes_per_subslice: int  # shared local memory of one subslice / Xe-core, for all its groups
    max_groups_per_subslice: int  # thread groups one subslice holds at once
    barriers_per_subslice: int  # named barriers: groups that use barriers resident at once
    send_latency_ns: Mapping[str, float]  # issue to result of a load: "slm", "l1", "l3", "memory"


@dataclass(frozen=True)
class Platform:
    name: str  # the name users type: "xehpg"
    display_name: str  # "XeHPG"
    aliases: tuple[str, ...]  # other names users know: codenames, iga64 and ocloc names
    iga_platform: str  # iga64 -p= value
    ocloc_device: str  # ocloc -device value
    genx_ir_platform: str  # GenX_IR (IGC's vISA finalizer) -platform value

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
    has_block2d: bool  # LSC 2D block loads (load_block2d: VNNI transform, transpose); XeHPC only
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

    # The instruction cache of a subslice (Xe-core), shared by the threads it runs: a kernel whose
    # code is larger misses in its own loop.  oneDNN's GPU device info (src/gpu/intel/compute/
    # device_info.cpp, device_info_t::icache_size) gives 48 KB for Xe-LP, 96 KB for Xe-HPG, 80 KB
    # for Xe-HPC, and its kernel generator warns above them (jit/generator.cpp, check_kernel_size);
    # xegen bounds its unrolling by them (`xegen.plan`, `xegen.pipeline`).
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

    # Memory roofline, residency and send latencies of the product the machine size describes.
    memory: MemorySystem

    # How the runtime starts threads: COMPUTE_WALKER (XeHP+: inline data, the kernel's prologue
    # loads the rest) or GPGPU_WALKER (XeLP: the hardware pushes local ids and cross-thread data
    # into the GRF).
    compute_walker: bool = True
    # Whether our kernels take the first 32 bytes of their arguments as the walker's inline data
    # (in r1 at thread start) instead of loading them.  COMPUTE_WALKER carries 32 bytes of inline
    # data on XeHPG and XeHPC alike, and NEO passes them to any kernel that declares them.  IGC's
    # OpenCL kernels take them on XeHPG only: its vISA assumes inline data fill one GRF, which
    # holds 64 bytes on XeHPC (IGC's passNOSInlineData says so), so there it keeps them behind a
    # flag; our prologue places the rest of the arguments after the inline half-GRF itself.
    inline_arguments: bool = False

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
    # instruction, in one bank are read in extra cycles (xegen.lower.banks).
    grf_bank_bit: int = 0

    # A write of bytes into a GRF reads and rewrites the whole register (XeHPC), so it depends on
    # everything that touches that register (IGA's hasReadModifiedWriteOnByteDst).
    byte_writes_read_modify_write: bool = False

    # Hardware thread ids in sr0.0 as IGC decodes them (CShader::GetHWTID): it keeps the low
    # `sr0_thread_id_bits` bits and removes the reserved ones (XeHPG: [3] and [6]; XeHPC: [3]
    # and [7:6]); private memory is indexed by what remains.  XeLP: vISA's predefined HW TID.
    sr0_thread_id_bits: int = 12
    sr0_reserved_bits: tuple[int, ...] = ()

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

    @property
    def subslices(self) -> int:
        """Subslices (Xe-cores): each runs whole thread groups."""
        return self.eu_count // self.eus_per_subslice

    @property
    def dram_bytes_per_clock(self) -> float:
        """Peak DRAM bytes per GPU clock."""
        return self.memory.dram_gb_per_second / self.clock_ghz

    def threads_per_eu(self, grf_count: int) -> int:
        """Threads an EU holds for kernels of `grf_count` GRFs: the register file is split among
        them, so the 256-GRF mode holds half as many."""
        return max(1, self.memory.threads_per_eu * min(self.grf_counts) // grf_count)

    def send_latency(self, target: str) -> float:
        """Cycles from a load's issue to its result, by where the data is: "slm", "l1", "l3",
        "memory"."""
        return self.memory.send_latency_ns[target] * self.clock_ghz

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
    genx_ir_platform="TGLLP",
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
    has_block2d=False,
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
    load_store_bytes_per_clock=8.0,
    message_bytes_per_cycle=32,
    compute_walker=False,
    integer_cost=_frozen({**_COMMON_INTEGER_COST, "div_const": 4, "shift64": 4, "compare64": 3}),
    memory=MemorySystem(
        # Intel ARK, Core i7-1185G7: Iris Xe Graphics, 96 EUs, graphics max dynamic frequency
        # 1.35 GHz (eu_count, clock_ghz above), LPDDR4x-4266 on a 128-bit bus: 4266 MT/s x 16 bytes.
        # Intel oneAPI GPU Optimization Guide, "Intel Xe GPU Architecture": per Xe-LP EU and clock
        # 8 FP32, 16 FP16, 32 INT8 (dp4a) operations (fma_per_clock_per_eu), an 8-wide ALU
        # (alu_bytes_per_clock: 8 x 4 bytes) beside a 2-wide extended-math ALU
        # (math_cycles_per_alu_cycle: 8 / 2), a 128 B/clock data port per dual subslice of 16 EUs
        # (load_store_bytes_per_clock: 128 / 16).
        sku="Intel Core i7-1185G7 (Tiger Lake, Iris Xe 96 EUs, LPDDR4x-4266)",
        dram_gb_per_second=68.3,
        # AnandTech, "The Intel Xe-LP GPU Architecture Deep Dive" p. 5: Tiger Lake ships a 3.8 MB GPU
        # L3 (the SoC's 12 MB LLC behind it is shared with the CPU cores and not counted).
        last_level_cache_bytes=3_840 * 1024,
        # Intel oneAPI GPU Optimization Guide, "Intel Xe GPU Architecture": seven threads per Xe-LP
        # EU, 128 KB SLM per dual subslice of 16 EUs (the Occupancy Calculator says 64 KB; we take
        # the guide's prose).  Groups and barriers per subslice: the Occupancy Calculator (OCC),
        # Tiger Lake Iris Xe entry.
        threads_per_eu=7,
        slm_bytes_per_subslice=128 * 1024,
        max_groups_per_subslice=112,
        barriers_per_subslice=32,
        # estimated: Intel publishes no latencies.  Round figures of the order published
        # pointer-chasing measurements of Intel GPUs show (chips and cheese,
        # https://chipsandcheese.com), not read off any one of them; SLM < L1 < L3 < DRAM.
        send_latency_ns=_frozen({"slm": 25.0, "l1": 45.0, "l3": 110.0, "memory": 250.0}),
    ),
)

XEHPG = Platform(
    name="xehpg",
    display_name="XeHPG",
    aliases=("dg2", "acm", "arc", "12p71"),
    iga_platform="12p71",
    ocloc_device="dg2",
    genx_ir_platform="DG2",
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
    has_block2d=False,
    data_messages="lsc",
    eot_sfid="gtwy",
    max_message_simd=16,
    max_block_message_bytes=256,
    max_work_group_size=1024,
    max_slm_bytes=64 * 1024,
    product_family=1270,  # IGFX_DG2
    inline_arguments=True,
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
    memory=MemorySystem(
        # Intel ARK, Arc A770 Graphics (16 GB): 32 Xe-cores (512 EUs), graphics clock 2.1 GHz
        # (eu_count, clock_ghz above), GDDR6 on 256 bits, memory bandwidth 560 GB/s.  16 MB of L2:
        # chips and cheese, "Microbenchmarking Intel's Arc A770" (2022).
        # Intel Architecture Day 2021, Xe-HPG: an Xe-core holds 16 vector engines of 256 bits
        # (8 FP32 FMAs, alu_bytes_per_clock 32) and 16 XMX engines of 1024 bits (64 FP16/BF16,
        # 128 INT8 multiply-adds a clock: fma_per_clock_per_eu).  load_store_bytes_per_clock:
        # estimated, Xe-LP's 128 B/clock data port per 16 EUs carried over.
        sku="Intel Arc A770 16 GB (ACM-G10, 512 EUs, GDDR6 560 GB/s)",
        dram_gb_per_second=560.0,
        last_level_cache_bytes=16 * 1024 * 1024,
        # Intel's GPU Occupancy Calculator (OCC), Xe-HPG Arc entries: 8 threads per EU, 128 KB SLM
        # per Xe-core, 128 work-groups and 32 barrier registers per Xe-core.
        threads_per_eu=8,
        slm_bytes_per_subslice=128 * 1024,
        max_groups_per_subslice=128,
        barriers_per_subslice=32,
        # estimated: Intel publishes no latencies.  Round figures of the order published
        # pointer-chasing measurements of Intel GPUs show (chips and cheese,
        # https://chipsandcheese.com), not read off any one of them; SLM < L1 < L2 < DRAM.
        send_latency_ns=_frozen({"slm": 20.0, "l1": 40.0, "l3": 130.0, "memory": 350.0}),
    ),
    sr0_thread_id_bits=14,
    sr0_reserved_bits=(3, 6),
)

XEHPC = Platform(
    name="xehpc",
    display_name="XeHPC",
    aliases=("pvc", "12p72"),
    iga_platform="12p72",
    ocloc_device="pvc",
    # PVCXT, not PVC: GenX_IR's "PVC" is XeHPC's A step, whose scoreboard sends every instruction with
    # a 64-bit operand down the long pipe; the Max 1550 (PVC-XT, B step) this platform models sends only
    # float64 results there (swsb_long_pipe_rule), as IGA's XE_HPC model ("XeHPC-Bstep (PVC-XT)") does.
    genx_ir_platform="PVCXT",
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
    has_block2d=True,
    data_messages="lsc",
    eot_sfid="gtwy",
    max_message_simd=32,
    max_block_message_bytes=512,
    max_work_group_size=1024,
    max_slm_bytes=128 * 1024,
    product_family=1271,  # IGFX_PVC
    inline_arguments=True,
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
    sr0_thread_id_bits=15,
    sr0_reserved_bits=(3, 6, 7),
    swsb_bare_distance_allowed=False,
    memory=MemorySystem(
        # Intel ARK, Data Center GPU Max 1550: 128 Xe-cores (1024 EUs) at 1.6 GHz max dynamic
        # frequency (eu_count, clock_ghz above), 408 MB L2, 128 GB HBM2e at 3.2768 TB/s.
        # Intel Architecture Day 2021, Xe-HPC: an Xe-core holds 8 vector engines of 512 bits
        # (16 FP32 FMAs, alu_bytes_per_clock 64) and 8 XMX engines of 4096 bits (256 FP16/BF16,
        # 512 INT8 multiply-adds a clock).  load_store_bytes_per_clock: estimated, 128 B/clock per
        # Xe-core of 8 EUs as on Xe-LP and Xe-HPG.
        sku="Intel Data Center GPU Max 1550 (Ponte Vecchio, 1024 EUs, HBM2e 3.28 TB/s)",
        dram_gb_per_second=3276.8,
        last_level_cache_bytes=408 * 1024 * 1024,
        # Intel oneAPI GPU Optimization Guide, "Small Register Mode vs. Large Register Mode": 8
        # threads per EU with 128 GRFs, 4 with 256.  Intel's GPU Occupancy Calculator (OCC), Xe-HPC
        # entry: 128 KB SLM per Xe-core, 64 work-groups and 32 barrier registers per Xe-core.
        threads_per_eu=8,
        slm_bytes_per_subslice=128 * 1024,
        max_groups_per_subslice=64,
        barriers_per_subslice=32,
        # estimated: Intel publishes no latencies.  Round figures of the order published
        # pointer-chasing measurements of Intel GPUs show (chips and cheese,
        # https://chipsandcheese.com), not read off any one of them; SLM < L1 < L2 < DRAM.
        send_latency_ns=_frozen({"slm": 25.0, "l1": 45.0, "l3": 220.0, "memory": 480.0}),
    ),
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
