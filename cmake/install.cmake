# Installation and packaging: headers, the libraries (static, or shared with
# -DBUILD_SHARED_LIBS=ON), the `avout` tool, a CMake package
# (find_package(avout REQUIRED COMPONENTS zookeeper redis postgres) -> avout::core,
# avout::zookeeper, avout::redis, avout::postgres), its version file and one pkg-config file
# per component: avout.pc, avout-redis.pc, avout-postgres.pc.
# Included once, at the end of the root CMakeLists.txt, after every target exists.
#
#   cmake --install build --prefix /opt/avout
#
# Layout under the prefix: include/avout/..., <libdir>/libavout_{core,redis,postgres}.{a,so},
# bin/avout, <libdir>/cmake/avout/ (avoutConfig.cmake, avoutConfigVersion.cmake, the targets
# files) and <libdir>/pkgconfig/avout*.pc. The CMake package and the .pc files are relocatable.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(AVOUT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/avout"
    CACHE STRING "Where the avout CMake package files are installed (relative to the prefix)")

# The store backends this build has beside ZooKeeper's (AVOUT_WITH_REDIS, AVOUT_WITH_POSTGRES).
set(AVOUT_BUILT_BACKENDS "")
foreach(_avout_backend redis postgres)
  if(TARGET avout_${_avout_backend})
    list(APPEND AVOUT_BUILT_BACKENDS ${_avout_backend})
  endif()
endforeach()

# --- Headers ---------------------------------------------------------------------------------
set(_avout_header_dirs "${PROJECT_SOURCE_DIR}/core/include/avout"
                       "${PROJECT_SOURCE_DIR}/backends/zookeeper/include/avout")
foreach(_avout_backend IN LISTS AVOUT_BUILT_BACKENDS)
  list(APPEND _avout_header_dirs "${PROJECT_SOURCE_DIR}/backends/${_avout_backend}/include/avout")
endforeach()
install(DIRECTORY ${_avout_header_dirs}
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
        FILES_MATCHING PATTERN "*.hpp")
unset(_avout_header_dirs)

# --- Targets as users see them -----------------------------------------------------------------
set_target_properties(avout_core PROPERTIES EXPORT_NAME core)
set_target_properties(avout_zookeeper PROPERTIES EXPORT_NAME zookeeper)
foreach(_avout_backend IN LISTS AVOUT_BUILT_BACKENDS)
  set_target_properties(avout_${_avout_backend} PROPERTIES EXPORT_NAME ${_avout_backend})
endforeach()

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

