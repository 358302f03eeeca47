/* gpucoll_topo: what the machine looks like to coll/gpu, and how a
 * communicator splits into node-local and cross-node groups.
 *
 * Two independent halves:
 *
 *  - Machine topology (hwloc): GPUs with their PCI bus id, NUMA/socket
 *    placement and nearest NIC, plus a GPU x GPU link matrix. A Topology is
 *    a plain snapshot: loading copies what we need out of hwloc and frees the
 *    hwloc handle, so it can be kept, copied and compared freely.
 *
 *  - Communicator plan (pure logic, no hwloc, no MPI): given where every rank
 *    runs ({node id, GPU bus id} per rank), the node-local groups, the
 *    cross-node groups and whether the layout is uniform. The core's
 *    hierarchical path takes its layout from it (core/hier_plan.cpp).
 *
 * Layering: uses common/ only (status codes via gpucoll_fail()); never calls
 * CUDA/HIP and never includes Open MPI headers. Runtime facts (peer access)
 * are passed in by the caller as plain data.
 *
 * Errors: every call returning gpucoll_status_t records a readable reason with
 * gpucoll_fail() (see gpucoll_last_error()). */
#ifndef GPUCOLL_TOPO_H
#define GPUCOLL_TOPO_H

#include "gpucoll_status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpucoll {
namespace topo {

/* ------------------------------------------------------------------ */
/* PCI bus ids                                                          */
/* ------------------------------------------------------------------ */

struct PciBusId {
    uint32_t domain = 0;
    uint32_t bus = 0;      /* 0..255 */
    uint32_t device = 0;   /* 0..31 */
    uint32_t function = 0; /* 0..7 */

