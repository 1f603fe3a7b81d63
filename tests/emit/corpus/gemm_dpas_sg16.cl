// f16 GEMM tile with dpas, sub-group size 16 (XeHPC): C[M x N] = A[M x K] * B[K x N], fp32 result.
// Each sub-group computes an 8 x 16 tile of C; lane n owns column n of the tile.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__attribute__((intel_reqd_sub_group_size(16)))
__attribute__((reqd_work_group_size(16, 1, 1)))
kernel void gemm_f16_dpas16(global const half* a, global const half* b, global float* c, int n, int k)
{
    const int lane = get_sub_group_local_id();
    const int col = get_group_id(0) * 16 + lane;
    const int row0 = get_group_id(1) * 8;
    float8 acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += 16) {
        short8 a_tile;   // row r: one half per lane, k0 + lane
        int8 b_tile;     // pair j: rows k0 + 2j and k0 + 2j + 1 of column col
        for (int r = 0; r < 8; ++r) {
            ((short*)&a_tile)[r] = as_short(a[(row0 + r) * k + k0 + lane]);
            half2 pair = (half2)(b[(k0 + 2 * r) * n + col], b[(k0 + 2 * r + 1) * n + col]);
            ((int*)&b_tile)[r] = as_int(pair);
        }
        acc = intel_sub_group_f16_f16_matrix_mad_k16(a_tile, b_tile, acc);
    }
    for (int r = 0; r < 8; ++r)
        c[(row0 + r) * n + col] = ((float*)&acc)[r];
}
