// Fused eager mode: the shared recording, its split rules and flushes.
#include "exec/fused.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include <c10/util/Exception.h>

#include "exec/cache.h"
#include "exec/metrics.h"
#include "exec/trace.h"
#include "runtime/env.h"

namespace torch_tpu::exec {

namespace {


// run[i] counts the latest ops equal to the op i+1 before them; recent[i] is
// the signature i+1 ops ago. The hot loop of the split rule, once per recorded
// op, so it is built for AVX2 where the machine has it.
// Returns whether some period p = i+1 has repeated twice (run[i] >= p).
__attribute__((target_clones("avx2", "default"))) bool advance_runs(const uint32_t* recent, uint32_t* run,
                                                                   uint32_t signature, uint32_t n) {
  uint32_t repeated = 0;
  for (uint32_t i = 0; i < n; ++i) {
    run[i] = (run[i] + 1) * static_cast<uint32_t>(recent[i] == signature);
    repeated |= static_cast<uint32_t>(run[i] > i);
  }
  return repeated != 0;
}

// Split rule for loops that never read a value back (a training loop): the
// recent sequence of op signatures is watched for a period, the shortest p
// whose last 2p ops repeat. While it holds, the program is cut once per
// period, at the place where the fewest intermediate results are alive (in a
// training loop: between the optimizer step and the next forward), so each
// iteration runs the same program instead of drifting windows that each
// compile anew. A signature that breaks the period ends it; another is then
// looked for.
class Rhythm {
 public:
  static constexpr uint32_t kMaxPeriod = 2048;
  // A shorter period (a run of the same few ops: tensors initialized one by
  // one, the layers of an elementwise chain) is not a loop period, and neither
  // are its multiples; a longer period around it (the loop) still is.
  static constexpr uint32_t kMinPeriod = 8;
  static constexpr uint32_t kShortRunChunk = 128;
  // A loop whose iterations the period rule cut into more windows than this
  // (a recurrence: an LSTM's time steps, 117 windows a step) keeps them rather
  // than becoming one program per iteration (see user_boundary()): that program
  // unrolls the recurrence, compiling for as long as all its windows together
  // (an LSTM step: 6.5 s, against 0.3 s for windows that are a few programs
  // run again and again), and XLA holds the temporaries of many steps at once.
  // A stack of 8 transformer blocks is cut into 13 or 14.
  static constexpr uint32_t kMaxWindowsMerged = 32;

  // Called after each recorded op; returns whether to flush now.
  bool on_op(uint64_t full_signature) {
    // 32 bits keep the loop vectorizable; an odd value never equals the
    // zeros that fill the history.
    uint32_t signature = static_cast<uint32_t>(full_signature ^ (full_signature >> 32)) | 1;
    // run_[p - 1] is the run for period p.
    uint32_t* run = run_.data();
    bool repeated = advance_runs(recent_.data() + head_, run, signature, kMaxPeriod);
    if (period_ && run[period_ - 1] == 0) period_ = 0;
    if (!period_ && repeated) {
      uint32_t short_period = 0;
      for (uint32_t p = 1; p <= kMaxPeriod; ++p) {
        if (run[p - 1] < p || (short_period && p % short_period == 0)) continue;
        if (p < kMinPeriod) {
          if (!short_period) short_period = p;
          continue;
        }
        period_ = p;
        // The cut goes before the op of the last period that had the fewest
        // intermediate results alive before it (in a training loop: between
        // the optimizer step and the next forward), and every period after.
        int64_t fewest = INT64_MAX;
        for (uint64_t op = count_ + 1 - p; op <= count_; ++op) {
          if (live_[op % kMaxPeriod] < fewest) {
            fewest = live_[op % kMaxPeriod];
            cut_ = op;
          }
        }
        break;
      }
    }
    push(signature);
    ++count_;
    segment_hash_ = (segment_hash_ ^ signature) * 0x100000001B3ULL;
    if (++segment_ops_ > last_segment_ops_) read_delimited_ = false;  // not the iteration seen before
    if (read_delimited_) return std::binary_search(cuts_.begin(), cuts_.end(), segment_ops_);
    bool cut = window_cut(run);
    segment_windows_ += cut;
    return cut;
  }

