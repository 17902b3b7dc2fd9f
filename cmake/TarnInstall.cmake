# `cmake --install`: every library with exactly the headers that declare it,
# the `tarn` command when built, one CMake package with a target per library
# and a pkg-config file per library:
#
#   library        headers (include/tarn/)             CMake          pkg-config
#   libtarn.a      tarn.h tarn.hpp                     tarn::tarn     tarn
#   libtarn_speech audio.hpp ctc.hpp recognizer.hpp    tarn::speech   tarn-speech
#                  speech.h
#   libtarn_sample sample.hpp distribution.hpp         tarn::sample   tarn-sample
#   libtarn_cuda   cuda.hpp (with -DTARN_CUDA=ON)      tarn::cuda     tarn-cuda
#
# (libtarn_kernels.a, which libtarn.a links, is installed beside it.) The
# libraries are static (STATIC in their add_library, whatever
# BUILD_SHARED_LIBS says): their own dependencies are named in Libs.private
# and, for CMake, in INTERFACE_LINK_LIBRARIES: pthreadpool, cpuinfo and
# threads by the export, the C++ runtime (stdc++, m) by tarnConfig.cmake,
# which adds it to tarn::tarn for C-only consumers.

include(CMakePackageConfigHelpers)

set(TARN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tarn)

set(TARN_INSTALL_LIBRARIES tarn tarn_kernels tarn_sample)
set(TARN_PC_FILES tarn tarn-sample)
if(TARGET tarn_speech)
  list(APPEND TARN_INSTALL_LIBRARIES tarn_speech)
  list(APPEND TARN_PC_FILES tarn-speech)
endif()
if(TARGET tarn_cuda)
  # With its kernels library (libtarn_cuda_kernels.a); both need the CUDA
  # runtime, cuBLAS and cuBLASLt (find_package(CUDAToolkit) in tarnConfig.cmake).
  list(APPEND TARN_INSTALL_LIBRARIES tarn_cuda tarn_cuda_kernels)
  list(APPEND TARN_PC_FILES tarn-cuda)
  # tarn-cuda.pc's -L for those: the toolkit's library directory found at
  # configure time (the toolkit's lib64 is on no default search path). A
  # space in it is escaped for pkg-config.
  string(REPLACE " " "\\ " TARN_PC_CUDA_LIBDIR "${CUDAToolkit_LIBRARY_DIR}")
  install(FILES ${TARN_CUDA_HEADERS}
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tarn)
endif()
install(TARGETS ${TARN_INSTALL_LIBRARIES} EXPORT tarnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${TARN_CORE_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tarn)
install(FILES ${TARN_SAMPLE_HEADERS}
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tarn)
if(TARGET tarn_speech)
  install(FILES ${TARN_SPEECH_HEADERS}
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tarn)
endif()
if(TARGET tarn_cli)
  install(TARGETS tarn_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT tarnTargets NAMESPACE tarn:: DESTINATION ${TARN_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tarnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tarnConfig.cmake
  INSTALL_DESTINATION ${TARN_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tarnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/tarnConfig.cmake
  ${PROJECT_BINARY_DIR}/tarnConfigVersion.cmake
  DESTINATION ${TARN_INSTALL_CMAKEDIR})

# Each .pc finds its prefix from its own place, so an installed tree can move.
file(RELATIVE_PATH TARN_PC_TO_PREFIX
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
foreach(pc IN LISTS TARN_PC_FILES)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in
    ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
