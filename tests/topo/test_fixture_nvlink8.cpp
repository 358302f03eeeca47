/* nvlink8_2s4nic.xml: a DGX-1V-like node. 8 V100 in pairs below 4 PCIe
 * switches, one ConnectX-5 per switch, 2 sockets (socket 0: one host bridge
 * with two root ports; socket 1: two host bridges), and the hybrid cube mesh
 * NVLinkBandwidth matrix (1 or 2 links of 25 GB/s, some pairs none). */
#include "topo_check.h"
#include "topo_fixtures.h"

using namespace gpucoll::topo;

namespace {

bool load(Topology *t)
{
    if (load_xml_topology(fixture_path("nvlink8_2s4nic.xml"), t) == GPUCOLL_SUCCESS)
        return true;
    std::printf("  load failed: %s\n", gpucoll_last_error());
    return false;
}

} // namespace

TOPO_TEST(nvlink8_gpus)
{
    Topology t;
    REQUIRE(load(&t));
    CHECK_EQ(t.hostname, std::string("fixture-nvlink8"));
    CHECK_EQ(t.num_sockets, 2u);
    CHECK_EQ(t.num_numa_nodes, 2u);
    REQUIRE(t.gpus.size() == 8);
    const char *bus[8] = {"0000:04:00.0", "0000:05:00.0", "0000:0c:00.0", "0000:0d:00.0",
                          "0000:84:00.0", "0000:85:00.0", "0000:c4:00.0", "0000:c5:00.0"};
    for (int g = 0; g < 8; ++g) {
        const Gpu &gpu = t.gpus[g];
        CHECK_EQ(gpu.index, g);
        CHECK_EQ(gpu.bus_id_str, std::string(bus[g]));
        CHECK_EQ(gpu.vendor_id, 0x10de);
        CHECK_EQ(gpu.device_id, 0x1db5);
        CHECK_EQ(gpu.model, std::string("Tesla V100-SXM2-32GB"));
        CHECK_EQ(gpu.os_devices, std::vector<std::string>({"cuda" + std::to_string(g), "nvml" + std::to_string(g)}));
        CHECK_EQ(gpu.numa_nodes, std::vector<unsigned>({g < 4 ? 0u : 1u}));
        CHECK_EQ(gpu.socket, g < 4 ? 0 : 1);
        CHECK_EQ(gpu.cpuset, std::string(g < 4 ? "0-3" : "4-7"));
    }
}

TOPO_TEST(nvlink8_nics)
{
    Topology t;
    REQUIRE(load(&t));
    REQUIRE(t.nics.size() == 4);
    const char *bus[4] = {"0000:06:00.0", "0000:0e:00.0", "0000:86:00.0", "0000:c6:00.0"};
    for (int n = 0; n < 4; ++n) {
        const Nic &nic = t.nics[n];
        CHECK_EQ(nic.name, "mlx5_" + std::to_string(n));
        CHECK(nic.rdma);
        CHECK_EQ(nic.bus_id_str, std::string(bus[n]));
        CHECK_EQ(nic.os_devices, std::vector<std::string>({"ib" + std::to_string(n), "mlx5_" + std::to_string(n)}));
        CHECK_EQ(nic.socket, n < 2 ? 0 : 1);
    }
    /* every GPU pair shares its PCIe switch with one NIC */
    for (int g = 0; g < 8; ++g)
        CHECK_EQ(t.gpus[g].nearest_nic, g / 2);
}

TOPO_TEST(nvlink8_links)
{
    Topology t;
    REQUIRE(load(&t));
    REQUIRE(t.links.size() == 64);
    CHECK(t.has_nvlink_distances);
    CHECK_EQ(t.link(0, 0).kind, LinkKind::Self);
    CHECK_EQ(t.link(0, 1).kind, LinkKind::NvLink);
    CHECK_EQ(t.link(0, 1).nvlink_mbps, 25000u); /* one link */
    CHECK_EQ(t.link(0, 3).nvlink_mbps, 50000u); /* two links */
    CHECK_EQ(t.link(0, 4).kind, LinkKind::NvLink); /* NVLink across sockets */
    CHECK(!t.link(0, 4).via_nvswitch);
    /* no NVLink in the hybrid cube mesh: falls back to the PCIe/CPU path */
    CHECK_EQ(t.link(0, 5).kind, LinkKind::CrossSocket);
    CHECK_EQ(t.link(0, 5).nvlink_mbps, 0u);
    CHECK_EQ(t.link(3, 4).kind, LinkKind::CrossSocket);

    /* the PCIe path underneath, from the tree */
    CHECK_EQ(t.link(0, 1).pcie_path, LinkKind::PcieSwitch);  /* same switch */
    CHECK_EQ(t.link(0, 2).pcie_path, LinkKind::HostBridge);  /* same host bridge, other root port */
    CHECK_EQ(t.link(4, 6).pcie_path, LinkKind::SameSocket);  /* socket 1, two host bridges */
    CHECK_EQ(t.link(6, 7).pcie_path, LinkKind::PcieSwitch);
    CHECK_EQ(t.link(1, 6).pcie_path, LinkKind::CrossSocket);

    int nvlinked = 0;
    for (int a = 0; a < 8; ++a)
        for (int b = 0; b < 8; ++b) {
            CHECK_EQ(t.link(a, b).kind, t.link(b, a).kind);
            CHECK_EQ(t.link(a, b).nvlink_mbps, t.link(b, a).nvlink_mbps);
            CHECK_EQ(t.link(a, b).peer_access, a == b ? PeerAccess::Yes : PeerAccess::Unknown);
            nvlinked += t.link(a, b).kind == LinkKind::NvLink;
        }
    CHECK_EQ(nvlinked, 32); /* 16 NVLinked pairs, both directions */
}

