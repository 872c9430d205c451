// The PJRT C API: plugin loading, client and devices, buffers and
// transfers, compile and execute, serialization, errors -> c10.
#include "runtime/pjrt.h"

#include "runtime/env.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <c10/util/Exception.h>

namespace torch_tpu::runtime {

namespace {
thread_local const char* current_op = nullptr;

std::mutex init_mutex;
std::string configured_plugin_path;
Runtime* instance = nullptr;
std::string init_error;  // sticky: a failed load fails every later use the same way

template <class T>
T make_args() {
  T args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = sizeof(T);
  return args;
}

void append_varint(std::string& out, uint64_t v) {
  do {
    char byte = static_cast<char>(v & 0x7f);
    v >>= 7;
    if (v) byte = static_cast<char>(byte | 0x80);
    out += byte;
  } while (v);
}

void append_bytes_field(std::string& out, int field, const std::string& bytes) {
  append_varint(out, (static_cast<uint64_t>(field) << 3) | 2);
  append_varint(out, bytes.size());
  out += bytes;
}

// XLA debug options the plugin compiles with, beyond its defaults: for every
// program, or (`quick`) for the quick tier of small programs (exec.cpp). The
// XLA CPU plugin leaves reductions to its loop emitter by default; JAX's own
// XLA CPU client hands them to YNNPACK, which sums twice as fast (0.15 against
// 0.29 ms for 8x256x1024 floats here). On the CPU plugin most programs spend
// more time compiling than running, and LLVM's level 1 compiles in about 0.8x
// the time of XLA's default level 3 and runs as fast; level 0 compiles in about
// 0.55x and runs 2-3x slower (benchmarks/compile_level.py). XLA's MLIR fusion
// emitters (its default) create and load MLIR contexts at every compile, which
// dominates compiling a small program: the quick tier uses the classic
// emitters (compile_level's small_programs: half the compile time; a fused
// gradgradcheck from a cold cache: 3x faster); the full tier keeps the MLIR
// emitters, whose code runs its elementwise chain 1.2-1.3x faster.
std::vector<OptionOverride> option_overrides(const std::string& platform, bool quick) {
  if (platform != "cpu") return {};
  std::vector<OptionOverride> overrides = {
      {"xla_cpu_experimental_ynn_fusion_type", std::string("LIBRARY_FUSION_TYPE_REDUCE")},
      {"xla_backend_optimization_level", int64_t{quick ? 0 : 1}}};
  if (quick) overrides.push_back({"xla_cpu_use_fusion_emitters", false});
  return overrides;
}

// On the CPU plugin a device buffer, and each run's scratch space, is host
// memory from glibc's malloc. With glibc's defaults every block over 32 MiB
// (and any block too large for a thread's 64 MiB heap) is mapped fresh and
// unmapped when freed, so a program touches new pages, one fault per 4 KiB,
// on every run: strict mode's elementwise chain (16 MiB activations) ran at
// 98 ms a step against 58 with the memory kept. A device allocator keeps what
// it freed for the next allocation (CUDA's caching allocator does); here one
// arena for every thread, blocks up to 1 GiB from it, and 2 GiB of free space
// kept at its top do that (torch.tpu.empty_cache() hands the free space back).
// Set before the plugin starts its threads; TORCH_TPU_CPU_REUSE_HOST_MEMORY=0
// leaves the allocator alone.
std::atomic<bool> host_memory_kept{false};

void keep_host_memory_for_reuse() {
#ifdef __GLIBC__
  if (!env::flag(env::kCpuReuseHostMemory, true)) return;
  host_memory_kept = true;
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, INT32_MAX);
#endif
}

void append_varint_field(std::string& out, int field, uint64_t v) {
  append_varint(out, static_cast<uint64_t>(field) << 3);
  append_varint(out, v);
}

// Hand-encoded xla.CompileOptionsProto: executable_build_options (3) =
// {device_ordinal (1) = -1, num_replicas (4), num_partitions (5) = 1,
// device_assignment (9)}, compile_portable_executable (4), and
// env_option_overrides (7), a map from flag name to OptionOverrideProto
// {string_field (1) | int_field (3)}. Without replica devices the program is
// one portable replica: it takes the device per call, so one executable serves
// every device. With them, replica i runs on the device with id replica_device_ids[i]
// (xla.DeviceAssignmentProto: replica_count (1), computation_count (2),
// computation_devices (3) = {replica_device_ids (1)}).
std::string compile_options(const std::vector<OptionOverride>& overrides,
                            const std::vector<int64_t>& replica_device_ids = {}) {
  bool replicated = !replica_device_ids.empty();
  std::string build;
  append_varint_field(build, 1, static_cast<uint64_t>(int64_t{-1}));
  append_varint_field(build, 4, replicated ? replica_device_ids.size() : 1);
  append_varint_field(build, 5, 1);
  if (replicated) {
    std::string ids, devices, assignment;
    for (int64_t id : replica_device_ids) append_varint(ids, static_cast<uint64_t>(id));
    append_bytes_field(devices, 1, ids);
    append_varint_field(assignment, 1, replica_device_ids.size());
    append_varint_field(assignment, 2, 1);
    append_bytes_field(assignment, 3, devices);
    append_bytes_field(build, 9, assignment);
  }
  std::string out;
  append_bytes_field(out, 3, build);
  if (!replicated) append_varint_field(out, 4, 1);
  for (const auto& [flag, value] : overrides) {
    std::string override_value, entry;
    if (const auto* text = std::get_if<std::string>(&value))
      append_bytes_field(override_value, 1, *text);
    else if (const auto* flag_on = std::get_if<bool>(&value))
      append_varint_field(override_value, 2, *flag_on ? 1 : 0);
    else
      append_varint_field(override_value, 3, static_cast<uint64_t>(std::get<int64_t>(value)));
    append_bytes_field(entry, 1, flag);
    append_bytes_field(entry, 2, override_value);
    append_bytes_field(out, 7, entry);
  }
  return out;
}

// For calls whose failure we can only ignore (destructors, optional queries).
void discard_error(const PJRT_Api* api, PJRT_Error* err) {
  if (!err) return;
  auto destroy = make_args<PJRT_Error_Destroy_Args>();
  destroy.error = err;
  api->PJRT_Error_Destroy(&destroy);
}

}  // namespace

