// The PJRT C API runtime: one loaded plugin, one client, its addressable
// devices, buffers, compilation and execution.
//
// Invariants:
//  - Nothing here knows about ATen. Errors are c10::Error whose message names the
//    ATen op being run on this thread (see OpNameScope), so a user sees which op
//    failed even when the failure comes from deep inside the plugin.
//  - The plugin is loaded lazily, on first use, from the path given by
//    set_plugin_path() (the Python package does discovery, see torch_tpu/_plugin.py).
//  - Buffer owns one PJRT_Buffer; its destructor is the only place one is
//    released (destroyed on a background thread, since a plugin may block until
//    the programs using it finish), and it keeps the per-device byte counters
//    that memory stats report: bytes stop counting when the Buffer dies or is
//    donated to a program; a running program adds its outputs and scratch to
//    the peak.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include <c10/core/ScalarType.h>

#include "pjrt_c_api.h"

namespace torch_tpu::runtime {

// Names the ATen op running on this thread, for error messages.
class OpNameScope {
 public:
  explicit OpNameScope(const char* name);
  ~OpNameScope();
  static const char* current();

 private:
  const char* previous_;
};

PJRT_Buffer_Type to_pjrt_type(c10::ScalarType t);

// The dims of an array on the device; its bytes follow from them and its dtype.
using Dims = std::vector<int64_t>;

class Buffer {
 public:
  Buffer(PJRT_Buffer* buffer, int device, size_t nbytes, Dims dims);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  PJRT_Buffer* get() const { return buffer_; }
  int device() const { return device_; }
  size_t nbytes() const { return nbytes_; }
  // The array's shape as programs declare it (a program's parameter for this
  // buffer must have these dims).
  const Dims& dims() const { return dims_; }
  // The buffer was donated to a program run: its memory now belongs to an
  // output, so it stops counting here (the handle is still destroyed later).
  void donated();

 private:
  PJRT_Buffer* buffer_;
  int device_;
  size_t nbytes_;
  Dims dims_;
};
using BufferPtr = std::shared_ptr<Buffer>;

// A program's result: its size and dims.
struct OutputShape {
  size_t nbytes;
  Dims dims;
};

class Executable {
 public:
  Executable(PJRT_LoadedExecutable* exe, std::vector<OutputShape> outputs)
      : exe_(exe), outputs_(std::move(outputs)) {}
  ~Executable();
  PJRT_LoadedExecutable* get() const { return exe_; }
  size_t num_outputs() const { return outputs_.size(); }
  const std::vector<OutputShape>& outputs() const { return outputs_; }
  // Scratch space XLA allocates for one run, where the plugin reports it.
  size_t temp_nbytes() const { return temp_nbytes_; }
  void set_temp_nbytes(size_t n) { temp_nbytes_ = n; }
  // The device of each replica of a replicated program; empty for a portable
  // one (one replica, on the device each run names).
  const std::vector<int>& replica_devices() const { return replica_devices_; }
  void set_replica_devices(std::vector<int> devices) { replica_devices_ = std::move(devices); }

 private:
  PJRT_LoadedExecutable* exe_;
  std::vector<OutputShape> outputs_;  // known from the program's signature
  size_t temp_nbytes_ = 0;
  std::vector<int> replica_devices_;
};
using ExecutablePtr = std::shared_ptr<Executable>;

struct MemoryStats {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t num_allocs = 0;
  int64_t bytes_limit = 0;  // 0: unknown
  int64_t num_ooms = 0;     // out-of-memory errors the plugin raised (in this process)
};

void set_plugin_path(const std::string& path);
// Hands the free host memory that the CPU plugin's freed buffers left in the
// process back to the system (torch.tpu.empty_cache()); see pjrt.cpp.
void release_free_host_memory();

// One XLA debug option set per compile (xla.OptionOverrideProto): a string
// (also enums, by name), an integer or a bool.
struct OptionOverride {
  std::string flag;
  std::variant<std::string, int64_t, bool> value;
  std::string value_text() const;
};

class Runtime {
 public:
  // Loads the plugin and creates the client on first call; throws a clear error
  // naming the plugin path when that fails (and again on every later call).
  static Runtime& get();
  static bool initialized();
  // Whether this process was forked from one whose client existed; get()
  // then raises, as CUDA does in a forked child.
  static bool in_bad_fork();

  int device_count() const { return static_cast<int>(devices_.size()); }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  const std::string& plugin_path() const { return plugin_path_; }
  std::string device_kind(int device) const;
  // A string that changes whenever compiled code could: plugin platform,
  // version and API version. Part of every compilation cache key.
  const std::string& identity() const { return identity_; }
  // The same for programs compiled with `quick`; equal to identity() where the
  // plugin has no quicker way to compile (then `quick` changes nothing).
  const std::string& quick_identity() const { return quick_identity_; }
  bool has_quick_compile() const { return quick_identity_ != identity_; }

