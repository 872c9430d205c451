#include "exec/exec.h"

#include "exec/disk_cache.h"
#include "exec/recording.h"
#include "runtime/env.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <unordered_map>

#include <c10/util/Exception.h>

namespace torch_tpu::exec {

namespace {

Mode initial_mode() {
  auto v = env::get(env::kEagerMode);
  if (!v || v->empty()) return Mode::Fused;
  return parse_mode(*v);
}

std::atomic<Mode>& current_mode() {
  static std::atomic<Mode> m{initial_mode()};
  return m;
}

struct CacheEntry {
  ir::Graph graph;
  std::vector<int> replica_devices;  // empty: a portable program
  runtime::ExecutablePtr exe;
  uint64_t last_used = 0;
  bool quick = false;  // compiled in the quick tier, not yet recompiled
  uint32_t runs = 0;   // cache hits since it was loaded
};

// Two tiers of code where the plugin compiles faster for slower code
// (Runtime::has_quick_compile: LLVM level 0 on the CPU plugin, about 0.55x
// the compile time and 2-3x the run time). A small program, one whose every
// value has at most kQuickProgramElements elements, so that a run costs
// microseconds at either tier, is first compiled quickly, and compiled again
// at full optimization once it has been reused kRunsBeforeFullCompile times.
// A sweep's or a test suite's programs mostly run once or twice; a loop's run
// again and again. Larger programs are compiled once, at full optimization:
// time to the steady state does not pay for two compiles.
constexpr int64_t kQuickProgramElements = 16384;
constexpr uint32_t kRunsBeforeFullCompile = 8;

bool small_program(const ir::Graph& graph) {
  for (size_t v = 0; v < graph.num_values(); ++v)
    if (graph.type(static_cast<ir::Value>(v)).numel() > kQuickProgramElements) return false;
  return true;
}

// The kernel's bound on a process's memory mappings (vm.max_map_count), or
// the one a test set.
std::atomic<size_t> mapping_limit_override{0};

size_t mapping_limit() {
  if (size_t n = mapping_limit_override.load()) return n;
  static const size_t kernel_limit = [] {
    size_t n = 0;
    std::ifstream in("/proc/sys/vm/max_map_count");
    if (in >> n && n > 0) return n;
    return size_t{65530};  // Linux's default
  }();
  return kernel_limit;
}

// How many memory mappings the process holds now (one line each in
// /proc/self/maps; reading it costs about 1 us per mapping).
size_t mapping_count() {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return 0;
  size_t lines = 0;
  char chunk[1 << 16];
  while (size_t n = std::fread(chunk, 1, sizeof chunk, f)) lines += std::count(chunk, chunk + n, '\n');
  std::fclose(f);
  return lines;
}

// Tier 1, bounded by what its programs hold: each loaded executable holds
// memory mappings of its own (the CPU plugin maps code per kernel: 3 for a
// one-op program, about 300 for a program of a hundred unfused writes), and a
// process that reaches the kernel's limit cannot map code any more, where the
// plugin aborts. So the process's mapping count is measured, and past half the
// limit the least recently used programs nothing else holds (a compiled graph
// holds its own) are destroyed until it is back under three eighths; the disk
// tier still has them. The other half is left to buffers (a large one is a
// mapping of its own), Python and the libraries.
//
// A measurement reads /proc/self/maps, about 1 us a mapping: it is taken once
// loading programs has taken 20 times as long as the last one took. Loading
// (compiling, or reading from disk) is what creates programs' mappings, at a
// bounded rate, so the count can grow by only so much between measurements,
// however large or small the programs are, and measuring costs at most a
// twentieth of the loading time.
struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<CacheEntry>> entries;
  size_t size = 0;
  uint64_t clock = 0;
  // The mapping count at the last measurement, the programs loaded and the
  // time spent loading them since, and how long that measurement took.
  size_t mappings_measured = 0, loads_since_measured = 0;
  int64_t load_nanos_since_measured = 0, measure_nanos = 0;
  // Mappings a load added, averaged over the loads between the last two
  // measurements that saw the count grow; 0 before any did.
  double mappings_per_load = 0;