# avout_core and avout_zookeeper (an interface target naming the core, which holds the
# ZooKeeper store) share one export set. The Redis and PostgreSQL backends have their own sets: a component whose client library is missing on the consumer's machine is simply
# not loaded. Their private dependencies (PkgConfig::HIREDIS, PkgConfig::PQXX) appear in the
# export as $<LINK_ONLY:...> and are recreated by avoutConfig.cmake.
install(TARGETS avout_core avout_zookeeper
        EXPORT avoutTargets
        ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
        RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
        INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
set(_avout_sets avoutTargets)
foreach(_avout_backend_set "redis;avoutRedisTargets" "postgres;avoutPostgresTargets")
  list(GET _avout_backend_set 0 _avout_backend)
  list(GET _avout_backend_set 1 _avout_set)
  if(_avout_backend IN_LIST AVOUT_BUILT_BACKENDS)
    install(TARGETS avout_${_avout_backend}
            EXPORT ${_avout_set}
            ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
            LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
            RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
            INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
    list(APPEND _avout_sets ${_avout_set})
  endif()
endforeach()
foreach(_avout_set IN LISTS _avout_sets)
  install(EXPORT ${_avout_set}
          NAMESPACE avout::
          FILE ${_avout_set}.cmake
          DESTINATION "${AVOUT_INSTALL_CMAKEDIR}")
endforeach()
unset(_avout_set)
unset(_avout_sets)
unset(_avout_backend_set)

# --- The command-line tool (tools/ may not be there) -----------------------------------------
if(TARGET avout)
  install(TARGETS avout RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

# --- CMake package config and version --------------------------------------------------------
# Static libraries need their dependencies found by the consumer; shared ones carry them.
get_target_property(_avout_core_type avout_core TYPE)
if(_avout_core_type STREQUAL "STATIC_LIBRARY")
  set(AVOUT_STATIC_LIBRARIES TRUE)
else()
  set(AVOUT_STATIC_LIBRARIES FALSE)
endif()
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

# --- pkg-config: avout (core and the ZooKeeper store), avout-redis, avout-postgres --------
# prefix is found from the .pc file's own place (${pcfiledir}), so `cmake --install --prefix`
# to anywhere gives a working file. A static library's dependencies must be on the user's
# link line (Libs, Requires); a shared one's only when linking statically (the .private fields).
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
get_target_property(_avout_core_type avout_core TYPE)
# The ZooKeeper C client has no .pc file: name its directory unless the linker searches it.
get_filename_component(_avout_zk_libdir "${ZOOKEEPER_MT_LIBRARY}" DIRECTORY)
set(_avout_zk_libs "-lzookeeper_mt")
if(NOT _avout_zk_libdir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
  set(_avout_zk_libs "-L${_avout_zk_libdir} -lzookeeper_mt")
endif()
if(_avout_core_type STREQUAL "STATIC_LIBRARY")
  set(AVOUT_PC_ZOOKEEPER_PUBLIC "${_avout_zk_libs}")
  set(AVOUT_PC_ZOOKEEPER_PRIVATE "")
else()
  set(AVOUT_PC_ZOOKEEPER_PUBLIC "")
  set(AVOUT_PC_ZOOKEEPER_PRIVATE "${_avout_zk_libs}")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/avout.pc.in" "${PROJECT_BINARY_DIR}/avout.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/avout.pc" DESTINATION "${_avout_pc_dir}")
foreach(_avout_backend "redis;Redis;hiredis" "postgres;PostgreSQL;libpqxx libpq")
  list(GET _avout_backend 0 AVOUT_PC_COMPONENT)
  if(NOT AVOUT_PC_COMPONENT IN_LIST AVOUT_BUILT_BACKENDS)
    continue()
  endif()
  list(GET _avout_backend 1 AVOUT_PC_STORE)
  list(GET _avout_backend 2 _avout_client)
  get_target_property(_avout_backend_type avout_${AVOUT_PC_COMPONENT} TYPE)
  if(_avout_backend_type STREQUAL "STATIC_LIBRARY")
    set(AVOUT_PC_CLIENT_PUBLIC "${_avout_client}")
    set(AVOUT_PC_CLIENT_PRIVATE "")
  else()
    set(AVOUT_PC_CLIENT_PUBLIC "")
    set(AVOUT_PC_CLIENT_PRIVATE "${_avout_client}")
  endif()
  configure_file("${CMAKE_CURRENT_LIST_DIR}/avout-backend.pc.in"
                 "${PROJECT_BINARY_DIR}/avout-${AVOUT_PC_COMPONENT}.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/avout-${AVOUT_PC_COMPONENT}.pc" DESTINATION "${_avout_pc_dir}")
endforeach()
foreach(_avout_variable _avout_pc_dir _avout_up _avout_dir _avout_zk_libdir _avout_zk_libs
        _avout_core_type _avout_backend _avout_backend_type _avout_client AVOUT_PC_COMPONENT
        AVOUT_PC_STORE AVOUT_PC_CLIENT_PUBLIC AVOUT_PC_CLIENT_PRIVATE)
  unset(${_avout_variable})
endforeach()
unset(_avout_variable)

# --- The test: install into a temporary prefix and build an outside project against it -------
# Only in the plain build: packaging is the same whatever instruments the code, and an
# instrumented install would cost each sanitizer run a build of the other library kind.
if(AVOUT_BUILD_TESTS AND AVOUT_SANITIZE STREQUAL "" AND NOT AVOUT_FUZZ)
  set(_avout_check_tool no-tool)
  if(TARGET avout)
    set(_avout_check_tool with-tool)
  endif()
  # It also builds and checks the libraries of the other kind (static/shared).
  add_test(NAME install_check
           COMMAND bash "${PROJECT_SOURCE_DIR}/tests/install/check.sh"
                   "${PROJECT_BINARY_DIR}" "${PROJECT_SOURCE_DIR}/tests/install/project"
                   "${CMAKE_CXX_COMPILER}" "" ${_avout_check_tool} other-kind)
  # It builds the libraries twice: ctest starts it first (tests/CMakeLists.txt, COST).
  set_tests_properties(install_check PROPERTIES LABELS fast TIMEOUT 600 COST 200)
  unset(_avout_check_tool)
endif()
