// Transpose a rows x cols float matrix: dst[c][r] = src[r][c].  Dim 0 walks columns.
kernel void transpose(global const float* src, global float* dst, int rows, int cols)
{
    const int c = get_global_id(0);
    const int r = get_global_id(1);
    if (r < rows && c < cols)
        dst[c * rows + r] = src[r * cols + c];
}