  BufferPtr to_device(const void* data, c10::ScalarType dtype,
                      const std::vector<int64_t>& dims, int device);
  // Blocks until the buffer is ready and its bytes are in dst.
  void to_host(const Buffer& buffer, void* dst, size_t nbytes);
  void await_ready(const Buffer& buffer);
  // Whether the buffer is ready (its program finished), without waiting.
  bool is_ready(const Buffer& buffer);
  // Calls `fn` (on a plugin thread, or at once) when the buffer is ready.
  void when_ready(const Buffer& buffer, std::function<void()> fn);

  // `outputs` comes from the program's result types; the plugin must agree on
  // the output count. With `replica_devices`, the program runs as one replica
  // on each listed device (replica i on replica_devices[i]), and its
  // collectives span them; without, it is one portable replica that runs on
  // whichever device a run names.
  // `quick`: compile faster, for slower code (option_overrides in pjrt.cpp).
  ExecutablePtr compile(const std::string& mlir, std::vector<OutputShape> outputs,
                        const std::vector<int>& replica_devices = {}, bool quick = false);
  // The plugin's serialization of a compiled program (for the disk cache), and
  // its inverse; deserialize() throws when the bytes are not a program of this
  // plugin.
  std::string serialize(const Executable& exe);
  ExecutablePtr deserialize(const std::string& bytes, std::vector<OutputShape> outputs);
  // Enqueues the program; the outputs may still be computing when this returns
  // unless `wait` is set, in which case errors of the run surface here.
  // The arguments at `donated_args` are given up to the program (it aliases
  // them with outputs) and must not be used afterwards.
  std::vector<BufferPtr> execute(const Executable& exe, const std::vector<Buffer*>& args,
                                 const std::vector<size_t>& donated_args, int device, bool wait);

  // Enqueues a replicated program: args[i] are replica i's arguments, and
  // the result's [i] its outputs. No argument is donated.
  std::vector<std::vector<BufferPtr>> execute_replicated(const Executable& exe,
                                                         const std::vector<std::vector<Buffer*>>& args);

  MemoryStats memory_stats(int device) const;
  void reset_peak(int device);
  // Cheap reads of our own counters (memory_stats also asks the plugin).
  int64_t bytes_in_use(int device) const { return counters_[device].in_use.load(std::memory_order_relaxed); }
  // The most the device held while the last program launched on it ran:
  // what was in use, its scratch and its outputs, less what it was donated.
  int64_t last_run_peak(int device) const { return counters_[device].last_run_peak.load(std::memory_order_relaxed); }
  // Called by Buffer only.
  void account(int device, int64_t delta);

 private:
  Runtime();
  // Raises the peak to cover `nbytes` held only while a program runs.
  void note_transient(int device, size_t nbytes);
  // note_transient for a run of `exe` on `device` (scratch and outputs beside
  // its inputs, less the bytes of the arguments it was given).
  void note_running(const Executable& exe, int device, int64_t donated_nbytes);
  // The Buffers owning a run's outputs on `device`.
  std::vector<BufferPtr> adopt_outputs(const Executable& exe, PJRT_Buffer* const* outputs, int device);
  void check(PJRT_Error* error, const char* what) const;
  PJRT_DeviceDescription* description(int device) const;
  // The plugin's id of a device (what a device assignment names).
  int64_t device_id(int device) const;
  void await_event(PJRT_Event* event, const char* what) const;
  // The event of the buffer becoming ready; the caller destroys it.
  PJRT_Event* ready_event(const Buffer& buffer);
  void destroy_event(PJRT_Event* event) const;
  // Wraps a loaded program, checks its output count against `outputs` and
  // reads its scratch size.
  ExecutablePtr adopt_executable(PJRT_LoadedExecutable* loaded, std::vector<OutputShape> outputs,
                                 const char* origin);

  std::string plugin_path_;
  void* handle_ = nullptr;
  const PJRT_Api* api_ = nullptr;
  PJRT_Client* client_ = nullptr;
  std::vector<PJRT_Device*> devices_;
  std::string platform_name_, platform_version_, identity_, quick_identity_;
  std::vector<OptionOverride> overrides_, quick_overrides_;  // XLA flags we compile with
  std::string compile_options_, quick_compile_options_;  // serialized xla.CompileOptionsProto

  struct Counters {
    std::atomic<int64_t> in_use{0}, peak{0}, allocs{0}, last_run_peak{0};
  };
  std::unique_ptr<Counters[]> counters_;
  mutable std::atomic<int64_t> out_of_memory_errors_{0};

  friend class Buffer;
  friend class Executable;
};

}  // namespace torch_tpu::runtime
