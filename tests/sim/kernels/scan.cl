// Inclusive scan of each work-group's items in local memory, with barriers inside the loop.
// Partial groups are allowed: get_local_size is the group's own size.
kernel void scan(global const int* in, global int* out, local int* tmp, int n)
{
    const int lid = get_local_id(0);
    const int gid = get_global_id(0);
    const int size = get_local_size(0);
    tmp[lid] = gid < n ? in[gid] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int offset = 1; offset < size; offset <<= 1) {
        const int t = lid >= offset ? tmp[lid - offset] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[lid] += t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (gid < n)
        out[gid] = tmp[lid];
}
