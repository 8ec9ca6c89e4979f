#pragma once
// Errors thrown inside avout's libraries, caught by their type in the program: with shared
// libraries built with hidden visibility this only works when the error classes' typeinfo is
// exported (AVOUT_API), so the check fails loudly when one is not. No server is needed: each
// call fails on its arguments before connecting.
#include <avout/avout.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <iostream>
#include <string>

/// Runs `call`, which must throw an Error of type E from inside the library; prints
/// "caught by type: NAME from WHERE", or a complaint and false.
template <typename E>
bool caught_by_type(const char* name, const char* where, const std::function<void()>& call) {
  try {
    call();
  } catch (const E&) {
    std::cout << "caught by type: " << name << " from " << where << "\n";
    return true;
  } catch (const std::exception& error) {
    std::cout << where << ": threw another error than " << name << ": " << error.what() << "\n";
    return false;
  }
  std::cout << where << ": threw nothing\n";
  return false;
}

/// The core's own errors: a Client refuses a root that is not an absolute path, and a zero
/// operation timeout, before it connects.
inline bool core_errors_caught_by_type() {
  using namespace std::chrono_literals;
  const bool name = caught_by_type<avout::InvalidName>("avout::InvalidName", "avout::Client", [] {
    avout::Client client(avout::ClientOptions{.hosts = "127.0.0.1:1", .root = "relative"});
  });
  const bool duration =
      caught_by_type<avout::InvalidDuration>("avout::InvalidDuration", "avout::Client", [] {
        avout::Client client(avout::ClientOptions{.hosts = "127.0.0.1:1", .operation_timeout = 0ms});
      });
  // Caught as its base class too: the hierarchy's typeinfo is the library's.
  const bool base = caught_by_type<avout::Error>("avout::Error", "avout::validate_path",
                                                 [] { avout::validate_path("no/slash"); });
  return name && duration && base;
}
