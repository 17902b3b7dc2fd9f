# Sanitizer and fuzzing builds (issue 8). Both need clang:
#
#   CC=clang CXX=clang++ cmake -S . -B build-asan -DTARN_SANITIZE=address,undefined -DTARN_FUZZ=ON
#   CC=clang CXX=clang++ cmake -S . -B build-tsan -DTARN_SANITIZE=thread
#
# TARN_SANITIZE builds every target of the project with the listed
# sanitizers; undefined behaviour then aborts the test that hit it rather
# than printing a warning. The Debian libraries tarn links (XNNPACK,
# pthreadpool, cpuinfo) are not instrumented: what happens inside them is
# unseen, what tarn hands them is checked. TARN_FUZZ adds libFuzzer's
# coverage instrumentation and builds the fuzz targets of tests/fuzz (which
# otherwise are replayed over their corpora by an ordinary test).

set(TARN_SANITIZE "" CACHE STRING
    "Sanitizers for every target: address,undefined or thread (clang)")
option(TARN_FUZZ "Build the libFuzzer targets (clang; with TARN_SANITIZE=address,...)" OFF)

if(TARN_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TARN_SANITIZE needs clang: CC=clang CXX=clang++ cmake ...")
  endif()
  if(TARN_SANITIZE MATCHES "thread" AND TARN_SANITIZE MATCHES "address")
    message(FATAL_ERROR "TARN_SANITIZE: thread and address do not combine")
  endif()
  # Line tables give the reports their file:line, at a tenth less compile
  # time than full debug information.
  add_compile_options(-fsanitize=${TARN_SANITIZE} -fno-omit-frame-pointer
                      -gline-tables-only)
  add_link_options(-fsanitize=${TARN_SANITIZE})
  if(TARN_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()

if(TARN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "TARN_FUZZ needs clang: CC=clang CXX=clang++ cmake ...")
  endif()
  if(NOT TARN_SANITIZE MATCHES "address")
    message(FATAL_ERROR "TARN_FUZZ needs TARN_SANITIZE=address or address,undefined")
  endif()
  # Coverage for the whole library; only the fuzz targets link libFuzzer.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