  // Destroys the `n` least recently used programs nothing else holds;
  // returns how many it destroyed.
  size_t evict_least_recently_used(size_t n) {
    std::vector<std::pair<uint64_t, size_t>> evictable;  // (last use, key)
    for (auto& [key, bucket] : entries)
      for (auto& e : bucket)
        if (e.exe.use_count() == 1) evictable.emplace_back(e.last_used, key);
    n = std::min(n, evictable.size());
    std::nth_element(evictable.begin(), evictable.begin() + n, evictable.end());
    for (size_t i = 0; i < n; ++i) {
      auto& bucket = entries[evictable[i].second];
      bucket.erase(std::find_if(bucket.begin(), bucket.end(),
                                [&](const CacheEntry& e) { return e.last_used == evictable[i].first; }));
      if (bucket.empty()) entries.erase(evictable[i].second);
    }
    size -= n;
    return n;
  }

  size_t measure_mappings() {
    auto start = std::chrono::steady_clock::now();
    size_t n = mapping_count();
    measure_nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    return n;
  }

  // Called before each program is loaded (compiled or read from disk).
  void make_room_for_a_program() {
    if (load_nanos_since_measured < 20 * measure_nanos) return;
    size_t now = measure_mappings();
    if (loads_since_measured > 0 && now > mappings_measured)
      mappings_per_load = double(now - mappings_measured) / double(loads_since_measured);
    size_t limit = mapping_limit();
    if (now > limit / 2) {
      size_t low = limit / 8 * 3;
      while (now > low) {
        size_t wanted = mappings_per_load >= 1 ? size_t(double(now - low) / mappings_per_load) + 1 : size;
        if (evict_least_recently_used(wanted) == 0) break;
        now = measure_mappings();
      }
    }
    mappings_measured = now;
    loads_since_measured = 0;
    load_nanos_since_measured = 0;
    TORCH_CHECK(now < limit - limit / 16, "tpu: cannot load another program: the process holds ", now,
                " memory mappings of the ", limit, " the kernel allows (vm.max_map_count), and the ", size,
                " programs still loaded are in use. Free compiled graphs or tensors, or raise vm.max_map_count.");
  }

  void loaded(int64_t nanos) {
    ++loads_since_measured;
    load_nanos_since_measured += nanos;
  }
};

// Outputs of programs enqueued since the last synchronize.
struct InFlight {
  std::mutex mutex;
  std::vector<std::weak_ptr<runtime::Buffer>> buffers;
  size_t prune_at = 4096;  // twice what survived the last pruning, at least 4096
};

InFlight& in_flight() {
  static InFlight f;
  return f;
}

// Remembers a run's outputs: what a synchronize or an event waits for.
void note_in_flight(const std::vector<runtime::BufferPtr>& outs) {
  if (outs.empty()) return;
  InFlight& f = in_flight();
  std::lock_guard<std::mutex> lock(f.mutex);
  // Drop entries whose buffers died so the list stays short in long loops
  // (amortized: a model whose many parameters stay alive is not rescanned every run).
  if (f.buffers.size() > f.prune_at) {
    std::vector<std::weak_ptr<runtime::Buffer>> alive;
    for (auto& w : f.buffers)
      if (!w.expired()) alive.push_back(w);
    f.buffers.swap(alive);
    f.prune_at = std::max<size_t>(4096, 2 * f.buffers.size());
  }
  // Every output: an event waits for the program while any of its results is referenced.
  f.buffers.insert(f.buffers.end(), outs.begin(), outs.end());
}

Cache& cache() {
  static Cache c;
  return c;
}

// Writes the program that failed to compile where the user can read it.
std::string dump_failed_program(const std::string& text) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/torch_tpu_failed_XXXXXX";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  int fd = mkstemp(buf.data());
  if (fd < 0) return "(could not write the program to a file)";
  std::string real(buf.data());
  FILE* f = fdopen(fd, "w");
  fwrite(text.data(), 1, text.size(), f);
  fclose(f);
  std::string named = real + ".mlir";
  if (std::rename(real.c_str(), named.c_str()) == 0) return named;
  return real;
}

