// Conversions with saturation and rounding modes, integer saturation, math and bit functions.
kernel void conversions(global const float* f, global const int* a, global uchar* u8, global short* s16,
                        global int* ri, global float* m, global uint* hi, int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const float x = f[i];
    u8[i] = convert_uchar_sat(x);
    s16[4 * i + 0] = convert_short_sat_rte(x);
    s16[4 * i + 1] = convert_short_sat_rtz(x);
    s16[4 * i + 2] = convert_short_sat(a[i]);
    s16[4 * i + 3] = (short)a[i];
    ri[4 * i + 0] = convert_int_sat(x);
    ri[4 * i + 1] = convert_int_sat_rtn(x * 0.37f);
    ri[4 * i + 2] = abs(a[i]);
    ri[4 * i + 3] = add_sat(a[i], 2000000000);
    m[4 * i + 0] = native_sqrt(fabs(x));
    m[4 * i + 1] = floor(x) + ceil(x);
    m[4 * i + 2] = (float)a[i];
    m[4 * i + 3] = fma(x, x, -1.0f);
    hi[i] = mul_hi((uint)a[i], 0x9E3779B9u) + popcount(a[i]) + clz(a[i]) + rotate((uint)a[i], 7u);
}
