// A private array small enough for IGC to keep in registers, read through a per-work-item
// index and a uniform one (indirect register access through a0).
kernel void private_array(global const int* in, global const int* index, global int* out, int scale)
{
    int a[64];
    for (int k = 0; k < 64; k++)
        a[k] = in[k] * scale + k;
    const int i = get_global_id(0);
    out[2 * i] = a[index[i] & 63];
    out[2 * i + 1] = a[(index[0] + (int)get_group_id(0)) & 63];
}
