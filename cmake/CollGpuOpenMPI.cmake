# Which Open MPI coll/gpu builds against, runs its tests under and loads into.
# Everything MPI in the project follows it: the glue's internal headers, the
# component's libmpi/libopen-pal, the tests' and tools' mpicc flags, mpirun,
# ompi_info and the component folder the tests put first on the path.
#
#   (default)                        the Open MPI whose mpicc is on PATH (Debian 12: 4.1.4)
#   -DCOLL_GPU_OMPI_PREFIX=DIR       the one installed in DIR: DIR/bin/{mpicc,mpicxx,mpirun,ompi_info},
#                                    devel headers in DIR/include/openmpi (scripts/build-openmpi5.sh
#                                    prints such a prefix)
#   -DCOLL_GPU_OMPI_BUILD_TREE=DIR   the glue's internal headers from a configured and built Open MPI
#                                    build tree (its Makefile names the source tree) instead of
#                                    installed devel headers, for installs made without
#                                    --with-devel-headers; libraries and programs still come from the
#                                    prefix (or PATH), which must be that tree's release.
#
# Use a fresh build folder when changing either (FindMPI caches what it found).

set(COLL_GPU_OMPI_PREFIX "" CACHE PATH
  "Build and test against the Open MPI installed in this prefix (empty: the one whose mpicc is on PATH)")
set(COLL_GPU_OMPI_BUILD_TREE "" CACHE PATH
  "A configured, built Open MPI build tree to take internal headers from (installs without devel headers)")

if(COLL_GPU_OMPI_PREFIX)
  foreach(tool mpicc mpicxx mpirun ompi_info)
    if(NOT EXISTS "${COLL_GPU_OMPI_PREFIX}/bin/${tool}")
      message(FATAL_ERROR "COLL_GPU_OMPI_PREFIX=${COLL_GPU_OMPI_PREFIX}: no bin/${tool} there")
    endif()
  endforeach()
  # FindMPI takes everything (include dirs, libraries, link flags with the
  # wrapper's rpath) from these wrappers.
  set(MPI_C_COMPILER "${COLL_GPU_OMPI_PREFIX}/bin/mpicc" CACHE FILEPATH "Open MPI's C wrapper" FORCE)
  set(MPI_CXX_COMPILER "${COLL_GPU_OMPI_PREFIX}/bin/mpicxx" CACHE FILEPATH "Open MPI's C++ wrapper" FORCE)
  set(MPIEXEC_EXECUTABLE "${COLL_GPU_OMPI_PREFIX}/bin/mpirun" CACHE FILEPATH "mpirun of the tests" FORCE)
endif()

# Reads OMPI_{MAJOR,MINOR,RELEASE}_VERSION from the header `file` into `var` ("5.0.7").
function(_coll_gpu_header_version file var)
  file(STRINGS "${file}" _lines REGEX "^#define OMPI_(MAJOR|MINOR|RELEASE)_VERSION [0-9]+")
  set(_v "")
  foreach(part MAJOR MINOR RELEASE)
    string(REGEX MATCH "OMPI_${part}_VERSION ([0-9]+)" _m "${_lines}")
    list(APPEND _v "${CMAKE_MATCH_1}")
  endforeach()
  string(REPLACE ";" "." _v "${_v}")
  set(${var} "${_v}" PARENT_SCOPE)
endfunction()

