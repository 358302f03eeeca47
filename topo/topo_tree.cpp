/* Small hwloc tree helpers. hwloc's own helpers assume CPU-side objects in
 * places (I/O objects carry negative special depths), so ancestry is walked by
 * hand through `parent` pointers here. */
#include "topo_hwloc.h"

#include <cstdlib>

namespace gpucoll {
namespace topo {
namespace detail {

int tree_depth(hwloc_obj_t obj)
{
    int depth = 0;
    for (hwloc_obj_t o = obj ? obj->parent : nullptr; o; o = o->parent)
        ++depth;
    return depth;
}

hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    if (!a || !b)
        return nullptr;
    int da = tree_depth(a), db = tree_depth(b);
    for (; da > db; --da)
        a = a->parent;
    for (; db > da; --db)
        b = b->parent;
    while (a != b) {
        a = a->parent;
        b = b->parent;
    }
    return a;
}

hwloc_obj_t pci_device_of(hwloc_obj_t obj)
{
    for (hwloc_obj_t o = obj; o; o = o->parent) {
        if (o->type == HWLOC_OBJ_PCI_DEVICE)
            return o;
        if (o->type != HWLOC_OBJ_OS_DEVICE)
            return nullptr; /* only step over OS devices: a bridge is not "the" device */
    }
    return nullptr;
}

hwloc_obj_t package_of(hwloc_topology_t topo, hwloc_obj_t obj)
{
    for (hwloc_obj_t o = hwloc_get_non_io_ancestor_obj(topo, obj); o; o = o->parent)
        if (o->type == HWLOC_OBJ_PACKAGE)
            return o;
    /* I/O attached above the packages (e.g. to the Machine in VMs and in
     * XMLs without locality) is still unambiguous with a single package. */
    if (hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE) == 1)
        return hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    return nullptr;
}

std::vector<unsigned> numa_nodes_of(hwloc_topology_t topo, hwloc_obj_t obj)
{
    std::vector<unsigned> nodes;
    hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(topo, obj);
    if (!cpu_side || !cpu_side->nodeset)
        return nodes;
    unsigned id;
    hwloc_bitmap_foreach_begin(id, cpu_side->nodeset) { nodes.push_back(id); }
    hwloc_bitmap_foreach_end();
    return nodes;
}

std::string cpuset_of(hwloc_topology_t topo, hwloc_obj_t obj)
{
    hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(topo, obj);
    if (!cpu_side || !cpu_side->cpuset)
        return "";
    char *text = nullptr;
    if (hwloc_bitmap_list_asprintf(&text, cpu_side->cpuset) < 0 || !text)
        return "";
    std::string result(text);
    std::free(text);
    return result;
}

PciBusId pci_bus_id_of(hwloc_obj_t pcidev)
{
    PciBusId id;
    id.domain = pcidev->attr->pcidev.domain;
    id.bus = pcidev->attr->pcidev.bus;
    id.device = pcidev->attr->pcidev.dev;
    id.function = pcidev->attr->pcidev.func;
    return id;
}

std::string info_of(hwloc_obj_t obj, const char *name)
{
    const char *value = obj ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
    return value ? value : "";
}

} // namespace detail
} // namespace topo
} // namespace gpucoll
