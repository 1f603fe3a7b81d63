// fp64 division and square root: math.invm / math.rsqtm + madm on XeHPC, IGC's emulation
// elsewhere.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
kernel void fp64_div_sqrt(global double* out, global const double* a, global const double* b, int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    out[3 * i + 0] = a[i] / b[i];
    out[3 * i + 1] = sqrt(a[i]);
    out[3 * i + 2] = 1.0 / b[i];
}
