# Install rules and the files that let other projects find libfz:
#   <prefix>/include/fz/{fz.h,ir.h,ops.def}
#   <prefix>/lib/libfz.so*        (LLVM inside, only fz_* exported)
#   <prefix>/lib/libfz.a, libfz_core.a  (static: LLVM comes from the
#                                   LLVM 19 archives named in the link
#                                   interface, which must be installed)
#   <prefix>/bin/fuse-opt, fuse-run
#   <prefix>/lib/pkgconfig/fz.pc
#   <prefix>/lib/cmake/fz/{fzConfig,fzConfigVersion,fzTargets*}.cmake
# The package is relocatable: fz.pc finds the prefix from its own place
# (${pcfiledir}) and the CMake files from theirs, so a prefix can be
# copied elsewhere after installing.
include(CMakePackageConfigHelpers)

set(FZ_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fz)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fz
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
install(TARGETS fz_core fz fz_shared EXPORT fzTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(tool fuse-opt fuse-run)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

install(EXPORT fzTargets NAMESPACE fz:: DESTINATION ${FZ_CMAKE_DIR}
        FILE fzTargets.cmake)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fzConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fzConfig.cmake INSTALL_DESTINATION ${FZ_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fzConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fzConfig.cmake
              ${PROJECT_BINARY_DIR}/fzConfigVersion.cmake
        DESTINATION ${FZ_CMAKE_DIR})

# pkg-config: Libs links the shared library; Libs.private lists what a
# static link (pkg-config --static) needs after -lfz.
set(FZ_PC_PRIVATE "-lfz_core")
foreach(lib ${FZ_LLVM_STATIC_LIBS})
  if(IS_ABSOLUTE "${lib}")
    string(APPEND FZ_PC_PRIVATE " ${lib}")
  else()
    string(APPEND FZ_PC_PRIVATE " -l${lib}")
  endif()
endforeach()
file(RELATIVE_PATH FZ_PC_TO_PREFIX
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" FZ_PC_TO_PREFIX "${FZ_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/fz.pc.in ${PROJECT_BINARY_DIR}/fz.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fz.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
