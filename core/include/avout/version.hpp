#pragma once
// The version of avout these headers belong to. The build reads it from here (the CMake
// project's version, the package's, the shared libraries' SONAME): change it only here. A 0.x
// minor version may change the API and ABI (libavout_core.so.0.MINOR); from 1.0 on only a
// major version does (libavout_core.so.MAJOR).

#include <avout/export.hpp>

/// The major version of these headers.
#define AVOUT_VERSION_MAJOR 0
/// The minor version of these headers.
#define AVOUT_VERSION_MINOR 1
/// The patch version of these headers.
#define AVOUT_VERSION_PATCH 0
/// The version of these headers, "MAJOR.MINOR.PATCH".
#define AVOUT_VERSION_STRING "0.1.0"

namespace avout {

/// The version of the avout library linked into the program, "MAJOR.MINOR.PATCH" (a shared
/// library upgraded in place may be newer than the headers' AVOUT_VERSION_STRING).
AVOUT_API const char* version() noexcept;

}  // namespace avout