    bool operator==(const PciBusId &o) const
    {
        return domain == o.domain && bus == o.bus && device == o.device && function == o.function;
    }
    bool operator!=(const PciBusId &o) const { return !(*this == o); }
    bool operator<(const PciBusId &o) const;
};

/* Parses "dddd:bb:dd.f" as printed by hwloc, cudaDeviceGetPCIBusId
 * ("0000:3B:00.0"), hipDeviceGetPCIBusId or nvidia-smi ("00000000:3B:00.0").
 * Hex digits in either case; the domain may be omitted ("3b:00.0") and so may
 * the function (".0" assumed). Returns false (no gpucoll_fail) on bad input. */
bool parse_pci_bus_id(const std::string &text, PciBusId *out);

/* Canonical form used everywhere in topo: lower case "0000:3b:00.0". */
std::string format_pci_bus_id(const PciBusId &id);

/* ------------------------------------------------------------------ */
/* Machine topology                                                     */
/* ------------------------------------------------------------------ */

struct Gpu {
    int index = -1;                   /* position in Topology::gpus */
    PciBusId bus_id;
    std::string bus_id_str;           /* canonical, see format_pci_bus_id() */
    uint16_t vendor_id = 0;           /* 0x10de NVIDIA, 0x1002 AMD */
    uint16_t device_id = 0;
    std::string model;                /* "NVIDIA H100 80GB HBM3" when hwloc knows it, else "" */
    std::vector<std::string> os_devices; /* hwloc OS device names: "cuda0", "nvml0", "rsmi0" */
    std::vector<unsigned> numa_nodes; /* OS indexes of the local NUMA node(s); all nodes when
                                         hwloc does not know the GPU's locality */
    int socket = -1;                  /* OS index of the local package, -1 if not exactly one */
    std::string cpuset;               /* local CPUs, list syntax "0-27,56-83" */
    int nearest_nic = -1;             /* index into Topology::nics, -1 when there is no NIC */
    int nearest_rdma_nic = -1;        /* the same among the NICs with an RDMA device, -1 when none has */
};

struct Nic {
    int index = -1;                   /* position in Topology::nics */
    std::string name;                 /* RDMA device if any ("mlx5_0"), else netdev ("eth0") */
    std::vector<std::string> os_devices; /* every OS device of this NIC: "mlx5_0", "ib0" */
    bool rdma = false;                /* has an OpenFabrics (verbs) device */
    std::vector<unsigned> active_ports; /* of the verbs device: ports hwloc reports active
                                           (Port<N>State 4), ascending; empty when it does not say */
    std::string bus_id_str;           /* "" when hwloc gave no PCI device for it */
    std::vector<unsigned> numa_nodes;
    int socket = -1;
};

/* How two GPUs reach each other, ordered from closest to farthest so callers
 * can compare (kind <= LinkKind::PcieSwitch ...). */
enum class LinkKind : int {
    Self = 0,
    NvLink = 1,      /* NVLink, direct or through NVSwitch (hwloc "NVLinkBandwidth") */
    PcieSwitch = 2,  /* below a common PCIe switch: traffic never reaches the CPU */
    HostBridge = 3,  /* below a common PCIe host bridge (root complex) */
    SameSocket = 4,  /* different host bridges of the same CPU package */
    CrossSocket = 5  /* through the CPU-to-CPU interconnect (or locality unknown) */
};

/* What the GPU runtime says about direct peer access (cudaDeviceCanAccessPeer);
 * Unknown until overlay_peer_access() is called. */
enum class PeerAccess : int { Unknown = 0, Yes = 1, No = 2 };

struct Link {
    LinkKind kind = LinkKind::CrossSocket; /* best path: NvLink if any, else pcie_path */
    LinkKind pcie_path = LinkKind::CrossSocket; /* the PCIe/CPU path alone (from the tree) */
    uint64_t nvlink_mbps = 0;         /* NVLink bandwidth in MB/s as hwloc reports it (0: none) */
    bool via_nvswitch = false;        /* the NVLink path goes through NVSwitch(es) */
    PeerAccess peer_access = PeerAccess::Unknown; /* direction: row GPU accessing column GPU */
};

struct Topology {
    std::string source;               /* "live machine" or the XML path */
    std::string hostname;             /* hwloc's HostName info, "" if absent */
    unsigned num_numa_nodes = 0;
    unsigned num_sockets = 0;
    bool has_nvlink_distances = false; /* an "NVLinkBandwidth" matrix was found and used */
    std::vector<Gpu> gpus;            /* sorted by PCI bus id (== CUDA_DEVICE_ORDER=PCI_BUS_ID) */
    std::vector<Nic> nics;            /* sorted by PCI bus id, NICs without one last */
    std::vector<Link> links;          /* gpus.size()^2, row-major: links[a * n + b] */

