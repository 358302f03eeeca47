# Test helpers shared by every folder that registers tests.
#
# Labels: `cpu` runs anywhere (no GPU needed); `gpu` needs a GPU and the test
# exits 77 (ctest reports "skipped") without one; `mpi` runs under mpirun.
#
#   coll_gpu_add_test(NAME n LABELS cpu COMMAND exe args...)
#   coll_gpu_add_mpi_test(NAME n NP 4 LABELS cpu mpi COMMAND exe args... [MCA coll_gpu_verbose=10 ...])
#
# MPI tests run with our build folder first on Open MPI's component path (then
# the system folders, since mca_base_component_path replaces the default list),
# so the freshly built mca_coll_gpu.so loads even where an older one is
# installed in ~/.openmpi/components (the first one found wins).

set(COLL_GPU_COMPONENT_BUILD_DIR ${CMAKE_BINARY_DIR}/component)
set(COLL_GPU_TEST_ENV
  "OMPI_MCA_mca_base_component_path=${COLL_GPU_COMPONENT_BUILD_DIR}:${OMPI_SYSTEM_COMPONENT_DIR}"
  "OMPI_ALLOW_RUN_AS_ROOT=1" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
  "MPIRUN=${MPIEXEC_EXECUTABLE}" # scripts/netns/two_host_mpirun.sh
  "OMPI_MCA_rmaps_base_oversubscribe=1"
  "PMIX_MCA_pcompress_base_silence_warning=1"
  # CI containers have no InfiniBand: keep UCX/openib from probing it noisily
  "OMPI_MCA_btl=self,vader,tcp" "OMPI_MCA_pml=ob1"
  "NCCL_NVLS_ENABLE=0")
# Open MPI 5.0's bundled PMIx also reads OMPI_MCA_mca_base_component_path and
# warns about every file there that is not a PMIx component ("bad prefix"):
# give it its own folder.
if(COLL_GPU_OMPI_PREFIX AND IS_DIRECTORY "${COLL_GPU_OMPI_PREFIX}/lib/pmix")
  list(APPEND COLL_GPU_TEST_ENV "PMIX_MCA_mca_base_component_path=${COLL_GPU_OMPI_PREFIX}/lib/pmix")
endif()

function(coll_gpu_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "LABELS;COMMAND;ENV" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77
    TIMEOUT ${T_TIMEOUT} ENVIRONMENT "${COLL_GPU_TEST_ENV};${T_ENV}")
  # One gpu test at a time under ctest -j: where ranks share GPUs their
  # kernels take turns with every other process's, and with ten or more
  # processes on one GPU a kernel's wait for its peers once ran past the
  # 60 s timeout (docs/testing.md).
  if("gpu" IN_LIST T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES RESOURCE_LOCK gpu_devices)
  endif()
endfunction()

function(coll_gpu_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;NP;TIMEOUT;BIND" "LABELS;COMMAND;MCA;ENV" ${ARGN})
  if(NOT T_BIND)
    set(T_BIND none)
  endif()
  set(cmd ${MPIEXEC_EXECUTABLE} -n ${T_NP} --oversubscribe --bind-to ${T_BIND})
  foreach(kv ${T_MCA})
    string(REPLACE "=" ";" kv_list "${kv}")
    list(GET kv_list 0 k)
    list(GET kv_list 1 v)
    list(APPEND cmd --mca ${k} ${v})
  endforeach()
  set(labels ${T_LABELS})
  list(APPEND labels mpi)
  list(REMOVE_DUPLICATES labels)
  coll_gpu_add_test(NAME ${T_NAME} LABELS ${labels} COMMAND ${cmd} ${T_COMMAND}
    TIMEOUT ${T_TIMEOUT} ENV ${T_ENV})
endfunction()
