# gradcache-streaming-bench: dense vs streaming contrastive loss, peak memory and time vs N
# (bench/streaming_bench.cpp). Needs only the library and nlohmann_json (header-only), not the
# tools.
find_package(nlohmann_json QUIET)
if(NOT nlohmann_json_FOUND)
  message(STATUS "gradcache-streaming-bench: skipped (needs nlohmann_json, Debian nlohmann-json3-dev)")
  return()
endif()
add_executable(gradcache_streaming_bench ${CMAKE_CURRENT_LIST_DIR}/streaming_bench.cpp)
set_target_properties(gradcache_streaming_bench PROPERTIES OUTPUT_NAME gradcache-streaming-bench)
target_link_libraries(gradcache_streaming_bench PRIVATE gradcache::gradcache nlohmann_json::nlohmann_json)
gradcache_target_defaults(gradcache_streaming_bench)
