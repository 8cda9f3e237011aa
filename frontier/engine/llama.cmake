# libllama, for `frontier sensitivity` (frontier/engine/llama_lm.c;
# docs/calibration.md, "Sensitivity through llama.cpp"). Found, in order:
#
#   1. FRONTIER_LLAMA_CPP_DIR as a llama.cpp tree built with static
#      libraries: src/include/llama.h, ggml/include, build/src/libllama.a,
#      build/ggml/src/libggml{,-cpu,-base}.a. The default is where
#      scripts/llama-cpp.sh builds the pinned llama.cpp (llama-cpp-python
#      0.3.36's vendored copy), which the llama.cpp test group uses too.
#   2. FRONTIER_LLAMA_CPP_DIR as an installation prefix: include/llama.h,
#      lib/libllama and lib/libggml*.
#   3. pkg-config's llama (llama.pc, a user's installation).
#
# A copy found by 2 or 3 must have llama_model_init_from_user (checked).
# FRONTIER_LLAMA=ON fails the configuration without one, OFF never looks,
# AUTO (the default) builds the command without it: it then says how to get
# libllama and exits 10 (docs/exit-codes.md).
#
# Sets FRONTIER_HAVE_LLAMA, FRONTIER_LLAMA_ORIGIN (where it came from, for
# the metadata the command writes) and, with libllama, the static library
# frontier_llama (the adapter, linked to the engine and to libllama).
set(FRONTIER_LLAMA "AUTO" CACHE STRING "Build `frontier sensitivity` with libllama: ON, OFF or AUTO")
set_property(CACHE FRONTIER_LLAMA PROPERTY STRINGS ON OFF AUTO)
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(FRONTIER_LLAMA_CACHE "$ENV{XDG_CACHE_HOME}/frontier")
else()
  set(FRONTIER_LLAMA_CACHE "$ENV{HOME}/.cache/frontier")
endif()
set(FRONTIER_LLAMA_CPP_DIR "${FRONTIER_LLAMA_CACHE}/llama.cpp-0.3.36" CACHE PATH
    "a llama.cpp tree with static libraries (scripts/llama-cpp.sh), or an installation prefix")