// `recompile`: a quick-tier program compiled again at full optimization.
runtime::ExecutablePtr compile(const std::string& text, std::vector<runtime::OutputShape> outputs,
                               const std::vector<int>& replica_devices, bool quick, bool recompile) {
  Metrics& m = metrics();
  auto start = std::chrono::steady_clock::now();
  runtime::ExecutablePtr exe;
  try {
    exe = runtime::Runtime::get().compile(text, std::move(outputs), replica_devices, quick);
  } catch (const c10::Error& e) {
    std::string path = dump_failed_program(text);
    TORCH_CHECK(false, e.what_without_backtrace(), "\nThe StableHLO program was written to ", path);
  }
  m.compile_nanos += std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start).count();
  (recompile ? m.full_recompiles : m.compiles)++;
  if (quick) m.quick_compiles++;
  return exe;
}

// "array<i64: fill, fill, ...>", `rank` entries.
std::string i64_filled(size_t rank, int64_t fill) {
  std::string s = "array<i64";
  for (size_t i = 0; i < rank; ++i) s += (i ? ", " : ": ") + std::to_string(fill);
  return s + ">";
}

// An int32 scalar that is always 0 but that XLA cannot know to be: computed
// from the first element of `v`, so whatever uses it waits for v. -1 when v
// has no elements or its dtype has no integer image here.
ir::Value zero_after(ir::Graph& g, ir::Value v) {
  ir::Type t = g.type(v);
  if (t.numel() == 0 || c10::isComplexType(t.dtype)) return -1;
  if (!t.shape.empty()) {
    size_t rank = t.shape.size();
    v = g.add("stablehlo.slice", {v}, ir::Type{t.dtype, ir::Shape(rank, 1)},
              "{start_indices = " + i64_filled(rank, 0) + ", limit_indices = " + i64_filled(rank, 1) +
                  ", strides = " + i64_filled(rank, 1) + "}");
    v = reshaped(g, v, {});
  }
  if (c10::isFloatingType(t.dtype)) {
    static const std::unordered_map<size_t, c10::ScalarType> same_width{
        {1, c10::kChar}, {2, c10::kShort}, {4, c10::kInt}, {8, c10::kLong}};
    auto it = same_width.find(c10::elementSize(t.dtype));
    if (it == same_width.end()) return -1;
    v = g.add("stablehlo.bitcast_convert", {v}, ir::Type{it->second, {}});
  }
  v = g.add("stablehlo.convert", {v}, ir::Type{c10::kInt, {}});
  ir::Value one = g.add("stablehlo.constant", {}, ir::Type{c10::kInt, {}}, "{value = dense<1> : tensor<i32>}");
  ir::Value bit = g.add("stablehlo.and", {v, one}, ir::Type{c10::kInt, {}});  // 0 or 1
  ir::Value zero = g.add("stablehlo.constant", {}, ir::Type{c10::kInt, {}}, "{value = dense<0> : tensor<i32>}");
  return g.add("stablehlo.minimum", {bit, zero}, ir::Type{c10::kInt, {}});
}