void release_free_host_memory() {
#ifdef __GLIBC__
  if (host_memory_kept) malloc_trim(0);
#endif
}

std::string OptionOverride::value_text() const {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* flag_on = std::get_if<bool>(&value)) return *flag_on ? "true" : "false";
  return std::to_string(std::get<int64_t>(value));
}

OpNameScope::OpNameScope(const char* name) : previous_(current_op) { current_op = name; }
OpNameScope::~OpNameScope() { current_op = previous_; }
const char* OpNameScope::current() { return current_op; }

PJRT_Buffer_Type to_pjrt_type(c10::ScalarType t) {
  switch (t) {
    case c10::kBool: return PJRT_Buffer_Type_PRED;
    case c10::kByte: return PJRT_Buffer_Type_U8;
    case c10::kChar: return PJRT_Buffer_Type_S8;
    case c10::kShort: return PJRT_Buffer_Type_S16;
    case c10::kInt: return PJRT_Buffer_Type_S32;
    case c10::kLong: return PJRT_Buffer_Type_S64;
    case c10::kHalf: return PJRT_Buffer_Type_F16;
    case c10::kFloat: return PJRT_Buffer_Type_F32;
    case c10::kDouble: return PJRT_Buffer_Type_F64;
    case c10::kBFloat16: return PJRT_Buffer_Type_BF16;
    case c10::kUInt16: return PJRT_Buffer_Type_U16;
    case c10::kUInt32: return PJRT_Buffer_Type_U32;
    case c10::kUInt64: return PJRT_Buffer_Type_U64;
    case c10::kFloat8_e5m2: return PJRT_Buffer_Type_F8E5M2;
    case c10::kFloat8_e4m3fn: return PJRT_Buffer_Type_F8E4M3FN;
    case c10::kFloat8_e5m2fnuz: return PJRT_Buffer_Type_F8E5M2FNUZ;
    case c10::kFloat8_e4m3fnuz: return PJRT_Buffer_Type_F8E4M3FNUZ;
    case c10::kFloat8_e8m0fnu: return PJRT_Buffer_Type_F8E8M0FNU;
    case c10::kComplexFloat: return PJRT_Buffer_Type_C64;
    case c10::kComplexDouble: return PJRT_Buffer_Type_C128;
    case c10::kBits1x8:
    case c10::kBits2x4:
    case c10::kBits4x2:
    case c10::kBits8: return PJRT_Buffer_Type_U8;
    case c10::kBits16: return PJRT_Buffer_Type_U16;
    default:
      TORCH_CHECK_TYPE(false, "tpu: unsupported dtype ", t);
  }
}

