/* What the MPI test programs of this folder share besides the GPU
 * (test_gpu.h): the names of the persistent collectives, and the closing
 * tally. */
#ifndef COLL_GPU_TEST_FORMS_H
#define COLL_GPU_TEST_FORMS_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#if defined(OPEN_MPI) && MPI_VERSION < 4
#include <mpi-ext.h>
#endif

/* P(Allreduce) names MPI-4's MPI_Allreduce_init (Open MPI 5.0 has it while it
 * reports MPI 3.1) or Open MPI 4.1's MPIX_Allreduce_init; P stays undefined
 * where the library has neither. */
#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5)
#define P(name) MPI_##name##_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define P(name) MPIX_##name##_init
#endif

/* Collective over MPI_COMM_WORLD: sums every rank's failures and checks,
 * rank 0 prints "<what>: N checks, M failed" (what: a printf format), and
 * returns the exit status (1 if any check failed anywhere). */
static inline int test_tally(int failures, int checks, const char *what, ...)
{
    int sums[2], mine[2] = {failures, checks}, rank;
    MPI_Allreduce(mine, sums, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        va_list ap;
        va_start(ap, what);
        vprintf(what, ap);
        va_end(ap);
        printf(": %d checks, %d failed\n", sums[1], sums[0]);
    }
    return sums[0] ? 1 : 0;
}

#endif
