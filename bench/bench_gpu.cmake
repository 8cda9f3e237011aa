# GPU benchmarks (docs/gpu.md, "Benchmarks"); included from bench/CMakeLists.txt.
#   build/bench/bench_gpu kernels --json kernels.json
#   build/bench/bench_gpu fused --write-tensor w.bin --json fused.json
#   python3 bench/peers/torch_sweep.py --tensor w.bin --json peer.json
#   build/bench/bench_gpu fused --tensor w.bin --peer peer.json --json fused.json
if(FRONTIER_HAVE_CUDA)
  add_executable(bench_gpu ${CMAKE_CURRENT_LIST_DIR}/bench_gpu.cu)
  target_include_directories(bench_gpu PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/core)
  target_compile_options(bench_gpu PRIVATE -Werror all-warnings -fmad=false --std=c++17 --extended-lambda)
  target_link_libraries(bench_gpu PRIVATE frontier)
endif()
