// Divergent control flow: a data-dependent loop with break and continue, a three-way branch,
// an early return, and atomics inside the branches.
kernel void divergent(global const int* x, global int* out, global int* counters, global int* hist, int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const int v = x[i];
    int acc = 0;
    for (int k = 0; k < (v & 15); ++k) {
        if (k == 11)
            break;
        if ((k + v) % 3 == 0)
            continue;
        acc += k * v;
    }
    if (v < 0) {
        acc = -acc ^ v;
        atomic_inc(&counters[0]);
    } else if (v > 1000) {
        acc = acc / 7 + v % 5;
        atomic_add(&counters[1], v & 0xff);
    } else {
        acc = mul_hi(acc, v) + (acc >> 3);
    }
    atomic_add(&hist[(unsigned)v % 8], 1);
    atomic_max(&counters[2], v);
    atomic_min(&counters[3], v);
    atomic_xor(&counters[4], v);
    out[i] = acc;
}
