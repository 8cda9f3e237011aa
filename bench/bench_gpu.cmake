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
# GPTQ on the GPU against bench/peers/torch_gptq.py (docs/gpu.md, "GPTQ"):
#   build/bench/bench_gptq --dir /tmp/gptq --json gptq_gpu.json
#   python3 bench/peers/torch_gptq.py --dir /tmp/gptq --gpu-json gptq_gpu.json --json gptq.json
if(FRONTIER_HAVE_CUDA)
  add_executable(bench_gptq ${CMAKE_CURRENT_LIST_DIR}/bench_gptq.cu)
  target_include_directories(bench_gptq PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/core)
  target_compile_options(bench_gptq PRIVATE -Werror all-warnings -fmad=false --std=c++17 --extended-lambda)
  target_link_libraries(bench_gptq PRIVATE frontier CUDA::cublas)
endif()
