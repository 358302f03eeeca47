# The HIP platform (-DCOLL_GPU_PLATFORM=HIP): included by the top CMakeLists
# in place of the CUDA setup, before any target exists.
#
# Works with AMD's ROCm (/opt/rocm) and with the Debian/Ubuntu packages
# (hipcc, libamdhip64-dev), which CMake < 3.28 cannot use unaided: their
# clang lives beside other clang versions, does not know that ROCm is /usr,
# and hip-lang's package file sits in the multiarch lib folder.
#
# Besides the runtime target, it defines gpucoll_hip_link: a shared library
# made of every object of gpucoll_core/gpucoll_kernels/gpucoll_common, linked
# with --no-undefined, so that a build of it proves the HIP objects link
# (scripts/hip_compile_check.sh builds it; nothing of it runs).

if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
  # MI200 (CDNA2), what the HIP CI check compiles for. Set it explicitly, or
  # CMake asks rocm_agent_enumerator, which fails without an AMD GPU.
  set(CMAKE_HIP_ARCHITECTURES gfx90a)
endif()

find_program(COLL_GPU_HIPCONFIG hipconfig HINTS $ENV{ROCM_PATH}/bin /opt/rocm/bin)
set(_hip_rocm_root "")
if(COLL_GPU_HIPCONFIG)
  # hipconfig guesses the NVIDIA platform when nvcc is on PATH.
  set(_hip_env ${CMAKE_COMMAND} -E env HIP_PLATFORM=amd)
  execute_process(COMMAND ${_hip_env} ${COLL_GPU_HIPCONFIG} --rocmpath
    OUTPUT_VARIABLE _hip_rocm_root OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX})
    # The clang hipcc itself drives: Debian's is clang++-15 while plain clang++
    # may be another version without HIP support.
    execute_process(COMMAND ${_hip_env} ${COLL_GPU_HIPCONFIG} --hipclangpath
      OUTPUT_VARIABLE _hip_clang_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${_hip_env} ${COLL_GPU_HIPCONFIG} --cpp_config
      OUTPUT_VARIABLE _hip_cpp_config ERROR_QUIET)
    set(_hip_clang_names clang++)
    if(_hip_cpp_config MATCHES "lib/clang/([0-9]+)")
      list(PREPEND _hip_clang_names clang++-${CMAKE_MATCH_1})
    endif()
    find_program(COLL_GPU_HIP_CLANG NAMES ${_hip_clang_names} HINTS ${_hip_clang_dir} NO_DEFAULT_PATH)
    if(COLL_GPU_HIP_CLANG)
      set(CMAKE_HIP_COMPILER ${COLL_GPU_HIP_CLANG})
    endif()
  endif()
endif()

if(_hip_rocm_root AND NOT _hip_rocm_root MATCHES "^/opt/rocm")
  # A distribution's clang finds neither the HIP headers nor the device
  # libraries (in the multiarch folder) by itself; hipcc passes the same.
  string(APPEND CMAKE_HIP_FLAGS " --rocm-path=${_hip_rocm_root}")
  file(GLOB _hip_bitcode LIST_DIRECTORIES true "${_hip_rocm_root}/lib/*/amdgcn/bitcode")
  if(_hip_bitcode AND NOT EXISTS "${_hip_rocm_root}/amdgcn/bitcode")
    list(GET _hip_bitcode 0 _hip_bitcode)
    string(APPEND CMAKE_HIP_FLAGS " --hip-device-lib-path=${_hip_bitcode}")
  endif()
  # CMake < 3.28 only looks for <root>/lib/cmake/hip-lang: point it at a root
  # whose lib/cmake/hip-lang is a link to the multiarch folder. A linked
  # folder (not linked files) keeps hip-lang's paths resolving to /usr.
  set(_hip_lang_arch "${_hip_rocm_root}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/hip-lang")
  if(NOT EXISTS "${_hip_rocm_root}/lib/cmake/hip-lang/hip-lang-config.cmake"
     AND CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "${_hip_lang_arch}/hip-lang-config.cmake"
     AND NOT CMAKE_HIP_COMPILER_ROCM_ROOT)
    set(_hip_fake_root "${CMAKE_BINARY_DIR}/hip-rocm-root")
    file(MAKE_DIRECTORY "${_hip_fake_root}/lib/cmake")
    file(CREATE_LINK "${_hip_lang_arch}" "${_hip_fake_root}/lib/cmake/hip-lang" SYMBOLIC)
    set(CMAKE_HIP_COMPILER_ROCM_ROOT "${_hip_fake_root}")
    # hip-lang's dependencies sit in the multiarch folder too, which CMake's
    # test projects for HIP do not search (no library architecture known yet).
    foreach(_dep amd_comgr hsa-runtime64 AMDDeviceLibs)
      if(NOT ${_dep}_DIR AND EXISTS "${_hip_rocm_root}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/${_dep}")
        set(${_dep}_DIR "${_hip_rocm_root}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/${_dep}")
        list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ${_dep}_DIR)
      endif()
    endforeach()
  endif()
