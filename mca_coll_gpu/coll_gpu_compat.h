/* What differs between the Open MPI releases coll/gpu builds against (4.1.x
 * and 5.0.x), in one place. The rest of the glue is written once: the coll
 * function signatures and the module slots we fill (COLL_GPU_WRAPPED in
 * coll_gpu.h: blocking, nonblocking, persistent *_init, reduce_local) are the
 * same in 4.1 (coll API 2.0.0) and 5.0 (2.4.0); only the struct around them
 * differs, which is why one build loads into one layout only (below).
 *
 * Included by coll_gpu.h after Open MPI's headers. */
#ifndef MCA_COLL_GPU_COMPAT_H
#define MCA_COLL_GPU_COMPAT_H

#include "ompi_config.h"
#include <stdio.h>

#include "opal/util/info.h"

#if OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION == 1
#  define COLL_GPU_OMPI_41 1
#elif OMPI_MAJOR_VERSION == 5 && OMPI_MINOR_VERSION == 0
#  define COLL_GPU_OMPI_50 1
#else
#  error "coll/gpu builds against Open MPI 4.1.x or 5.0.x (6.0's coll API 3.0.0 installs functions itself)"
#endif

/* The exported component symbol: 5.0 dropped OMPI_MODULE_DECLSPEC. */
#ifdef OMPI_MODULE_DECLSPEC
#  define COLL_GPU_DECLSPEC OMPI_MODULE_DECLSPEC
#else
#  define COLL_GPU_DECLSPEC OMPI_DECLSPEC
#endif

/* The request type an ended-with-an-error request carries so that MPI_Wait
 * and MPI_Test call its communicator's error handler, as MPI says. 4.1's
 * ompi_errhandler_request_invoke knows only PML, IO and WIN requests and
 * sends every other type to MPI_COMM_WORLD's handler (fatal by default,
 * whatever the communicator's is); 5.0 knows COLL as well. */
#ifdef COLL_GPU_OMPI_50
#  define COLL_GPU_FAILED_REQUEST_TYPE OMPI_REQUEST_COLL
#else
#  define COLL_GPU_FAILED_REQUEST_TYPE OMPI_REQUEST_PML
#endif

/* The coll framework version the component struct declares. */
/* MPI's own half-precision type where this Open MPI has one (5.0's
 * shortfloat extension: MPIX_C_FLOAT16, IEEE binary16, reduced by the
 * predefined ops), else a handle no call passes. */
#ifdef COLL_GPU_OMPI_50
#  include "mpi-ext.h"
#endif
#ifdef MPIX_C_FLOAT16
#  define COLL_GPU_MPIX_FLOAT16 MPIX_C_FLOAT16
#else
#  define COLL_GPU_MPIX_FLOAT16 MPI_DATATYPE_NULL
#endif

#ifdef COLL_GPU_OMPI_50
#  define COLL_GPU_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#else
#  define COLL_GPU_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#endif

/* Layout of mca_coll_base_module_t (which our module embeds and libmpi reads
 * past our slots: coll_module_disable, reduce_local, base_data) within one
 * coll API version:
 *   41     4.1.0 - 4.1.x  (coll API 2.0.0; the headers are the same through 4.1.8)
 *   50     5.0.0 - 5.0.9  (coll API 2.4.0)
 *   5010   5.0.10 and later 5.0.x: coll_revoke_local inserted before base_data
 *          while the coll API version stayed 2.4.0
 * A build loads only into a library of its own layout (checked at init_query
 * against the version the running library reports). */
#define COLL_GPU_LAYOUT_OF(major, minor, release)                                  \
    ((major) == 4 && (minor) == 1                   ? 41                           \
     : (major) == 5 && (minor) == 0 && (release) < 10 ? 50                         \
     : (major) == 5 && (minor) == 0                  ? 5010                        \
                                                     : -1)
#define COLL_GPU_BUILT_LAYOUT COLL_GPU_LAYOUT_OF(OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION)

/* Returns OMPI_SUCCESS if the running libmpi has the module layout this
 * component was built for; otherwise prints (verbose 0, i.e. always) which
 * release it was built against and which one is running, and returns
 * OMPI_ERR_NOT_AVAILABLE. coll_gpu_compat.c. */
int coll_gpu_check_runtime_version(void);

/* The release string the running library reports ("5.0.7"), parsed into
 * numbers; false if it is not Open MPI's. coll_gpu_compat.c. */
bool coll_gpu_runtime_version(int *major, int *minor, int *release);

/* Info value lookup into a caller's buffer: `*flag` is nonzero if the key was
 * set (4.1 copies into a buffer, 5.0 returns an opal_cstring_t). */
static inline int coll_gpu_info_get(opal_info_t *info, const char *key, char *value, size_t len, int *flag)
{
#ifdef COLL_GPU_OMPI_50
    opal_cstring_t *s = NULL;
    int rc = opal_info_get(info, key, &s, flag);
    if (rc == OPAL_SUCCESS && *flag && s != NULL) {
        snprintf(value, len, "%s", s->string);
    }
    if (s != NULL) OBJ_RELEASE(s);
    return rc;
#else
    return opal_info_get(info, key, (int)len - 1, value, flag);
#endif
}

#endif
