// Reduction: each work-group of 64 sums its 64 inputs in local memory (tree with
// barriers) and writes one partial sum per group.  Inputs past n count as zero.
#define GROUP 64
__attribute__((reqd_work_group_size(GROUP, 1, 1)))
kernel void reduce_sum(global const float* in, global float* partial, int n)
{
    local float scratch[GROUP];
    const int lid = get_local_id(0);
    const int gid = get_global_id(0);
    scratch[lid] = gid < n ? in[gid] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int half_size = GROUP / 2; half_size > 0; half_size /= 2) {
        if (lid < half_size)
            scratch[lid] += scratch[lid + half_size];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
