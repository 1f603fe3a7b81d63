// The generator of gemm*_xehpc.zebin: small f16 dpas GEMM microkernels written against nGEN's
// API with its automatic SWSB, for xegen's simulator and hazard checker (see README.md; nGEN itself
// is not part of xegen).  gemm0..3: each work-group (one SIMD16 thread) computes an independent 8x32
// f32 tile C[g] = A[g] * B[g] over k 16-deep blocks, A and B pre-arranged in dpas layout.
#define NGEN_SAFE
#include "ngen_elf.hpp"
#include <cstdio>
#include <fstream>
#include <string>
using namespace ngen;

template <HW hw>
struct Gemm : public ELFCodeGenerator<hw> {
    NGEN_FORWARD_ELF(hw);
    // variant 0: plain accumulate + store f32
    // variant 1: alpha-scaled f32 epilogue (dpas -> F pipe), k counter in a separate flag
    // variant 2: hf output (conversion + D16U32 scattered stores)
    Gemm(int variant) {
        newArgument("a", ExternalArgumentType::GlobalPtr);
        newArgument("b", ExternalArgumentType::GlobalPtr);
        newArgument("c", ExternalArgumentType::GlobalPtr);
        newArgument("k", DataType::d);
        newArgument("alpha", DataType::f);
        externalName("gemm" + std::to_string(variant));
        requireSIMD(16);
        requireGRF(128);
        requireDPAS();
        requireStatelessWrites();
        finalizeInterface();

        setDefaultAutoSWSB(true);
        prologue();
        setDefaultNoMask(true);

        auto g = r0.ud(1);
        auto kreg = r43.d(0);
        auto off = r44;
        mov(1, kreg, getArgument("k"));
        mul(1, off.ud(0), g, getArgument("k"));
        shl(1, off.ud(1), off.ud(0), 8);
        shl(1, off.ud(2), off.ud(0), 10);
        shl(1, off.ud(3), g, 10 + (variant == 2 ? -1 : 0));
        add(1, r40.uq(0), getArgument("a"), off.ud(1));
        add(1, r41.uq(0), getArgument("b"), off.ud(2));
        add(1, r42.uq(0), r41.uq(0), 512);
        add(1, r45.uq(0), getArgument("c"), off.ud(3));
        for (int i = 0; i < 16; i++) mov(16, GRF(64 + i).f(), 0.0f);

        load(1, GRF(80), D32T(64), A64, r40);
        load(1, GRF(88), D64T(64), A64, r41);
        load(1, GRF(96), D64T(64), A64, r42);

        Label loop;
        mark(loop);
        add(1, r40.uq(0), r40.uq(0), 256);
        add(1, r41.uq(0), r41.uq(0), 1024);
        add(1, r42.uq(0), r42.uq(0), 1024);
        load(1, GRF(84), D32T(64), A64, r40);
        load(1, GRF(104), D64T(64), A64, r41);
        load(1, GRF(112), D64T(64), A64, r42);
        dpas(16, 8, 8, GRF(64).f(), GRF(64).f(), GRF(88).hf(), GRF(80).hf());
        dpas(16, 8, 8, GRF(72).f(), GRF(72).f(), GRF(96).hf(), GRF(80).hf());
        add(1, r40.uq(0), r40.uq(0), 256);
        add(1, r41.uq(0), r41.uq(0), 1024);
        add(1, r42.uq(0), r42.uq(0), 1024);
        add(1 | gt | f0[0], kreg, kreg, -2);
        load(1 | f0[0], GRF(80), D32T(64), A64, r40);
        load(1 | f0[0], GRF(88), D64T(64), A64, r41);
        load(1 | f0[0], GRF(96), D64T(64), A64, r42);
        dpas(16, 8, 8, GRF(64).f(), GRF(64).f(), GRF(104).hf(), GRF(84).hf());
        dpas(16, 8, 8, GRF(72).f(), GRF(72).f(), GRF(112).hf(), GRF(84).hf());
        jmpi(1 | f0[0], loop);

        if (variant == 1) {
            for (int i = 0; i < 16; i++) mul(16, GRF(64 + i).f(), GRF(64 + i).f(), getArgument("alpha"));
        }
        if (variant == 3) {
            // a dpas overwriting the src0 of the dpas before it (WAR inside the systolic pipe)
            dpas(16, 8, 8, GRF(104).f(), GRF(64).f(), GRF(88).hf(), GRF(80).hf());
            dpas(16, 8, 8, GRF(64).f(), GRF(72).f(), GRF(96).hf(), GRF(80).hf());
            add(1, r46.uq(0), r45.uq(0), 512);
            store(1, D64T(64), A64, r45, GRF(104));
            store(1, D64T(64), A64, r46, GRF(64));
        } else if (variant < 2) {
            add(1, r46.uq(0), r45.uq(0), 512);
            store(1, D64T(64), A64, r45, GRF(64));
            store(1, D64T(64), A64, r46, GRF(72));
        } else {
            // hf tile, row-major 8x32: lane l of row m at c + (m*32 + n0 + l)*2
            mov(8, r47.uw(0)(1), Immediate::uv(0,1,2,3,4,5,6,7));
            mov(8, r47.uw(8)(1), Immediate::uv(0,1,2,3,4,5,6,7));
            add(8, r47.uw(8)(1), r47.uw(8)(1), 8);
            shl(16, r48.ud(), r47.uw(0)(1), 1);
            for (int h = 0; h < 2; h++)
                for (int m = 0; m < 8; m++) {
                    GRF acc = GRF(64 + 8 * h + m);
                    GRF out = GRF(120 + (m & 1));
                    GRF adr = GRF(116 + 2 * (m & 1));
                    mov(16, out.hf(0)(2), acc.f());
                    add(16, adr.uq(), r45.uq(0)(0), r48.ud(0)(1));
                    add(16, adr.uq(), adr.uq(), (m * 32 + 16 * h) * 2);
                    store(16, D16U32, A64, adr, out);
                }
        }
        epilogue();
    }
};


