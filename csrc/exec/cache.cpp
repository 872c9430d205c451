// The compilation cache: memory tier (bounded by memory mappings), the two
// compile tiers for small programs, and the disk tier.
#include "exec/cache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <c10/util/Exception.h>

#include "exec/disk_cache.h"
#include "exec/metrics.h"
#include "exec/passes.h"
#include "exec/trace.h"
#include "runtime/env.h"

namespace torch_tpu::exec {

namespace {

struct CacheEntry {
  ir::Graph graph;
  std::vector<int> replica_devices;  // empty: a portable program
  runtime::ExecutablePtr exe;
  uint64_t last_used = 0;
  bool quick = false;  // compiled in the quick tier, not yet recompiled
  uint32_t runs = 0;   // cache hits since it was loaded
  uint32_t waits = 0;  // host waits after which it ran again (see note_host_wait)
  uint32_t runs_since_wait = 0;
  uint64_t last_wait = 0;
};

std::atomic<uint64_t> host_waits{0};

// Two tiers of code where the plugin compiles faster for slower code
// (Runtime::has_quick_compile: LLVM level 0 and XLA's classic emitters on the
// CPU plugin). A program is first compiled quickly, and compiled again at full
// optimization at its kRunsBeforeFullCompile-th reuse, if by then it has
// outlived a loop's settling: it ran again after kWaitsToSettle host waits
// (reads and synchronizes, which delimit a loop's iterations; fused mode cuts
// a loop's first three differently while it learns the loop), or it ran
// kRunsBeforeFullCompile times since the last wait (a loop that does not read
// every iteration). So the programs of a loop's first iterations that repeat
// only within an iteration (fused mode's cuts at repeated layers, before it
// knows the loop) are not optimized for nothing, unless a model repeats a
// layer more than that.
// Tiering::BySize compiles quickly first only when the first runs in slower
// code cost less than the quick compile saves. What a compile costs grows
// with the program's values (nodes), what a run costs with their elements: a
// program whose values average at most kQuickElementsPerValue elements is
// compiled quickly first. Measured on the CPU plugin (a small GPT's training
// step, 1634 values averaging 56K elements): the quick tier compiled it in
// 0.45 s instead of 2.36 (1.2 ms saved per value) and ran it in 70 ms instead
// of 25 (0.5 ns more per element), so at this bound 8 runs cost at most a
// quarter of what the compile saved (other programs run up to 10x slower in
// the quick tier: an elementwise chain over 2M-element values). Tiering::
// QuickFirst is for a program that mostly runs once whatever its size (fused
// mode's programs of a loop's first iterations: a width-512 GPT's ran 1.7x
// slower in the quick tier, and compiled in 0.3-0.8 s instead of 0.9-2.4).
constexpr int64_t kQuickElementsPerValue = 65536;
constexpr uint32_t kRunsBeforeFullCompile = 8;
constexpr uint32_t kWaitsToSettle = 3;

bool small_values(const ir::Graph& graph) {
  int64_t elements = 0;
  for (size_t v = 0; v < graph.num_values(); ++v) elements += graph.type(static_cast<ir::Value>(v)).numel();
  return elements <= kQuickElementsPerValue * static_cast<int64_t>(std::max<size_t>(graph.num_values(), 1));
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
  bool limit_changed = false;  // the next load measures, however cheap the loads since

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
    if (!limit_changed && load_nanos_since_measured < 20 * measure_nanos) return;
    limit_changed = false;
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

Cache& cache() {
  static Cache c;
  return c;
}

// Writes the program that failed to compile where the user can read it.
std::string dump_failed_program(const std::string& text) {
  std::string path = env::non_empty_or(env::kTmpDir, "/tmp") + "/torch_tpu_failed_XXXXXX";
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
  TraceScope trace([] { return "tpu::compile_xla"; }, {{"quick", quick}, {"recompile", recompile}});
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
    TraceScope trace([] { return "tpu::compile_cache_disk"; }, {});
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

size_t set_memory_mapping_limit(size_t n) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t previous = mapping_limit();
  mapping_limit_override.store(n);
  c.limit_changed = true;
  return previous;
}

void note_host_wait() { host_waits.fetch_add(1, std::memory_order_relaxed); }

size_t cache_size() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.size;
}

namespace {

// The shape family metrics name a family by its first program's label.
void count_shape_family(const ir::Graph& graph) {
  Metrics& m = metrics();
  std::lock_guard<std::mutex> lock(m.mutex);
  ShapeFamily& f = m.shape_families[graph.shape_family_hash()];
  if (f.programs++ > 0) return;
  const char* op = runtime::OpNameScope::current();
  const std::string& label = ProgramLabel::current();
  f.label = !label.empty() ? label : op ? op : std::to_string(graph.num_nodes()) + " nodes";
}
}  // namespace

runtime::ExecutablePtr executable(const ir::Graph& graph, const std::vector<int>& replica_devices, Tiering tiering) {
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
      if (!e->quick) return e->exe;
      uint64_t wait = host_waits.load(std::memory_order_relaxed);
      if (wait != e->last_wait) {
        e->last_wait = wait;
        e->waits++;
        e->runs_since_wait = 0;
      }
      ++e->runs_since_wait;
      if (++e->runs < kRunsBeforeFullCompile ||
          (e->waits < kWaitsToSettle && e->runs_since_wait < kRunsBeforeFullCompile))
        return e->exe;
      e->quick = false;  // this thread recompiles it; others run the quick code meanwhile
      recompile = true;
    } else {
      m.cache_misses++;
      c.make_room_for_a_program();
      quick = tiering != Tiering::Full && runtime::Runtime::get().has_quick_compile() &&
              (tiering == Tiering::QuickFirst || small_values(graph));
    }
  }
  auto start = std::chrono::steady_clock::now();
  TraceScope trace([] { return "tpu::compile"; }, {{"nodes", static_cast<int64_t>(graph.num_nodes())}});
  runtime::ExecutablePtr exe = load_or_compile(graph, replica_devices, quick, recompile);
  int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.loaded(nanos);
  if (CacheEntry* e = find()) {  // recompiled at full optimization, or loaded by another thread meanwhile
    if (!quick) e->exe = exe;
    return e->exe;
  }
  count_shape_family(graph);
  c.entries[key].push_back({graph, replica_devices, exe, ++c.clock, quick, 0, 0, 0,
                            host_waits.load(std::memory_order_relaxed)});
  c.size++;
  return exe;
}

}  // namespace torch_tpu::exec
