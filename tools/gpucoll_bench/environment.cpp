#include "environment.hpp"

#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "check.hpp"

#if defined(OPEN_MPI)
#include <mpi-ext.h>
#endif

// Returns "loaded (coll_gpu_path = auto)" or why not: coll/gpu registers its
// MCA parameters, visible as MPI_T control variables, when Open MPI loads it.
std::string coll_gpu_status()
{
    int provided, n = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "unknown (no MPI_T)";
    // Open MPI unloads a coll component that declines (coll/gpu does on a
    // machine without GPU) and its variables go with it.
    std::string status = "not loaded (not on the component path, excluded, or declined: no GPU?); "
                         "the mpi path is Open MPI's own collectives";
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[16], text[256] = "";
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope, count;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                                &bind, &scope) != MPI_SUCCESS || std::strcmp(name, "coll_gpu_path") != 0)
            continue;
        MPI_T_cvar_handle h;
        if (MPI_T_cvar_handle_alloc(i, nullptr, &h, &count) == MPI_SUCCESS) {
            if (type == MPI_CHAR && count < (int)sizeof text) {
                MPI_T_cvar_read(h, text);
            } else if (type == MPI_INT) {
                int v = 0, items = 0, len;
                char item[64];
                MPI_T_cvar_read(h, &v);
                std::snprintf(text, sizeof text, "%d", v);
                if (enumtype != MPI_T_ENUM_NULL) {
                    len = sizeof item;
                    MPI_T_enum_get_info(enumtype, &items, item, &len);
                    for (int j = 0; j < items; j++) {
                        int value;
                        len = sizeof item;
                        if (MPI_T_enum_get_item(enumtype, j, &value, item, &len) == MPI_SUCCESS && value == v)
                            std::snprintf(text, sizeof text, "%s", item);
                    }
                }
            }
            MPI_T_cvar_handle_free(&h);
        }
        status = std::string("loaded (coll_gpu_path = ") + (text[0] ? text : "?") + ")";
        break;
    }
    MPI_T_finalize();
    return status;
}

std::vector<size_t> sweep_sizes(const Options &o)
{
    std::vector<size_t> sizes;
    for (double s = (double)o.min_bytes; s <= (double)o.max_bytes * 1.0000001; s *= o.factor) {
        size_t v = (size_t)(s + 0.5);
        if (sizes.empty() || v > sizes.back()) sizes.push_back(v);
    }
    return sizes;
}

// Which GPU each rank uses, gathered on rank 0 for the header.
std::vector<std::string> describe_ranks(bool device, int dev, MPI_Comm comm, int rank, int nranks)
{
    char mine[160];
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    if (device) {
        cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
        std::snprintf(mine, sizeof mine, "%.40s GPU %d (%.60s, PCI %04x:%02x:%02x)", host, dev, prop.name,
                      prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    } else {
        std::snprintf(mine, sizeof mine, "%.40s host memory", host);
    }
    std::vector<char> all(rank == 0 ? sizeof mine * nranks : 1);
    MPI_CHECK(MPI_Gather(mine, sizeof mine, MPI_CHAR, all.data(), sizeof mine, MPI_CHAR, 0, comm));
    std::vector<std::string> out;
    if (rank == 0)
        for (int r = 0; r < nranks; r++) out.emplace_back(&all[r * sizeof mine]);
    return out;
}

// True on every rank when all ranks run on one GPU (one node, one PCI
// address; several ranks under MPS): they then share its HBM, whose copy rate
// bounds every collective. Collective over MPI_COMM_WORLD.
bool all_on_one_gpu(int dev, int local_size, int nranks)
{
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    long long id[2];
    id[0] = ((long long)prop.pciDomainID << 16) | (prop.pciBusID << 8) | prop.pciDeviceID;
    id[1] = -id[0];
    // one allreduce gives the smallest id and, negated, the largest
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, id, 2, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD));
    return local_size == nranks && id[0] == -id[1];
}

bool mpi_cuda_aware()
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() == 1;
#else
    return false;
#endif
}