void set_plugin_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(init_mutex);
  configured_plugin_path = path;
}

bool Runtime::initialized() {
  std::lock_guard<std::mutex> lock(init_mutex);
  return instance != nullptr;
}

namespace {
// Set in a child forked after the client was created: the plugin's threads
// and the client's state did not survive the fork, so using them would hang.
std::atomic<bool> forked_after_init{false};
}  // namespace

bool Runtime::in_bad_fork() { return forked_after_init.load(std::memory_order_relaxed); }

Runtime& Runtime::get() {
  Runtime* r = __atomic_load_n(&instance, __ATOMIC_ACQUIRE);
  if (r) {
    TORCH_CHECK(!in_bad_fork(), "Cannot re-initialize tpu in forked subprocess. To use tpu with multiprocessing, "
                "you must use the 'spawn' start method");
    return *r;
  }
  std::lock_guard<std::mutex> lock(init_mutex);
  if (instance) return *instance;
  TORCH_CHECK(init_error.empty(), init_error);
  try {
    __atomic_store_n(&instance, new Runtime(), __ATOMIC_RELEASE);
    pthread_atfork(nullptr, nullptr, [] { forked_after_init.store(true); });
  } catch (const c10::Error& e) {
    init_error = e.what_without_backtrace();
    throw;
  }
  return *instance;
}

void Runtime::check(PJRT_Error* error, const char* what) const {
  if (!error) return;
  auto msg_args = make_args<PJRT_Error_Message_Args>();
  msg_args.error = error;
  api_->PJRT_Error_Message(&msg_args);
  std::string message(msg_args.message, msg_args.message_size);
  auto code_args = make_args<PJRT_Error_GetCode_Args>();
  code_args.error = error;
  api_->PJRT_Error_GetCode(&code_args);
  auto code = code_args.code;
  auto destroy = make_args<PJRT_Error_Destroy_Args>();
  destroy.error = error;
  api_->PJRT_Error_Destroy(&destroy);
  const char* op = OpNameScope::current();
  std::string where = op ? std::string(" in ") + op : std::string();
  if (code == PJRT_Error_Code_RESOURCE_EXHAUSTED) {
    out_of_memory_errors_.fetch_add(1);
    // Same exception type as CUDA's OOM, so `except torch.OutOfMemoryError` works.
    TORCH_CHECK_WITH(OutOfMemoryError, false, "tpu: out of device memory", where, " (", what,
                     "): ", message);
  }
  TORCH_CHECK(false, "tpu: ", what, " failed", where, ": ", message);
}

void Runtime::await_event(PJRT_Event* event, const char* what) const {
  if (!event) return;
  auto await = make_args<PJRT_Event_Await_Args>();
  await.event = event;
  PJRT_Error* err = api_->PJRT_Event_Await(&await);
  destroy_event(event);
  check(err, what);
}

