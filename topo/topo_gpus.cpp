/* Finding the GPUs of an hwloc tree.
 *
 * A GPU is keyed by its PCI function, found two ways so that any XML works:
 *  - PCI devices of a display class from NVIDIA or AMD (enough for XMLs
 *    written without hwloc's CUDA/NVML/RSMI plugins, which have only PCI);
 *  - OS devices that a GPU plugin created (cuda0, nvml0, rsmi0), through
 *    their PCI parent (catches GPUs with unusual class codes).
 * OS devices without a PCI parent are skipped: a GPU we cannot name by bus id
 * is one the core could never match to a runtime device anyway. */
#include "topo_hwloc.h"

#include <algorithm>
#include <cstring>
#include <strings.h>

namespace gpucoll {
namespace topo {
namespace detail {

namespace {

constexpr uint16_t kVendorNvidia = 0x10de;
constexpr uint16_t kVendorAmd = 0x1002;

bool is_gpu_pci_device(hwloc_obj_t pci)
{
    const uint16_t vendor = pci->attr->pcidev.vendor_id;
    const uint16_t cls = pci->attr->pcidev.class_id;
    if (vendor != kVendorNvidia && vendor != kVendorAmd)
        return false;
    /* 0x0300 VGA, 0x0302 3D controller (NVIDIA datacenter GPUs),
     * 0x0380 other display controller (AMD Instinct MI100/MI200/MI300). */
    return cls == 0x0300 || cls == 0x0302 || cls == 0x0380;
}

bool equals_nocase(const char *a, const char *b) { return a && b && strcasecmp(a, b) == 0; }

/* OS devices created by hwloc's GPU plugins. hwloc 2.x names the plugin in
 * `subtype`; older XMLs only have the "Backend" or "CoProcType" info. */
bool is_gpu_os_device(hwloc_obj_t osdev)
{
    static const char *const kinds[] = {"CUDA", "NVML", "RSMI"};
    for (const char *kind : kinds) {
        if (equals_nocase(osdev->subtype, kind) ||
            equals_nocase(hwloc_obj_get_info_by_name(osdev, "Backend"), kind) ||
            equals_nocase(hwloc_obj_get_info_by_name(osdev, "CoProcType"), kind))
            return true;
    }
    return false;
}

FoundGpu *find_or_add(std::vector<FoundGpu> *gpus, hwloc_obj_t pci)
{
    for (FoundGpu &g : *gpus)
        if (g.obj == pci)
            return &g;
    FoundGpu g;
    g.obj = pci;
    gpus->push_back(g);
    return &gpus->back();
}

/* Bus id, ids, model, locality and OS device names of one GPU. */
void describe(hwloc_topology_t topo, FoundGpu *g)
{
    hwloc_obj_t pci = g->obj;
    Gpu &info = g->info;
    info.bus_id = pci_bus_id_of(pci);
    info.bus_id_str = format_pci_bus_id(info.bus_id);
    info.vendor_id = pci->attr->pcidev.vendor_id;
    info.device_id = pci->attr->pcidev.device_id;
    info.numa_nodes = numa_nodes_of(topo, pci);
    info.cpuset = cpuset_of(topo, pci);
    hwloc_obj_t package = package_of(topo, pci);
    info.socket = package ? (int)package->os_index : -1;

    for (hwloc_obj_t child = pci->io_first_child; child; child = child->next_sibling) {
        if (child->type != HWLOC_OBJ_OS_DEVICE)
            continue;
        const bool gpu_like = child->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU ||
                              child->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC;
        if (!gpu_like || !child->name)
            continue;
        info.os_devices.push_back(child->name);
        if (info.model.empty())
            info.model = info_of(child, "GPUModel");
    }
    if (info.model.empty())
        info.model = info_of(pci, "PCIDevice"); /* from the PCI id database, if hwloc had one */
}

} // namespace

std::vector<FoundGpu> find_gpus(hwloc_topology_t topo)
{
    std::vector<FoundGpu> gpus;
    for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci; pci = hwloc_get_next_pcidev(topo, pci))
        if (is_gpu_pci_device(pci))
            find_or_add(&gpus, pci);
    for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
        if (!is_gpu_os_device(os))
            continue;
        if (hwloc_obj_t pci = pci_device_of(os))
            find_or_add(&gpus, pci);
    }

    for (FoundGpu &g : gpus)
        describe(topo, &g);
    std::sort(gpus.begin(), gpus.end(),
              [](const FoundGpu &a, const FoundGpu &b) { return a.info.bus_id < b.info.bus_id; });
    for (size_t i = 0; i < gpus.size(); ++i)
        gpus[i].info.index = (int)i;
    return gpus;
}

} // namespace detail
} // namespace topo
} // namespace gpucoll