  // Whether the period rule, or the short-run rule, cuts after this op.
  bool window_cut(const uint32_t* run) const {
    if (period_) return (count_ - cut_) % period_ == 0;
    // A long run of a short period (one write per iteration of a Python loop
    // over rows) is cut every kShortRunChunk ops, counted from the run's start:
    // the chunks are one program run again and again, where the whole run
    // would be one program that compiles for minutes (XLA takes ~8 ms per
    // dynamic_update_slice) and never recurs.
    for (uint32_t p = 1; p < kMinPeriod; ++p) {
      if (run[p - 1] < p) continue;
      uint32_t chunk = (kShortRunChunk + p - 1) / p * p;
      return (run[p - 1] + p) % chunk == 0;
    }
    return false;
  }

  // Called before each op with the number of results of fused ops alive
  // there, computed or not: a count flushes do not change, so the cut chosen
  // is the same whichever iteration it is chosen from (once a period has its
  // cut, a graph-size or held-bytes flush inside it also falls at the same
  // place every period, counted from the cut).
  void before_op(int64_t live) { live_[count_ % kMaxPeriod] = live; }

  // The ops recorded since the last flush, by their place in the iteration.
  struct Piece {
    bool recurring = false;  // a part of an iteration delimited by reads that repeat
    uint64_t first_op = 0, end_op = 0;
  };
  Piece piece() const {
    bool same_so_far = segment_ops_ < last_segment_ops_ || segment_hash_ == last_segment_hash_;
    return {read_delimited_ && same_so_far, piece_start_, segment_ops_};
  }
  void note_flush() { piece_start_ = segment_ops_; }
  // Where a read-delimited iteration is cut, after that many of its ops
  // (sorted); the loop's next iteration is cut there.
  const std::vector<uint64_t>& cuts() const { return cuts_; }
  void set_cuts(std::vector<uint64_t> cuts) { cuts_ = std::move(cuts); }
  // Whether the last user boundary ended an iteration equal to the one before.
  bool repeated() const { return repeated_; }

  bool active() const { return period_ != 0; }
  // Whether the program being recorded is one iteration of a loop known to
  // repeat: cut once per period, or delimited by reads that repeat.
  bool in_known_iteration() const { return active() || read_delimited_; }
  // Whether the program just flushed at a user boundary was one iteration of
  // a loop that reads a value every iteration (see user_boundary()).
  bool read_delimited() const { return read_delimited_; }

  // A flush the program asked for (a host read, a synchronize). When the ops
  // since the previous one were the same as between the two before (a loop
  // that reads a value every iteration, such as its loss) and no period lasted
  // until the read, the periods found inside were repeated layers, not the
  // loop: the reads delimit its iterations, and the next iteration, while it
  // repeats the last, is not cut (one program per iteration). Otherwise, while
  // no period is known, periods are looked for anew from here, so a loop that
  // reads a value every iteration repeats the same splits from its second
  // iteration on.
  void user_boundary() {
    // A second wait with nothing recorded since the first (a synchronize
    // after reading the loss) delimits nothing new.
    if (segment_ops_ == 0) return;
    repeated_ = segment_ops_ == last_segment_ops_ && segment_hash_ == last_segment_hash_;
    read_delimited_ = repeated_ && !active() && segment_windows_ <= kMaxWindowsMerged;
    segment_windows_ = 0;
    if (!repeated_) cuts_.clear();
    last_segment_ops_ = segment_ops_;
    last_segment_hash_ = segment_hash_;
    segment_ops_ = 0;
    segment_hash_ = 0;
    piece_start_ = 0;
    if (!active()) restart();
  }

 private:
  void restart() {
    std::fill(recent_.begin(), recent_.end(), 0);
    std::fill(run_.begin(), run_.end(), 0);
    head_ = kMaxPeriod;
    period_ = 0;
  }

  void push(uint32_t signature) {
    if (head_ == 0) {
      // Slide the newest kMaxPeriod entries to the top half; amortized O(1).
      std::copy(recent_.begin(), recent_.begin() + kMaxPeriod, recent_.begin() + kMaxPeriod);
      head_ = kMaxPeriod;
    }
    recent_[--head_] = signature;
  }

