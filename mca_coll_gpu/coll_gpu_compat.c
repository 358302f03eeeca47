/* Refusing to load into an Open MPI whose coll module layout differs from the
 * one this component was compiled against (coll_gpu_compat.h). */
#include "coll_gpu.h"

#include <stdio.h>
#include <string.h>

bool coll_gpu_runtime_version(int *major, int *minor, int *release)
{
    /* MPI_Get_library_version may be called at any time (MPI-3): libmpi's own
     * "Open MPI vX.Y.Z[greek], package: ..." */
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    memset(text, 0, sizeof text);
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return false;
    text[sizeof text - 1] = '\0';
    const char *v = strstr(text, "Open MPI v");
    return v != NULL && sscanf(v, "Open MPI v%d.%d.%d", major, minor, release) == 3;
}

int coll_gpu_check_runtime_version(void)
{
    int major = 0, minor = 0, release = 0;
    if (!coll_gpu_runtime_version(&major, &minor, &release)) {
        opal_output(0, "coll:gpu: not loading: cannot read the running Open MPI's version from "
                       "MPI_Get_library_version (built against Open MPI %d.%d.%d)",
                    OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    int running = COLL_GPU_LAYOUT_OF(major, minor, release);
    if (running != COLL_GPU_BUILT_LAYOUT) {
        opal_output(0, "coll:gpu: not loading: built against Open MPI %d.%d.%d but running in Open MPI "
                       "%d.%d.%d, whose coll module layout differs (4.1.x, 5.0.0-5.0.9 and 5.0.10+ each "
                       "need their own build of mca_coll_gpu.so); collectives run without coll/gpu",
                    OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION, major, minor, release);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    COLL_GPU_VERBOSE(10, "built against Open MPI %d.%d.%d, running in %d.%d.%d: same module layout",
                     OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION, major, minor, release);
    return OMPI_SUCCESS;
}