Runtime::Runtime() {
  plugin_path_ = configured_plugin_path;
  TORCH_CHECK(!plugin_path_.empty(),
              "tpu: no PJRT plugin found. Install the CPU plugin (pip install xla-cpu-pjrt), "
              "libtpu on a TPU host, or set TORCH_TPU_PJRT_PLUGIN to a plugin's path.");
  // XLA logs INFO lines in every process (the CPU plugin announces its device
  // count): a clean run stays quiet unless asked.
  env::set_if_unset(env::kXlaMinLogLevel, std::to_string(env::int_in_range(env::kPluginLogLevel, 0, 3, 1)));
  handle_ = dlopen(plugin_path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    TORCH_CHECK(false, "tpu: cannot load PJRT plugin '", plugin_path_, "': ", why ? why : "unknown error");
  }
  using GetApi = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetApi>(dlsym(handle_, "GetPjrtApi"));
  TORCH_CHECK(get_api, "tpu: '", plugin_path_, "' is not a PJRT plugin (no GetPjrtApi symbol)");
  api_ = get_api();
  TORCH_CHECK(api_, "tpu: GetPjrtApi() of '", plugin_path_, "' returned null");
  TORCH_CHECK(api_->pjrt_api_version.major_version == PJRT_API_MAJOR,
              "tpu: PJRT plugin '", plugin_path_, "' has C API major version ",
              api_->pjrt_api_version.major_version, ", torch_tpu was built for ", PJRT_API_MAJOR);
  // Every function we call must lie inside the plugin's (possibly smaller) struct.
  TORCH_CHECK(api_->struct_size >= offsetof(PJRT_Api, PJRT_Executable_Serialize) + sizeof(void*),
              "tpu: PJRT plugin '", plugin_path_, "' is too old (C API minor version ",
              api_->pjrt_api_version.minor_version, ")");

  if (api_->PJRT_Plugin_Initialize) {
    auto init = make_args<PJRT_Plugin_Initialize_Args>();
    check(api_->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");
  }

  std::vector<PJRT_NamedValue> options;
  PJRT_NamedValue cpu_count;
  std::memset(&cpu_count, 0, sizeof(cpu_count));
  bool is_cpu_plugin = plugin_path_.find("cpu") != std::string::npos;
  if (is_cpu_plugin) {
    keep_host_memory_for_reuse();
    static const char kName[] = "cpu_device_count";
    cpu_count.struct_size = sizeof(PJRT_NamedValue);
    cpu_count.name = kName;
    cpu_count.name_size = sizeof(kName) - 1;
    cpu_count.type = PJRT_NamedValue_kInt64;
    // Under torchrun each process sees one device per local rank, so that
    // torch.tpu.set_device(LOCAL_RANK) works as torch.cuda.set_device does.
    cpu_count.int64_value = env::positive_int(env::kCpuDeviceCount, env::positive_int(env::kLocalWorldSize, 1));
    cpu_count.value_size = 1;
    options.push_back(cpu_count);
  }
  auto create = make_args<PJRT_Client_Create_Args>();
  create.create_options = options.data();
  create.num_options = options.size();
  check(api_->PJRT_Client_Create(&create), "PJRT_Client_Create");
  client_ = create.client;

  auto devs = make_args<PJRT_Client_AddressableDevices_Args>();
  devs.client = client_;
  check(api_->PJRT_Client_AddressableDevices(&devs), "PJRT_Client_AddressableDevices");
  devices_.assign(devs.addressable_devices, devs.addressable_devices + devs.num_addressable_devices);
  TORCH_CHECK(!devices_.empty(), "tpu: PJRT plugin '", plugin_path_, "' has no addressable devices");

  auto name = make_args<PJRT_Client_PlatformName_Args>();
  name.client = client_;
  check(api_->PJRT_Client_PlatformName(&name), "PJRT_Client_PlatformName");
  platform_name_.assign(name.platform_name, name.platform_name_size);
  auto version = make_args<PJRT_Client_PlatformVersion_Args>();
  version.client = client_;
  check(api_->PJRT_Client_PlatformVersion(&version), "PJRT_Client_PlatformVersion");
  platform_version_.assign(version.platform_version, version.platform_version_size);
  // A flag the user sets in XLA_FLAGS is theirs: we do not override it.
  // XLA_FLAGS and the option overrides change what the plugin compiles, so
  // they are part of the identity.
  std::string xla_flags = env::get(env::kXlaFlags).value_or("");
  std::string base = platform_name_ + "|" + platform_version_ + "|" +
                     std::to_string(api_->pjrt_api_version.major_version) + "." +
                     std::to_string(api_->pjrt_api_version.minor_version) + "|" + xla_flags;
  for (bool quick : {false, true}) {
    auto& overrides = quick ? quick_overrides_ : overrides_;
    std::string& identity = quick ? quick_identity_ : identity_;
    identity = base;
    for (auto& o : option_overrides(platform_name_, quick)) {
      if (xla_flags.find("--" + o.flag + "=") != std::string::npos) continue;
      identity += "|" + o.flag + "=" + o.value_text();
      overrides.push_back(std::move(o));
    }
  }
  compile_options_ = compile_options(overrides_);
  quick_compile_options_ = compile_options(quick_overrides_);
  counters_.reset(new Counters[devices_.size()]);
}

PJRT_DeviceDescription* Runtime::description(int device) const {
  auto desc = make_args<PJRT_Device_GetDescription_Args>();
  desc.device = devices_.at(device);
  check(api_->PJRT_Device_GetDescription(&desc), "PJRT_Device_GetDescription");
  return desc.device_description;
}

std::string Runtime::device_kind(int device) const {
  auto kind = make_args<PJRT_DeviceDescription_Kind_Args>();
  kind.device_description = description(device);
  check(api_->PJRT_DeviceDescription_Kind(&kind), "PJRT_DeviceDescription_Kind");
  return std::string(kind.device_kind, kind.device_kind_size);
}

namespace {
void raise_peak(std::atomic<int64_t>& peak, int64_t candidate) {
  int64_t seen = peak.load();
  while (candidate > seen && !peak.compare_exchange_weak(seen, candidate)) {
  }
}
}  // namespace

void Runtime::account(int device, int64_t delta) {
  Counters& c = counters_[device];
  int64_t now = c.in_use.fetch_add(delta) + delta;
  if (delta > 0) {
    c.allocs.fetch_add(1);
    raise_peak(c.peak, now);
  }
}

void Runtime::note_transient(int device, size_t nbytes) {
  if (nbytes == 0) return;
  Counters& c = counters_[device];
  raise_peak(c.peak, c.in_use.load() + static_cast<int64_t>(nbytes));
}

MemoryStats Runtime::memory_stats(int device) const {
  TORCH_CHECK(device >= 0 && device < device_count(), "tpu: invalid device index ", device);
  MemoryStats s;
  const Counters& c = counters_[device];
  s.bytes_in_use = c.in_use.load();
  s.peak_bytes_in_use = c.peak.load();
  s.num_allocs = c.allocs.load();
  s.num_ooms = out_of_memory_errors_.load();
  auto args = make_args<PJRT_Device_MemoryStats_Args>();
  args.device = devices_[device];
  PJRT_Error* err = api_->PJRT_Device_MemoryStats(&args);
  if (err) {
    // The CPU plugin does not implement it; our own counters still hold.
    discard_error(api_, err);
  } else if (args.bytes_limit_is_set) {
    s.bytes_limit = args.bytes_limit;
  }
  return s;
}

void Runtime::reset_peak(int device) {
  Counters& c = counters_[device];
  c.peak.store(c.in_use.load());
}

Buffer::Buffer(PJRT_Buffer* buffer, int device, size_t nbytes, Dims dims)
    : buffer_(buffer), device_(device), nbytes_(nbytes), dims_(std::move(dims)) {
  instance->account(device_, static_cast<int64_t>(nbytes_));
}

void Buffer::donated() {
  instance->account(device_, -static_cast<int64_t>(nbytes_));
  nbytes_ = 0;
}

namespace {
// Destroys PJRT buffers on a thread of its own: a plugin may block in
// PJRT_Buffer_Destroy until the programs reading (or consuming) the buffer have
// finished, which would make every flush wait for the program it just started.
// Like CUDA's caching allocator, the bytes stop counting when the tensor dies.
class BufferReaper {
 public:
  explicit BufferReaper(const PJRT_Api* api) : api_(api) { std::thread([this] { loop(); }).detach(); }

  void destroy_later(PJRT_Buffer* buffer) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(buffer);
    }
    wake_.notify_one();
  }

 private:
  void loop() {
    std::vector<PJRT_Buffer*> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return !queue_.empty(); });
        batch.swap(queue_);
      }
      for (PJRT_Buffer* b : batch) {
        auto args = make_args<PJRT_Buffer_Destroy_Args>();
        args.buffer = b;
        discard_error(api_, api_->PJRT_Buffer_Destroy(&args));
      }
      batch.clear();
    }
  }

  const PJRT_Api* api_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<PJRT_Buffer*> queue_;
};

