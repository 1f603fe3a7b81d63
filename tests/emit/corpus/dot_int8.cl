// int8 dot products: out[i] = sum_j a[i][j] * b[j] over signed chars, accumulated in int.
// Four bytes at a time, the shape IGC turns into dp4a where the hardware has it.
kernel void dot_int8(global const char* a, global const char* b, global int* out, int rows, int length)
{
    const int i = get_global_id(0);
    if (i >= rows)
        return;
    int acc = 0;
    for (int j = 0; j < length; j += 4) {
        const char4 x = vload4(0, a + i * length + j);
        const char4 y = vload4(0, b + j);
        acc += x.s0 * y.s0 + x.s1 * y.s1 + x.s2 * y.s2 + x.s3 * y.s3;
    }
    out[i] = acc;
}