  // Two windows' worth, newest first from head_.
  std::vector<uint32_t> recent_ = std::vector<uint32_t>(2 * kMaxPeriod, 0);
  std::vector<uint32_t> run_ = std::vector<uint32_t>(kMaxPeriod, 0);
  uint32_t head_ = kMaxPeriod;
  std::vector<int64_t> live_ = std::vector<int64_t>(kMaxPeriod, 0);  // by op index
  uint64_t count_ = 0;
  uint64_t cut_ = 0;  // index of an op the program is cut before
  uint32_t period_ = 0;
  // The ops since the last user boundary, and those between the two before.
  uint64_t segment_ops_ = 0, segment_hash_ = 0;
  uint32_t segment_windows_ = 0;  // window cuts since the last user boundary
  uint64_t last_segment_ops_ = UINT64_MAX, last_segment_hash_ = 0;
  bool read_delimited_ = false;  // see user_boundary()
  bool repeated_ = false;
  std::vector<uint64_t> cuts_;  // see cuts()
  uint64_t piece_start_ = 0;  // where the piece being recorded began
};

// Split rule for peaks: in a loop delimited by reads that repeat, one
// program per iteration can hold more than op-by-op execution of the same ops
// (XLA's schedule keeps many temporaries alive at once: an LSTM's per-step
// weight gradients before their sum). After such an iteration, each of its
// programs that held more (by more than tolerance()) is cut into smaller ones
// from the next iteration on, about as many as the ratio of the two beyond what
// was in use before it; again while the peak goes down, until it is within the
// tolerance of op-by-op; a cut that did not lower it is taken back, and the
// loop keeps its best cuts.
struct PeakPlan {
  struct Ran {
    Rhythm::Piece piece;
    int64_t in_use_before, held;
  };
  std::vector<Ran> ran;  // this iteration's programs
  // What op-by-op execution would have held at most in this iteration: what
  // was in use and the results still referenced, after each op.
  int64_t op_by_op = 0;
  // The least of that over the loop's iterations: the same ops each time, but
  // a cut keeps what the next piece reads and that dies while it is recorded
  // until it runs, so an iteration with cuts overstates it.
  int64_t reference = INT64_MAX;
  std::vector<uint64_t> best_cuts;
  int64_t best_held = INT64_MAX;
  bool settled = false;

  // An excess below this is not worth what a cut costs (a compile per round,
  // less fusion): 64 KiB, or 1/32 of the peak.
  int64_t tolerance() const { return std::max<int64_t>(int64_t{64} << 10, reference / 32); }

  void start_loop() { *this = PeakPlan(); }
  void start_iteration() {
    ran.clear();
    op_by_op = 0;
  }

  // The most this iteration's programs held.
  int64_t held() const {
    int64_t most = 0;
    for (const Ran& r : ran) most = std::max(most, r.held);
    return most;
  }

