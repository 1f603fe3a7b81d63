"""An estimate of a row plan's modeled cycles (plan=depthwise, plan=first), from its plan alone.

The row plans (`rows.py`) have their own loop: a thread walks the kernel's rows, loads each row's
input segment and weights, and multiplies every loaded value by every tap and output that reads
it.  This module counts, from the plan's layouts, what `estimate.py` counts for a GEMM
configuration, and prices it with the same device formulas (`estimate.device_estimate`: the
launch's occupancy and waves, the busiest EU, the traffic the tiling leaves DRAM):

- per kernel row: the segment's messages (block messages per pixel or per run of dwords,
  gathers where a first layer's segment reaches into the padding), the weights' messages, the
  moves that widen or replicate them, the multiply-adds (mad, or dpas with A copied out of the
  segment and B read from SLM), the row's coordinates and the loop;
- once per thread: the prologue, zeroing the accumulators, a first layer's weights packed into
  SLM (dpas), the epilogue (bias, conversion, a store per output pixel);
- the waits: a loop that is not multi-buffered waits for each row's loads; with gmem_bufs=2 the
  first row's loads are waited for in full and each later row's for what one row's instructions
  do not cover (row loops are short: a 3x3 kernel has three rows, so the first row counts); with
  gmem_bufs=3 the loads run two rows ahead: a loop of three rows waits for the first row's loads
  and for what two rows' instructions do not cover of the third's.  A
  load received in a temporary (an LSC block into a GRF it does not fill, a 16-bit gather) is
  moved into place where its data is first needed (`xegen.lower.sink`): a depthwise row's loads,
  and a backward-weights item's, are all in flight before their first move, and wait together.
  The other row plans' loops still count each such load's wait in full, one after the other:
  without that count the estimate of
  XeHPC f32 first layers falls to their memory floor for most configurations and picks ones the
  model finds slower (audio conv1d_first 1,032 -> 1,376 cycles, mobilenet_v2 conv1 1,837 ->
  2,120).  Outside the loops a forward depthwise thread waits for the kernel's arguments where a
  send loads them (XeHPC; on XeHPG they arrive as inline data unless post-ops' operands make
  them outgrow its 32 bytes, which this leaves out) and, with a bias, about one more load's
  latency: without them a short latency-bound kernel's estimate fell to its memory floor for
  blocks of 2 and 4 outputs alike (XeHPC bf16 mobilenet_v2 block2_dw_s2: 1,880 modeled cycles
  with 4, 1,523 with 2; block4_dw_s2: 1,418 against 993).  (The bias now loads before the loop,
  where its own latency mostly hides, but without the term the estimate took a slower
  configuration: XeHPC bf16 conformer dw_conv1d 638 -> 759.)  Counted for the other row
  plans too, they took configurations the model finds slower (XeHPC bf16 yolo_v2 conv1, plan=first:
  7,699 -> 8,300; f32 block4_dw_s2 backward data's stride phases: 1,718 -> 2,040).

As in `estimate.py` the instruction counts are approximations of what lowering emits: they rank
configurations of one layer, they are not the model.
"""

from __future__ import annotations

import math

from ..emit.roofline import Tiling, Workload
from ..hw import Platform
from .depthwise import DepthwisePlan
from .depthwise_weights import DepthwiseWeightsPlan
from .estimate import (
    COMPONENT_INSTRUCTIONS,
    FIXED_INSTRUCTIONS,
    GLOBAL_MESSAGE_INSTRUCTIONS,
    K_START_INSTRUCTIONS,
    LOOP_INSTRUCTIONS,
    MASK_INSTRUCTIONS,
    SLM_MESSAGE_INSTRUCTIONS,
    STORE_LINE_INSTRUCTIONS,
    SYNC_INSTRUCTIONS,
    Estimate,
    Launch,
    Work,
    device_estimate,
    scalar,
)
from .first_layer import FirstLayerPlan
from .first_layer_data import FirstLayerDataPlan
from .first_layer_weights import FirstLayerWeightsPlan
from .tiles import round_up

ORIGIN_COMPONENTS = 4  # a thread's block index unpacked into the output row's w block, oh, od, mb