# After find_package(MPI): sets OMPI_INTERNAL_INCLUDE_DIR (a list of folders),
# OMPI_INFO_EXECUTABLE and COLL_GPU_OMPI_VERSION, and checks that headers and
# the installed library are one release.
macro(coll_gpu_find_ompi_internals)
  if(COLL_GPU_OMPI_BUILD_TREE)
    set(_bt "${COLL_GPU_OMPI_BUILD_TREE}")
    if(NOT EXISTS "${_bt}/Makefile" OR NOT EXISTS "${_bt}/opal/include/opal_config.h")
      message(FATAL_ERROR "COLL_GPU_OMPI_BUILD_TREE=${_bt}: not a configured Open MPI build tree "
        "(no Makefile or opal/include/opal_config.h)")
    endif()
    file(STRINGS "${_bt}/Makefile" _srcline REGEX "^abs_top_srcdir = ")
    string(REGEX REPLACE "^abs_top_srcdir = *" "" _src "${_srcline}")
    # Generated headers (build tree) first, then the sources; bundled
    # third-party packages (PMIx) have theirs under 3rd-party/.
    set(OMPI_INTERNAL_INCLUDE_DIR "")
    foreach(top "${_bt}" "${_src}")
      foreach(sub "" /opal/include /ompi/include)
        if(IS_DIRECTORY "${top}${sub}")
          list(APPEND OMPI_INTERNAL_INCLUDE_DIR "${top}${sub}")
        endif()
      endforeach()
    endforeach()
    foreach(top "${_bt}" "${_src}")
      file(GLOB _third "${top}/3rd-party/*/include")
      foreach(d ${_third})
        if(IS_DIRECTORY "${d}")
          list(APPEND OMPI_INTERNAL_INCLUDE_DIR "${d}")
        endif()
      endforeach()
    endforeach()
    find_file(_ompi_mpi_h mpi.h PATHS "${_bt}/ompi/include" NO_DEFAULT_PATH NO_CACHE)
  else()
    if(COLL_GPU_OMPI_PREFIX)
      find_path(OMPI_INTERNAL_INCLUDE_DIR ompi_config.h PATHS "${COLL_GPU_OMPI_PREFIX}/include"
        PATH_SUFFIXES openmpi NO_DEFAULT_PATH)
    else()
      find_path(OMPI_INTERNAL_INCLUDE_DIR ompi_config.h
        HINTS ${MPI_C_INCLUDE_DIRS} ${MPI_C_HEADER_DIR}
        PATH_SUFFIXES openmpi)
    endif()
    if(NOT OMPI_INTERNAL_INCLUDE_DIR)
      message(FATAL_ERROR "Open MPI devel headers (ompi_config.h) not found: install libopenmpi-dev, "
        "or use an Open MPI configured --with-devel-headers (scripts/build-openmpi5.sh), "
        "or point COLL_GPU_OMPI_BUILD_TREE at its build tree")
    endif()
    find_file(_ompi_mpi_h mpi.h HINTS ${MPI_C_INCLUDE_DIRS} NO_CACHE)
  endif()
  if(NOT _ompi_mpi_h)
    message(FATAL_ERROR "Open MPI's mpi.h not found (MPI_C_INCLUDE_DIRS: ${MPI_C_INCLUDE_DIRS})")
  endif()
  _coll_gpu_header_version("${_ompi_mpi_h}" COLL_GPU_OMPI_VERSION)

  if(COLL_GPU_OMPI_PREFIX)
    find_program(OMPI_INFO_EXECUTABLE ompi_info PATHS "${COLL_GPU_OMPI_PREFIX}/bin" NO_DEFAULT_PATH)
  else()
    get_filename_component(_mpicc_dir "${MPI_C_COMPILER}" DIRECTORY)
    find_program(OMPI_INFO_EXECUTABLE ompi_info HINTS ${_mpicc_dir} /usr/bin)
  endif()
  # The library the tests run must be the release the glue is compiled for
  # (the component refuses to load into another module layout).
  if(OMPI_INFO_EXECUTABLE)
    execute_process(COMMAND ${OMPI_INFO_EXECUTABLE} --version OUTPUT_VARIABLE _info_version ERROR_QUIET)
    string(REGEX MATCH "v([0-9]+\\.[0-9]+\\.[0-9]+)" _m "${_info_version}")
    if(CMAKE_MATCH_1 AND NOT CMAKE_MATCH_1 STREQUAL COLL_GPU_OMPI_VERSION)
      message(FATAL_ERROR "Open MPI headers are ${COLL_GPU_OMPI_VERSION} but ${OMPI_INFO_EXECUTABLE} "
        "reports ${CMAKE_MATCH_1}: build against the headers of the Open MPI you run")
    endif()
  endif()
  message(STATUS "Open MPI ${COLL_GPU_OMPI_VERSION}: mpicc ${MPI_C_COMPILER}, mpirun ${MPIEXEC_EXECUTABLE}, "
    "internal headers ${OMPI_INTERNAL_INCLUDE_DIR}")
endmacro()
