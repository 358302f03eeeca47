/* Questions the core asks of a loaded Topology: which GPU is this runtime
 * device, and may two GPUs talk directly. */
#include "gpucoll_topo.h"

#include <string>
#include <vector>

namespace gpucoll {
namespace topo {

int find_gpu_by_bus_id(const Topology &topo, const std::string &bus_id)
{
    PciBusId id;
    if (!parse_pci_bus_id(bus_id, &id))
        return -1;
    for (const Gpu &g : topo.gpus)
        if (g.bus_id == id)
            return g.index;
    return -1;
}

gpucoll_status_t overlay_peer_access(Topology *topo, const std::vector<std::string> &device_bus_ids,
                                     const std::vector<uint8_t> &can_access)
{
    if (!topo)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "overlay_peer_access: null topology");
    const size_t n = device_bus_ids.size();
    if (can_access.size() != n * n)
        return gpucoll_fail(GPUCOLL_ERR_INVALID,
                            "overlay_peer_access: %zu devices need a %zu-entry matrix, got %zu", n, n * n,
                            can_access.size());

    /* Resolve every device first so a bad entry leaves topo untouched. */
    std::vector<int> gpu_of_device(n, -1);
    for (size_t d = 0; d < n; ++d) {
        const int g = find_gpu_by_bus_id(*topo, device_bus_ids[d]);
        if (g < 0)
            return gpucoll_fail(GPUCOLL_ERR_INVALID,
                                "overlay_peer_access: device %zu (bus id '%s') is not a GPU of the topology "
                                "of %s",
                                d, device_bus_ids[d].c_str(), topo->source.c_str());
        for (size_t e = 0; e < d; ++e)
            if (gpu_of_device[e] == g)
                return gpucoll_fail(GPUCOLL_ERR_INVALID,
                                    "overlay_peer_access: devices %zu and %zu have the same bus id %s", e, d,
                                    topo->gpus[g].bus_id_str.c_str());
        gpu_of_device[d] = g;
    }

    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j)
            if (i != j)
                topo->link(gpu_of_device[i], gpu_of_device[j]).peer_access =
                    can_access[i * n + j] ? PeerAccess::Yes : PeerAccess::No;
    return GPUCOLL_SUCCESS;
}

std::string ucx_net_devices_near_gpu(const Topology &topo, int gpu)
{
    if (gpu < 0 || gpu >= (int)topo.gpus.size() || topo.gpus[gpu].nearest_rdma_nic < 0)
        return "";
    const Nic &nic = topo.nics[topo.gpus[gpu].nearest_rdma_nic];
    if (nic.active_ports.empty())
        return nic.name + ":1";
    std::string devices;
    for (unsigned port : nic.active_ports)
        devices += (devices.empty() ? "" : ",") + nic.name + ":" + std::to_string(port);
    return devices;
}

bool peer_access_possible(const Topology &topo, int a, int b)
{
    const int n = (int)topo.gpus.size();
    if (a < 0 || b < 0 || a >= n || b >= n)
        return false;
    return topo.link(a, b).peer_access != PeerAccess::No && topo.link(b, a).peer_access != PeerAccess::No;
}

} // namespace topo
} // namespace gpucoll