TOPO_TEST(nvlink8_find_by_bus_id)
{
    Topology t;
    REQUIRE(load(&t));
    CHECK_EQ(find_gpu_by_bus_id(t, "0000:84:00.0"), 4);
    CHECK_EQ(find_gpu_by_bus_id(t, "0000:C4:00.0"), 6);     /* CUDA's upper case */
    CHECK_EQ(find_gpu_by_bus_id(t, "00000000:05:00.0"), 1); /* nvidia-smi */
    CHECK_EQ(find_gpu_by_bus_id(t, "0000:06:00.0"), -1);    /* the NIC */
    CHECK_EQ(find_gpu_by_bus_id(t, "0000:99:00.0"), -1);
    CHECK_EQ(find_gpu_by_bus_id(t, "not a bus id"), -1);
}

TOPO_TEST(nvlink8_peer_access_overlay)
{
    Topology t;
    REQUIRE(load(&t));
    /* A process seeing GPUs 0, 1 and 4 (CUDA_VISIBLE_DEVICES=0,1,4) whose
     * runtime refuses peer access between 0 and 4 although they share an
     * NVLink: the overlay must win over the hardware path. */
    const std::vector<std::string> devices = {"0000:04:00.0", "0000:05:00.0", "0000:84:00.0"};
    const std::vector<uint8_t> can = {1, 1, 0,  /* device 0 -> 0,1,2 */
                                      1, 1, 1,  /* device 1 */
                                      0, 1, 1}; /* device 2 */
    REQUIRE_OK(overlay_peer_access(&t, devices, can));
    CHECK_EQ(t.link(0, 1).peer_access, PeerAccess::Yes);
    CHECK_EQ(t.link(0, 4).peer_access, PeerAccess::No);
    CHECK_EQ(t.link(4, 0).peer_access, PeerAccess::No);
    CHECK_EQ(t.link(1, 4).peer_access, PeerAccess::Yes);
    CHECK_EQ(t.link(0, 2).peer_access, PeerAccess::Unknown); /* GPU 2 not visible */
    CHECK_EQ(t.link(0, 4).kind, LinkKind::NvLink);           /* hardware path unchanged */
    CHECK(peer_access_possible(t, 0, 1));
    CHECK(!peer_access_possible(t, 0, 4));
    CHECK(!peer_access_possible(t, 4, 0));
    CHECK(peer_access_possible(t, 0, 2)); /* unknown: worth trying */
    CHECK(!peer_access_possible(t, 0, 8));
}

TOPO_TEST(nvlink8_peer_access_overlay_rejects_bad_input)
{
    Topology t;
    REQUIRE(load(&t));
    const std::vector<Link> before = t.links;
    CHECK_EQ(overlay_peer_access(&t, {"0000:04:00.0", "0000:05:00.0"}, {1, 1, 1}), GPUCOLL_ERR_INVALID);
    CHECK_EQ(overlay_peer_access(&t, {"0000:04:00.0", "0000:99:00.0"}, {1, 0, 0, 1}), GPUCOLL_ERR_INVALID);
    CHECK(std::string(gpucoll_last_error()).find("0000:99:00.0") != std::string::npos);
    CHECK_EQ(overlay_peer_access(&t, {"0000:04:00.0", "0000:04:00.0"}, {1, 0, 0, 1}), GPUCOLL_ERR_INVALID);
    bool unchanged = true;
    for (size_t i = 0; i < before.size(); ++i)
        unchanged = unchanged && before[i].peer_access == t.links[i].peer_access;
    CHECK(unchanged);
}
