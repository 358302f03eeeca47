/* PCI bus id parsing: every spelling the runtimes and tools print. */
#include "topo_check.h"

using namespace gpucoll::topo;

namespace {

PciBusId id(uint32_t domain, uint32_t bus, uint32_t device, uint32_t function)
{
    PciBusId p;
    p.domain = domain;
    p.bus = bus;
    p.device = device;
    p.function = function;
    return p;
}

bool parses_to(const std::string &text, const PciBusId &expected)
{
    PciBusId got;
    return parse_pci_bus_id(text, &got) && got == expected;
}

} // namespace

TOPO_TEST(busid_parses_every_spelling)
{
    CHECK(parses_to("0000:18:00.0", id(0, 0x18, 0, 0)));     /* hwloc */
    CHECK(parses_to("0000:3B:00.0", id(0, 0x3b, 0, 0)));     /* cudaDeviceGetPCIBusId */
    CHECK(parses_to("00000000:3B:00.0", id(0, 0x3b, 0, 0))); /* nvidia-smi */
    CHECK(parses_to("0000:c1:00.0", id(0, 0xc1, 0, 0)));     /* hipDeviceGetPCIBusId */
    CHECK(parses_to("3b:00.0", id(0, 0x3b, 0, 0)));          /* lspci without domain */
    CHECK(parses_to("0001:c1:1f.7", id(1, 0xc1, 0x1f, 7)));
    CHECK(parses_to("0000:18:00", id(0, 0x18, 0, 0)));       /* function omitted */
}

TOPO_TEST(busid_rejects_garbage)
{
    PciBusId out;
    for (const char *bad : {"", "garbage", "0000:18:00.8", "0000:18:20.0", "0000:118:00.0", "0000:18:00.0x",
                            ":18:00.0", "0000::00.0", "1:2:3:4.0", "0000:18:.0"}) {
        if (parse_pci_bus_id(bad, &out))
            topo_check::fail(__FILE__, __LINE__, std::string("accepted bad bus id '") + bad + "'");
    }
}

TOPO_TEST(busid_formats_canonically)
{
    CHECK_EQ(format_pci_bus_id(id(0, 0x3b, 0, 0)), std::string("0000:3b:00.0"));
    CHECK_EQ(format_pci_bus_id(id(0x10, 0xc1, 0x1f, 7)), std::string("0010:c1:1f.7"));
    PciBusId round;
    REQUIRE(parse_pci_bus_id("00000000:3B:00.0", &round));
    CHECK_EQ(format_pci_bus_id(round), std::string("0000:3b:00.0"));
}

TOPO_TEST(busid_orders_numerically)
{
    CHECK(id(0, 0x04, 0, 0) < id(0, 0x84, 0, 0));
    CHECK(id(0, 0xff, 0, 0) < id(1, 0x00, 0, 0));
    CHECK(id(0, 0x18, 0, 0) < id(0, 0x18, 0, 1));
    CHECK(!(id(0, 0x18, 0, 0) < id(0, 0x18, 0, 0)));
}