def row_estimate(plan: DepthwisePlan | DepthwiseWeightsPlan | FirstLayerPlan | FirstLayerDataPlan) -> Estimate:
    """What the model would say of the kernel of a row plan (see the module docstring).  The
    stride phases of backward data (`DepthwisePlan.phases`) run loops of their own, each on an
    equal share of the threads: their work and waits are averaged, their code added."""
    hw, config = plan.hw, plan.config
    threads = math.prod(plan.grid) * config.threads_per_group
    loops: list[tuple[int, int, _Loop]]
    if isinstance(plan, FirstLayerPlan):
        loops = [(plan.rows.iterations, _row_components(plan, plan.rows), _FirstLayerLoop(plan))]
    elif isinstance(plan, FirstLayerWeightsPlan):
        loops = [(plan.per_thread, ORIGIN_COMPONENTS, _FirstLayerWeightsLoop(plan))]
    elif isinstance(plan, DepthwiseWeightsPlan):
        loops = [(plan.per_thread, ORIGIN_COMPONENTS, _WeightsLoop(plan))]
    elif isinstance(plan, FirstLayerDataPlan):
        loops = [
            (rows.iterations, _row_components(plan, rows), _FirstLayerDataLoop(plan, rows)) for rows in plan.phases
        ]
    else:
        loops = [(rows.iterations, _row_components(plan, rows), _DepthwiseLoop(plan, rows)) for rows in plan.phases]
    if isinstance(plan, DepthwiseWeightsPlan):
        epilogue, stored = _weights_epilogue(plan)
    elif isinstance(plan, FirstLayerDataPlan):
        epilogue, stored = _data_epilogue(plan)
    else:
        epilogue, stored = _epilogue(plan)
    # loads a forward depthwise thread waits for once, outside its loops (module docstring): the
    # prologue's instructions before the arguments' first use cover a little of their load
    forward_rows = isinstance(plan, DepthwisePlan) and plan.problem.is_forward
    arguments = forward_rows and hw.compute_walker and not hw.inline_arguments
    bias = forward_rows and plan.problem.has_bias
    once = (
        scalar(FIXED_INSTRUCTIONS + COMPONENT_INSTRUCTIONS * ORIGIN_COMPONENTS) + _zero(plan.acc.bytes, hw) + epilogue
    )
    launch = Launch(threads, config.threads_per_group, config.grf, plan.slm_bytes, barriers=plan.slm_bytes > 0)
    work, code, requested, wait_terms = Work(), once.issue, 0.0, []
    share = 1 / len(loops)
    for iterations, components, loop in loops:
        per_row = loop.work + scalar(
            LOOP_INSTRUCTIONS + K_START_INSTRUCTIONS + COMPONENT_INSTRUCTIONS * (components - 1)
        )
        work += (per_row * iterations + loop.once) * share
        requested += threads * share * (iterations * loop.global_bytes + loop.once_global_bytes + stored)
        # the loop's bodies the kernel holds (`estimate.written_iterations`; the row loops prefetch nothing)
        depth, unroll = config.gmem_bufs - 1, config.gmem_bufs
        if iterations - depth < unroll:
            written = iterations + depth
        else:
            written = unroll + 2 * depth + (iterations - depth) % unroll
        code += loop.once.issue + per_row.issue * written * loop.versions
        wait_terms.append((loop, iterations, per_row.issue))
    memory = (_workload(plan), int(requested), Tiling(*plan.tiling))

    def waits(latency: float) -> float:
        total = 0.0
        for loop, iterations, row_issue in wait_terms:
            serial = loop.serial_loads * latency + loop.slm_waits * hw.send_latency("slm")
            before = loop.once_serial_loads * latency
            if config.gmem_bufs == 1 or not loop.buffering_hides:
                total += before + iterations * (latency + serial)
            else:  # each later row's loads issue gmem_bufs - 1 rows ahead of their use
                ahead = config.gmem_bufs - 1
                exposed = max(0, iterations - ahead) * max(0.0, latency - ahead * row_issue)
                total += before + latency + exposed + iterations * serial
        fixed = (max(0.0, latency - FIXED_INSTRUCTIONS) if arguments else 0.0) + (latency if bias else 0.0)
        if getattr(plan, "scratch", None) is not None:  # the fence, the ticket, the totals read back
            fixed += 3 * latency
        return total * share + fixed

    return device_estimate(hw, launch, memory, work + once, waits, code)


