# `cmake --install`: the library (static, with the kernels library it needs),
# the public C and C++ headers, the `tarn` command, a CMake package
# (find_package(tarn) -> tarn::tarn) and a pkg-config file (tarn.pc).
# libtarn.a's own dependencies (pthreadpool, cpuinfo, threads, the
# C++ runtime) are named in both: INTERFACE_LINK_LIBRARIES and Libs.private.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TARN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tarn)

install(TARGETS tarn tarn_kernels EXPORT tarnTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES
  ${PROJECT_SOURCE_DIR}/runtime/include/tarn/tarn.h
  ${PROJECT_SOURCE_DIR}/runtime/include/tarn/tarn.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tarn)
install(TARGETS tarn_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

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

# tarn.pc finds its prefix from its own place, so an installed tree can move.
file(RELATIVE_PATH TARN_PC_TO_PREFIX
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tarn.pc.in
  ${PROJECT_BINARY_DIR}/tarn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tarn.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
