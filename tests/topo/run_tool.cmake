# Runs gpucoll-topo and checks both its exit status and its output (ctest's
# PASS_REGULAR_EXPRESSION alone would ignore the exit status).
#   cmake -DTOOL=exe "-DARGS=a|b" -DEXPECT=regex [-DEXPECT_RC=0] -P run_tool.cmake
# ARGS is |-separated: a ;-list would not survive the trip through add_test.
string(REPLACE "|" ";" ARGS "${ARGS}")
if(NOT DEFINED EXPECT_RC)
  set(EXPECT_RC 0)
endif()
execute_process(COMMAND ${TOOL} ${ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "gpucoll-topo ${ARGS}: exit status ${rc}, expected ${EXPECT_RC}")
endif()
if(NOT "${out}${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "gpucoll-topo ${ARGS}: output does not match '${EXPECT}'")
endif()