BufferReaper& reaper(const PJRT_Api* api) {
  static BufferReaper* r = new BufferReaper(api);  // never destroyed: buffers die until exit
  return *r;
}
}  // namespace

Buffer::~Buffer() {
  reaper(instance->api_).destroy_later(buffer_);
  instance->account(device_, -static_cast<int64_t>(nbytes_));
}

Executable::~Executable() {
  auto args = make_args<PJRT_LoadedExecutable_Destroy_Args>();
  args.executable = exe_;
  discard_error(instance->api_, instance->api_->PJRT_LoadedExecutable_Destroy(&args));
}

BufferPtr Runtime::to_device(const void* data, c10::ScalarType dtype,
                             const std::vector<int64_t>& dims, int device) {
  TORCH_CHECK(device >= 0 && device < device_count(), "tpu: invalid device index ", device);
  auto args = make_args<PJRT_Client_BufferFromHostBuffer_Args>();
  args.client = client_;
  args.data = data;
  args.type = to_pjrt_type(dtype);
  args.dims = dims.data();
  args.num_dims = dims.size();
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  args.device = devices_[device];
  check(api_->PJRT_Client_BufferFromHostBuffer(&args), "host-to-device transfer");
  if (args.done_with_host_buffer) await_event(args.done_with_host_buffer, "host-to-device transfer");
  size_t n = c10::elementSize(dtype);
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return std::make_shared<Buffer>(args.buffer, device, n, dims);
}