  // At the end of an iteration equal to the one before.
  void plan(Rhythm& rhythm) {
    int64_t held = this->held();
    if (!ran.empty()) reference = std::min(reference, op_by_op);
    if (settled || ran.empty() || held <= reference + tolerance()) {
      settled = settled || !ran.empty();
      return;
    }
    if (held >= best_held) {
      rhythm.set_cuts(best_cuts);
      settled = true;
      return;
    }
    best_held = held;
    best_cuts = rhythm.cuts();
    std::vector<uint64_t> cuts = best_cuts;
    for (const Ran& r : ran) {
      if (r.held <= reference + tolerance()) continue;
      int64_t over = r.held - r.in_use_before, allowed = std::max<int64_t>(1, reference - r.in_use_before);
      uint64_t ops = r.piece.end_op - r.piece.first_op;
      uint64_t parts = std::min<uint64_t>(std::clamp<int64_t>((over + allowed - 1) / allowed, 2, 16),
                                          ops / Rhythm::kMinPeriod);
      for (uint64_t i = 1; i < parts; ++i) cuts.push_back(r.piece.first_op + ops * i / parts);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    if (cuts == best_cuts) settled = true;
    rhythm.set_cuts(std::move(cuts));
  }
};

struct Fused {
  std::recursive_mutex mutex;
  Recording recording;
  int open_ops = 0;
  int64_t max_nodes = env::positive_int(env::kFusedMaxNodes, 20000);
  // Split rule for programs that hold much: the inputs nothing references any
  // more (freed only when the run ends, where strict mode would have freed
  // them already) and, unless the program is one iteration of a loop known to
  // repeat, the intermediate results a run now would output (still
  // referenced). Past the bound the program is cut at the next op. Results
  // bound a program of unknown extent: before a loop is recognized, a
  // recording that spans iterations made XLA overlap them (the elementwise
  // chain's first steps peaked at 394 MiB, strict mode at 153). Within a known
  // iteration strict mode holds them too, and cutting for them split a
  // training step between its backward and its optimizer, raising its peak
  // above strict mode's (183 against 163 MiB on a width-512 GPT; 151 uncut).
  int64_t max_held_bytes = env::positive_int(env::kFusedMaxHeldBytes, int64_t{64} << 20);
  bool log = env::flag(env::kLogFlushes, false);
  Rhythm rhythm;
  // Storages whose first contents fused ops recorded and that are still
  // alive, whether or not a flush has computed them since: where a loop
  // holds the fewest of these does not depend on where its flushes fell.
  std::atomic<int64_t> live_results{0};
  // The reason for a flush due before the next op (a period ended, or the
  // program holds too much), or null. Waiting for the next op lets the
  // caller's temporaries (an optimizer's scratch lists) die first, so they
  // are neither computed nor kept.
  const char* flush_due = nullptr;
  PeakPlan peaks;
  std::shared_ptr<ir::Graph> last;
  // compile mode: a capture is recording; the first flush that cut it.
  bool capturing = false;
  std::string capture_cut;
};

void fused_storage_died(const StorageData& sd);

// Whether the pending program holds more than `bound` bytes (see max_held_bytes).
bool holds_over(const Recording& r, int64_t bound, bool known_iteration) {
  int64_t live = known_iteration ? 0 : r.live_pending_bytes();
  // All inputs dead is the most it could hold: only past that are they looked at.
  return live + r.input_bytes() > bound && live + r.dead_input_bytes() > bound;
}

Fused& state() {
  static Fused* f = [] {
    auto* fused = new Fused();  // never destroyed: storages may outlive static destruction
    set_counted_storage_died(&fused_storage_died);
    return fused;
  }();
  return *f;
}

void fused_storage_died(const StorageData& sd) {
  Fused& f = state();
  if (sd.fused_result) f.live_results.fetch_sub(1, std::memory_order_relaxed);
  if (sd.pending_first && f.recording.holds(sd)) f.recording.pending_storage_died(sd.nbytes);
}

void count_flush(Fused& f, const char* reason, std::shared_ptr<ir::Graph> ran, size_t ops,
                 std::chrono::steady_clock::time_point start) {
  Metrics& m = metrics();
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.flushes[reason]++;
  }
  if (f.log) {
    double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "torch_tpu: flush (%s): %zu ops recorded, %zu nodes run, %zu outputs, %zu donated, %.2f ms on the host\n",
                 reason, ops, ran->num_nodes(), ran->outputs().size(), ran->aliases().size(), host_ms);
  }
  f.last = std::move(ran);
}

void flush_locked(Fused& f, const char* reason, const Rhythm::Piece& piece) {
  TORCH_INTERNAL_ASSERT(f.open_ops == 0, "tpu: a flush (", reason, ") was requested while an op was recording");
  auto start = std::chrono::steady_clock::now();
  Recording& r = f.recording;
  f.flush_due = nullptr;
  f.rhythm.note_flush();
  if (!r.has_writes()) return;
  if (f.capturing && f.capture_cut.empty()) f.capture_cut = reason;
  std::vector<const char*> names = r.ops();
  TraceScope trace([&] { return std::string("tpu::flush: ") + reason; }, {{"ops", static_cast<int64_t>(names.size())}});
  std::shared_ptr<ir::Graph> ran;
  int device = r.device();
  int64_t in_use_before = device >= 0 ? runtime::Runtime::get().bytes_in_use(device) : 0;
  try {
    // Only a program that is one iteration of a loop delimited by its reads
    // is known to recur. Window cuts are not: a period found in a loop's
    // first iterations is often its repeated layers, and those programs,
    // like a sweep's or a test's, mostly run once or twice. Nor are the
    // pieces of a round of the peak rule that may be taken back.
    bool recurs = f.rhythm.read_delimited() && (f.peaks.settled || f.rhythm.cuts().empty());
    ran = r.execute(recurs ? Tiering::BySize : Tiering::QuickFirst);
  } catch (c10::Error& e) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 12; ++i) list += std::string(i ? ", " : "") + names[i];
    if (names.size() > 12) list += ", ...";
    e.add_context("In a fused program of " + std::to_string(names.size()) + " ops run at a flush for '" + reason +
                  "'; its ops: " + list + ".");
    throw;
  }
  if (!ran) return;
  if (piece.recurring && device >= 0)
    f.peaks.ran.push_back({piece, in_use_before, runtime::Runtime::get().last_run_peak(device)});
  count_flush(f, reason, std::move(ran), names.size(), start);
}