// Variant 4: 2D block loads (A plain, B with the VNNI transform) and stores, local ids, and a
// division by 3 with mul acc0 + mach, as nGEN-based kernels do.  A: (8*groups) x 16k, B: 16k x 32,
// C: (8*groups) x 32 f32; d[g*16 + lane] = 2 * local id.
template <HW hw>
struct Gemm2D : public ELFCodeGenerator<hw> {
    NGEN_FORWARD_ELF(hw);
    Gemm2D() {
        newArgument("a", ExternalArgumentType::GlobalPtr);
        newArgument("b", ExternalArgumentType::GlobalPtr);
        newArgument("c", ExternalArgumentType::GlobalPtr);
        newArgument("d", ExternalArgumentType::GlobalPtr);
        newArgument("k", DataType::d);
        newArgument("m", DataType::d);
        externalName("gemm4");
        requireSIMD(16);
        requireLocalID(1);
        requireGRF(128);
        requireDPAS();
        requireStatelessWrites();
        finalizeInterface();

        setDefaultAutoSWSB(true);
        prologue();

        // d[g*16 + lane] = 2 * local id (per-thread data past the cross-thread data)
        auto g = r0.ud(1);
        shl(16, r30.ud(), getLocalID(0), 1);
        shl(1, r31.ud(0), g, 6);
        add(16, r32.uq(), getArgument("d"), r31.ud(0));
        shl(16, r34.ud(), getLocalID(0), 2);
        add(16, r32.uq(), r32.uq(), r34.ud());
        store(16, D32, A64, r32, r30);

        setDefaultNoMask(true);
        auto kreg = r43.d(0);
        mov(1, kreg, getArgument("k"));
        // tile = 3 * (g / 3) + g % 3, the quotient by multiplying with 0xAAAAAAAB
        mul(1, acc0.ud(), g, Immediate::uw(0xAAAB));
        mach(1, r44.ud(4), g, Immediate::ud(0xAAAAAAAB));
        shr(1, r44.ud(4), r44.ud(4), 1);
        mul(1, r44.ud(5), r44.ud(4), 3);
        add(1, r44.ud(6), g, -r44.ud(5));
        add(1, r44.ud(7), r44.ud(5), r44.ud(6));

        auto hdrA = r50, hdrB0 = r51, hdrB1 = r52, hdrC0 = r53, hdrC1 = r54;
        mov(8, hdrA.ud(), 0);
        mov(1, hdrA.uq(0), getArgument("a"));
        shl(1, hdrA.ud(2), kreg, 5);
        add(1, hdrA.ud(2), hdrA.ud(2), -1);
        shl(1, hdrA.ud(3), getArgument("m"), 0);
        add(1, hdrA.ud(3), hdrA.ud(3), -1);
        mov(1, hdrA.ud(4), hdrA.ud(2));
        shl(1, hdrA.ud(6), r44.ud(7), 3);
        mov(1, hdrA.ud(7), 15 | (7 << 8));
        mov(8, hdrB0.ud(), 0);
        mov(1, hdrB0.uq(0), getArgument("b"));
        mov(1, hdrB0.ud(2), 63);
        shl(1, hdrB0.ud(3), kreg, 4);
        add(1, hdrB0.ud(3), hdrB0.ud(3), -1);
        mov(1, hdrB0.ud(4), 63);
        mov(1, hdrB0.ud(7), 15 | (15 << 8));
        mov(8, hdrB1.ud(), hdrB0.ud());
        mov(1, hdrB1.ud(5), 16);
        for (int i = 0; i < 16; i++) mov(16, GRF(64 + i).f(), 0.0f);

        load(1, GRF(80), block_2d(DataSizeLSC::D16, 16, 8), A64, hdrA);
        load(1, GRF(88), block_2d(DataSizeLSC::D16, 16, 16) | vnni, A64, hdrB0);
        load(1, GRF(96), block_2d(DataSizeLSC::D16, 16, 16) | vnni, A64, hdrB1);

        Label loop;
        mark(loop);
        add(1, hdrA.ud(5), hdrA.ud(5), 16);
        add(1, hdrB0.ud(6), hdrB0.ud(6), 16);
        add(1, hdrB1.ud(6), hdrB1.ud(6), 16);
        load(1, GRF(84), block_2d(DataSizeLSC::D16, 16, 8), A64, hdrA);
        load(1, GRF(104), block_2d(DataSizeLSC::D16, 16, 16) | vnni, A64, hdrB0);
        load(1, GRF(112), block_2d(DataSizeLSC::D16, 16, 16) | vnni, A64, hdrB1);
        dpas(16, 8, 8, GRF(64).f(), GRF(64).f(), GRF(88).hf(), GRF(80).hf());
        dpas(16, 8, 8, GRF(72).f(), GRF(72).f(), GRF(96).hf(), GRF(80).hf());
        add(1, hdrA.ud(5), hdrA.ud(5), 16);
        add(1, hdrB0.ud(6), hdrB0.ud(6), 16);
        add(1, hdrB1.ud(6), hdrB1.ud(6), 16);
        add(1 | gt | f0[0], kreg, kreg, -2);
        load(1 | f0[0], GRF(80), block_2d(DataSizeLSC::D16, 16, 8), A64, hdrA);
        load(1 | f0[0], GRF(88), block_2d(DataSizeLSC::D16, 16, 16) | vnni, A64, hdrB0);
        load(1 | f0[0], GRF(96), block_2d(DataSizeLSC::D16, 16, 16) | vnni, A64, hdrB1);
        dpas(16, 8, 8, GRF(64).f(), GRF(64).f(), GRF(104).hf(), GRF(84).hf());
        dpas(16, 8, 8, GRF(72).f(), GRF(72).f(), GRF(112).hf(), GRF(84).hf());
        jmpi(1 | f0[0], loop);

        mov(8, hdrC0.ud(), 0);
        mov(1, hdrC0.uq(0), getArgument("c"));
        mov(1, hdrC0.ud(2), 127);
        add(1, hdrC0.ud(3), getArgument("m"), -1);
        mov(1, hdrC0.ud(4), 127);
        shl(1, hdrC0.ud(6), r44.ud(7), 3);
        mov(1, hdrC0.ud(7), 15 | (7 << 8));
        mov(8, hdrC1.ud(), hdrC0.ud());
        mov(1, hdrC1.ud(5), 16);
        store(1, block_2d(DataSizeLSC::D32, 16, 8), A64, hdrC0, GRF(64));
        store(1, block_2d(DataSizeLSC::D32, 16, 8), A64, hdrC1, GRF(72));
        epilogue();
    }
};

template <HW hw>
static void emit(int variant, const char *path) {
    Gemm<hw> g(variant);
    auto bin = g.getBinary();
    std::ofstream(path, std::ios::binary).write((const char *)bin.data(), bin.size());
    Gemm<hw> g2(variant);
    auto code = g2.getCode();
    std::string raw = std::string(path) + ".bin";
    std::ofstream(raw, std::ios::binary).write((const char *)code.data(), code.size());
}

int main(int argc, char **argv) {
    for (int v = 0; v < 4; v++) {
        std::string p = "gemm" + std::to_string(v) + "_xehpc.zebin";
        emit<HW::XeHPC>(v, p.c_str());
    }
    Gemm2D<HW::XeHPC> g4;
    auto bin = g4.getBinary();
    std::ofstream("gemm4_xehpc.zebin", std::ios::binary).write((const char *)bin.data(), bin.size());
    Gemm2D<HW::XeHPC> g4b;
    auto code = g4b.getCode();
    std::ofstream("gemm4_xehpc.zebin.bin", std::ios::binary).write((const char *)code.data(), code.size());
    return 0;
}
