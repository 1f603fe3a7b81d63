// __local atomics (IGC tags every SLM address of such a kernel with bit 28) feeding global ones:
// a per-group histogram and sum, then one global atomic per bin.
kernel void local_atomics(global int* out, global const int* x, local int* partial, int n)
{
    local int hist[8];
    local int total;
    const int l = get_local_id(0);
    if (l < 8)
        hist[l] = 0;
    if (l == 0)
        total = 0;
    partial[l] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int i = get_global_id(0);
    if (i < n) {
        atomic_add(&hist[x[i] & 7], 1);
        atomic_add(&total, x[i]);
        atomic_max(&partial[(l * 7) % get_local_size(0)], x[i]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < 8)
        atomic_add(&out[l], hist[l]);
    if (l == 0)
        atomic_add(&out[8], total);
    if (i < n)
        out[9 + i] = partial[l];
}
