# Run by gradcache_gtest_suites (tests/gtest_suites.cmake) after each build of a test binary:
# lists its cases (under FILTER) and writes one add_test per suite to OUTPUT, whose filter names
# the suite's listed cases exactly.
#   -D BINARY=... -D FILTER=<gtest filter, may be empty> -D PROPERTIES_FILE=... -D OUTPUT=... -D RUNNER=...
set(list_args --gtest_list_tests)
if(NOT FILTER STREQUAL "")
  list(APPEND list_args "--gtest_filter=${FILTER}")
endif()
execute_process(COMMAND "${BINARY}" ${list_args} OUTPUT_VARIABLE listing RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed (${status}):\n${listing}")
endif()
file(READ "${PROPERTIES_FILE}" properties)
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
foreach(line IN LISTS lines)
  # A suite's line is "Suite." or "Instance/Suite.  # TypeParam = ..." in the first column; its
  # cases follow, indented ("  Case" or "  Case/0  # GetParam() = ...").
  if(line MATCHES "^([^ #]+)\\.( +#.*)?$")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set("cases_${suite}" "")
  elseif(line MATCHES "^  ([^ ]+)" AND DEFINED suite)
    list(APPEND "cases_${suite}" "${suite}.${CMAKE_MATCH_1}")
  endif()
endforeach()
set(script "")
foreach(suite IN LISTS suites)
  string(REPLACE ";" ":" filter "${cases_${suite}}")
  string(APPEND script "add_test([==[${suite}]==] bash [==[${RUNNER}]==] [==[${BINARY}]==] [==[--gtest_filter=${filter}]==])\n"
                       "set_tests_properties([==[${suite}]==] PROPERTIES ${properties})\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")
