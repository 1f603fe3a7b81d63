"""Build the kernel IR of a convolution: grid mapping, K loop, loads, multiply, epilogue, stores.

The grid and the thread ids (external `let`s, all s32):

| variable                 | meaning                                                      |
|--------------------------|--------------------------------------------------------------|
| thread_id0, thread_id1   | thread index in the group along N and along M                |
| thread_id2               | always 0 (groups are tg_n x tg_m x 1 threads)                |
| group_id0, group_id1     | group index along N and along M                              |
| group_id2                | group * k_split + K slice (unpacked with / and %)            |

A thread computes an m_tile x n_tile block of C for one group of the convolution.  Its loop over K
has the shape the scheduler works on:

    for (k_iter = 0; k_iter < iterations) {
      global -> GRF loads of A and B           (zeroing first where masks may drop elements)
      [GRF -> SLM stores; fence; barrier; SLM -> GRF loads; barrier]      (slm=1)
      reorders into the multiply's layouts
      multiplies (dpas / mad / dp4a) [and the bias-gradient mads]
    }

followed by the epilogue (convert, bias, ReLU, convert) into a store tile and the stores (atomic
adds when K is split across groups).  With slm=1 the threads of a group load the group's A and B
tiles cooperatively, each thread a slice, and read their own tiles back from SLM.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError, UnsupportedError
from ..hw import Platform
from ..ir import Alloc, Barrier, Call, Fence, For, IfThenElse, Let, Stmt, Var, const, seq, store
from ..ir.types import F32, PTR
from .config import RESERVED_GRFS, Config, check_config, k_iterations
from .epilogue import finish
from .gemm import S32_MAX, Gemm, View, check_index_range
from .index import Idx
from .messages import LinePlan, Names, Origin, Scope, emit_global, plan_lines, slm_line_messages, zero_fill
from .multiply import MultiplyLayouts, multiply, multiply_layouts, reduce_columns
from .tiles import Line, TileLayout, copy_tile, dense_layout, line_layout, round_up

THREAD_IDS = tuple(Var(f"thread_id{i}") for i in range(3))
GROUP_IDS = tuple(Var(f"group_id{i}") for i in range(3))


@dataclass
class SlmPlan:
    """How a group tile of one operand goes through SLM."""

    group_extents: tuple[int, int]
    split_dim: int  # tile dimension along which the threads' slices are cut
    slice_extents: tuple[int, int]
    slice_plan: LinePlan
    stage: TileLayout  # the slice in GRF, between global load and SLM store
    stage_lines: list[Line]
    buffer: Var  # the SLM buffer (the group tile, dense along the line dimension)

    @property
    def pitch(self) -> int:
        return self.group_extents[self.slice_plan.line_dim]

    @property
    def bytes(self) -> int:
        return self.group_extents[0] * self.group_extents[1] * self.stage.type.size


@dataclass
class OperandPlan:
    name: str  # "a" or "b"
    view: View
    extents: tuple[int, int]  # the thread's tile
    plan: LinePlan  # how the thread's tile lines are filled (from global, or from SLM)
    load: TileLayout  # the thread's tile as loaded
    lines: list[Line]
    slm: SlmPlan | None
    fma: TileLayout  # the tile as the multiply reads it (may be `load` itself)

    @property
    def needs_reorder(self) -> bool:
        return self.fma is not self.load


@dataclass
class OutputPlan:
    view: View
    plan: LinePlan
    tile: TileLayout
    lines: list[Line]
    atomic: str


@dataclass
class KernelPlan:
    gemm: Gemm
    config: Config
    hw: Platform
    grid: tuple[int, int, int]
    iterations: int
    a: OperandPlan
    b: OperandPlan
    layouts: MultiplyLayouts
    c: OutputPlan
    bias_load: OutputPlan | None = None  # FWD_B: the bias tile
    bias_sum: TileLayout | None = None  # BWD_WB: f32 column sums of B
    bias_store: OutputPlan | None = None
    grf_buffers: list[tuple[Var, int]] = field(default_factory=list)

    @property
    def thread_group(self) -> tuple[int, int, int]:
        return (self.config.tg_n, self.config.tg_m, 1)

    @property
    def slm_bytes(self) -> int:
        """SLM per group, with every copy of multi-buffered tiles (`slm_bufs`)."""
        return self.config.slm_bufs * sum(op.slm.bytes for op in (self.a, self.b) if op.slm is not None)

    @property
    def grf_bytes(self) -> int:
        return sum(size for _, size in self.grf_buffers)

    @property
    def load_copy_bytes(self) -> int:
        """GRF bytes of the extra copies of the registers global loads fill (`gmem_bufs`); the
        scheduler adds them (the allocations here hold one copy)."""
        grf = self.hw.grf_bytes
        single = sum(round_up(op.slm.stage.bytes if op.slm is not None else op.load.bytes, grf)
                     for op in (self.a, self.b))
        return (self.config.gmem_bufs - 1) * single


# Planning ---------------------------------------------------------------------------------------

def plan_kernel(gemm: Gemm, config: Config, hw: Platform) -> KernelPlan:
    """Lay out every buffer of the kernel; ConfigError if it does not fit the GRF or SLM."""
    check_index_range(gemm.problem)
    check_config(config, gemm, hw)
    _check_tiles_can_fit(gemm, config, hw)
    for view in (gemm.a, gemm.b, gemm.c):
        if view.layout.elements * view.type.size >= 2**31:
            raise UnsupportedError(f"{view.tensor} takes {view.layout.elements * view.type.size} bytes: xegen's "
                                   "kernels address tensors with 32-bit byte offsets (under 2 GiB)")
    grf = hw.grf_bytes
    m_group, n_group = config.tg_m * config.m_tile, config.tg_n * config.n_tile
    grid = (-(-gemm.n.size // n_group), -(-gemm.m.size // m_group), gemm.groups * config.k_split)
    _check_tile_coordinates(gemm, {"m": grid[1] * m_group, "n": grid[0] * n_group,
                                   "k": config.k_split * k_iterations(config, gemm) * config.k_block})
    layouts = multiply_layouts(config, gemm, Var("a", PTR), Var("b", PTR), Var("acc", PTR), config.simd)
    a = _plan_operand("a", gemm.a, gemm, config, hw, (config.m_tile, config.k_block), (m_group, config.k_block),
                      layouts.a)
    b = _plan_operand("b", gemm.b, gemm, config, hw, (config.k_block, config.n_tile), (config.k_block, n_group),
                      layouts.b)
    layouts = MultiplyLayouts(a.fma, b.fma, layouts.c)
    atomic = ""
    if config.k_split > 1:
        atomic = "fadd" if gemm.c.type.is_float else "add"
    c = _plan_output(gemm.c, gemm, hw, (config.m_tile, config.n_tile), "c_store", gemm.c.type, atomic)
    plan = KernelPlan(gemm, config, hw, grid, k_iterations(config, gemm), a, b, layouts, c)
    if gemm.bias_mode == "add":
        plan.bias_load = _plan_output(gemm.bias, gemm, hw, (1, config.n_tile), "bias_load", gemm.bias.type, "")
    elif gemm.bias_mode == "reduce":
        plan.bias_sum = dense_layout(Var("bias_sum", PTR), F32, 1, config.n_tile)
        out_type = F32 if atomic else gemm.bias.type
        plan.bias_store = _plan_output(gemm.bias, gemm, hw, (1, config.n_tile), "bias_store", out_type,
                                       "fadd" if atomic else "")

    buffers = [(layouts.c.buffer, layouts.c.bytes), (a.load.buffer, a.load.bytes), (b.load.buffer, b.load.bytes)]
    for op in (a, b):
        if op.needs_reorder:
            buffers.append((op.fma.buffer, op.fma.bytes))
        if op.slm is not None:
            buffers.append((op.slm.stage.buffer, op.slm.stage.bytes))
    buffers.append((c.tile.buffer, c.tile.bytes))
    if plan.bias_load is not None:
        buffers.append((plan.bias_load.tile.buffer, plan.bias_load.tile.bytes))
    if plan.bias_sum is not None:
        buffers += [(plan.bias_sum.buffer, plan.bias_sum.bytes), (plan.bias_store.tile.buffer, plan.bias_store.tile.bytes),
                    (Var("one", PTR), 4)]
    plan.grf_buffers = [(var, round_up(size, grf)) for var, size in buffers]

    if plan.slm_bytes > hw.max_slm_bytes:
        buffers = f" ({config.slm_bufs} buffers)" if config.slm_bufs > 1 else ""
        raise ConfigError(f"slm=1 needs {plan.slm_bytes} bytes of SLM per group{buffers}, more than {hw}'s "
                          f"{hw.max_slm_bytes}: use fewer threads or smaller tiles"
                          + (" or fewer slm_bufs" if config.slm_bufs > 1 else ""))
    tiles = plan.grf_bytes + plan.load_copy_bytes
    used = tiles + RESERVED_GRFS * grf
    if used > config.grf * grf:
        copies = f", gmem_bufs={config.gmem_bufs}" if config.gmem_bufs > 1 else ""
        raise ConfigError(f"the kernel needs {used // grf} GRFs ({tiles // grf} for tiles{copies} + {RESERVED_GRFS} "
                          f"reserved) but grf={config.grf}: use smaller m_tile/n_tile/k_block"
                          + "".join(f" or {change}" for change in _grf_remedies(config, hw, used, plan.load_copy_bytes)))
    return plan


def _grf_remedies(config: Config, hw: Platform, used: int, copy_bytes: int) -> list[str]:
    """Changes besides smaller tiles that make a kernel of `used` GRF bytes fit (`copy_bytes` of
    them are the extra copies of gmem_bufs), so the error suggests only what works."""
    current, largest = config.grf * hw.grf_bytes, hw.max_grf_count * hw.grf_bytes
    fewer_copies = config.gmem_bufs > 1
    more_grfs = config.grf < hw.max_grf_count
    remedies = []
    if fewer_copies and used - copy_bytes <= current:
        remedies.append("gmem_bufs=1")
    if more_grfs and used <= largest:
        remedies.append(f"grf={hw.max_grf_count}")
    if not remedies and fewer_copies and more_grfs and used - copy_bytes <= largest:
        remedies.append(f"gmem_bufs=1 with grf={hw.max_grf_count}")
    return remedies


def _check_tiles_can_fit(gemm: Gemm, config: Config, hw: Platform) -> None:
    """Reject tiles too large for the largest register file before planning them (planning walks
    every element): the load tiles of A and B and the accumulator and store tiles of C alone."""
    grf = hw.grf_bytes
    m, n, k = config.m_tile, config.n_tile, config.k_block
    tiles = [m * k * gemm.a.type.size, k * n * gemm.b.type.size, m * n * gemm.acc_type.size, m * n * gemm.c.type.size]
    needed = sum(-(-size // grf) for size in tiles) + RESERVED_GRFS
    if needed > hw.max_grf_count:
        raise ConfigError(f"m_tile={m}, n_tile={n}, k_block={k}: the A, B and C tiles need at least {needed} GRFs "
                          f"(with {RESERVED_GRFS} reserved), more than {hw}'s {hw.max_grf_count}: use smaller "
                          "m_tile/n_tile/k_block")


def _check_tile_coordinates(gemm: Gemm, ends: dict[str, int]) -> None:
    """The grid covers each GEMM dimension in whole tiles, so its coordinates run past the
    dimension's size (masked off) up to `ends`; they must still be s32 values."""
    for name, end in ends.items():
        if end - 1 > S32_MAX:
            dim = gemm.dim(name)
            fields = "*".join(c.name for c in dim.components)
            raise ConfigError(f"{name.upper()} = {fields} = {dim.size}, rounded up to whole tiles, reaches "
                              f"{end - 1}: beyond the s32 index arithmetic of xegen's kernels; use tiles that "
                              f"divide {dim.size} more evenly")