void flush_locked(Fused& f, const char* reason) { flush_locked(f, reason, f.rhythm.piece()); }

void flush_requested(Fused& f, const char* reason) {
  // The piece ended by the read, taken before the read starts the next iteration.
  Rhythm::Piece piece = f.rhythm.piece();
  // A period found earlier still describes the loop: this flush only adds a
  // cut, and its two pieces recur at the same places each time.
  f.rhythm.user_boundary();
  flush_locked(f, reason, piece);
  if (!f.rhythm.repeated()) {
    f.peaks.start_loop();
  } else if (piece.recurring) {
    f.peaks.plan(f.rhythm);
    if (f.log && !f.peaks.ran.empty()) {
      std::fprintf(stderr, "torch_tpu: iteration of %zu programs held %.2f MiB, op by op %.2f MiB; %zu cuts next%s\n",
                   f.peaks.ran.size(), f.peaks.held() / 1048576.0, f.peaks.reference / 1048576.0, f.rhythm.cuts().size(),
                   f.peaks.settled ? " (settled)" : "");
    }
  }
  f.peaks.start_iteration();
}

}  // namespace


FusedOpScope::FusedOpScope(const char* name) : lock_(state().mutex), name_(name) {
  Fused& f = state();
  if (f.open_ops == 0) {
    if (f.flush_due) flush_locked(f, f.flush_due);
    f.rhythm.before_op(f.live_results.load(std::memory_order_relaxed));
  }
  f.open_ops++;
  mark_ = f.recording.mark();
}

Recording& FusedOpScope::recording() { return state().recording; }

FusedOpScope::~FusedOpScope() {
  if (done_) return;
  Fused& f = state();
  f.recording.rollback(mark_);
  f.open_ops--;
}

void FusedOpScope::bind_device(int device) {
  Fused& f = state();
  Recording& r = f.recording;
  if (r.device() < 0 || r.device() == device) return;
  // The shared program belongs to another device: run it first, if this op
  // has not started recording into it.
  // The shared program belongs to another device: run what was recorded
  // before this op. This op's own nodes so far are host values and constants
  // (reading or writing a tensor would have bound the device), which do not
  // depend on that work.
  TORCH_INTERNAL_ASSERT(f.open_ops == 1, "tpu: an op nested in another switched devices");
  auto start = std::chrono::steady_clock::now();
  if (f.capturing && f.capture_cut.empty()) f.capture_cut = "device_change";
  auto ran = r.execute_before(mark_);
  if (ran) count_flush(f, "device_change", std::move(ran), r.num_ops(), start);
  mark_.device = -1;
}

