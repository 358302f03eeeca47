/* The NIC UCX is given for a rank's GPU (coll_gpu_ucx_net_devices=auto): the
 * RDMA NIC nearest the GPU, with its active ports, from the fixtures. */
#include "topo_check.h"
#include "topo_fixtures.h"

using namespace gpucoll::topo;

/* rdma_mixed.xml: GPU 0 shares its PCIe switch with an Ethernet NIC, the
 * RDMA NIC of its socket (both ports active) is elsewhere; GPU 1 shares its
 * switch with an RDMA NIC whose port 1 is down. */
TOPO_TEST(net_devices_rdma_mixed)
{
    Topology t;
    REQUIRE(load_fixture("rdma_mixed.xml", &t));
    REQUIRE(t.gpus.size() == 2 && t.nics.size() == 3);
    const int g0 = find_gpu_by_bus_id(t, "0000:19:00.0"), g1 = find_gpu_by_bus_id(t, "00000000:99:00.0");
    REQUIRE(g0 >= 0 && g1 >= 0);
    CHECK_EQ(t.nics[t.gpus[g0].nearest_nic].name, std::string("eno1"));
    CHECK_EQ(t.nics[t.gpus[g0].nearest_rdma_nic].name, std::string("mlx5_0"));
    CHECK_EQ(t.nics[t.gpus[g1].nearest_rdma_nic].name, std::string("mlx5_1"));
    CHECK_EQ(t.nics[t.gpus[g0].nearest_rdma_nic].active_ports, std::vector<unsigned>({1, 2}));
    CHECK_EQ(ucx_net_devices_near_gpu(t, g0), std::string("mlx5_0:1,mlx5_0:2"));
    CHECK_EQ(ucx_net_devices_near_gpu(t, g1), std::string("mlx5_1:2"));
    CHECK_EQ(ucx_net_devices_near_gpu(t, -1), std::string(""));
    CHECK_EQ(ucx_net_devices_near_gpu(t, 2), std::string(""));
}

/* Every GPU pair of the DGX-1V-like node has its own ConnectX below its switch. */
TOPO_TEST(net_devices_nvlink8)
{
    Topology t;
    REQUIRE(load_fixture("nvlink8_2s4nic.xml", &t));
    for (int g = 0; g < 8; ++g) {
        CHECK_EQ(t.gpus[g].nearest_rdma_nic, g / 2);
        CHECK_EQ(ucx_net_devices_near_gpu(t, g), "mlx5_" + std::to_string(g / 2) + ":1");
    }
}

/* Ethernet only, or no NIC: UCX's own choice stays. */
TOPO_TEST(net_devices_without_rdma)
{
    for (const char *name : {"pcie2s_2gpu_2nic.xml", "gpu1_box.xml", "nvswitch4.xml"}) {
        Topology t;
        REQUIRE(load_fixture(name, &t));
        for (size_t g = 0; g < t.gpus.size(); ++g) {
            CHECK_EQ(t.gpus[g].nearest_rdma_nic, -1);
            CHECK_EQ(ucx_net_devices_near_gpu(t, (int)g), std::string(""));
        }
    }
}
