# The component loads only into an Open MPI with the coll module layout it
# was built for (mca_coll_gpu/coll_gpu_compat.h: 4.1.x, 5.0.0-5.0.9, 5.0.10+).
# A preloaded MPI_Get_library_version (fake_library_version.c) makes the
# running library claim another release: across a layout boundary coll/gpu
# must refuse at init_query, naming both releases at verbose 0, and the
# collectives still pass (through the other components); within its layout
# it must load as usual.
add_library(fake_library_version SHARED fake_library_version.c)
# mpi.h only: the preload must not pull libmpi into mpirun itself.
target_include_directories(fake_library_version PRIVATE ${MPI_C_INCLUDE_DIRS})

string(REPLACE "." ";" _v "${COLL_GPU_OMPI_VERSION}")
list(GET _v 0 _major)
list(GET _v 1 _minor)
list(GET _v 2 _release)
if(_major EQUAL 4)
  set(_other "5.0.7")
  if(_release EQUAL 8)
    set(_same "4.1.0")
  else()
    set(_same "4.1.8")
  endif()
elseif(_release LESS 10)
  set(_other "5.0.10")
  if(_release EQUAL 9)
    set(_same "5.0.0")
  else()
    set(_same "5.0.9")
  endif()
else()
  set(_other "5.0.9")
  math(EXPR _next "${_release} + 1")
  set(_same "5.0.${_next}")
endif()

foreach(kind other same)
  coll_gpu_add_mpi_test(NAME mpi_component_version_${kind}_layout NP 2 LABELS cpu
    COMMAND $<TARGET_FILE:coll_check> --mem host --quick MCA ${_cpu_mca} coll_gpu_verbose=10
    ENV "LD_PRELOAD=$<TARGET_FILE:fake_library_version>" "COLL_GPU_FAKE_LIBRARY_VERSION=Open MPI v${_${kind}}")
endforeach()
string(REPLACE "." "\\." _built_re "${COLL_GPU_OMPI_VERSION}")
string(REPLACE "." "\\." _other_re "${_other}")
string(REPLACE "." "\\." _same_re "${_same}")
set_tests_properties(mpi_component_version_other_layout PROPERTIES
  PASS_REGULAR_EXPRESSION "coll:gpu: not loading: built against Open MPI ${_built_re} but running in Open MPI ${_other_re}, whose coll module layout differs"
  FAIL_REGULAR_EXPRESSION "coll:gpu: enabled;FAIL;[1-9][0-9]* failed")
set_tests_properties(mpi_component_version_same_layout PROPERTIES
  PASS_REGULAR_EXPRESSION "built against Open MPI ${_built_re}, running in ${_same_re}: same module layout.*coll:gpu: enabled on MPI_COMM_WORLD \\(2 ranks\\)"
  FAIL_REGULAR_EXPRESSION "not loading;FAIL;[1-9][0-9]* failed")

# Priority (docs/ompi_versions.md): with a module at HPC-X hcoll's priority 90
# (here coll/basic raised to 90), coll/gpu's default must still be enabled
# after it, i.e. sit on top with that module as prev; the collectives then
# pass through it. One rank, so that the selection lines do not interleave.
coll_gpu_add_mpi_test(NAME mpi_component_above_priority90 NP 1 LABELS cpu
  COMMAND $<TARGET_FILE:coll_check> --mem host --quick
  MCA ${_cpu_mca} coll_basic_priority=90 coll_base_verbose=9)
set_tests_properties(mpi_component_above_priority90 PROPERTIES
  PASS_REGULAR_EXPRESSION "selecting +basic, priority +90, Enabled.*selecting +gpu, priority +95, Enabled"
  FAIL_REGULAR_EXPRESSION "FAIL;[1-9][0-9]* failed")
