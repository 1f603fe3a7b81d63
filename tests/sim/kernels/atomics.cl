// Atomics on one address from every work-item (IGC reduces them across the sub-group and
// issues one SIMD1 message) and on one address per work-item.  Every result is independent
// of the order the work-items run in.
kernel void atomics(global int* c, global uint* u, global const int* x, global int* swapped,
                    global int* ticket, global int* hist, global int* slots, global int* slot_old, int n)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const int v = x[i];
    atomic_inc(&c[0]);
    atomic_add(&c[1], v);
    atomic_max(&c[2], v);
    atomic_min(&c[3], v);
    atomic_xor(&c[4], v);
    swapped[i] = atomic_cmpxchg(&c[5], 7, 9);   // one work-item sees 7, the others 9
    atomic_sub(&c[6], v);
    atomic_dec(&c[7]);
    atomic_or(&c[8], 1 << (v & 31));
    atomic_and(&c[9], ~(1 << (v & 15)));
    ticket[i] = atomic_inc(&c[10]);             // a permutation of 0 .. n-1
    atomic_max(&u[0], (uint)v);
    atomic_min(&u[1], (uint)v);
    atomic_add(&hist[v & 7], 1);
    slot_old[i] = atomic_cmpxchg(&slots[i], v & 1, v);
}