    const Link &link(int a, int b) const { return links[(size_t)a * gpus.size() + (size_t)b]; }
    Link &link(int a, int b) { return links[(size_t)a * gpus.size() + (size_t)b]; }
};

/* Loads the topology of the machine this process runs on, I/O devices
 * included. Slow-ish (tens of ms, more when hwloc's NVML plugin runs): call
 * once per process. */
gpucoll_status_t load_live_topology(Topology *out);

/* Loads a topology from an hwloc XML file (hwloc 2.x format, as written by
 * `lstopo --of xml`), keeping every I/O object the file has. */
gpucoll_status_t load_xml_topology(const std::string &path, Topology *out);

/* Index of the GPU with this PCI bus id (any syntax parse_pci_bus_id()
 * accepts), or -1 when unparsable or absent. */
int find_gpu_by_bus_id(const Topology &topo, const std::string &bus_id);

/* Overlays what the GPU runtime reports about peer access.
 * device_bus_ids[i] is the bus id of runtime device i (cudaDeviceGetPCIBusId);
 * can_access is row-major n x n (n = device_bus_ids.size()), nonzero when
 * device i can access device j (cudaDeviceCanAccessPeer(&v, i, j)). The
 * diagonal is ignored. Devices may be a subset of topo->gpus (e.g. under
 * CUDA_VISIBLE_DEVICES); links between GPUs not listed stay Unknown.
 * Fails with GPUCOLL_ERR_INVALID (topo unchanged) on a size mismatch, an
 * unknown or repeated bus id. */
gpucoll_status_t overlay_peer_access(Topology *topo, const std::vector<std::string> &device_bus_ids,
                                     const std::vector<uint8_t> &can_access);

/* True when direct GPU-to-GPU copies/loads between a and b are worth trying:
 * the runtime did not say No (both directions), whatever the hardware path. */
bool peer_access_possible(const Topology &topo, int a, int b);

/* The UCX_NET_DEVICES value that keeps UCX's network traffic on the RDMA
 * NIC nearest GPU `gpu` (the one below the same PCIe switch where there is
 * one, as NCCL picks): its verbs device with each active port
 * ("mlx5_2:1", "mlx5_0:1,mlx5_0:2"; port 1 when hwloc names no active one).
 * "" when the GPU is unknown or no NIC has an RDMA device (then UCX's own
 * choice, e.g. TCP over every interface, is left alone). */
std::string ucx_net_devices_near_gpu(const Topology &topo, int gpu);

/* Names for printing: "self", "nvlink", "pcie-switch", "host-bridge",
 * "same-socket", "cross-socket"; short forms as in `nvidia-smi topo -m`:
 * "X", "NV", "PIX", "PHB", "NODE", "SYS". */
const char *link_kind_name(LinkKind kind);
const char *link_kind_short_name(LinkKind kind);

/* ------------------------------------------------------------------ */
/* Communicator plan (pure logic)                                       */
/* ------------------------------------------------------------------ */

/* Where one rank runs; the caller gathers one per rank of the communicator. */
struct RankPlacement {
    std::string node_id;    /* anything equal exactly for ranks on the same host (hostname...) */
    std::string gpu_bus_id; /* the rank's current device; "" if it has none */
};

struct CommPlan {
    /* nodes[n] = ranks on node n, ascending. Node order = order of their
     * lowest rank, so the node holding rank 0 is node 0. */
    std::vector<std::vector<int>> nodes;
    /* cross_groups[i] = the rank with local index i on every node that has
     * one, in node order. cross_groups.size() = size of the largest node. */
    std::vector<std::vector<int>> cross_groups;
    std::vector<int> node_of_rank;   /* rank -> index into nodes */
    std::vector<int> local_index;    /* rank -> position within its node */
    bool uniform = true;             /* every node has the same number of ranks; the
                                        hierarchical (node-local x cross-node)
                                        algorithms need this */
    bool gpu_shared = false;         /* two ranks of one node use the same GPU bus id */
};

/* One rank's view of a CommPlan. */
struct RankPlan {
    int node = -1;                   /* index into CommPlan::nodes */
    int local_rank = -1;             /* position in local_group */
    std::vector<int> local_group;    /* ranks on the same node */
    int cross_rank = -1;             /* position in cross_group */
    std::vector<int> cross_group;    /* ranks with the same local index on the other nodes */
};

/* Builds the plan for ranks 0..placements.size()-1. Fails (INVALID) when the
 * list is empty or a node id is empty. */
gpucoll_status_t build_comm_plan(const std::vector<RankPlacement> &placements, CommPlan *out);

/* Splits the ranks of every host into virtual nodes of `ranks_per_node`
 * consecutive ranks (in rank order: the host's first ranks_per_node ranks
 * form virtual node 0, and so on), renaming node ids to "<node>#<k>"; a host
 * with exactly ranks_per_node ranks keeps its name. This lets one machine
 * exercise the inter-node path (coll_gpu_virtual_node_size). Fails (INVALID)
 * when ranks_per_node < 1 or a host's rank count is not a multiple of it. */
gpucoll_status_t split_virtual_nodes(const std::vector<RankPlacement> &placements, int ranks_per_node,
                                     std::vector<RankPlacement> *out);

/* The view of `rank` (0 <= rank < node_of_rank.size(), else an empty plan). */
RankPlan rank_plan(const CommPlan &plan, int rank);

} // namespace topo
} // namespace gpucoll

#endif
