/* The entry points of the neighbourhood collectives (communicators with a
 * topology): staged through host memory where a buffer is on the device
 * (Open MPI's own modules send device pointers point to point, a crash
 * without a CUDA-aware PML); neighbour exchanges are halo-sized and have no
 * peer kernel. */
#include "coll_gpu.h"

/* MPI_Neighbor_allgather */
COLL_GPU_ENTRIES(neighbor_allgather, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                 ompi_datatype_t *rdtype),
                 .kind = COLL_GPU_NEIGHBOR_ALLGATHER, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype,
                 .rbuf = rbuf, .rcount = (size_t)rcount, .rdtype = rdtype)

/* MPI_Neighbor_allgatherv */
COLL_GPU_ENTRIES(neighbor_allgatherv, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                 const int *rcounts, const int *displs, ompi_datatype_t *rdtype),
                 .kind = COLL_GPU_NEIGHBOR_ALLGATHERV, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype,
                 .rbuf = rbuf, .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype)

/* MPI_Neighbor_alltoall */
COLL_GPU_ENTRIES(neighbor_alltoall, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                 ompi_datatype_t *rdtype),
                 .kind = COLL_GPU_NEIGHBOR_ALLTOALL, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype,
                 .rbuf = rbuf, .rcount = (size_t)rcount, .rdtype = rdtype)

/* MPI_Neighbor_alltoallv */
COLL_GPU_ENTRIES(neighbor_alltoallv, (const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                 void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype),
                 .kind = COLL_GPU_NEIGHBOR_ALLTOALLV, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls,
                 .sdtype = sdtype, .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtype = rdtype)

/* MPI_Neighbor_alltoallw */
COLL_GPU_ENTRIES(neighbor_alltoallw, (const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                 ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const MPI_Aint *rdispls,
                 ompi_datatype_t *const *rdtypes),
                 .kind = COLL_GPU_NEIGHBOR_ALLTOALLW, .sbuf = sbuf, .scounts = scounts, .sdispls_aint = sdispls,
                 .sdtypes = sdtypes, .rbuf = rbuf, .rcounts = rcounts, .rdispls_aint = rdispls, .rdtypes = rdtypes)

void coll_gpu_entries_install_neighbor(mca_coll_base_module_t *m)
{
    COLL_GPU_INSTALL_ENTRIES(m, neighbor_allgather);
    COLL_GPU_INSTALL_ENTRIES(m, neighbor_allgatherv);
    COLL_GPU_INSTALL_ENTRIES(m, neighbor_alltoall);
    COLL_GPU_INSTALL_ENTRIES(m, neighbor_alltoallv);
    COLL_GPU_INSTALL_ENTRIES(m, neighbor_alltoallw);
}
