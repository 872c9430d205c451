// Every environment variable the C++ side reads, in one place (DESIGN.md:
// "one env-var registry"). Two are read by the Python package:
// TORCH_TPU_PJRT_PLUGIN (torch_tpu/_plugin.py, plugin discovery) and
// TORCH_TPU_BUCKETED_GENERATE (torch_tpu/generation.py). Each value is read when
// first needed; a malformed value is a clear error naming the variable.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include <c10/util/Exception.h>

namespace torch_tpu::env {

// debug | strict | fused; the eager mode at start (default fused).
inline constexpr const char* kEagerMode = "TORCH_TPU_EAGER_MODE";
// 0 turns the CPU fallback for ops without a lowering into an error.
inline constexpr const char* kCpuFallback = "TORCH_TPU_CPU_FALLBACK";
// The on-disk compilation cache; the empty string turns it off.
inline constexpr const char* kCacheDir = "TORCH_TPU_CACHE_DIR";
// Size bound of the on-disk cache in bytes.
inline constexpr const char* kCacheMaxBytes = "TORCH_TPU_CACHE_MAX_BYTES";
// How many devices the XLA CPU plugin exposes.
inline constexpr const char* kCpuDeviceCount = "TORCH_TPU_CPU_DEVICE_COUNT";
// 0 leaves glibc's malloc as it is under the CPU plugin (see runtime/pjrt.cpp:
// keep_host_memory_for_reuse).
inline constexpr const char* kCpuReuseHostMemory = "TORCH_TPU_CPU_REUSE_HOST_MEMORY";
// Not ours: set by torchrun to the number of processes on this host; the
// CPU plugin's device count when TORCH_TPU_CPU_DEVICE_COUNT is unset.
inline constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";
// Fused mode's graph-size bound, in graph nodes.
inline constexpr const char* kFusedMaxNodes = "TORCH_TPU_FUSED_MAX_NODES";
// Fused mode's bound on the bytes a pending program holds beyond what op-by-op
// execution would (see exec/recording.cpp).
inline constexpr const char* kFusedMaxHeldBytes = "TORCH_TPU_FUSED_MAX_HELD_BYTES";
// Non-empty and not 0: log each fused-mode flush to stderr.
inline constexpr const char* kLogFlushes = "TORCH_TPU_LOG_FLUSHES";
// 0 turns off the device-side range checks of tpu index tensors (aten/op.h).
inline constexpr const char* kCheckIndices = "TORCH_TPU_CHECK_INDICES";
// The least severe of the PJRT plugin's own log lines that reach stderr:
// 0 info, 1 warnings (the default), 2 errors, 3 fatal only.
inline constexpr const char* kPluginLogLevel = "TORCH_TPU_PLUGIN_LOG_LEVEL";
// Not ours: the same threshold as XLA reads it; set from the one above before
// the plugin loads, unless the user set it.
inline constexpr const char* kXlaMinLogLevel = "TF_CPP_MIN_LOG_LEVEL";
// Not ours: XLA's own flags, which change what a plugin compiles.
inline constexpr const char* kXlaFlags = "XLA_FLAGS";
// Not ours: where a program that failed to compile is written (default /tmp).
inline constexpr const char* kTmpDir = "TMPDIR";
// Not ours: the user's cache directory, under which the disk cache lives
// when TORCH_TPU_CACHE_DIR is unset ($XDG_CACHE_HOME, else $HOME/.cache).
inline constexpr const char* kXdgCacheHome = "XDG_CACHE_HOME";
inline constexpr const char* kHome = "HOME";

// The value, or nullopt when unset (set but empty is an empty string).
inline std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

inline int64_t positive_int(const char* name, int64_t fallback) {
  auto v = get(name);
  if (!v || v->empty()) return fallback;
  char* end = nullptr;
  long long n = std::strtoll(v->c_str(), &end, 10);
  TORCH_CHECK_VALUE(end && *end == '\0' && n > 0, name, " must be a positive integer, got '", *v, "'");
  return n;
}

// An integer in [lo, hi]; `fallback` when unset or empty.
inline int64_t int_in_range(const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  auto v = get(name);
  if (!v || v->empty()) return fallback;
  char* end = nullptr;
  long long n = std::strtoll(v->c_str(), &end, 10);
  TORCH_CHECK_VALUE(end && *end == '\0' && n >= lo && n <= hi, name, " must be an integer from ", lo, " to ", hi,
                    ", got '", *v, "'");
  return n;
}

// Sets `name` for this process and the libraries it loads, unless it is set.
inline void set_if_unset(const char* name, const std::string& value) { setenv(name, value.c_str(), /*overwrite=*/0); }

// Unset or empty: `fallback`; "0": false; anything else: true.
inline bool flag(const char* name, bool fallback) {
  auto v = get(name);
  if (!v || v->empty()) return fallback;
  return *v != "0";
}

// Set and not empty: the value; otherwise `fallback`.
inline std::string non_empty_or(const char* name, const std::string& fallback) {
  auto v = get(name);
  return v && !v->empty() ? *v : fallback;
}

}  // namespace torch_tpu::env
