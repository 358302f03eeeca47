/* Finding the NICs of an hwloc tree and the one nearest to a GPU.
 *
 * hwloc shows one adapter as several OS devices (a ConnectX port is both
 * "mlx5_0", its verbs device, and "ib0", its netdev), so OS devices are
 * grouped by PCI function: one Nic per function, named after its RDMA device
 * when it has one since that is the name UCX wants (UCX_NET_DEVICES=mlx5_0:1). */
#include "topo_hwloc.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace gpucoll {
namespace topo {
namespace detail {

namespace {

bool is_nic_os_device(hwloc_obj_t osdev)
{
    return osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS ||
           osdev->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK;
}

/* The object whose position in the tree gives the NIC's locality: its PCI
 * function, or the OS device itself when hwloc has no PCI device for it. */
hwloc_obj_t locality_object(hwloc_obj_t osdev)
{
    hwloc_obj_t pci = pci_device_of(osdev);
    return pci ? pci : osdev;
}

void describe(hwloc_topology_t topo, FoundNic *n)
{
    Nic &info = n->info;
    if (n->obj->type == HWLOC_OBJ_PCI_DEVICE)
        info.bus_id_str = format_pci_bus_id(pci_bus_id_of(n->obj));
    info.numa_nodes = numa_nodes_of(topo, n->obj);
    hwloc_obj_t package = package_of(topo, n->obj);
    info.socket = package ? (int)package->os_index : -1;
}

/* hwloc's OpenFabrics devices carry "Port<N>State" per port; 4 is
 * IBV_PORT_ACTIVE. */
std::vector<unsigned> active_ports(hwloc_obj_t osdev)
{
    std::vector<unsigned> ports;
    for (unsigned i = 0; i < osdev->infos_count; ++i) {
        unsigned port = 0;
        char rest = 0;
        const hwloc_info_s &info = osdev->infos[i];
        if (std::sscanf(info.name, "Port%uState%c", &port, &rest) == 1 && info.value && std::strcmp(info.value, "4") == 0)
            ports.push_back(port);
    }
    std::sort(ports.begin(), ports.end());
    return ports;
}

bool nic_order(const FoundNic &a, const FoundNic &b)
{
    const bool a_pci = a.obj->type == HWLOC_OBJ_PCI_DEVICE;
    const bool b_pci = b.obj->type == HWLOC_OBJ_PCI_DEVICE;
    if (a_pci != b_pci)
        return a_pci; /* NICs with a bus id first */
    if (a_pci)
        return pci_bus_id_of(a.obj) < pci_bus_id_of(b.obj);
    return a.info.name < b.info.name;
}

} // namespace

std::vector<FoundNic> find_nics(hwloc_topology_t topo)
{
    std::vector<FoundNic> nics;
    for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
        if (!is_nic_os_device(os) || !os->name)
            continue;
        hwloc_obj_t where = locality_object(os);
        auto it = std::find_if(nics.begin(), nics.end(), [&](const FoundNic &n) { return n.obj == where; });
        if (it == nics.end()) {
            FoundNic n;
            n.obj = where;
            nics.push_back(n);
            it = nics.end() - 1;
        }
        Nic &info = it->info;
        info.os_devices.push_back(os->name);
        const bool rdma = os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
        if (rdma && !info.rdma) {
            info.rdma = true;
            info.name = os->name; /* the verbs device names the NIC */
            info.active_ports = active_ports(os);
        } else if (info.name.empty()) {
            info.name = os->name;
        }
    }

    for (FoundNic &n : nics)
        describe(topo, &n);
    std::sort(nics.begin(), nics.end(), nic_order);
    for (size_t i = 0; i < nics.size(); ++i)
        nics[i].info.index = (int)i;
    return nics;
}

int nearest_nic(hwloc_obj_t obj, const std::vector<FoundNic> &nics)
{
    int best = -1;
    int best_depth = -1;
    for (const FoundNic &n : nics) {
        const int depth = tree_depth(common_ancestor(obj, n.obj));
        if (depth > best_depth) { /* strictly deeper: ties keep the lower index */
            best_depth = depth;
            best = n.info.index;
        }
    }
    return best;
}

} // namespace detail
} // namespace topo
} // namespace gpucoll