// XLA keeps a donated parameter's old contents in a copy when a node reading
// them is not ordered before the output that overwrites them: a training
// step's backward matmul reads each weight that the optimizer step then
// updates in place, and nothing orders the two (in a whole small GPT step
// those copies were 3 of its 23 MiB). Such an output gets a data dependency
// on those readers that changes nothing: it becomes itself minus a zero
// computed from one element of each reader's result.
std::optional<ir::Graph> order_overwrites_after_reads(const ir::Graph& graph) {
  const auto& aliases = graph.aliases();
  size_t num_nodes = graph.num_nodes();
  if (aliases.empty() || num_nodes == 0) return std::nullopt;
  auto is_view = [](const std::string& op) {
    return op == "stablehlo.reshape" || op == "stablehlo.transpose" || op == "stablehlo.broadcast_in_dim" ||
           op == "stablehlo.slice" || op == "stablehlo.dynamic_slice" || op == "stablehlo.convert" ||
           op == "stablehlo.bitcast_convert";
  };
  std::vector<std::vector<size_t>> users(graph.num_values());
  for (size_t i = 0; i < num_nodes; ++i)
    for (ir::Value o : graph.operands(graph.node(i))) users[o].push_back(i);
  // reach[node * words + a / 64] has bit a when the node is an ancestor of
  // (or computes) the output of alias a.
  size_t words = (aliases.size() + 63) / 64;
  std::vector<uint64_t> reach(num_nodes * words, 0);
  for (size_t a = 0; a < aliases.size(); ++a) {
    int producer = graph.producer(graph.outputs()[aliases[a].second]);
    if (producer >= 0) reach[producer * words + a / 64] |= uint64_t{1} << (a % 64);
  }
  for (size_t i = num_nodes; i-- > 0;) {
    const uint64_t* bits = &reach[i * words];
    for (ir::Value o : graph.operands(graph.node(i))) {
      int d = graph.producer(o);
      if (d < 0) continue;
      for (size_t w = 0; w < words; ++w) reach[d * words + w] |= bits[w];
    }
  }
  std::optional<ir::Graph> ordered;
  std::vector<ir::Value> outputs = graph.outputs();
  for (size_t a = 0; a < aliases.size(); ++a) {
    auto [param_index, output_index] = aliases[a];
    ir::Value out = outputs[output_index];
    c10::ScalarType dtype = graph.type(out).dtype;
    if (graph.producer(out) < 0 || dtype == c10::kBool || c10::isComplexType(dtype)) continue;
    // The nodes that read the parameter's buffer: through views, which XLA
    // fuses into their users or turns into bitcasts of the buffer.
    std::vector<size_t> late_readers;
    std::vector<ir::Value> chain{graph.params()[param_index]};
    for (size_t c = 0; c < chain.size(); ++c) {
      for (size_t user : users[chain[c]]) {
        const ir::Node& n = graph.node(user);
        if (is_view(n.op.str())) {
          chain.push_back(n.first_result);
        } else if (!(reach[user * words + a / 64] >> (a % 64) & 1)) {
          late_readers.push_back(user);
        }
      }
    }
    // Only matrix products and convolutions: XLA computes them on their own
    // anyway, where taking an element of an elementwise reader's result
    // would make it compute that result apart from the fusion it belongs to.
    bool all_products = std::all_of(late_readers.begin(), late_readers.end(), [&](size_t r) {
      const std::string& op = graph.node(r).op.str();
      return op == "stablehlo.dot_general" || op == "stablehlo.convolution";
    });
    if (late_readers.empty() || !all_products) continue;
    if (!ordered) ordered = graph;
    ir::Graph& g = *ordered;
    ir::Value zero = -1;
    for (size_t r : late_readers) {
      ir::Value z = zero_after(g, graph.node(r).first_result);
      if (z < 0) continue;
      zero = zero < 0 ? z : g.add("stablehlo.minimum", {zero, z}, ir::Type{c10::kInt, {}});
    }
    if (zero < 0) continue;
    const ir::Type& type = g.type(out);
    ir::Value cast = g.add("stablehlo.convert", {zero}, ir::Type{dtype, {}});
    ir::Value wide = g.add("stablehlo.broadcast_in_dim", {cast}, type, "{broadcast_dimensions = array<i64>}");
    // x - (+0) is x for every x, -0 and NaN included.
    outputs[output_index] = g.add("stablehlo.subtract", {out, wide}, type);
  }
  if (!ordered) return std::nullopt;
  ordered->set_outputs(outputs);  // clears the aliases
  for (auto [param_index, output_index] : aliases) ordered->alias(param_index, output_index);
  return ordered;
}