set(FRONTIER_HAVE_LLAMA OFF)
set(FRONTIER_LLAMA_ORIGIN "")
set(FRONTIER_LLAMA_WHY "FRONTIER_LLAMA=OFF")
if(NOT FRONTIER_LLAMA STREQUAL "OFF")
  set(_llama_dir "${FRONTIER_LLAMA_CPP_DIR}")
  set(_llama_includes "")
  set(_llama_libraries "")
  set(_llama_check_api ON)
  find_package(OpenMP COMPONENTS C)
  if(EXISTS "${_llama_dir}/src/include/llama.h" AND EXISTS "${_llama_dir}/build/src/libllama.a"
     AND EXISTS "${_llama_dir}/build/ggml/src/libggml-cpu.a" AND OpenMP_C_FOUND)
    # the static build: ggml-cpu uses OpenMP, ggml and llama are C++
    set(_llama_includes "${_llama_dir}/src/include" "${_llama_dir}/src/ggml/include")
    set(_llama_libraries "${_llama_dir}/build/src/libllama.a" "${_llama_dir}/build/ggml/src/libggml.a"
        "${_llama_dir}/build/ggml/src/libggml-cpu.a" "${_llama_dir}/build/ggml/src/libggml-base.a"
        OpenMP::OpenMP_C stdc++ Threads::Threads m)
    set(FRONTIER_LLAMA_ORIGIN "the llama.cpp build at ${_llama_dir}")
    if(EXISTS "${_llama_dir}/build/frontier-stamp")
      file(STRINGS "${_llama_dir}/build/frontier-stamp" _stamp LIMIT_COUNT 1)
      string(REGEX REPLACE " sha256 .*" "" _stamp "${_stamp}")
      set(FRONTIER_LLAMA_ORIGIN "scripts/llama-cpp.sh's pinned build: ${_stamp}'s vendored llama.cpp")
      set(_llama_check_api OFF)
    endif()
  elseif(EXISTS "${_llama_dir}/include/llama.h")
    find_library(_llama_lib llama PATHS "${_llama_dir}/lib" "${_llama_dir}/lib64" NO_DEFAULT_PATH)
    find_library(_ggml_lib ggml PATHS "${_llama_dir}/lib" "${_llama_dir}/lib64" NO_DEFAULT_PATH)
    find_library(_ggml_base_lib ggml-base PATHS "${_llama_dir}/lib" "${_llama_dir}/lib64" NO_DEFAULT_PATH)
    find_library(_ggml_cpu_lib ggml-cpu PATHS "${_llama_dir}/lib" "${_llama_dir}/lib64" NO_DEFAULT_PATH)
    if(_llama_lib AND _ggml_lib AND _ggml_base_lib)
      set(_llama_includes "${_llama_dir}/include")
      set(_llama_libraries "${_llama_lib}" "${_ggml_lib}")
      if(_ggml_cpu_lib)
        list(APPEND _llama_libraries "${_ggml_cpu_lib}")
      endif()
      list(APPEND _llama_libraries "${_ggml_base_lib}")
      if(_llama_lib MATCHES "\\.a$")
        # static libraries: what they need from C++ and OpenMP comes with them
        list(APPEND _llama_libraries stdc++ Threads::Threads m)
        if(OpenMP_C_FOUND)
          list(APPEND _llama_libraries OpenMP::OpenMP_C)
        endif()
      endif()
      set(FRONTIER_LLAMA_ORIGIN "the llama.cpp installation at ${_llama_dir}")
    endif()
  else()
    pkg_check_modules(LLAMA QUIET IMPORTED_TARGET llama)
    if(LLAMA_FOUND)
      set(_llama_includes "${LLAMA_INCLUDE_DIRS}")
      set(_llama_libraries PkgConfig::LLAMA)
      set(FRONTIER_LLAMA_ORIGIN "pkg-config's llama ${LLAMA_VERSION}")
    endif()
  endif()
  if(_llama_libraries AND _llama_check_api)
    include(CheckSymbolExists)
    set(CMAKE_REQUIRED_INCLUDES ${_llama_includes})
    if(TARGET PkgConfig::LLAMA)
      set(CMAKE_REQUIRED_LIBRARIES ${LLAMA_LINK_LIBRARIES})
    else()
      set(CMAKE_REQUIRED_LIBRARIES ${_llama_libraries})
    endif()
    # checked again at every configuration: the library found may have changed
    unset(FRONTIER_LLAMA_HAS_INIT_FROM_USER CACHE)
    check_symbol_exists(llama_model_init_from_user "llama.h" FRONTIER_LLAMA_HAS_INIT_FROM_USER)
    unset(CMAKE_REQUIRED_INCLUDES)
    unset(CMAKE_REQUIRED_LIBRARIES)
    if(NOT FRONTIER_LLAMA_HAS_INIT_FROM_USER)
      set(FRONTIER_LLAMA_WHY "${FRONTIER_LLAMA_ORIGIN}: a program calling llama_model_init_from_user does not build with it (too old a llama.cpp, or libraries that do not link: CMakeFiles/CMakeConfigureLog.yaml says which)")
      set(_llama_libraries "")
    endif()
  elseif(NOT _llama_libraries)
    set(FRONTIER_LLAMA_WHY "no libllama: neither a static llama.cpp build nor an installation at ${_llama_dir} (scripts/llama-cpp.sh builds one; -DFRONTIER_LLAMA_CPP_DIR=DIR points elsewhere), nor pkg-config's llama")
  endif()
  if(_llama_libraries)
    set(FRONTIER_HAVE_LLAMA ON)
    add_library(frontier_llama STATIC ${CMAKE_CURRENT_SOURCE_DIR}/frontier/engine/llama_lm.c)
    target_include_directories(frontier_llama PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                               ${CMAKE_CURRENT_SOURCE_DIR}/core)
    # llama.cpp's headers are not ours: not held to our warnings
    target_include_directories(frontier_llama SYSTEM PRIVATE ${_llama_includes})
    target_compile_options(frontier_llama PRIVATE ${FRONTIER_C_FLAGS})
    target_compile_definitions(frontier_llama PRIVATE FRONTIER_LLAMA_ORIGIN="${FRONTIER_LLAMA_ORIGIN}")
    target_link_libraries(frontier_llama PUBLIC frontier_engine ${_llama_libraries})
    message(STATUS "libllama: ${FRONTIER_LLAMA_ORIGIN} (frontier sensitivity)")
  elseif(FRONTIER_LLAMA STREQUAL "ON")
    message(FATAL_ERROR "FRONTIER_LLAMA=ON: ${FRONTIER_LLAMA_WHY}")
  else()
    message(STATUS "frontier sensitivity without libllama: ${FRONTIER_LLAMA_WHY}")
  endif()
endif()
