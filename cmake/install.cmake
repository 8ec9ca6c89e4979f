# Installation and packaging: headers, static libraries, the `avout` tool, a CMake package
# (find_package(avout REQUIRED COMPONENTS zookeeper redis postgres) -> avout::core,
# avout::zookeeper, avout::redis, avout::postgres), its version file and avout.pc.
# Included once, at the end of the root CMakeLists.txt, after every target exists.
#
#   cmake --install build --prefix /opt/avout
#
# Layout under the prefix: include/avout/..., <libdir>/libavout_*.a, bin/avout,
# <libdir>/cmake/avout/ (avoutConfig.cmake, avoutConfigVersion.cmake, the targets files) and
# <libdir>/pkgconfig/avout.pc. Both the CMake package and avout.pc are relocatable.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(AVOUT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/avout"
    CACHE STRING "Where the avout CMake package files are installed (relative to the prefix)")

# --- Headers ---------------------------------------------------------------------------------
install(DIRECTORY
          "${PROJECT_SOURCE_DIR}/core/include/avout"
          "${PROJECT_SOURCE_DIR}/backends/zookeeper/include/avout"
          "${PROJECT_SOURCE_DIR}/backends/redis/include/avout"
          "${PROJECT_SOURCE_DIR}/backends/postgres/include/avout"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.hpp")

# --- Targets as users see them -----------------------------------------------------------------
set_target_properties(avout_core PROPERTIES EXPORT_NAME core)
set_target_properties(avout_zookeeper PROPERTIES EXPORT_NAME zookeeper)
set_target_properties(avout_redis PROPERTIES EXPORT_NAME redis)
set_target_properties(avout_postgres PROPERTIES EXPORT_NAME postgres)
# The public headers need C++20; say so, so that consumers get it without asking.
target_compile_features(avout_core PUBLIC cxx_std_20)

# The static avout_core links the ZooKeeper C client privately, which CMake records as
# $<LINK_ONLY:/absolute/path/libzookeeper_mt.so>. In the installed package that becomes the
# imported target avout::zookeeper_mt, which avoutConfig.cmake finds itself (library and
# include directory), so the package does not depend on where the build machine had it.
get_target_property(_avout_core_interface avout_core INTERFACE_LINK_LIBRARIES)
if(_avout_core_interface)
  set(_avout_rewritten "")
  foreach(_avout_item IN LISTS _avout_core_interface)
    if(_avout_item STREQUAL "$<LINK_ONLY:${ZOOKEEPER_MT_LIBRARY}>"
       OR _avout_item STREQUAL "${ZOOKEEPER_MT_LIBRARY}")
      list(APPEND _avout_rewritten
           "$<BUILD_INTERFACE:${_avout_item}>"
           "$<INSTALL_INTERFACE:$<LINK_ONLY:avout::zookeeper_mt>>")
    else()
      list(APPEND _avout_rewritten "${_avout_item}")
    endif()
  endforeach()
  set_property(TARGET avout_core PROPERTY INTERFACE_LINK_LIBRARIES "${_avout_rewritten}")
  unset(_avout_rewritten)
  unset(_avout_item)
endif()
unset(_avout_core_interface)

# avout_core and avout_zookeeper reference each other, so they share one export set (CMake
# repeats the pair on a consumer's link line). The Redis and PostgreSQL backends have their
# own sets: a component whose client library is missing on the consumer's machine is simply
# not loaded. Their private dependencies (PkgConfig::HIREDIS, PkgConfig::PQXX) appear in the
# export as $<LINK_ONLY:...> and are recreated by avoutConfig.cmake.
install(TARGETS avout_core avout_zookeeper
        EXPORT avoutTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS avout_redis
        EXPORT avoutRedisTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS avout_postgres
        EXPORT avoutPostgresTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
foreach(_avout_set avoutTargets avoutRedisTargets avoutPostgresTargets)
  install(EXPORT ${_avout_set}
          NAMESPACE avout::
          FILE ${_avout_set}.cmake
          DESTINATION "${AVOUT_INSTALL_CMAKEDIR}")
endforeach()
unset(_avout_set)

# --- The command-line tool (tools/ may not be there) -----------------------------------------
if(TARGET avout)
  install(TARGETS avout RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

# --- CMake package config and version --------------------------------------------------------
configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/avoutConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/avoutConfig.cmake"
  INSTALL_DESTINATION "${AVOUT_INSTALL_CMAKEDIR}")
# 0.x: a new minor version may break the API.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/avoutConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/avoutConfig.cmake"
              "${PROJECT_BINARY_DIR}/avoutConfigVersion.cmake"
        DESTINATION "${AVOUT_INSTALL_CMAKEDIR}")

# --- pkg-config -----------------------------------------------------------------------------
# prefix is found from the .pc file's own place (${pcfiledir}), so `cmake --install --prefix`
# to anywhere gives a working file.
set(_avout_pc_dir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${_avout_pc_dir}")
  set(AVOUT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _avout_up "/avout-prefix/${_avout_pc_dir}" "/avout-prefix")
  string(REGEX REPLACE "/$" "" _avout_up "${_avout_up}")
  set(AVOUT_PC_PREFIX "\${pcfiledir}/${_avout_up}")
endif()
foreach(_avout_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_avout_dir}}")
    set(AVOUT_PC_${_avout_dir} "${CMAKE_INSTALL_${_avout_dir}}")
  else()
    set(AVOUT_PC_${_avout_dir} "\${prefix}/${CMAKE_INSTALL_${_avout_dir}}")
  endif()
endforeach()
# The ZooKeeper C client has no .pc file: name its directories unless the compiler searches
# them anyway.
get_filename_component(_avout_zk_libdir "${ZOOKEEPER_MT_LIBRARY}" DIRECTORY)
set(AVOUT_PC_ZOOKEEPER_CFLAGS "")
if(NOT ZOOKEEPER_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
  set(AVOUT_PC_ZOOKEEPER_CFLAGS "-I${ZOOKEEPER_INCLUDE_DIR}")
endif()
set(AVOUT_PC_ZOOKEEPER_LIBS "-lzookeeper_mt")
if(NOT _avout_zk_libdir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  set(AVOUT_PC_ZOOKEEPER_LIBS "-L${_avout_zk_libdir} -lzookeeper_mt")
endif()
# Static avout_core and avout_zookeeper need each other: name avout_core again after
# avout_zookeeper, spelled differently (-l:file), since pkgconf drops repeated flags.
set(AVOUT_PC_CORE_AGAIN "")
get_target_property(_avout_core_type avout_core TYPE)
if(_avout_core_type STREQUAL "STATIC_LIBRARY")
  set(AVOUT_PC_CORE_AGAIN
      "-l:${CMAKE_STATIC_LIBRARY_PREFIX}avout_core${CMAKE_STATIC_LIBRARY_SUFFIX}")
endif()
unset(_avout_core_type)
configure_file("${CMAKE_CURRENT_LIST_DIR}/avout.pc.in" "${PROJECT_BINARY_DIR}/avout.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/avout.pc" DESTINATION "${_avout_pc_dir}")
unset(_avout_pc_dir)
unset(_avout_up)
unset(_avout_dir)
unset(_avout_zk_libdir)

# --- The test: install into a temporary prefix and build an outside project against it -------
if(AVOUT_BUILD_TESTS)
  # The outside project is compiled like the installed libraries were (same compiler and,
  # in sanitizer builds, the same instrumentation), else it could not link them.
  set(_avout_check_flags "")
  if(AVOUT_SANITIZE STREQUAL "address")
    set(_avout_check_flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
  elseif(AVOUT_SANITIZE STREQUAL "thread")
    set(_avout_check_flags "-fsanitize=thread -fno-omit-frame-pointer")
  endif()
  set(_avout_check_tool no-tool)
  if(TARGET avout)
    set(_avout_check_tool with-tool)
  endif()
  add_test(NAME install_check
           COMMAND bash "${PROJECT_SOURCE_DIR}/tests/install/check.sh"
                   "${PROJECT_BINARY_DIR}" "${PROJECT_SOURCE_DIR}/tests/install/project"
                   "${CMAKE_CXX_COMPILER}" "${_avout_check_flags}" ${_avout_check_tool})
  set_tests_properties(install_check PROPERTIES LABELS fast TIMEOUT 600)
  unset(_avout_check_flags)
  unset(_avout_check_tool)
endif()