// Tier 2: the disk cache, then the compiler (whose result is stored there).
// Replicated programs are compiled each process: their device assignment is
// part of what the plugin serializes, and they are few. `quick` asks for the
// quick tier, and is cleared when the disk has the program's full tier.
runtime::ExecutablePtr load_or_compile(const ir::Graph& graph, const std::vector<int>& replica_devices,
                                       bool& quick, bool recompile) {
  auto& rt = runtime::Runtime::get();
  Metrics& m = metrics();
  auto ordered = order_overwrites_after_reads(graph);
  std::string text = (ordered ? *ordered : graph).to_mlir();
  std::vector<runtime::OutputShape> outputs;
  for (ir::Value v : graph.outputs()) outputs.push_back({graph.type(v).nbytes(), graph.type(v).shape});
  if (!replica_devices.empty()) return compile(text, std::move(outputs), replica_devices, quick, recompile);
  auto from_disk = [&](const std::string& identity) -> runtime::ExecutablePtr {
    auto bytes = disk_cache::load(identity, text);
    if (!bytes) return nullptr;
    try {
      auto exe = rt.deserialize(*bytes, outputs);
      m.disk_cache_hits++;
      return exe;
    } catch (const c10::Error&) {
      disk_cache::discard(identity, text);  // refused by this plugin: recompile below
      return nullptr;
    }
  };
  if (auto exe = from_disk(rt.identity())) {
    quick = false;
    return exe;
  }
  const std::string& identity = quick ? rt.quick_identity() : rt.identity();
  if (quick)
    if (auto exe = from_disk(identity)) return exe;
  auto exe = compile(text, std::move(outputs), {}, quick, recompile);
  if (!disk_cache::directory().empty()) {
    try {
      disk_cache::store(identity, text, rt.serialize(*exe));
      m.disk_cache_writes++;
    } catch (const c10::Error&) {
      // A plugin that cannot serialize programs keeps only the memory tier.
    }
  }
  return exe;
}

}  // namespace

Mode mode() { return current_mode().load(std::memory_order_relaxed); }
void set_mode(Mode m) {
  // Work deferred under fused mode runs before the schedule changes.
  if (mode() == Mode::Fused && m != Mode::Fused) flush("mode_change", /*user_boundary=*/false);
  current_mode().store(m);
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::Debug: return "debug";
    case Mode::Strict: return "strict";
    case Mode::Fused: return "fused";
  }
  return "?";
}

Mode parse_mode(const std::string& name) {
  if (name == "debug") return Mode::Debug;
  if (name == "strict") return Mode::Strict;
  if (name == "fused") return Mode::Fused;
  TORCH_CHECK_VALUE(false, "torch_tpu: unknown eager mode '", name,
                    "' (expected 'debug', 'strict' or 'fused')");
}

Metrics& metrics() {
  static Metrics m;
  return m;
}

void Metrics::reset() {
  compiles = 0;
  cache_hits = 0;
  cache_misses = 0;
  executions = 0;
  bytes_to_device = 0;
  bytes_to_host = 0;
  compile_nanos = 0;
  quick_compiles = 0;
  full_recompiles = 0;
  ops_deferred = 0;
  disk_cache_hits = 0;
  disk_cache_writes = 0;
  std::lock_guard<std::mutex> lock(mutex);
  cpu_fallbacks.clear();
  flushes.clear();
  shape_families.clear();
}

size_t set_memory_mapping_limit(size_t n) {
  size_t previous = mapping_limit();
  mapping_limit_override.store(n);
  return previous;
}

size_t cache_size() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.size;
}

namespace {
thread_local std::string program_label;

void count_shape_family(const ir::Graph& graph) {
  Metrics& m = metrics();
  std::lock_guard<std::mutex> lock(m.mutex);
  ShapeFamily& f = m.shape_families[graph.shape_family_hash()];
  if (f.programs++ > 0) return;
  const char* op = runtime::OpNameScope::current();
  f.label = !program_label.empty() ? program_label : op ? op : std::to_string(graph.num_nodes()) + " nodes";
}
}  // namespace