endif()

enable_language(HIP)
# Kernels and (compiled as HIP below) core sources are C++17, like the rest;
# clang 15 would default HIP to C++11.
set(CMAKE_HIP_STANDARD ${CMAKE_CXX_STANDARD})
set(CMAKE_HIP_STANDARD_REQUIRED ON)
set(CMAKE_HIP_VISIBILITY_PRESET hidden)
find_package(hip REQUIRED CONFIG)
add_library(coll_gpu_runtime INTERFACE)
target_link_libraries(coll_gpu_runtime INTERFACE hip::host)
target_compile_definitions(coll_gpu_runtime INTERFACE COLL_GPU_HIP=1)
set(COLL_GPU_KERNEL_LANG HIP)

# HIP marks hipError_t [[nodiscard]] (CUDA does not): the teardown paths
# that ignore errors on purpose would otherwise warn on every HIP build.
add_compile_options($<$<COMPILE_LANGUAGE:HIP,CXX>:-Wno-unused-result>)

# Every object goes in by name (an archive would only give up the members
# something asks for); gpucoll_core's usage requirements bring the rest.
add_library(gpucoll_hip_link SHARED ${CMAKE_CURRENT_LIST_DIR}/../tests/hip/hip_link_check.cpp
  $<TARGET_OBJECTS:gpucoll_core> $<TARGET_OBJECTS:gpucoll_kernels> $<TARGET_OBJECTS:gpucoll_common>)
target_link_libraries(gpucoll_hip_link PRIVATE gpucoll_core)
target_link_options(gpucoll_hip_link PRIVATE -Wl,--no-undefined)
set_target_properties(gpucoll_hip_link PROPERTIES LINKER_LANGUAGE HIP)

# The core and common C++ sources are host code, but the check compiles them
# as HIP (host and gfx90a passes), as hipcc would: gpu_port.h's device
# helpers and everything they include then meet the device compiler too.
# Deferred: those folders are added after this file runs.
function(coll_gpu_hip_compile_cxx_as_hip)
  foreach(tgt gpucoll_core gpucoll_common)
    if(NOT TARGET ${tgt})
      continue()
    endif()
    get_target_property(_srcs ${tgt} SOURCES)
    get_target_property(_dir ${tgt} SOURCE_DIR)
    list(FILTER _srcs INCLUDE REGEX "\\.(cpp|cc|cxx)$")
    # Relative names would be taken relative to this folder, not the target's.
    list(TRANSFORM _srcs PREPEND "${_dir}/" REGEX "^[^/]")
    if(_srcs)
      set_source_files_properties(${_srcs} TARGET_DIRECTORY ${tgt} PROPERTIES LANGUAGE HIP)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL coll_gpu_hip_compile_cxx_as_hip)
