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
  runtime::ExecutablePtr exe;
  uint64_t last_used = 0;
};

// Tier 1, bounded: each loaded executable holds its own code mappings, and a
// process that keeps every program it ever ran (a long test run, an op sweep)
// runs out of them. The least recently used programs go first; the disk cache
// still has them. Programs something else holds (a compiled graph) stay.
std::atomic<size_t> max_loaded_executables{2048};

struct Cache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<CacheEntry>> entries;
  size_t size = 0;
  uint64_t clock = 0;

  bool evict_least_recently_used() {
    auto bucket = entries.end();
    size_t index = 0;
    uint64_t oldest = UINT64_MAX;
    for (auto it = entries.begin(); it != entries.end(); ++it)
      for (size_t i = 0; i < it->second.size(); ++i)
        if (it->second[i].last_used < oldest && it->second[i].exe.use_count() == 1) {
          oldest = it->second[i].last_used;
          bucket = it;
          index = i;
        }
    if (bucket == entries.end()) return false;
    bucket->second.erase(bucket->second.begin() + index);
    if (bucket->second.empty()) entries.erase(bucket);
    --size;
    return true;
  }
};

// Outputs of programs enqueued since the last synchronize.
struct InFlight {
  std::mutex mutex;
  std::vector<std::weak_ptr<runtime::Buffer>> buffers;
};

InFlight& in_flight() {
  static InFlight f;
  return f;
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

runtime::ExecutablePtr compile(const std::string& text, std::vector<runtime::OutputShape> outputs) {
  Metrics& m = metrics();
  auto start = std::chrono::steady_clock::now();
  runtime::ExecutablePtr exe;
  try {
    exe = runtime::Runtime::get().compile(text, std::move(outputs));
  } catch (const c10::Error& e) {
    std::string path = dump_failed_program(text);
    TORCH_CHECK(false, e.what_without_backtrace(), "\nThe StableHLO program was written to ", path);
  }
  m.compile_nanos += std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start).count();
  m.compiles++;
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
           op == "stablehlo.slice" || op == "stablehlo.convert" || op == "stablehlo.bitcast_convert";
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
runtime::ExecutablePtr load_or_compile(const ir::Graph& graph) {
  auto& rt = runtime::Runtime::get();
  Metrics& m = metrics();
  auto ordered = order_overwrites_after_reads(graph);
  std::string text = (ordered ? *ordered : graph).to_mlir();
  std::vector<runtime::OutputShape> outputs;
  for (ir::Value v : graph.outputs()) outputs.push_back({graph.type(v).nbytes(), graph.type(v).shape});
  if (auto bytes = disk_cache::load(rt.identity(), text)) {
    try {
      auto exe = rt.deserialize(*bytes, outputs);
      m.disk_cache_hits++;
      return exe;
    } catch (const c10::Error&) {
      disk_cache::discard(rt.identity(), text);  // refused by this plugin: recompile below
    }
  }
  auto exe = compile(text, std::move(outputs));
  if (!disk_cache::directory().empty()) {
    try {
      disk_cache::store(rt.identity(), text, rt.serialize(*exe));
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
  ops_deferred = 0;
  disk_cache_hits = 0;
  disk_cache_writes = 0;
  std::lock_guard<std::mutex> lock(mutex);
  cpu_fallbacks.clear();
  flushes.clear();
}

size_t set_max_loaded_executables(size_t n) {
  TORCH_CHECK(n > 0, "tpu: the memory tier must keep at least one program");
  return max_loaded_executables.exchange(n);
}

size_t cache_size() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.size;
}

runtime::ExecutablePtr executable(const ir::Graph& graph) {
  Metrics& m = metrics();
  Cache& c = cache();
  size_t key = graph.hash();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.entries.find(key);
    if (it != c.entries.end()) {
      for (auto& e : it->second) {
        if (e.graph == graph) {
          m.cache_hits++;
          e.last_used = ++c.clock;
          return e.exe;
        }
      }
    }
  }
  m.cache_misses++;
  runtime::ExecutablePtr exe = load_or_compile(graph);
  std::lock_guard<std::mutex> lock(c.mutex);
  c.entries[key].push_back({graph, exe, ++c.clock});
  c.size++;
  while (c.size > max_loaded_executables.load() && c.evict_least_recently_used()) {
  }
  return exe;
}

std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const std::vector<runtime::Buffer*>& args,
                                    int device) {
  return run(graph, *executable(graph), args, device);
}

std::vector<runtime::BufferPtr> run(const ir::Graph& graph, const runtime::Executable& exe,
                                    const std::vector<runtime::Buffer*>& args, int device) {
  metrics().executions++;
  bool wait = mode() == Mode::Debug;
  std::vector<size_t> donated;
  for (auto& alias : graph.aliases()) donated.push_back(alias.first);
  auto outs = runtime::Runtime::get().execute(exe, args, donated, device, wait);
  if (!wait && !outs.empty()) {
    InFlight& f = in_flight();
    std::lock_guard<std::mutex> lock(f.mutex);
    // Drop entries whose buffers died so the list stays short in long loops.
    if (f.buffers.size() > 4096) {
      std::vector<std::weak_ptr<runtime::Buffer>> alive;
      for (auto& w : f.buffers)
        if (!w.expired()) alive.push_back(w);
      f.buffers.swap(alive);
    }
    f.buffers.push_back(outs[0]);
  }
  return outs;
}

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
