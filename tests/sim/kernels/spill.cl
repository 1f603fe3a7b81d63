// A private array too large for registers, indexed dynamically: IGC keeps it in scratch (XeLP,
// XeHPC) or private memory (XeHPG), both per hardware thread.
kernel void spill(global float* out, global const float* x, global const int* index, int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    float p[512];
    for (int k = 0; k < 512; k++)
        p[k] = x[(i + k) % n] * (float)k;
    float s = 0.0f;
    for (int k = 0; k < 16; k++)
        s += p[index[i * 16 + k] & 511];
    out[i] = s;
}
