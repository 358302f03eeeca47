/* The entry points of data movement: each names its MPI arguments in a call
 * record and hands it to coll_gpu_run (coll_gpu_route.c), which decides
 * where it runs. */
#include "coll_gpu.h"

/* MPI_Bcast */
COLL_GPU_ENTRIES(bcast, (void *buf, int count, ompi_datatype_t *dtype, int root),
                 .kind = COLL_GPU_BCAST, .rbuf = buf, .rcount = (size_t)count, .sdtype = dtype, .rdtype = dtype,
                 .root = root)

/* MPI_Allgather */
COLL_GPU_ENTRIES(allgather, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                 ompi_datatype_t *rdtype),
                 .kind = COLL_GPU_ALLGATHER, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype, .rbuf = rbuf,
                 .rcount = (size_t)rcount, .rdtype = rdtype)

/* MPI_Allgatherv */
COLL_GPU_ENTRIES(allgatherv, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                 const int *displs, ompi_datatype_t *rdtype),
                 .kind = COLL_GPU_ALLGATHERV, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype, .rbuf = rbuf,
                 .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype)

/* MPI_Alltoall */
COLL_GPU_ENTRIES(alltoall, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                 ompi_datatype_t *rdtype),
                 .kind = COLL_GPU_ALLTOALL, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype, .rbuf = rbuf,
                 .rcount = (size_t)rcount, .rdtype = rdtype)

/* MPI_Alltoallv */
COLL_GPU_ENTRIES(alltoallv, (const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *sdtype,
                 void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *rdtype),
                 .kind = COLL_GPU_ALLTOALLV, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                 .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtype = rdtype)

/* MPI_Alltoallw */
COLL_GPU_ENTRIES(alltoallw, (const void *sbuf, const int *scounts, const int *sdispls, ompi_datatype_t *const *sdtypes,
                 void *rbuf, const int *rcounts, const int *rdispls, ompi_datatype_t *const *rdtypes),
                 .kind = COLL_GPU_ALLTOALLW, .sbuf = sbuf, .scounts = scounts, .sdispls = sdispls, .sdtypes = sdtypes,
                 .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls, .rdtypes = rdtypes)

/* MPI_Gather */
COLL_GPU_ENTRIES(gather, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                 ompi_datatype_t *rdtype, int root),
                 .kind = COLL_GPU_GATHER, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype, .rbuf = rbuf,
                 .rcount = (size_t)rcount, .rdtype = rdtype, .root = root)

/* MPI_Gatherv */
COLL_GPU_ENTRIES(gatherv, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                 const int *displs, ompi_datatype_t *rdtype, int root),
                 .kind = COLL_GPU_GATHERV, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype, .rbuf = rbuf,
                 .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype, .root = root)

/* MPI_Scatter */
COLL_GPU_ENTRIES(scatter, (const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                 ompi_datatype_t *rdtype, int root),
                 .kind = COLL_GPU_SCATTER, .sbuf = sbuf, .scount = (size_t)scount, .sdtype = sdtype, .rbuf = rbuf,
                 .rcount = (size_t)rcount, .rdtype = rdtype, .root = root)

/* MPI_Scatterv */
COLL_GPU_ENTRIES(scatterv, (const void *sbuf, const int *scounts, const int *displs, ompi_datatype_t *sdtype,
                 void *rbuf, int rcount, ompi_datatype_t *rdtype, int root),
                 .kind = COLL_GPU_SCATTERV, .sbuf = sbuf, .scounts = scounts, .sdtype = sdtype, .rbuf = rbuf,
                 .rcount = (size_t)rcount, .sdispls = displs, .rdtype = rdtype, .root = root)

void coll_gpu_entries_install_movement(mca_coll_base_module_t *m)
{
    COLL_GPU_INSTALL_ENTRIES(m, bcast);
    COLL_GPU_INSTALL_ENTRIES(m, allgather);
    COLL_GPU_INSTALL_ENTRIES(m, allgatherv);
    COLL_GPU_INSTALL_ENTRIES(m, alltoall);
    COLL_GPU_INSTALL_ENTRIES(m, alltoallv);
    COLL_GPU_INSTALL_ENTRIES(m, alltoallw);
    COLL_GPU_INSTALL_ENTRIES(m, gather);
    COLL_GPU_INSTALL_ENTRIES(m, gatherv);
    COLL_GPU_INSTALL_ENTRIES(m, scatter);
    COLL_GPU_INSTALL_ENTRIES(m, scatterv);
}
