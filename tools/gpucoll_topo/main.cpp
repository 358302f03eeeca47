/* gpucoll-topo: prints what coll/gpu sees of a machine (GPUs, bus ids, NUMA
 * placement, nearest NICs, GPU link matrix) and the plan it would use for a
 * given number of ranks per node.
 *
 *   gpucoll-topo [--xml FILE] [--nodes N] [--ranks-per-node R] [--virtual-node-size L]
 *
 * Exit status: 0 on success (including a machine without GPUs), 1 when the
 * topology cannot be loaded, 2 on bad usage. */
#include "topo_report.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void usage(std::FILE *out)
{
    std::fprintf(out,
                 "usage: gpucoll-topo [--xml FILE] [--nodes N] [--ranks-per-node R] [--virtual-node-size L]\n"
                 "  --xml FILE             read an hwloc XML file (lstopo --of xml) instead of this machine\n"
                 "  --nodes N              hosts in the example plan (default 1)\n"
                 "  --ranks-per-node R     ranks per host in the example plan (default: number of GPUs, >= 1)\n"
                 "  --virtual-node-size L  split each host into virtual nodes of L ranks, as\n"
                 "                         coll_gpu_virtual_node_size does (default: one node per host)\n");
}

bool parse_positive(const char *text, int *out)
{
    char *end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (!*text || *end || v < 1 || v > 1 << 20)
        return false;
    *out = (int)v;
    return true;
}

struct Options {
    std::string xml;
    int nodes = 1;
    int ranks_per_node = 0; /* 0: one per GPU */
    int virtual_node_size = 0; /* 0: real hosts */
};

/* Returns -1 to go on, else the exit status. */
int parse_args(int argc, char **argv, Options *opt)
{
    for (int i = 1; i < argc; ++i) {
        const char *arg = argv[i];
        if (!std::strcmp(arg, "-h") || !std::strcmp(arg, "--help")) {
            usage(stdout);
            return 0;
        }
        const bool takes_value = !std::strcmp(arg, "--xml") || !std::strcmp(arg, "--nodes") ||
                                 !std::strcmp(arg, "--ranks-per-node") || !std::strcmp(arg, "--virtual-node-size");
        if (!takes_value || i + 1 >= argc) {
            std::fprintf(stderr, "gpucoll-topo: %s '%s'\n", takes_value ? "missing value after" : "unknown option",
                         arg);
            usage(stderr);
            return 2;
        }
        const char *value = argv[++i];
        bool ok = true;
        if (!std::strcmp(arg, "--xml"))
            opt->xml = value;
        else if (!std::strcmp(arg, "--nodes"))
            ok = parse_positive(value, &opt->nodes);
        else if (!std::strcmp(arg, "--ranks-per-node"))
            ok = parse_positive(value, &opt->ranks_per_node);
        else
            ok = parse_positive(value, &opt->virtual_node_size);
        if (!ok) {
            std::fprintf(stderr, "gpucoll-topo: %s needs a positive integer, got '%s'\n", arg, value);
            return 2;
        }
    }
    return -1;
}

} // namespace

int main(int argc, char **argv)
{
    Options opt;
    const int status = parse_args(argc, argv, &opt);
    if (status >= 0)
        return status;

    gpucoll::topo::Topology topo;
    const gpucoll_status_t rc = opt.xml.empty() ? gpucoll::topo::load_live_topology(&topo)
                                                : gpucoll::topo::load_xml_topology(opt.xml, &topo);
    if (rc != GPUCOLL_SUCCESS) {
        std::fprintf(stderr, "gpucoll-topo: %s\n", gpucoll_last_error());
        return 1;
    }

    gpucoll::topo_tool::print_topology(stdout, topo);
    int ranks_per_node = opt.ranks_per_node;
    if (ranks_per_node == 0)
        ranks_per_node = topo.gpus.empty() ? 1 : (int)topo.gpus.size();
    if (!gpucoll::topo_tool::print_plan(stdout, topo, opt.nodes, ranks_per_node, opt.virtual_node_size))
        return 2;
    return 0;
}
