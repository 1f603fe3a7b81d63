// Elementwise: y = alpha * x + y over n floats, one work-item per element.
kernel void saxpy(global float* y, global const float* x, float alpha, int n)
{
    const int i = get_global_id(0);
    if (i < n)
        y[i] = alpha * x[i] + y[i];
}