def _plan_operand(name: str, view: View, gemm: Gemm, config: Config, hw: Platform, extents: tuple[int, int],
                  group_extents: tuple[int, int], fma: TileLayout) -> OperandPlan:
    grf = hw.grf_bytes
    load_var = Var(f"{name}_load", PTR)
    slm = None
    if not config.slm:
        plan = plan_lines(view, gemm, hw, extents, extents)
    else:
        slm = _plan_slm(name, view, gemm, config, hw, group_extents)
        line_dim = slm.slice_plan.line_dim
        size = view.type.size
        lengths = [d for d in range(extents[line_dim], 0, -1)
                   if extents[line_dim] % d == 0 and d * size <= hw.max_block_message_bytes]
        plan = LinePlan(line_dim, True, lengths[0])
    load, lines = line_layout(load_var, view.type, extents[0], extents[1], plan.line_dim, plan.length, grf)
    if load.same_placement(_retarget(fma, load_var)):
        fma = load
    return OperandPlan(name, view, extents, plan, load, lines, slm, fma)


def _retarget(layout: TileLayout, buffer: Var) -> TileLayout:
    return TileLayout(buffer, layout.type, layout.rows, layout.cols, layout.pieces, layout.elements)


def _plan_slm(name: str, view: View, gemm: Gemm, config: Config, hw: Platform,
              group_extents: tuple[int, int]) -> SlmPlan:
    threads = config.threads_per_group
    orientation = plan_lines(view, gemm, hw, group_extents, group_extents)
    x = orientation.line_dim
    y = 1 - x
    for split in (y, x):
        if group_extents[split] % threads == 0:
            break
    else:
        raise ConfigError(f"slm=1: the group's {name.upper()} tile ({group_extents[0]}x{group_extents[1]}) cannot be "
                          f"shared evenly by {threads} threads; change tg_m/tg_n or the tiles, or use slm=0")
    slice_extents = list(group_extents)
    slice_extents[split] //= threads
    slice_extents = tuple(slice_extents)
    slice_plan = plan_lines(view, gemm, hw, slice_extents, slice_extents, line_dims=(x,))
    stage, lines = line_layout(Var(f"{name}_stage", PTR), view.type, slice_extents[0], slice_extents[1], x,
                               slice_plan.length, hw.grf_bytes)
    return SlmPlan(group_extents, split, slice_extents, slice_plan, stage, lines, Var(f"{name}_slm", PTR))


