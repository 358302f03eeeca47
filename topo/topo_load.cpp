/* Loading a Topology from the live machine or an hwloc XML file.
 *
 * Both paths end in snapshot(): everything the core needs is copied out of
 * hwloc, so the hwloc handle never outlives the call. */
#include "topo_hwloc.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace gpucoll {
namespace topo {

namespace {

using detail::HwlocHandle;

void snapshot(hwloc_topology_t hw, const std::string &source, Topology *out)
{
    Topology t;
    t.source = source;
    t.hostname = detail::info_of(hwloc_get_root_obj(hw), "HostName");
    const int numa = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
    const int sockets = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PACKAGE);
    t.num_numa_nodes = numa > 0 ? (unsigned)numa : 0;
    t.num_sockets = sockets > 0 ? (unsigned)sockets : 0;

    std::vector<detail::FoundGpu> gpus = detail::find_gpus(hw);
    std::vector<detail::FoundNic> nics = detail::find_nics(hw);
    std::vector<detail::FoundNic> rdma_nics; /* same indexes as in `nics` */
    for (const detail::FoundNic &n : nics)
        if (n.info.rdma)
            rdma_nics.push_back(n);
    for (detail::FoundGpu &g : gpus) {
        g.info.nearest_nic = detail::nearest_nic(g.obj, nics);
        g.info.nearest_rdma_nic = detail::nearest_nic(g.obj, rdma_nics);
    }

    for (const detail::FoundGpu &g : gpus)
        t.gpus.push_back(g.info);
    for (const detail::FoundNic &n : nics)
        t.nics.push_back(n.info);
    detail::build_links(hw, gpus, &t); /* needs t.gpus sized for link() */
    *out = std::move(t);
}

} // namespace

gpucoll_status_t load_live_topology(Topology *out)
{
    if (!out)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "load_live_topology: null output");
    HwlocHandle hw;
    if (hwloc_topology_init(hw.init_slot()) != 0)
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "hwloc_topology_init failed: %s", std::strerror(errno));
    /* "Important" I/O is enough: GPUs, NICs and the bridges above them
     * (hwloc 2.9 also keeps the NVSwitches its NVML plugin links GPUs to). */
    hwloc_topology_set_io_types_filter(hw.get(), HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* The OpenCL plugin creates contexts on every device and the GL plugin
     * probes X displays (it can hang on a stale DISPLAY); neither tells us
     * anything the PCI tree and the CUDA/NVML/RSMI plugins do not. Best
     * effort: an hwloc without these plugins ignores the request. */
    hwloc_topology_set_components(hw.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
    hwloc_topology_set_components(hw.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
    if (hwloc_topology_load(hw.get()) != 0)
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "hwloc could not load this machine's topology: %s",
                            std::strerror(errno));
    snapshot(hw.get(), "live machine", out);
    return GPUCOLL_SUCCESS;
}

gpucoll_status_t load_xml_topology(const std::string &path, Topology *out)
{
    if (!out)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "load_xml_topology: null output");
    /* hwloc's own message for a missing file is a bare -1; say which file. */
    if (FILE *f = std::fopen(path.c_str(), "r"))
        std::fclose(f);
    else
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "cannot read hwloc XML file '%s': %s", path.c_str(),
                            std::strerror(errno));

    HwlocHandle hw;
    if (hwloc_topology_init(hw.init_slot()) != 0)
        return gpucoll_fail(GPUCOLL_ERR_INTERNAL, "hwloc_topology_init failed: %s", std::strerror(errno));
    if (hwloc_topology_set_xml(hw.get(), path.c_str()) != 0)
        return gpucoll_fail(GPUCOLL_ERR_INVALID, "hwloc refused XML file '%s': %s", path.c_str(),
                            std::strerror(errno));
    /* Keep every I/O object the file has: it was filtered when written. */
    hwloc_topology_set_io_types_filter(hw.get(), HWLOC_TYPE_FILTER_KEEP_ALL);
    if (hwloc_topology_load(hw.get()) != 0)
        return gpucoll_fail(GPUCOLL_ERR_INVALID,
                            "hwloc could not parse '%s' as a topology (hwloc %s reads the XML of "
                            "`lstopo --of xml`; set HWLOC_XML_VERBOSE=1 for details)",
                            path.c_str(), HWLOC_VERSION);
    snapshot(hw.get(), path, out);
    return GPUCOLL_SUCCESS;
}

} // namespace topo
} // namespace gpucoll
