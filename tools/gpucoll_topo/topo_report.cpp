#include "topo_report.h"

#include <string>

namespace gpucoll {
namespace topo_tool {

using namespace gpucoll::topo;

namespace {

std::string join(const std::vector<std::string> &items, const char *sep)
{
    std::string s;
    for (size_t i = 0; i < items.size(); ++i)
        s += (i ? sep : "") + items[i];
    return s;
}

std::string join_numbers(const std::vector<unsigned> &items)
{
    std::vector<std::string> text;
    for (unsigned v : items)
        text.push_back(std::to_string(v));
    return text.empty() ? "?" : join(text, ",");
}

std::string socket_text(int socket) { return socket < 0 ? "?" : std::to_string(socket); }

/* One matrix cell: "X", "NV50" (NVLink, GB/s), "NVS300" (through NVSwitch),
 * or the PCIe path's short name. */
std::string link_cell(const Link &l)
{
    if (l.kind == LinkKind::NvLink)
        return (l.via_nvswitch ? "NVS" : "NV") + std::to_string(l.nvlink_mbps / 1000);
    return link_kind_short_name(l.kind);
}

void print_gpus(std::FILE *out, const Topology &topo)
{
    std::fprintf(out, "GPUs: %zu\n", topo.gpus.size());
    if (topo.gpus.empty())
        std::fprintf(out, "  no GPU found in this topology: coll/gpu has nothing to accelerate here\n");
    for (const Gpu &g : topo.gpus) {
        const char *nic = g.nearest_nic >= 0 ? topo.nics[g.nearest_nic].name.c_str() : "-";
        std::fprintf(out, "  GPU%-2d %s  [%04x:%04x] %-28s numa %-3s socket %-2s cpus %-12s nic %-8s [%s]\n",
                     g.index, g.bus_id_str.c_str(), g.vendor_id, g.device_id,
                     g.model.empty() ? "(model unknown)" : g.model.c_str(), join_numbers(g.numa_nodes).c_str(),
                     socket_text(g.socket).c_str(), g.cpuset.empty() ? "?" : g.cpuset.c_str(), nic,
                     join(g.os_devices, " ").c_str());
    }
}

void print_nics(std::FILE *out, const Topology &topo)
{
    std::fprintf(out, "NICs: %zu\n", topo.nics.size());
    for (const Nic &n : topo.nics)
        std::fprintf(out, "  NIC%-2d %-10s %-12s %-5s numa %-3s socket %-2s [%s]\n", n.index, n.name.c_str(),
                     n.bus_id_str.empty() ? "(no PCI)" : n.bus_id_str.c_str(), n.rdma ? "rdma" : "net",
                     join_numbers(n.numa_nodes).c_str(), socket_text(n.socket).c_str(),
                     join(n.os_devices, " ").c_str());
}

void print_links(std::FILE *out, const Topology &topo)
{
    const int n = (int)topo.gpus.size();
    if (n < 2)
        return;
    std::fprintf(out, "Links (%s):\n",
                 topo.has_nvlink_distances ? "NVLink from hwloc's NVLinkBandwidth matrix"
                                           : "no NVLink information, PCIe tree only");
    std::fprintf(out, "       ");
    for (int b = 0; b < n; ++b)
        std::fprintf(out, " %-7s", ("GPU" + std::to_string(b)).c_str());
    std::fprintf(out, "\n");
    for (int a = 0; a < n; ++a) {
        std::fprintf(out, "  GPU%-2d", a);
        for (int b = 0; b < n; ++b)
            std::fprintf(out, " %-7s", link_cell(topo.link(a, b)).c_str());
        std::fprintf(out, "\n");
    }
    std::fprintf(out, "  X self, NV<GB/s> NVLink, NVS<GB/s> NVLink via NVSwitch, PIX same PCIe switch,\n"
                      "  PHB same host bridge, NODE same socket, SYS across sockets\n");
}

/* Rank r on host r / ranks_per_node with the GPU its local index maps to. */
std::vector<RankPlacement> synthetic_placements(const Topology &topo, int nodes, int ranks_per_node)
{
    std::vector<RankPlacement> ranks;
    for (int r = 0; r < nodes * ranks_per_node; ++r) {
        RankPlacement p;
        p.node_id = "host" + std::to_string(r / ranks_per_node);
        if (!topo.gpus.empty())
            p.gpu_bus_id = topo.gpus[(r % ranks_per_node) % topo.gpus.size()].bus_id_str;
        ranks.push_back(p);
    }
    return ranks;
}

} // namespace

std::string format_ranks(const std::vector<int> &ranks)
{
    std::string s;
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
            ++j;
        if (!s.empty())
            s += ",";
        s += std::to_string(ranks[i]);
        if (j > i)
            s += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
        i = j + 1;
    }
    return s;
}

void print_topology(std::FILE *out, const Topology &topo)
{
    std::fprintf(out, "Topology: %s%s%s\n", topo.source.c_str(), topo.hostname.empty() ? "" : ", host ",
                 topo.hostname.c_str());
    std::fprintf(out, "Sockets: %u  NUMA nodes: %u\n", topo.num_sockets, topo.num_numa_nodes);
    print_gpus(out, topo);
    print_nics(out, topo);
    print_links(out, topo);
}

bool print_plan(std::FILE *out, const Topology &topo, int nodes, int ranks_per_node, int virtual_node_size)
{
    std::vector<RankPlacement> ranks = synthetic_placements(topo, nodes, ranks_per_node);
    if (virtual_node_size > 0 && split_virtual_nodes(ranks, virtual_node_size, &ranks) != GPUCOLL_SUCCESS) {
        std::fprintf(stderr, "gpucoll-topo: %s\n", gpucoll_last_error());
        return false;
    }
    CommPlan plan;
    if (build_comm_plan(ranks, &plan) != GPUCOLL_SUCCESS) {
        std::fprintf(stderr, "gpucoll-topo: %s\n", gpucoll_last_error());
        return false;
    }
    std::fprintf(out, "Plan: %d host(s) x %d rank(s) per host", nodes, ranks_per_node);
    if (virtual_node_size > 0)
        std::fprintf(out, ", virtual nodes of %d rank(s)", virtual_node_size);
    std::fprintf(out, "\n");
    std::fprintf(out, "  nodes: %zu  uniform: %s  GPU shared within a node: %s\n", plan.nodes.size(),
                 plan.uniform ? "yes" : "no", plan.gpu_shared ? "yes" : "no");
    for (size_t n = 0; n < plan.nodes.size(); ++n) {
        const std::vector<int> &members = plan.nodes[n];
        std::fprintf(out, "  node %zu (%s): ranks %s\n", n, ranks[members[0]].node_id.c_str(),
                     format_ranks(members).c_str());
    }
    for (size_t i = 0; i < plan.cross_groups.size(); ++i) {
        const std::vector<int> &group = plan.cross_groups[i];
        const std::string &bus = ranks[group[0]].gpu_bus_id;
        std::fprintf(out, "  cross group %zu: ranks %s%s%s\n", i, format_ranks(group).c_str(),
                     bus.empty() ? "" : "  (GPU ", bus.empty() ? "" : (bus + ")").c_str());
    }
    return true;
}

} // namespace topo_tool
} // namespace gpucoll