void Runtime::to_host(const Buffer& buffer, void* dst, size_t nbytes) {
  auto args = make_args<PJRT_Buffer_ToHostBuffer_Args>();
  args.src = buffer.get();
  args.dst = dst;
  args.dst_size = nbytes;
  check(api_->PJRT_Buffer_ToHostBuffer(&args), "device-to-host transfer");
  await_event(args.event, "device-to-host transfer");
}

PJRT_Event* Runtime::ready_event(const Buffer& buffer) {
  auto args = make_args<PJRT_Buffer_ReadyEvent_Args>();
  args.buffer = buffer.get();
  check(api_->PJRT_Buffer_ReadyEvent(&args), "waiting for a device buffer");
  return args.event;
}

void Runtime::destroy_event(PJRT_Event* event) const {
  auto destroy = make_args<PJRT_Event_Destroy_Args>();
  destroy.event = event;
  api_->PJRT_Event_Destroy(&destroy);
}

void Runtime::await_ready(const Buffer& buffer) { await_event(ready_event(buffer), "device execution"); }

bool Runtime::is_ready(const Buffer& buffer) {
  auto query = make_args<PJRT_Event_IsReady_Args>();
  query.event = ready_event(buffer);
  PJRT_Error* err = api_->PJRT_Event_IsReady(&query);
  destroy_event(query.event);
  check(err, "querying a device buffer");
  return query.is_ready;
}

void Runtime::when_ready(const Buffer& buffer, std::function<void()> fn) {
  auto on_ready = make_args<PJRT_Event_OnReady_Args>();
  on_ready.event = ready_event(buffer);
  on_ready.user_arg = new std::function<void()>(std::move(fn));
  on_ready.callback = [](PJRT_Error* error, void* arg) {
    // A failed program is reported where its results are read; here it only ends the wait.
    if (error) discard_error(instance->api_, error);
    auto* f = static_cast<std::function<void()>*>(arg);
    (*f)();
    delete f;
  };
  PJRT_Error* err = api_->PJRT_Event_OnReady(&on_ready);
  destroy_event(on_ready.event);
  if (err) {
    delete static_cast<std::function<void()>*>(on_ready.user_arg);
    check(err, "waiting for a device buffer");
  }
}

ExecutablePtr Runtime::compile(const std::string& mlir, std::vector<OutputShape> outputs,
                               const std::vector<int>& replica_devices, bool quick) {
  static const char kFormat[] = "mlir";
  auto program = make_args<PJRT_Program>();
  program.code = const_cast<char*>(mlir.data());
  program.code_size = mlir.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  auto args = make_args<PJRT_Client_Compile_Args>();
  args.client = client_;
  args.program = &program;
  std::string replicated_options;
  if (!replica_devices.empty()) {
    std::vector<int64_t> ids;
    for (int d : replica_devices) ids.push_back(device_id(d));
    replicated_options = compile_options(quick ? quick_overrides_ : overrides_, ids);
  }
  const std::string& options =
      !replica_devices.empty() ? replicated_options : quick ? quick_compile_options_ : compile_options_;
  args.compile_options = options.data();
  args.compile_options_size = options.size();
  check(api_->PJRT_Client_Compile(&args), "compile");

  auto exe = adopt_executable(args.executable, std::move(outputs), "compiled");
  exe->set_replica_devices(replica_devices);
  return exe;
}

int64_t Runtime::device_id(int device) const {
  auto id = make_args<PJRT_DeviceDescription_Id_Args>();
  id.device_description = description(device);
  check(api_->PJRT_DeviceDescription_Id(&id), "PJRT_DeviceDescription_Id");
  return id.id;
}

