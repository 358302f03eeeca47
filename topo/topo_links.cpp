/* GPU-GPU links: the PCIe/CPU path from the tree, NVLink from hwloc distances.
 *
 * hwloc's NVML plugin publishes an "NVLinkBandwidth" matrix (MB/s) between
 * its nvmlN OS devices and, on NVSwitch machines, the NVSwitch PCI devices
 * too. There GPU-to-GPU entries are 0 and every GPU has bandwidth to the
 * switches, so two GPUs count as NVLinked when they reach a common switch;
 * their bandwidth is the sum over switches of the smaller of the two legs. */
#include "topo_hwloc.h"

#include <algorithm>
#include <cstring>

namespace gpucoll {
namespace topo {
namespace detail {

LinkKind classify_pcie_path(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b)
{
    if (a == b)
        return LinkKind::Self;
    hwloc_obj_t top = common_ancestor(a, b);
    if (top && top->type == HWLOC_OBJ_BRIDGE)
        return top->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST ? LinkKind::HostBridge
                                                                        : LinkKind::PcieSwitch;
    if (top && top->type == HWLOC_OBJ_PCI_DEVICE)
        return LinkKind::PcieSwitch; /* not seen in practice: one GPU below another */
    /* The path leaves PCIe: same package or across the CPU interconnect.
     * Unknown locality counts as far, so nobody is promised a fast path. */
    hwloc_obj_t pa = package_of(topo, a);
    hwloc_obj_t pb = package_of(topo, b);
    return pa && pa == pb ? LinkKind::SameSocket : LinkKind::CrossSocket;
}

namespace {

/* One endpoint of an NVLink matrix: a GPU of ours, an NVSwitch, or other
 * (e.g. a POWER9 CPU, which is not a GPU-GPU path). */
struct Endpoint {
    int gpu = -1;
    bool nvswitch = false;
};

Endpoint classify_endpoint(hwloc_obj_t obj, const std::vector<FoundGpu> &gpus)
{
    Endpoint e;
    hwloc_obj_t pci = obj->type == HWLOC_OBJ_PCI_DEVICE ? obj : pci_device_of(obj);
    for (const FoundGpu &g : gpus)
        if (pci && g.obj == pci)
            e.gpu = g.info.index;
    /* hwloc marks NVSwitch PCI devices with subtype "NVSwitch"; class 0x0680
     * from NVIDIA covers XMLs that lost the subtype. */
    if (e.gpu < 0 && pci == obj && obj->type == HWLOC_OBJ_PCI_DEVICE)
        e.nvswitch = (obj->subtype && std::strcmp(obj->subtype, "NVSwitch") == 0) ||
                     (obj->attr->pcidev.vendor_id == 0x10de && obj->attr->pcidev.class_id == 0x0680);
    return e;
}

/* Adds one matrix's NVLink bandwidth to topo->links; true if it named a GPU. */
bool apply_nvlink_matrix(const hwloc_distances_s &m, const std::vector<FoundGpu> &gpus, Topology *topo)
{
    const unsigned n = m.nbobjs;
    std::vector<Endpoint> ends(n);
    bool any_gpu = false;
    for (unsigned i = 0; i < n; ++i) {
        ends[i] = classify_endpoint(m.objs[i], gpus);
        any_gpu |= ends[i].gpu >= 0;
    }
    auto bw = [&](unsigned i, unsigned j) { return m.values[(size_t)i * n + j]; };

    for (unsigned i = 0; i < n; ++i) {
        for (unsigned j = 0; j < n; ++j) {
            const int ga = ends[i].gpu, gb = ends[j].gpu;
            if (ga < 0 || gb < 0 || ga == gb)
                continue;
            uint64_t direct = bw(i, j);
            uint64_t switched = 0;
            for (unsigned s = 0; s < n; ++s)
                if (ends[s].nvswitch)
                    switched += std::min(bw(i, s), bw(s, j));
            Link &l = topo->link(ga, gb);
            l.nvlink_mbps = std::max<uint64_t>(l.nvlink_mbps, direct + switched);
            l.via_nvswitch = l.via_nvswitch || switched > 0;
        }
    }
    return any_gpu;
}

} // namespace

void build_links(hwloc_topology_t hw, const std::vector<FoundGpu> &gpus, Topology *topo)
{
    const size_t n = gpus.size();
    topo->links.assign(n * n, Link());
    for (size_t a = 0; a < n; ++a)
        for (size_t b = 0; b < n; ++b)
            topo->link((int)a, (int)b).pcie_path = classify_pcie_path(hw, gpus[a].obj, gpus[b].obj);

    unsigned count = 0;
    if (n > 1 && hwloc_distances_get_by_name(hw, "NVLinkBandwidth", &count, nullptr, 0) == 0 && count > 0) {
        std::vector<hwloc_distances_s *> matrices(count, nullptr);
        if (hwloc_distances_get_by_name(hw, "NVLinkBandwidth", &count, matrices.data(), 0) == 0) {
            for (unsigned i = 0; i < count && i < matrices.size(); ++i) {
                topo->has_nvlink_distances |= apply_nvlink_matrix(*matrices[i], gpus, topo);
                hwloc_distances_release(hw, matrices[i]);
            }
        }
    }

    for (Link &l : topo->links) {
        if (l.pcie_path == LinkKind::Self)
            l.kind = LinkKind::Self;
        else
            l.kind = l.nvlink_mbps > 0 ? LinkKind::NvLink : l.pcie_path;
    }
    for (size_t a = 0; a < n; ++a)
        topo->link((int)a, (int)a).peer_access = PeerAccess::Yes; /* a GPU always reaches itself */
}

} // namespace detail

const char *link_kind_name(LinkKind kind)
{
    switch (kind) {
    case LinkKind::Self: return "self";
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::PcieSwitch: return "pcie-switch";
    case LinkKind::HostBridge: return "host-bridge";
    case LinkKind::SameSocket: return "same-socket";
    case LinkKind::CrossSocket: return "cross-socket";
    }
    return "unknown";
}

const char *link_kind_short_name(LinkKind kind)
{
    switch (kind) {
    case LinkKind::Self: return "X";
    case LinkKind::NvLink: return "NV";
    case LinkKind::PcieSwitch: return "PIX";
    case LinkKind::HostBridge: return "PHB";
    case LinkKind::SameSocket: return "NODE";
    case LinkKind::CrossSocket: return "SYS";
    }
    return "?";
}

} // namespace topo
} // namespace gpucoll
