// Local and group ids of 3-D work-groups (the hardware or the runtime generates the local ids,
// in a walk order NEO picks per group shape).
kernel void ids3d(global int* out)
{
    const size_t w = get_global_size(0), h = get_global_size(1);
    const size_t at = (get_global_id(2) * h + get_global_id(1)) * w + get_global_id(0);
    out[4 * at + 0] = get_local_id(0) + 1000 * get_group_id(0);
    out[4 * at + 1] = get_local_id(1) + 1000 * get_group_id(1);
    out[4 * at + 2] = get_local_id(2) + 1000 * get_group_id(2);
    out[4 * at + 3] = get_local_linear_id();
}