def _plan_output(view: View, gemm: Gemm, hw: Platform, extents: tuple[int, int], name: str, type, atomic: str
                 ) -> OutputPlan:
    plan = plan_lines(view, gemm, hw, extents, extents, allow_block=not atomic)
    tile, lines = line_layout(Var(name, PTR), type, extents[0], extents[1], plan.line_dim, plan.length, hw.grf_bytes)
    return OutputPlan(view, plan, tile, lines, atomic)


# Building ---------------------------------------------------------------------------------------

class _Builder:
    def __init__(self, plan: KernelPlan):
        self.plan = plan
        self.gemm, self.config, self.hw = plan.gemm, plan.config, plan.hw
        self.names = Names()
        self.names.used.update(v.name for v in THREAD_IDS + GROUP_IDS)
        self.names.used.update(("src", "wei", "dst", "bias", "k_iter"))
        self.top = Scope(self.names)
        self.loop = Scope(self.names)
        self.buffers = {t: Var(t, PTR) for t in ("src", "wei", "dst", "bias")}

    def idx(self, var: Var, count: int) -> Idx:
        return Idx(var, 0, count - 1)

    def build(self) -> Stmt:
        plan, config, gemm = self.plan, self.config, self.gemm
        grid = plan.grid
        tid0, tid1 = self.idx(THREAD_IDS[0], config.tg_n), self.idx(THREAD_IDS[1], config.tg_m)
        gid0, gid1, gid2 = (self.idx(GROUP_IDS[i], grid[i]) for i in range(3))
        top = self.top
        # group_id2 packs the convolution group (outer) and the K slice (inner)
        self.group = top.bind("group", gid2.div(config.k_split)) if gemm.groups > 1 else Idx.const(0)
        self.k_slice = top.bind("k_slice", gid2.mod(config.k_split)) if config.k_split > 1 else Idx.const(0)
        m_index = top.bind("m_tile_index", gid1 * config.tg_m + tid1)
        n_index = top.bind("n_tile_index", gid0 * config.tg_n + tid0)
        self.m_index = m_index
        m_start = top.bind("m_start", m_index * config.m_tile)
        n_start = top.bind("n_start", n_index * config.n_tile)
        k_iter = Var("k_iter")
        k_start = self.loop.bind("k_start", (self.k_slice * plan.iterations + self.idx(k_iter, plan.iterations))
                                 * config.k_block)
        self.origin = {
            "m": Origin("m", m_start, "m", top),
            "n": Origin("n", n_start, "n", top),
            "k": Origin("k", k_start, "k", self.loop),
        }
        if config.slm:
            self.thread_index = top.bind("thread_index", tid1 * config.tg_n + tid0)
            self.group_start = {
                "m": top.bind("m_group_start", gid1 * (config.tg_m * config.m_tile)),
                "n": top.bind("n_group_start", gid0 * (config.tg_n * config.n_tile)),
                "k": k_start,
            }
            # where the thread's own tile sits inside the group tile
            self.local_start = {"m": tid1 * config.m_tile, "n": tid0 * config.n_tile, "k": Idx.const(0)}
            self.local_multiple = {"m": config.m_tile, "n": config.n_tile, "k": 0}

        prologue = zero_fill(plan.layouts.c.buffer, plan.layouts.c.bytes, self.hw.grf_bytes)
        if plan.bias_sum is not None:
            prologue += zero_fill(plan.bias_sum.buffer, plan.bias_sum.bytes, self.hw.grf_bytes)
            prologue.append(store(Var("one", PTR), 0, const(1.0)))
        body = self._loop_body()
        loop = For(k_iter, const(0), const(plan.iterations), self.loop.wrap(seq(*body)))
        epilogue = self._epilogue()
        kernel = seq(*prologue, loop, *epilogue)
        for var, size in reversed(plan.grf_buffers):
            kernel = Alloc(var, size, "grf", kernel)
        for op in (plan.b, plan.a):
            if op.slm is not None:
                kernel = Alloc(op.slm.buffer, op.slm.bytes, "slm", kernel)
        kernel = self.top.wrap(kernel)
        for var in reversed(THREAD_IDS + GROUP_IDS):
            kernel = Let(var, None, kernel)
        for name in reversed(kernel_arguments(plan)):
            kernel = Let(self.buffers[name], None, kernel)
        return kernel

    # -- the K loop ----------------------------------------------------------------------------
    def _loop_body(self) -> list[Stmt]:
        plan = self.plan
        loads: list[Stmt] = []
        for op in (plan.a, plan.b):
            loads += self._global_load(op)
        body = loads
        if self.config.slm:
            body += [s for op in (plan.a, plan.b) for s in self._slm_store(op)]
            body += [Call(Fence("slm")), Call(Barrier())]
            body += [s for op in (plan.a, plan.b) for s in self._slm_load(op)]
            body.append(Call(Barrier()))
        for op in (plan.a, plan.b):
            if op.needs_reorder:
                body += copy_tile(op.fma, op.load)
        body += multiply(self.config, self.gemm, plan.layouts, self.config.simd)
        if plan.bias_sum is not None:
            body += reduce_columns(plan.layouts.b, plan.bias_sum, Var("one", PTR), self.config.simd)
        return body

    def _global_load(self, op: OperandPlan) -> list[Stmt]:
        dims = op.view.dims
        if op.slm is None:
            origins = (self.origin[dims[0]], self.origin[dims[1]])
            target, lines, line_plan = op.load, op.lines, op.plan
        else:
            origins = self._slice_origins(op)
            target, lines, line_plan = op.slm.stage, op.slm.stage_lines, op.slm.slice_plan
        sends, masked = emit_global(op.view, self.gemm, self.buffers[op.view.tensor], target, lines, line_plan,
                                    origins, self.group, self.top, "load")
        if masked:
            return zero_fill(target.buffer, target.bytes, self.hw.grf_bytes) + sends
        return sends

    def _slice_origins(self, op: OperandPlan) -> tuple[Origin, Origin]:
        slm = op.slm
        origins = []
        for d, name in enumerate(op.view.dims):
            start = self.group_start[name]
            scope = self.loop if name == "k" else self.top
            if d == slm.split_dim:
                start = scope.bind(f"{name}_slice_start", start + self.thread_index * slm.slice_extents[d])
                origins.append(Origin(name, start, name + "s", scope))
            else:
                origins.append(Origin(name, start, name + "g", scope))
        return origins[0], origins[1]

    def _slice_position(self, op: OperandPlan) -> tuple[Idx, Idx, tuple[int, int]]:
        slm = op.slm
        position, multiples = [], []
        for d in range(2):
            if d == slm.split_dim:
                position.append(self.thread_index * slm.slice_extents[d])
                multiples.append(slm.slice_extents[d])
            else:
                position.append(Idx.const(0))
                multiples.append(0)
        return position[0], position[1], (multiples[0], multiples[1])

    def _slm_store(self, op: OperandPlan) -> list[Stmt]:
        slm = op.slm
        row, col, multiples = self._slice_position(op)
        return slm_line_messages("store", slm.buffer, slm.pitch, slm.stage, slm.stage_lines, slm.slice_plan.line_dim,
                                 row, col, multiples, op.view.type, self.hw, self.top)

    def _slm_load(self, op: OperandPlan) -> list[Stmt]:
        slm = op.slm
        dims = op.view.dims
        row, col = self.local_start[dims[0]], self.local_start[dims[1]]
        multiples = (self.local_multiple[dims[0]], self.local_multiple[dims[1]])
        return slm_line_messages("load", slm.buffer, slm.pitch, op.load, op.lines, op.plan.line_dim, row, col,
                                 multiples, op.view.type, self.hw, self.top)

    # -- after the loop ------------------------------------------------------------------------
    def _epilogue(self) -> list[Stmt]:
        plan, config = self.plan, self.config
        out: list[Stmt] = []
        bias_tile = None
        gate = None
        if plan.bias_load is not None:
            bias = plan.bias_load
            sends, masked = self._output_messages(bias, "load")
            out += (zero_fill(bias.tile.buffer, bias.tile.bytes, self.hw.grf_bytes) if masked else []) + sends
            bias_tile = bias.tile
            if config.k_split > 1:
                gate = self.k_slice.expr.eq(0)
        out += finish(plan.layouts.c, plan.c.tile, bias_tile, self.gemm.problem.relu, gate)
        out += self._output_messages(plan.c, "atomic" if plan.c.atomic else "store")[0]
        if plan.bias_store is not None:
            # every row of threads sums the same columns: the first one writes them
            write = finish(plan.bias_sum, plan.bias_store.tile, None, False)
            write += self._output_messages(plan.bias_store, "atomic" if plan.bias_store.atomic else "store")[0]
            out.append(IfThenElse(self.m_index.expr.eq(0), seq(*write)))
        return out

    def _output_messages(self, output: OutputPlan, op: str) -> tuple[list[Stmt], bool]:
        dims = output.view.dims
        if len(dims) == 1:
            origins = (Origin("", Idx.const(0), "", self.top), self.origin[dims[0]])
        else:
            origins = (self.origin[dims[0]], self.origin[dims[1]])
        return emit_global(output.view, self.gemm, self.buffers[output.view.tensor], output.tile, output.lines,
                           output.plan, origins, self.group, self.top, op, output.atomic)


def kernel_arguments(plan: KernelPlan) -> tuple[str, ...]:
    """Buffer arguments in order: src, wei, dst, then bias if the problem has one."""
    return ("src", "wei", "dst") + (("bias",) if plan.gemm.problem.has_bias else ())


def build_body(plan: KernelPlan) -> Stmt:
    return _Builder(plan).build()
