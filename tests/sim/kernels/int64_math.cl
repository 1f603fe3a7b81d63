// 64-bit integer arithmetic (IGC emulates most of it with 32-bit ops and mach/macl) and 32-bit
// division by constants (multiply-high by a magic number).
kernel void int64_math(global long* out, global const long* a, global const long* b, global const int* c, int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const long x = a[i], y = b[i];
    const int v = c[i];
    out[10 * i + 0] = x * y;
    out[10 * i + 1] = y != 0 ? x / y : 0;
    out[10 * i + 2] = y != 0 ? x % y : 0;
    out[10 * i + 3] = x / 7;
    out[10 * i + 4] = (long)((ulong)x / 1000003ul);
    out[10 * i + 5] = mul_hi(x, y);
    out[10 * i + 6] = (long)(v / 56) + (long)(v % 13) * 1000;
    out[10 * i + 7] = (long)((uint)v / 56u) + (long)((uint)v % 10u) * 100000000000l;
    out[10 * i + 8] = (x >> (y & 63)) ^ (x << (v & 63));
    out[10 * i + 9] = (long)(ulong)mul_hi((ulong)x, (ulong)y);
}
