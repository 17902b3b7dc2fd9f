# The core's third-party libraries, each as an imported target: FlatBuffers
# (flatc and headers, build time), pthreadpool, cpuinfo, xxhash. Nothing
# else: each product finds its own (speech: kissfft; the CLI: CLI11,
# nlohmann_json, sndfile, PNG, zlib; bench/: XNNPACK, Google Benchmark).
# Debian's pthreadpool and cpuinfo ship no CMake config: find header and
# library.

find_package(Threads REQUIRED)
find_package(FlatBuffers REQUIRED)

function(tarn_import_library target header library)
  find_path(${target}_INCLUDE_DIR ${header} REQUIRED)
  find_library(${target}_LIBRARY ${library} REQUIRED)
  add_library(tarn::${target} UNKNOWN IMPORTED)
  set_target_properties(tarn::${target} PROPERTIES
    IMPORTED_LOCATION "${${target}_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${${target}_INCLUDE_DIR}")
endfunction()

if(NOT TARGET tarn::pthreadpool)
  tarn_import_library(pthreadpool pthreadpool.h pthreadpool)
  tarn_import_library(cpuinfo cpuinfo.h cpuinfo)
  # XXH64 checksums: the header-only form, so the runtime links nothing more.
  find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
  add_library(tarn::xxhash INTERFACE IMPORTED)
  set_target_properties(tarn::xxhash PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${XXHASH_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS XXH_INLINE_ALL)
endif()
