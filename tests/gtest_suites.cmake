# gradcache_gtest_suites(TARGET [TEST_FILTER F] LABELS L [TIMEOUT S] [RUN_SERIAL] [FIXTURES_REQUIRED X]
#                        [ENVIRONMENT VAR=VALUE...])
#
# One ctest test per GoogleTest suite of TARGET (named as the suite: "Trainer", "Builtin/Architecture"),
# where gtest_discover_tests makes one per test case. Each test case in its own process cost
# ~0.5 s of LibTorch start-up (2 s under AddressSanitizer, whose leak check scans the process at
# exit): of ~570 cases, most of the test time. A suite's cases run in one process, as they do when the
# binary is run by hand; ctest's output still names each failing case.
#
# The suites are listed after each build (TARGET --gtest_list_tests, POST_BUILD), as
# gtest_discover_tests does, under TEST_FILTER (a gtest filter); a suite's test runs the cases
# listed, by name. A suite must not be split between two calls (its ctest name would be taken
# twice). A suite in which every case skipped (no GPU, no Python packages) reports
# Skipped (run_gtest_suite.sh exits 77); one with some cases run passes, and its output lists the
# skipped ones. TIMEOUT is per suite (default 900 s). ENVIRONMENT takes each variable as its own
# argument (gtest_discover_tests' PROPERTIES split "A;B" into two properties).
function(gradcache_gtest_suites target)
  cmake_parse_arguments(arg "RUN_SERIAL" "TEST_FILTER;LABELS;TIMEOUT;FIXTURES_REQUIRED" "ENVIRONMENT" ${ARGN})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 900)
  endif()
  get_property(count GLOBAL PROPERTY gradcache_gtest_suites_count)
  math(EXPR count "${count} + 1")
  set_property(GLOBAL PROPERTY gradcache_gtest_suites_count ${count})
  set(prefix "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_${count}")

  # The properties as bracket arguments, so that no value is split at ';' or spaces.
  set(properties "LABELS [==[${arg_LABELS}]==] TIMEOUT ${arg_TIMEOUT} SKIP_RETURN_CODE 77")
  if(arg_RUN_SERIAL)
    string(APPEND properties " RUN_SERIAL TRUE")
  endif()
  if(arg_FIXTURES_REQUIRED)
    string(APPEND properties " FIXTURES_REQUIRED [==[${arg_FIXTURES_REQUIRED}]==]")
  endif()
  if(arg_ENVIRONMENT)
    string(APPEND properties " ENVIRONMENT [==[${arg_ENVIRONMENT}]==]")
  endif()
  file(WRITE "${prefix}_properties.txt" "${properties}")

  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D "BINARY=$<TARGET_FILE:${target}>" -D "FILTER=${arg_TEST_FILTER}"
            -D "PROPERTIES_FILE=${prefix}_properties.txt" -D "OUTPUT=${prefix}_tests.cmake"
            -D "RUNNER=${PROJECT_SOURCE_DIR}/tests/run_gtest_suite.sh"
            -P "${PROJECT_SOURCE_DIR}/tests/gtest_suites_discover.cmake"
    BYPRODUCTS "${prefix}_tests.cmake" VERBATIM)
  file(WRITE "${prefix}_include.cmake"
       "if(EXISTS \"${prefix}_tests.cmake\")\n  include(\"${prefix}_tests.cmake\")\n"
       "else()\n  add_test(${target}_NOT_BUILT_${count} ${target}_NOT_BUILT_${count})\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${prefix}_include.cmake")
endfunction()
