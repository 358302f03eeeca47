/* The smaller fixtures: a 2-socket PCIe node, a 1-GPU AMD box, an NVSwitch
 * node, and the lstopo output of the GPU-less development VM. */
#include "topo_check.h"
#include "topo_fixtures.h"

using namespace gpucoll::topo;

/* pcie2s_2gpu_2nic.xml: one L40S and one Ethernet NIC per socket, each on its
 * own host bridge; GPUs have PCI objects only (no CUDA/NVML OS devices); the
 * BMC's ASPEED VGA must not count as a GPU. */
TOPO_TEST(pcie2s_gpus_and_nics)
{
    Topology t;
    REQUIRE(load_fixture("pcie2s_2gpu_2nic.xml", &t));
    REQUIRE(t.gpus.size() == 2);
    CHECK_EQ(t.gpus[0].bus_id_str, std::string("0000:17:00.0"));
    CHECK_EQ(t.gpus[1].bus_id_str, std::string("0000:ca:00.0"));
    CHECK_EQ(t.gpus[0].model, std::string("AD102GL [L40S]")); /* from the PCI name */
    CHECK(t.gpus[0].os_devices.empty());
    CHECK_EQ(t.gpus[0].numa_nodes, std::vector<unsigned>({0}));
    CHECK_EQ(t.gpus[1].numa_nodes, std::vector<unsigned>({1}));
    CHECK_EQ(t.gpus[0].socket, 0);
    CHECK_EQ(t.gpus[1].socket, 1);

    REQUIRE(t.nics.size() == 2);
    CHECK_EQ(t.nics[0].name, std::string("ens1f0"));
    CHECK_EQ(t.nics[1].name, std::string("ens2f0"));
    CHECK(!t.nics[0].rdma);
    CHECK_EQ(t.nics[1].numa_nodes, std::vector<unsigned>({1}));
    /* nearest = same socket, although on another host bridge */
    CHECK_EQ(t.gpus[0].nearest_nic, 0);
    CHECK_EQ(t.gpus[1].nearest_nic, 1);
}

TOPO_TEST(pcie2s_links)
{
    Topology t;
    REQUIRE(load_fixture("pcie2s_2gpu_2nic.xml", &t));
    REQUIRE(t.gpus.size() == 2);
    CHECK(!t.has_nvlink_distances);
    CHECK_EQ(t.link(0, 1).kind, LinkKind::CrossSocket);
    CHECK_EQ(t.link(1, 0).pcie_path, LinkKind::CrossSocket);
    CHECK_EQ(t.link(1, 1).kind, LinkKind::Self);
}

/* gpu1_box.xml: one socket, an AMD Instinct MI210 (class 0x0380, rsmi0) and a
 * 2.5GbE NIC, all I/O attached to the Machine rather than the package. */
TOPO_TEST(gpu1_box)
{
    Topology t;
    REQUIRE(load_fixture("gpu1_box.xml", &t));
    REQUIRE(t.gpus.size() == 1);
    const Gpu &g = t.gpus[0];
    CHECK_EQ(g.bus_id_str, std::string("0000:03:00.0"));
    CHECK_EQ(g.vendor_id, 0x1002);
    CHECK_EQ(g.os_devices, std::vector<std::string>({"rsmi0"}));
    CHECK_EQ(g.model, std::string("AMD Instinct MI210"));
    CHECK_EQ(g.numa_nodes, std::vector<unsigned>({0}));
    CHECK_EQ(g.socket, 0); /* the only package, although I/O hangs off the Machine */
    REQUIRE(t.nics.size() == 1);
    CHECK_EQ(t.nics[0].name, std::string("enp5s0"));
    CHECK_EQ(g.nearest_nic, 0);
    REQUIRE(t.links.size() == 1);
    CHECK_EQ(t.link(0, 0).kind, LinkKind::Self);
    CHECK_EQ(find_gpu_by_bus_id(t, "0000:03:00.0"), 0);
}

/* nvswitch4.xml: 4 H100 whose NVLinkBandwidth matrix (heterogeneous: GPUs and
 * 2 NVSwitch PCI devices) has 0 between GPUs and 100 GB/s to each switch. */
TOPO_TEST(nvswitch4_links_through_switches)
{
    Topology t;
    REQUIRE(load_fixture("nvswitch4.xml", &t));
    REQUIRE(t.gpus.size() == 4); /* NVSwitches (class 0x0680) are not GPUs */
    CHECK(t.has_nvlink_distances);
    CHECK(t.nics.empty());
    for (int a = 0; a < 4; ++a) {
        CHECK_EQ(t.gpus[a].nearest_nic, -1);
        for (int b = 0; b < 4; ++b) {
            const Link &l = t.link(a, b);
            if (a == b) {
                CHECK_EQ(l.kind, LinkKind::Self);
                continue;
            }
            CHECK_EQ(l.kind, LinkKind::NvLink);
            CHECK(l.via_nvswitch);
            CHECK_EQ(l.nvlink_mbps, 200000u); /* 2 switches x min(100, 100) GB/s */
            CHECK_EQ(l.pcie_path, LinkKind::PcieSwitch);
        }
    }
}

/* vm_nogpu_lstopo.xml: `lstopo --of xml --whole-io` of the development VM. */
TOPO_TEST(vm_without_gpu)
{
    Topology t;
    REQUIRE(load_fixture("vm_nogpu_lstopo.xml", &t));
    CHECK_EQ(t.hostname, std::string("vm"));
    CHECK(t.gpus.empty());
    CHECK(t.links.empty());
    CHECK_EQ(t.num_sockets, 1u);
    CHECK_EQ(t.num_numa_nodes, 1u);
    REQUIRE(t.nics.size() == 1);
    CHECK_EQ(t.nics[0].name, std::string("eth0"));
    CHECK_EQ(t.nics[0].bus_id_str, std::string("0000:00:03.0"));
    CHECK(!t.nics[0].rdma);
    CHECK_EQ(t.nics[0].socket, 0);
    CHECK_EQ(find_gpu_by_bus_id(t, "0000:00:03.0"), -1);
}

TOPO_TEST(load_errors_are_clear)
{
    Topology t;
    CHECK_EQ(load_xml_topology(fixture_path("no-such-file.xml"), &t), GPUCOLL_ERR_INVALID);
    CHECK(std::string(gpucoll_last_error()).find("no-such-file.xml") != std::string::npos);
    /* a file that is not XML at all */
    CHECK_EQ(load_xml_topology(fixture_path("make_fixtures.py"), &t), GPUCOLL_ERR_INVALID);
    CHECK(std::string(gpucoll_last_error()).find("make_fixtures.py") != std::string::npos);
}

/* Whatever this machine has, the snapshot must be self-consistent. */
TOPO_TEST(live_machine)
{
    Topology t;
    REQUIRE_OK(load_live_topology(&t));
    CHECK_EQ(t.source, std::string("live machine"));
    CHECK(t.num_numa_nodes >= 1);
    CHECK_EQ(t.links.size(), t.gpus.size() * t.gpus.size());
    for (const Gpu &g : t.gpus) {
        CHECK_EQ(find_gpu_by_bus_id(t, g.bus_id_str), g.index);
        CHECK(g.nearest_nic < (int)t.nics.size());
        CHECK(t.nics.empty() == (g.nearest_nic == -1));
        CHECK_EQ(t.link(g.index, g.index).kind, LinkKind::Self);
    }
    std::printf("  live machine: %zu GPU(s), %zu NIC(s)\n", t.gpus.size(), t.nics.size());
}
