// XeHPC 2D block loads through IGC's internal builtins (this ocloc has no
// intel_sub_group_2d_block_read_*): two 16x8 blocks side by side, a VNNI-transformed 16x16
// block of 16-bit data and a transposed 8x16 block of 32-bit data, at coordinates that also
// reach outside the surface (those elements read as zero).
ushort16 __builtin_IB_subgroup_block_read_flat_u16_m8k16v2(
    long base, int width_minus_one, int height_minus_one, int pitch_minus_one, int2 coord);
uint8 __builtin_IB_subgroup_block_read_flat_transform_u16_k16(
    long base, int width_minus_one, int height_minus_one, int pitch_minus_one, int2 coord);
uint8 __builtin_IB_subgroup_block_read_flat_transpose_u32_k8(
    long base, int width_minus_one, int height_minus_one, int pitch_minus_one, int2 coord);
__attribute__((intel_reqd_sub_group_size(16)))
kernel void block2d(global ushort* plain, global uint* packed, global uint* transposed, global const ushort* in16,
                    global const uint* in32, global const int* coords, int width, int height)
{
    const int g = get_group_id(0), lane = get_sub_group_local_id();
    const int2 at = (int2)(coords[2 * g], coords[2 * g + 1]);
    const int w16 = 2 * width - 1, w32 = 4 * width - 1;  // surface widths and pitches in bytes, minus one
    const ushort16 v = __builtin_IB_subgroup_block_read_flat_u16_m8k16v2((long)in16, w16, height - 1, w16, at);
    const uint8 t = __builtin_IB_subgroup_block_read_flat_transform_u16_k16((long)in16, w16, height - 1, w16, at);
    const uint8 x = __builtin_IB_subgroup_block_read_flat_transpose_u32_k8((long)in32, w32, height - 1, w32, at);
    for (int k = 0; k < 16; k++)
        plain[(g * 16 + k) * 16 + lane] = v[k];
    for (int k = 0; k < 8; k++) {
        packed[(g * 8 + k) * 16 + lane] = t[k];
        transposed[(g * 8 + k) * 16 + lane] = x[k];
    }
}
