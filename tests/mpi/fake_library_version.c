/* LD_PRELOAD for the version-refusal tests (compat_tests.cmake): the running
 * library reports COLL_GPU_FAKE_LIBRARY_VERSION ("Open MPI v5.0.10, ...")
 * from MPI_Get_library_version, which is what coll/gpu reads at init_query
 * to decide whether its module layout matches the library it was loaded
 * into. Nothing else is replaced. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((visibility("default"))) int MPI_Get_library_version(char *version, int *resultlen)
{
    const char *fake = getenv("COLL_GPU_FAKE_LIBRARY_VERSION");
    if (fake == NULL) fake = "(COLL_GPU_FAKE_LIBRARY_VERSION unset)";
    int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING, "%s, package: coll/gpu test preload", fake);
    if (n >= MPI_MAX_LIBRARY_VERSION_STRING) n = MPI_MAX_LIBRARY_VERSION_STRING - 1;
    *resultlen = n;
    return MPI_SUCCESS;
}
