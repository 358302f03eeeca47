/* Internal to topo/: the hwloc-facing helpers shared by the loader, the GPU
 * and NIC finders and the link classifier. Not part of the public API. */
#ifndef GPUCOLL_TOPO_HWLOC_H
#define GPUCOLL_TOPO_HWLOC_H

#include "gpucoll_topo.h"

#include <hwloc.h>

#include <string>
#include <vector>

namespace gpucoll {
namespace topo {
namespace detail {

/* Owns an hwloc topology handle for the duration of one load. */
class HwlocHandle {
public:
    HwlocHandle() = default;
    ~HwlocHandle()
    {
        if (topo_)
            hwloc_topology_destroy(topo_);
    }
    HwlocHandle(const HwlocHandle &) = delete;
    HwlocHandle &operator=(const HwlocHandle &) = delete;

    hwloc_topology_t *init_slot() { return &topo_; }
    hwloc_topology_t get() const { return topo_; }

private:
    hwloc_topology_t topo_ = nullptr;
};

/* A GPU or NIC as found in the tree: the public record plus the hwloc
 * object its locality is computed from (the PCI device when there is one). */
struct FoundGpu {
    Gpu info;
    hwloc_obj_t obj = nullptr;
};

struct FoundNic {
    Nic info;
    hwloc_obj_t obj = nullptr;
};

/* --- tree helpers (topo_tree.cpp) --- */

/* Number of parents between obj and the root (root = 0). Works for I/O
 * objects too, whose hwloc `depth` field is a negative special value. */
int tree_depth(hwloc_obj_t obj);

/* Deepest object that is an ancestor of (or equal to) both a and b. Unlike
 * hwloc_get_common_ancestor_obj() this accepts I/O objects. */
hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b);

/* Nearest PCI device at or above obj (an OS device's PCI function), or null. */
hwloc_obj_t pci_device_of(hwloc_obj_t obj);

/* The package obj's locality lies in: the package at or above its nearest
 * non-I/O ancestor, or the only package of the machine; null otherwise. */
hwloc_obj_t package_of(hwloc_topology_t topo, hwloc_obj_t obj);

/* NUMA node OS indexes and CPU list (e.g. "0-3,8") local to obj. */
std::vector<unsigned> numa_nodes_of(hwloc_topology_t topo, hwloc_obj_t obj);
std::string cpuset_of(hwloc_topology_t topo, hwloc_obj_t obj);

PciBusId pci_bus_id_of(hwloc_obj_t pcidev);

/* Value of an hwloc info attribute of obj, "" if absent. */
std::string info_of(hwloc_obj_t obj, const char *name);

/* --- finders (topo_gpus.cpp, topo_nics.cpp) --- */

/* Every GPU of the tree, sorted by bus id, indexes set. */
std::vector<FoundGpu> find_gpus(hwloc_topology_t topo);

/* Every NIC of the tree, sorted by bus id (NICs without one last), indexes set. */
std::vector<FoundNic> find_nics(hwloc_topology_t topo);

/* Index of the NIC sharing the deepest common ancestor with obj; ties go to
 * the lowest index. -1 when there is no NIC. */
int nearest_nic(hwloc_obj_t obj, const std::vector<FoundNic> &nics);

/* --- links (topo_links.cpp) --- */

/* The PCIe/CPU path between two GPUs, from the tree alone. */
LinkKind classify_pcie_path(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b);

/* Fills topo->links: tree classification everywhere, then NVLink from the
 * "NVLinkBandwidth" distances matrix when hwloc has one. */
void build_links(hwloc_topology_t hw, const std::vector<FoundGpu> &gpus, Topology *topo);

} // namespace detail
} // namespace topo
} // namespace gpucoll

#endif
