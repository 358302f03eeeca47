/* Open MPI's ompi/op/op.h includes this file, but --with-devel-headers never
 * installs it (it belongs to a noinst library). In every build we target a
 * Fortran INTEGER is a C int, so the conversions are plain casts. */
#ifndef COLL_GPU_SHIM_FINT_2_INT_H
#define COLL_GPU_SHIM_FINT_2_INT_H
#define OMPI_INT_2_FINT(a) ((MPI_Fint)(a))
#define OMPI_FINT_2_INT(a) ((int)(a))
#define OMPI_ARRAY_NAME_DECL(a)
#define OMPI_2_DIM_ARRAY_NAME_DECL(a, dim2)
#define OMPI_ARRAY_FINT_2_INT_ALLOC(in, n)
#define OMPI_ARRAY_FINT_2_INT(in, n)
#define OMPI_2_DIM_ARRAY_FINT_2_INT(in, n, dim2)
#define OMPI_ARRAY_FINT_2_INT_CLEANUP(in)
#define OMPI_SINGLE_NAME_DECL(a)
#define OMPI_ARRAY_NAME_CONVERT(a) a
#define OMPI_SINGLE_NAME_CONVERT(a) a
#define OMPI_INT_2_LOGICAL(a) a
#define OMPI_SINGLE_FINT_2_INT(in)
#define OMPI_SINGLE_INT_2_FINT(in)
#define OMPI_ARRAY_INT_2_FINT(in, n)
#endif