ProgramLabel::ProgramLabel(std::string label) : previous_(std::move(program_label)) {
  program_label = std::move(label);
}
ProgramLabel::~ProgramLabel() { program_label = std::move(previous_); }

runtime::ExecutablePtr executable(const ir::Graph& graph, const std::vector<int>& replica_devices, bool tiered) {
  Metrics& m = metrics();
  Cache& c = cache();
  size_t key = graph.hash();
  for (int d : replica_devices) key = key * 31 + static_cast<size_t>(d) + 1;
  auto find = [&]() -> CacheEntry* {
    auto it = c.entries.find(key);
    if (it == c.entries.end()) return nullptr;
    for (auto& e : it->second)
      if (e.graph == graph && e.replica_devices == replica_devices) return &e;
    return nullptr;
  };
  bool quick = false, recompile = false;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (CacheEntry* e = find()) {
      m.cache_hits++;
      e->last_used = ++c.clock;
      if (!e->quick || ++e->runs < kRunsBeforeFullCompile) return e->exe;
      e->quick = false;  // this thread recompiles it; others run the quick code meanwhile
      recompile = true;
    } else {
      m.cache_misses++;
      c.make_room_for_a_program();
      quick = tiered && runtime::Runtime::get().has_quick_compile() && small_program(graph);
    }
  }
  auto start = std::chrono::steady_clock::now();
  runtime::ExecutablePtr exe = load_or_compile(graph, replica_devices, quick, recompile);
  int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.loaded(nanos);
  if (CacheEntry* e = find()) {  // recompiled at full optimization, or loaded by another thread meanwhile
    if (!quick) e->exe = exe;
    return e->exe;
  }
  count_shape_family(graph);
  c.entries[key].push_back({graph, replica_devices, exe, ++c.clock, quick});
  c.size++;
  return exe;
}

std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const std::vector<runtime::Buffer*>& args,
                                    int device) {
  return run(graph, *executable(graph, {}, /*tiered=*/true), args, device);
}

std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const runtime::Executable& exe,
                                    const std::vector<runtime::Buffer*>& args, int device) {
  metrics().executions++;
  bool wait = mode() == Mode::Debug;
  std::vector<size_t> donated;
  for (auto& alias : graph.aliases()) donated.push_back(alias.first);
  auto outs = runtime::Runtime::get().execute(exe, args, donated, device, wait);
  if (!wait) note_in_flight(outs);
  return outs;
}

std::vector<std::vector<runtime::BufferPtr>> run_replicated(const ir::Graph& graph,
                                                            const std::vector<std::vector<runtime::Buffer*>>& args,
                                                            const std::vector<int>& replica_devices) {
  TORCH_CHECK(graph.aliases().empty(), "tpu: a replicated program donates no argument");
  auto exe = executable(graph, replica_devices);
  metrics().executions++;
  auto outs = runtime::Runtime::get().execute_replicated(*exe, args);
  for (const auto& replica : outs) note_in_flight(replica);
  return outs;
}

std::vector<runtime::BufferPtr> enqueued_work(const char* reason) {
  flush(reason);
  std::vector<runtime::BufferPtr> alive;
  InFlight& f = in_flight();
  std::lock_guard<std::mutex> lock(f.mutex);
  for (auto& w : f.buffers)
    if (auto b = w.lock()) alive.push_back(std::move(b));
  return alive;
}

namespace {
struct RegisterQueue {
  RegisterQueue() { set_enqueued_work(&enqueued_work); }
} register_queue;
}  // namespace

void synchronize(int device) {
  flush("synchronize");
  std::vector<std::weak_ptr<runtime::Buffer>> pending;
  {
    InFlight& f = in_flight();
    std::lock_guard<std::mutex> lock(f.mutex);
    pending.swap(f.buffers);
  }
  for (auto& w : pending)
    if (auto b = w.lock()) runtime::Runtime::get().await_ready(*b);
}

}  // namespace torch_tpu::exec