def _row_components(plan, rows) -> int:
    """Coordinates the loop unpacks from its counter: kh, kd, and the channel for w-innermost
    first layers (1: the counter is kh itself)."""
    return max(1, (rows.kh > 1) + (rows.kd > 1) + (rows.channels > 1))


def _zero(nbytes: int, hw: Platform) -> Work:
    """Zeroing registers: a move per two GRFs."""
    return _moves(-(-nbytes // (2 * hw.grf_bytes)), hw)


def _moves(count: float, hw: Platform) -> Work:
    """`count` moves of two GRFs each (widening, replicating, copying)."""
    return Work(count, count * max(1.0, 2 * hw.grf_bytes / hw.alu_bytes_per_clock))


def _message(hw: Platform, response: int) -> Work:
    """A global load filling `response` bytes: its address (the row's base plus a constant, one
    add fewer than a GEMM line's) and the send."""
    instructions = GLOBAL_MESSAGE_INSTRUCTIONS[hw.data_messages] - 1
    return Work(instructions, instructions, 0.0, round_up(response, hw.grf_bytes))


def _block_load(hw: Platform, start: int, nbytes: int, buffer_bytes: int) -> tuple[Work, int]:
    """A block load of `nbytes` (whole dwords) into byte `start` of a register buffer of
    `buffer_bytes`: its messages, and how many of them wait for their result right away.
    Lowering (`xegen.lower.messages`, `block`) splits the bytes into the message sizes below,
    largest first; on LSC platforms a message that does not start a GRF, or ends inside one
    before the buffer's end, loads into a temporary that is moved into place right after it."""
    choices = (256, 128, 64, 32, 16, 12, 8, 4) if hw.data_messages == "lsc" else (128, 64, 32, 16, 12, 8, 4)
    sizes = [s for s in choices if s <= max(4, hw.max_block_message_bytes)]
    work, serial, at = Work(), 0, start
    while at < start + nbytes:
        size = next(s for s in sizes if s <= start + nbytes - at)
        work += _message(hw, size)
        end = at + size
        if hw.data_messages == "lsc" and (at % hw.grf_bytes or (end % hw.grf_bytes and end < buffer_bytes)):
            work += _moves(1, hw)
            serial += 1
        at = end
    return work, serial


def _gather(hw: Platform, lanes: int, size: int) -> Work:
    """A gather of `lanes` values of `size` bytes (a dword slot each): the lanes' offsets, their
    64-bit addresses (two GRFs per instruction), the send, and for 8- and 16-bit values the move
    that packs them out of their slots."""
    addresses = -(-lanes * 8 // (2 * hw.grf_bytes))
    work = Work(
        2 + addresses,
        max(1.0, lanes * 4 / hw.alu_bytes_per_clock) + lanes * 8 / hw.alu_bytes_per_clock,
        0.0,
        round_up(4 * lanes, hw.grf_bytes),
    )
    if size < 4:
        work += Work(1, max(1.0, lanes * size / hw.alu_bytes_per_clock))
    return work


def _row_mask(masked: bool, messages: int) -> Work:
    """The row's in-bounds condition, and a flag set per masked message."""
    return scalar(MASK_INSTRUCTIONS + messages) if masked else Work()


def _mads(count: int, simd: int, hw: Platform) -> Work:
    return Work(count, count * max(1.0, simd * 4 / hw.alu_bytes_per_clock))


def _padded(plan, rows=None) -> bool:
    """Whether some input pixel a thread of `rows` (the plan's unless given) reads is padding
    (its loads are then masked)."""
    walk = (rows or plan.rows).path
    return any(
        axis.pad > 0 or (axis.outputs - 1) * axis.stride + (axis.taps - 1) * axis.step - axis.pad >= axis.inputs
        for axis in (walk.axis(dim) for dim in plan.problem.desc.used)
    )


class _Loop:
    """What a loop's iteration does (`work`, the global bytes it loads, the loads it waits for
    one by one) and what runs once per thread around it; the defaults of a plain loop."""

    versions = 1  # loops the kernel holds (a branch per thread picks one)
    slm_waits = 0
    once = Work()
    once_global_bytes = 0.0
    once_serial_loads = 0
    buffering_hides = True  # whether gmem_bufs=2 overlaps a row's loads with the row before
    work: Work
    global_bytes: float
    serial_loads: float = 0  # loads waited for one by one (see the module docstring)


class _DepthwiseLoop(_Loop):
    """One row of plan=depthwise: a block message per segment pixel, a gather (or a block
    message) per (kw, ic) of weights, the widening and replicating moves, the mads."""

    def __init__(self, plan: DepthwisePlan, rows):
        hw, config = plan.hw, plan.config
        grf, n = hw.grf_bytes, config.n_tile
        in_pg = rows.path.in_per_group
        pixels = len(rows.pixels)
        pixel_bytes = plan.in_channels * plan.segment.type.size
        masked = _padded(plan, rows)
        pixel, temporaries = _block_load(hw, 0, pixel_bytes, plan.segment.bytes)
        work = pixel * pixels + _row_mask(masked, pixels)
        if masked:  # the segment zeroed, and a masked load's temporary copied in first (it keeps the old bytes)
            work += _zero(plan.segment.bytes, hw) + _moves(pixels * temporaries, hw)
        lines = len(rows.taps()) * in_pg
        wei_size = plan.weights.type.size
        if plan.weights_block:
            work += _block_load(hw, 0, n * wei_size, plan.weights.bytes)[0] * lines
        else:
            messages = -(-n // hw.max_message_simd)
            work += _gather(hw, n // messages, wei_size) * (lines * messages)
        if plan.wide_weights is not None:
            work += _moves(-(-lines * n * 4 // (2 * grf)), hw)
        if plan.work is not None:  # each pixel's ICg operands widened or replicated
            work += _moves(pixels * in_pg * -(-n * plan.operand.size // (2 * grf)), hw)
        self.work = work + _mads(config.m_tile * lines * (n // config.simd), config.simd, hw)
        self.global_bytes = work.bytes


class _WeightsLoop(_Loop):
    """One item of the backward-weights row plan: a block message per diff_dst pixel and per
    segment pixel of every kernel row, the widening moves, the mads into the taps' sums and
    the bias's adds.  A second copy of the loads is not counted to hide anything: the model
    finds it slower (mobilenet_v2's 144-channel stride-2 layer in bf16 on XeHPC, m_tile=7,
    tg_k=16: 8069 cycles with gmem_bufs=2, 5951 with 1; block3_dw in f32, m_tile=7, tg_k=8,
    k_split=14: 3623 against 2712), so the planner's gmem_bufs=1 stays first."""

    buffering_hides = False

    def __init__(self, plan: DepthwiseWeightsPlan):
        hw, config, desc = plan.hw, plan.config, plan.problem.desc
        grf, n, m = hw.grf_bytes, config.n_tile, config.m_tile
        kernel_rows = desc.kd * desc.kh
        pixels = len(plan.rows.pixels)
        segment_pixel, temporaries = _block_load(hw, 0, n * plan.segment.type.size, plan.segment.bytes)
        dd_pixel, dd_temporaries = _block_load(hw, 0, n * plan.dd.type.size, plan.dd.bytes)
        masked = _padded(plan)
        work = segment_pixel * (kernel_rows * pixels) + dd_pixel * m + _row_mask(masked, kernel_rows * pixels)
        if masked:
            work += _zero(plan.segment.bytes, hw) + _moves(kernel_rows * pixels * temporaries, hw)
        line_moves = -(-n * 4 // (2 * grf))
        if plan.wide_dd is not None:
            work += _moves(m * line_moves, hw)
        if plan.work is not None:
            work += _moves(kernel_rows * pixels * line_moves, hw)
        chunks = n // config.simd
        mads = kernel_rows * desc.kw * m * chunks
        adds = m * chunks if plan.bias_acc is not None else 0
        self.work = work + _mads(mads + adds, config.simd, hw)
        self.global_bytes = work.bytes
        # loads into temporaries (16 bf16 channels in XeHPC's 64-byte GRFs) are all in flight
        # before their moves, as a forward depthwise row's (module docstring): counted one by
        # one, the estimate put mobilenet_v2's 144-channel layers 15 to 20x above the model
        # with 16 channels per thread (block3_dw, k_split=28: 26,889 against 1,362 cycles)


class _FirstLayerWeightsLoop(_Loop):
    """One item of plan=first's backward weights: a block message per diff_dst pixel, the
    kernel row's segment in gathers, the widening moves, a mad per output, tap and channel,
    the bias's adds.  A second copy of the loads hides nothing, as in `_WeightsLoop`."""

    buffering_hides = False

    def __init__(self, plan: FirstLayerWeightsPlan):
        hw, config, desc = plan.hw, plan.config, plan.problem.desc
        grf, n, m = hw.grf_bytes, config.n_tile, config.m_tile
        dd_pixel, dd_temporaries = _block_load(hw, 0, n * plan.dd.type.size, plan.dd.bytes)
        gathers = -(-plan.row_values // plan.lanes)
        gathered = _gather(hw, plan.lanes, plan.segment.type.size) * gathers + _row_mask(True, gathers)
        gathered += _zero(plan.segment.bytes, hw)
        # the items whose segment is inside the row load it in blocks instead (the row's other blocks gather)
        fits = _inside_share(plan)
        covered = sum(4 * dwords for _, dwords in plan.blocks)
        blocks, _ = _block_load(hw, 0, covered, plan.segment.bytes)
        work = dd_pixel * m + gathered * (1 - fits) + blocks * fits
        if plan.wide_dd is not None:
            work += _moves(m * -(-n * 4 // (2 * grf)), hw)
        if plan.work is not None:
            work += _moves(-(-plan.row_values * 4 // (2 * grf)), hw)
        chunks = n // config.simd
        mads = desc.kw * desc.ic * m * chunks
        # the bias's adds, in kernel row 0's threads only: 1/KD*KH of them on average
        adds = -(-m * chunks // plan.grid[2]) if plan.bias_acc is not None else 0
        self.work = work + _mads(mads + adds, config.simd, hw)
        self.global_bytes = work.bytes
        self.serial_loads = m * dd_temporaries + (gathers * (1 - fits) if plan.segment.type.size < 4 else 0)


class _FirstLayerDataLoop(_Loop):
    """One (block of output channels, kernel row) of plan=first's backward data: a block
    message per diff_dst pixel, a block or gather per (tap, ic) of weights, the widening moves,
    a mad per output, tap and input channel."""

    def __init__(self, plan: FirstLayerDataPlan, rows):
        hw, config, ic = plan.hw, plan.config, plan.problem.desc.ic
        grf, n = hw.grf_bytes, config.n_tile
        pixels = len(rows.pixels)
        masked = _padded(plan, rows)
        pixel, temporaries = _block_load(hw, 0, n * plan.segment.type.size, plan.segment.bytes)
        work = pixel * pixels + _row_mask(masked, pixels)
        if masked:
            work += _zero(plan.segment.bytes, hw) + _moves(pixels * temporaries, hw)
        lines = len(rows.taps()) * ic
        wei_size = plan.weights.type.size
        if plan.weights_block:
            line, line_serial = _block_load(hw, 0, n * wei_size, plan.weights.bytes)
        else:
            messages = -(-n // hw.max_message_simd)
            line = _gather(hw, n // messages, wei_size) * messages
            line_serial = messages if wei_size < 4 else 0
        work += line * lines
        if plan.wide_segment is not None:
            work += _moves(-(-pixels * n * 4 // (2 * grf)), hw)
        if plan.wide_weights is not None:
            work += _moves(-(-lines * n * 4 // (2 * grf)), hw)
        mads = config.m_tile * len(rows.taps()) * ic * (n // config.simd)
        self.work = work + _mads(mads, config.simd, hw)
        self.global_bytes = work.bytes
        self.serial_loads = pixels * temporaries + lines * line_serial


def _data_epilogue(plan: FirstLayerDataPlan) -> tuple[Work, int]:
    """plan=first's backward data after its loop: the lane sums (an add per two GRFs of
    values, halving), the conversion, the scatters; and the global bytes they move."""
    hw = plan.hw
    chunk = hw.grf_bytes // 4
    adds, values = 0, plan.acc.rows * plan.acc.cols
    while values > plan.acc.rows:
        values //= 2
        adds += -(-values // chunk)
    work = Work(adds, adds)
    if plan.store is not plan.sums:
        work += _moves(-(-values // chunk), hw)
    scatters = -(-plan.results // hw.max_message_simd)
    work += _gather(hw, min(plan.results, hw.max_message_simd), plan.store.type.size) * scatters
    return work, scatters * round_up(hw.max_message_simd * 4, hw.grf_bytes)


def _weights_epilogue(plan: DepthwiseWeightsPlan) -> tuple[Work, int]:
    """The backward-weights plan after its loop: the partial sums through SLM (each thread
    stores its lines, then sums its share of lines over the group), each line written with a
    scatter or float atomics; and the global bytes one thread moves."""
    hw, config = plan.hw, plan.config
    n, simd = config.n_tile, config.simd
    lines = plan.lines
    own = -(-lines // config.tg_k)
    work = Work()
    if config.tg_k > 1:
        loads = own * -(-plan.holders // plan.chunk)
        adds = own * plan.holders * (n // simd)
        if plan.holders < config.tg_k:  # the fold: a store or a load and an add per line, a barrier more
            loads += lines
            adds += lines * (n // simd)
            work += scalar(SYNC_INSTRUCTIONS)
        work += scalar((lines + loads) * SLM_MESSAGE_INSTRUCTIONS + 2 * SYNC_INSTRUCTIONS) + _mads(adds, simd, hw)
        work += Work(0, 0, 0.0, round_up(lines * n * 4, hw.grf_bytes))
    out = plan.problem.type_of("wei").size
    work += _gather(hw, n, out) * own + _moves(own, hw)
    stored = own * round_up(n * (4 if config.k_split > 1 else out), hw.grf_bytes)
    if plan.scratch is not None:
        # the float atomics above; then the fence, the ticket, and per line a zeroed register,
        # an exchange that reads the total back and the converted line's scatter, which every
        # group issues (masked off but in the last): `waits` counts the three round trips
        work += scalar(2 * SYNC_INSTRUCTIONS) + _gather(hw, 1, 4)
        work += (_zero(n * 4, hw) + _gather(hw, n, 4) + _gather(hw, n, out)) * own
        stored += own * (2 * round_up(n * 4, hw.grf_bytes) + round_up(n * out, hw.grf_bytes))
    return work, stored


class _FirstLayerLoop(_Loop):
    """One row of plan=first: the segment in dword blocks (threads whose segment is inside the
    row) or gathers (the others), the weights, the widening moves, the mads or the dpas.  With
    gmem_bufs=2 the scheduler loads the next row's weights at the end of the row and the row's
    first multiply waits on a sync.allwr, which the model takes to wait for every load in flight:
    the second copy hides nothing here (`first_layer_configs`)."""

    buffering_hides = False

    def __init__(self, plan: FirstLayerPlan):
        hw, config = plan.hw, plan.config
        grf, n = hw.grf_bytes, config.n_tile
        masked = _padded(plan)
        size = plan.segment.type.size
        values = plan.row_values
        gathers = -(-values // plan.lanes)
        gathered = _gather(hw, plan.lanes, size) * gathers + _row_mask(masked, gathers)
        if masked:
            gathered += _zero(plan.segment.bytes, hw)
        inside = _inside_share(plan)
        blocks, tail = _row_mask(masked, len(plan.blocks)), 0
        for start, dwords in plan.blocks:
            block, temporaries = _block_load(hw, start, 4 * dwords, plan.segment.bytes)
            blocks, tail = blocks + block, tail + temporaries
        self.versions = 2 if 0 < inside < 1 else 1  # the kernel holds a loop of each
        work = blocks * inside + gathered * (1 - inside)
        serial = inside * tail + (1 - inside) * (gathers if size < 4 else 0)
        if plan.wide_segment is not None:
            work += _moves(-(-values * 4 // (2 * grf)), hw)
        lines = plan.row_k
        weight_type = plan.weights.type
        if plan.weights_block:
            line, line_serial = _block_load(hw, 0, n * weight_type.size, plan.weights.bytes)
        else:
            messages = -(-n // hw.max_message_simd)
            line = _gather(hw, n // messages, weight_type.size) * messages
            line_serial = messages if weight_type.size < 4 else 0
        weights = line * lines
        if plan.wide_weights is not None:
            weights += _moves(-(-lines * n * 4 // (2 * grf)), hw)
        self.global_bytes = work.bytes
        self.slm_waits = 0
        self.once = Work()
        self.once_global_bytes, self.once_serial_loads = 0.0, 0
        if plan.systolic is None:
            self.global_bytes += weights.bytes
            self.work = work + weights + _mads(config.m_tile * lines * (n // config.simd), config.simd, hw)
            self.serial_loads = serial + lines * line_serial
            return
        self.serial_loads = serial
        systolic = plan.systolic
        slm_messages = -(-systolic.b.bytes // hw.max_block_message_bytes)
        dpas = -(-config.m_tile // config.dpas_rows) * (n // config.simd)
        kind = "int8" if size == 1 else plan.segment.type.kind
        multiply = Work(dpas, dpas, config.m_tile * n * config.k_block / hw.fma_per_clock_per_eu[kind])
        # A out of the segment: a run of K values per output, in moves of 16, 8, 4, 2 and 1 lanes
        copies = scalar(
            sum(bin(piece.cols.count).count("1") + piece.cols.count // 32 for piece in systolic.a_source.pieces)
        )
        self.work = (
            work
            + copies
            + multiply
            + Work(
                slm_messages * SLM_MESSAGE_INSTRUCTIONS,
                slm_messages * SLM_MESSAGE_INSTRUCTIONS,
                0.0,
                round_up(systolic.b.bytes, grf),
            )
        )
        self.slm_waits = 1  # the row's B, read from SLM just before its dpas
        packed = -(-systolic.w_pack.bytes // hw.max_block_message_bytes)
        per_round = (
            weights
            + _moves(-(-lines * n * weight_type.size // (2 * grf)), hw)
            + Work(
                packed * SLM_MESSAGE_INSTRUCTIONS,
                packed * SLM_MESSAGE_INSTRUCTIONS,
                0.0,
                round_up(systolic.w_pack.bytes, grf),
            )
        )
        self.once = per_round * systolic.rounds + scalar(2 * SYNC_INSTRUCTIONS)
        self.once_global_bytes = weights.bytes * systolic.rounds
        self.once_serial_loads = lines * line_serial * systolic.rounds


def _inside_share(plan: FirstLayerPlan | FirstLayerWeightsPlan) -> float:
    """The share of a row's output blocks whose segment moves in dword blocks (inside the input
    along w, `inside()`)."""
    bounds = plan.inside()
    if bounds is None:
        return 0.0
    lo, hi = bounds
    desc, rows = plan.problem.desc, plan.rows
    starts = [min(b * rows.m_tile, desc.ow - rows.m_tile) * desc.sw - desc.pw for b in range(rows.blocks_per_row)]
    return sum(lo <= iw0 and iw0 + rows.span <= hi for iw0 in starts) / len(starts)


def _epilogue(plan) -> tuple[Work, int]:
    """The bias, the conversion and a store per output pixel; and the global bytes they move."""
    hw, config, problem = plan.hw, plan.config, plan.problem
    m, n = plan.rows.lines, config.n_tile
    registers = m * n * 4 / hw.grf_bytes
    out = problem.type_of(plan.rows.path.writes).size
    lines = m * -(-n * out // hw.max_block_message_bytes)
    stored = m * round_up(n * out, hw.grf_bytes)
    work = Work(
        registers + lines * STORE_LINE_INSTRUCTIONS, 2 * registers + lines * STORE_LINE_INSTRUCTIONS, 0.0, stored
    )
    if problem.has_bias:
        bias = _message(hw, n * problem.bias_type.size)
        work += bias
        stored += bias.bytes
    return work, stored


def _workload(plan) -> Workload:
    """The problem's tensors as the model's traffic counts them (`xegen.modeling.workload`)."""
    problem = plan.problem
    src, wei, dst = (math.prod(problem.dims_of(t)) * problem.type_of(t).size for t in ("src", "wei", "dst"))
    bias = math.prod(problem.dims_of("bias")) * problem.type_of("bias").size if problem.has_bias else 0
    return Workload(0, "f32", src, wei, dst, other_read_bytes=bias)