std::string Runtime::serialize(const Executable& exe) {
  auto get = make_args<PJRT_LoadedExecutable_GetExecutable_Args>();
  get.loaded_executable = exe.get();
  check(api_->PJRT_LoadedExecutable_GetExecutable(&get), "PJRT_LoadedExecutable_GetExecutable");
  auto args = make_args<PJRT_Executable_Serialize_Args>();
  args.executable = get.executable;
  PJRT_Error* err = api_->PJRT_Executable_Serialize(&args);
  auto destroy = make_args<PJRT_Executable_Destroy_Args>();
  destroy.executable = get.executable;
  discard_error(api_, api_->PJRT_Executable_Destroy(&destroy));
  check(err, "PJRT_Executable_Serialize");
  std::string bytes(args.serialized_bytes, args.serialized_bytes_size);
  args.serialized_executable_deleter(args.serialized_executable);
  return bytes;
}

ExecutablePtr Runtime::deserialize(const std::string& bytes, std::vector<OutputShape> outputs) {
  auto args = make_args<PJRT_Executable_DeserializeAndLoad_Args>();
  args.client = client_;
  args.serialized_executable = bytes.data();
  args.serialized_executable_size = bytes.size();
  check(api_->PJRT_Executable_DeserializeAndLoad(&args), "PJRT_Executable_DeserializeAndLoad");
  return adopt_executable(args.loaded_executable, std::move(outputs), "cached");
}

ExecutablePtr Runtime::adopt_executable(PJRT_LoadedExecutable* loaded, std::vector<OutputShape> outputs,
                                        const char* origin) {
  auto exe = std::make_shared<Executable>(loaded, std::move(outputs));
  auto get = make_args<PJRT_LoadedExecutable_GetExecutable_Args>();
  get.loaded_executable = loaded;
  check(api_->PJRT_LoadedExecutable_GetExecutable(&get), "PJRT_LoadedExecutable_GetExecutable");
  auto outs = make_args<PJRT_Executable_NumOutputs_Args>();
  outs.executable = get.executable;
  PJRT_Error* err = api_->PJRT_Executable_NumOutputs(&outs);
  auto memory = make_args<PJRT_Executable_GetCompiledMemoryStats_Args>();
  memory.executable = get.executable;
  // Optional in plugins: without it the scratch space is not in the peak.
  if (api_->PJRT_Executable_GetCompiledMemoryStats) {
    PJRT_Error* stats_err = api_->PJRT_Executable_GetCompiledMemoryStats(&memory);
    if (stats_err) discard_error(api_, stats_err);
    else exe->set_temp_nbytes(static_cast<size_t>(std::max<int64_t>(0, memory.temp_size_in_bytes)));
  }
  auto destroy = make_args<PJRT_Executable_Destroy_Args>();
  destroy.executable = get.executable;
  discard_error(api_, api_->PJRT_Executable_Destroy(&destroy));
  check(err, "PJRT_Executable_NumOutputs");
  TORCH_CHECK(outs.num_outputs == exe->num_outputs(), "tpu: ", origin, " program has ", outs.num_outputs,
              " outputs, expected ", exe->num_outputs());
  return exe;
}

std::vector<BufferPtr> Runtime::execute(const Executable& exe, const std::vector<Buffer*>& args,
                                        const std::vector<size_t>& donated_args, int device, bool wait) {
  auto options = make_args<PJRT_ExecuteOptions>();
  std::vector<PJRT_Buffer*> outputs(exe.num_outputs(), nullptr);
  std::vector<PJRT_Buffer*> handles;
  handles.reserve(args.size());
  for (Buffer* b : args) handles.push_back(b->get());
  PJRT_Buffer* const* arg_list = handles.data();
  PJRT_Buffer** out_list = outputs.data();
  PJRT_Event* done = nullptr;
  auto ex = make_args<PJRT_LoadedExecutable_Execute_Args>();
  ex.executable = exe.get();
  ex.options = &options;
  ex.argument_lists = &arg_list;
  ex.num_devices = 1;
  ex.num_args = args.size();
  ex.output_lists = &out_list;
  ex.device_complete_events = wait ? &done : nullptr;
  ex.execute_device = devices_.at(device);
  check(api_->PJRT_LoadedExecutable_Execute(&ex), "execute");
  int64_t donated_nbytes = 0;
  for (size_t i : donated_args) donated_nbytes += static_cast<int64_t>(args[i]->nbytes());
  note_running(exe, device, donated_nbytes);
  for (size_t i : donated_args) args[i]->donated();
  std::vector<BufferPtr> result = adopt_outputs(exe, outputs.data(), device);
  if (wait) await_event(done, "device execution");
  return result;
}

