# The sweep benchmark (bench/bench_sweep.c), included from the top-level
# CMakeLists.txt when FRONTIER_BENCH is on:
#   cmake --build build --target bench_sweep
#   build/bench/bench_sweep --json bench-sweep.json
add_executable(bench_sweep ${CMAKE_CURRENT_LIST_DIR}/bench_sweep.c)
target_include_directories(bench_sweep PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/core)
target_compile_options(bench_sweep PRIVATE ${FRONTIER_C_FLAGS})
target_link_libraries(bench_sweep PRIVATE frontier)
set_target_properties(bench_sweep PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
target_compile_definitions(bench_sweep PRIVATE FRONTIER_DATA_DIR="${CMAKE_SOURCE_DIR}/data")
if(FRONTIER_HAVE_CUDA)
  set_target_properties(bench_sweep PROPERTIES LINKER_LANGUAGE CUDA)
endif()
