// The generator of gemm3_xehpg.zebin (see README.md): gemm3 of generate.cpp on XeHPG, with SIMD8 dpas
// (32-byte GRFs): per work-group an 8x16 f32 tile.
#define NGEN_SAFE
#include "ngen_elf.hpp"
#include <fstream>
using namespace ngen;

template <HW hw>
struct GemmHPG : public ELFCodeGenerator<hw> {
    NGEN_FORWARD_ELF(hw);
    GemmHPG() {
        newArgument("a", ExternalArgumentType::GlobalPtr);
        newArgument("b", ExternalArgumentType::GlobalPtr);
        newArgument("c", ExternalArgumentType::GlobalPtr);
        newArgument("k", DataType::d);
        externalName("gemm3");
        requireSIMD(8);
        requireGRF(128);
        requireDPAS();
        requireStatelessWrites();
        finalizeInterface();
        setDefaultAutoSWSB(true);
        prologue();
        setDefaultNoMask(true);
        auto g = r0.ud(1);
        auto kreg = r43.d(0);
        mov(1, kreg, getArgument("k"));
        mul(1, r44.ud(0), g, getArgument("k"));
        shl(1, r44.ud(1), r44.ud(0), 8);   // A: 256 bytes per k block
        shl(1, r44.ud(2), r44.ud(0), 9);   // B: 512
        shl(1, r44.ud(3), g, 9);           // C: 512
        add(1, r40.uq(0), getArgument("a"), r44.ud(1));
        add(1, r41.uq(0), getArgument("b"), r44.ud(2));
        add(1, r42.uq(0), r41.uq(0), 256);
        add(1, r45.uq(0), getArgument("c"), r44.ud(3));
        for (int i = 0; i < 16; i++) mov(8, GRF(64 + i).f(), 0.0f);
        load(1, GRF(80), D32T(64), A64, r40);
        load(1, GRF(88), D32T(64), A64, r41);
        load(1, GRF(96), D32T(64), A64, r42);
        Label loop;
        mark(loop);
        add(1, r40.uq(0), r40.uq(0), 256);
        add(1, r41.uq(0), r41.uq(0), 512);
        add(1, r42.uq(0), r42.uq(0), 512);
        load(1, GRF(104), D32T(64), A64, r40);
        load(1, GRF(112), D32T(64), A64, r41);
        load(1, GRF(120), D32T(64), A64, r42);
        dpas(8, 8, 8, GRF(64).f(), GRF(64).f(), GRF(88).hf(), GRF(80).hf());
        dpas(8, 8, 8, GRF(72).f(), GRF(72).f(), GRF(96).hf(), GRF(80).hf());
        add(1, r40.uq(0), r40.uq(0), 256);
        add(1, r41.uq(0), r41.uq(0), 512);
        add(1, r42.uq(0), r42.uq(0), 512);
        add(1 | gt | f0[0], kreg, kreg, -2);
        load(1 | f0[0], GRF(80), D32T(64), A64, r40);
        load(1 | f0[0], GRF(88), D32T(64), A64, r41);
        load(1 | f0[0], GRF(96), D32T(64), A64, r42);
        dpas(8, 8, 8, GRF(64).f(), GRF(64).f(), GRF(112).hf(), GRF(104).hf());
        dpas(8, 8, 8, GRF(72).f(), GRF(72).f(), GRF(120).hf(), GRF(104).hf());
        jmpi(1 | f0[0], loop);
        // a dpas overwriting the src0 of the dpas before it
        dpas(8, 8, 8, GRF(104).f(), GRF(64).f(), GRF(88).hf(), GRF(80).hf());
        dpas(8, 8, 8, GRF(64).f(), GRF(72).f(), GRF(96).hf(), GRF(80).hf());
        add(1, r46.uq(0), r45.uq(0), 256);
        store(1, D32T(64), A64, r45, GRF(104));
        store(1, D32T(64), A64, r46, GRF(64));
        epilogue();
    }
};

int main() {
    GemmHPG<HW::XeHPG> g;
    auto bin = g.getBinary();
    std::ofstream("gemm3_xehpg.zebin", std::ios::binary).write((const char *)bin.data(), bin.size());
    GemmHPG<HW::XeHPG> g2;
    auto code = g2.getCode();
    std::ofstream("gemm3_xehpg.zebin.bin", std::ios::binary).write((const char *)code.data(), code.size());
}