void Runtime::note_running(const Executable& exe, int device, int64_t donated_nbytes) {
  // While it runs the program holds its scratch space and its outputs beside its
  // inputs; the outputs stay counted once adopted.
  int64_t running_nbytes = static_cast<int64_t>(exe.temp_nbytes()) - donated_nbytes;
  for (const OutputShape& o : exe.outputs()) running_nbytes += static_cast<int64_t>(o.nbytes);
  running_nbytes = std::max<int64_t>(0, running_nbytes);
  counters_[device].last_run_peak.store(counters_[device].in_use.load() + running_nbytes, std::memory_order_relaxed);
  note_transient(device, static_cast<size_t>(running_nbytes));
}

std::vector<BufferPtr> Runtime::adopt_outputs(const Executable& exe, PJRT_Buffer* const* outputs, int device) {
  std::vector<BufferPtr> result;
  result.reserve(exe.num_outputs());
  for (size_t i = 0; i < exe.num_outputs(); ++i) {
    const OutputShape& o = exe.outputs()[i];
    result.push_back(std::make_shared<Buffer>(outputs[i], device, o.nbytes, o.dims));
  }
  return result;
}

std::vector<std::vector<BufferPtr>> Runtime::execute_replicated(const Executable& exe,
                                                                const std::vector<std::vector<Buffer*>>& args) {
  const std::vector<int>& replicas = exe.replica_devices();
  TORCH_CHECK(!replicas.empty() && args.size() == replicas.size(), "tpu: a replicated program of ", replicas.size(),
              " replicas was given arguments for ", args.size());
  // The plugin takes one argument list per device of the program, in its own order.
  auto devs = make_args<PJRT_LoadedExecutable_AddressableDevices_Args>();
  devs.executable = exe.get();
  check(api_->PJRT_LoadedExecutable_AddressableDevices(&devs), "PJRT_LoadedExecutable_AddressableDevices");
  TORCH_CHECK(devs.num_addressable_devices == replicas.size(), "tpu: a replicated program of ", replicas.size(),
              " replicas runs on ", devs.num_addressable_devices, " devices");
  std::vector<size_t> replica_at(replicas.size());  // by position in the plugin's order
  for (size_t i = 0; i < replicas.size(); ++i) {
    auto it = std::find(replicas.begin(), replicas.end(),
                        std::find(devices_.begin(), devices_.end(), devs.addressable_devices[i]) - devices_.begin());
    TORCH_CHECK(it != replicas.end(), "tpu: a replicated program runs on a device it was not compiled for");
    replica_at[i] = it - replicas.begin();
  }
  std::vector<std::vector<PJRT_Buffer*>> handles(replicas.size()), outputs(replicas.size());
  std::vector<PJRT_Buffer* const*> arg_lists;
  std::vector<PJRT_Buffer**> out_lists;
  for (size_t i = 0; i < replicas.size(); ++i) {
    for (Buffer* b : args[replica_at[i]]) handles[i].push_back(b->get());
    outputs[i].assign(exe.num_outputs(), nullptr);
    arg_lists.push_back(handles[i].data());
    out_lists.push_back(outputs[i].data());
  }
  auto options = make_args<PJRT_ExecuteOptions>();
  auto ex = make_args<PJRT_LoadedExecutable_Execute_Args>();
  ex.executable = exe.get();
  ex.options = &options;
  ex.argument_lists = arg_lists.data();
  ex.num_devices = replicas.size();
  ex.num_args = args[0].size();
  ex.output_lists = out_lists.data();
  check(api_->PJRT_LoadedExecutable_Execute(&ex), "execute");
  std::vector<std::vector<BufferPtr>> result(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    int device = replicas[replica_at[i]];
    note_running(exe, device, 0);
    result[replica_at[i]] = adopt_outputs(exe, outputs[i].data(), device);
  }
  return result;
}

}  // namespace torch_tpu::runtime