void FusedOpScope::done() {
  Fused& f = state();
  Recording& r = f.recording;
  // What identifies the op in a loop, independent of where flushes fell (which
  // changes how many nodes its reads need): its name and how many writes it made.
  uint64_t signature = reinterpret_cast<uintptr_t>(name_) * 0x9E3779B97F4A7C15ULL ^ (r.num_writes() - mark_.writes);
  r.add_op(name_);
  metrics().ops_deferred++;
  done_ = true;
  if (--f.open_ops > 0 || f.capturing) return;
  f.live_results.fetch_add(r.mark_results(mark_.writes), std::memory_order_relaxed);
  // The peak rule plans read-delimited iterations only.
  if (f.rhythm.read_delimited() && r.device() >= 0) {
    int64_t held = runtime::Runtime::get().bytes_in_use(r.device()) + r.live_pending_bytes();
    f.peaks.op_by_op = std::max(f.peaks.op_by_op, held);
  }
  bool window = f.rhythm.on_op(signature);
  size_t nodes = r.graph().num_nodes();
  if (flush_after_) {
    f.flush_due = flush_after_;
  } else if (window) {
    f.flush_due = "window";
  } else if (static_cast<int64_t>(nodes) >= f.max_nodes) {
    flush_locked(f, "graph_size");
  } else if (holds_over(r, f.max_held_bytes, f.rhythm.in_known_iteration())) {
    f.flush_due = "held_bytes";
  }
}

void flush(const char* reason, bool user_boundary) {
  if (user_boundary) note_host_wait();
  Fused& f = state();
  FusedLock lock(f.mutex);
  if (user_boundary) {
    flush_requested(f, reason);
  } else {
    flush_locked(f, reason);
  }
}

void materialize(const StorageData& sd, const char* reason) {
  note_host_wait();
  Fused& f = state();
  FusedLock lock(f.mutex);
  if (f.recording.holds(sd)) flush_requested(f, reason);
}

void host_read(const char* reason) {
  note_host_wait();
  Fused& f = state();
  FusedLock lock(f.mutex);
  // Reads delimit a loop's iterations even where a window cut computed the
  // value already (an LSTM's time steps taken for the loop's period would
  // otherwise stay cut once per step), and what is pending runs while the
  // host waits rather than after.
  flush_requested(f, reason);
}

c10::ScalarType contents_dtype(const StorageData& sd) {
  Fused& f = state();
  FusedLock lock(f.mutex);
  return f.recording.contents_dtype(sd);
}

void set_contents(StorageData& sd, runtime::BufferPtr buffer, c10::ScalarType dtype) {
  {
    Fused& f = state();
    FusedLock lock(f.mutex);
    f.recording.forget(sd);
  }
  sd.buffer = std::move(buffer);
  sd.dtype = dtype;
  sd.version++;
}

Recording& begin_capture() {
  Fused& f = state();
  FusedLock lock(f.mutex);
  TORCH_CHECK(!f.capturing, "tpu: a compiled graph started capturing while another one was");
  flush_locked(f, "compile");
  f.capturing = true;
  f.capture_cut.clear();
  return f.recording;
}

std::string end_capture() {
  Fused& f = state();
  FusedLock lock(f.mutex);
  f.capturing = false;
  return std::move(f.capture_cut);
}

std::string last_flushed_program() {
  Fused& f = state();
  FusedLock lock(f.mutex);
  return f.last ? f.last->to_mlir() : std::string();
}

namespace {
// Sets one of fused mode's split bounds; returns the previous one.
int64_t set_bound(int64_t Fused::*bound, int64_t n, const char* name) {
  TORCH_CHECK_VALUE(n > 0, "the fused ", name, " bound must be positive, got ", n);
  Fused& f = state();
  FusedLock lock(f.mutex);
  std::swap(f.*bound, n);
  return n;
}
}  // namespace

int64_t set_fused_max_held_bytes(int64_t n) { return set_bound(&Fused::max_held_bytes, n, "held-bytes"); }

int64_t set_fused_max_nodes(int64_t n) { return set_bound(&Fused::max_nodes, n, "graph"); }

void set_mode(Mode m) {
  // Work deferred under fused mode runs before the schedule changes.
  if (mode() == Mode::Fused && m != Mode::Fused) flush("mode_change", /*user_boundary=*/false);
  mode_state().store(m);
}

std::vector<runtime::BufferPtr> enqueued_work(const char* reason) {
  flush(reason);
  return in_flight();
}

namespace {
struct RegisterQueue {
  RegisterQueue() { set_enqueued_work(&enqueued_work); }
} register_queue;
}  // namespace

void synchronize(int device) {
  flush("synchronize");
  await_in_flight();
}

}  // namespace torch_tpu::exec
