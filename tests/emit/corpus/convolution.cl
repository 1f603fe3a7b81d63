// Direct convolution, NCHW fp32, every shape a runtime argument.
// One work-item per output element: dim 0 = oh * out_w + ow, dim 1 = oc, dim 2 = image.
kernel void conv2d_nchw(global const float* src, global const float* weights, global float* dst,
                        int channels, int in_h, int in_w, int out_channels,
                        int kernel_h, int kernel_w, int stride, int pad, int out_h, int out_w)
{
    const int pixel = get_global_id(0);
    const int oc = get_global_id(1);
    const int image = get_global_id(2);
    if (pixel >= out_h * out_w || oc >= out_channels)
        return;
    const int oh = pixel / out_w;
    const int ow = pixel % out_w;
    float sum = 0.0f;
    for (int ic = 0; ic < channels; ++ic) {
        for (int kh = 0; kh < kernel_h; ++kh) {
            const int ih = oh * stride - pad + kh;
            if (ih < 0 || ih >= in_h)
                continue;
            for (int kw = 0; kw < kernel_w; ++kw) {
                const int iw = ow * stride - pad + kw;
                if (iw < 0 || iw >= in_w)
                    continue;
                const float s = src[((image * channels + ic) * in_h + ih) * in_w + iw];
                const float w = weights[((oc * channels + ic) * kernel_h + kh) * kernel_w + kw];
                sum += s * w;
            }
        }
    }
    dst[((image * out_channels + oc) * out_h + oh) * out_w + ow] = sum;
}
