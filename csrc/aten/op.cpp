// Op: how a kernel binds ATen tensors to graph values (reads of views,
// writes into them, host values, device-side checks) and runs or defers the
// recorded program; also reading tpu tensors back to the host.
#include "aten/op.h"
#include "lowering/view.h"

#include <ATen/Dispatch_v2.h>
#include <ATen/native/Resize.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include <set>

#include "exec/capture.h"
#include "exec/exec.h"
#include "runtime/env.h"

namespace torch_tpu::aten {

using namespace lower;

void check_tpu(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              "tpu:", current_device(), " and ", t.device(), "! (when checking argument ", what, ")");
}

Op::Op(const char* name) : scope_(name) {
  if (exec::mode() == exec::Mode::Fused) {
    fused_.emplace(name);
    rec_ = &fused_->recording();
  } else {
    own_ = std::make_unique<exec::Recording>();
    rec_ = own_.get();
  }
  first_node_ = g().num_nodes();
}

namespace {

// StableHLO ops that are defined on complex values with PyTorch's meaning
// (compare only as EQ and NE, reductions and windows only as sums and
// products: PyTorch itself rejects ordering complex numbers).
bool complex_capable(const ir::Graph& g, const ir::Node& n) {
  static const std::set<std::string> ops = {
      "stablehlo.abs", "stablehlo.add", "stablehlo.broadcast_in_dim", "stablehlo.complex", "stablehlo.concatenate",
      "stablehlo.constant", "stablehlo.cosine", "stablehlo.divide", "stablehlo.dot_general",
      "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice", "stablehlo.exponential",
      "stablehlo.exponential_minus_one", "stablehlo.fft", "stablehlo.gather", "stablehlo.imag", "stablehlo.log",
      "stablehlo.log_plus_one", "stablehlo.multiply", "stablehlo.negate", "stablehlo.pad", "stablehlo.power",
      "stablehlo.real", "stablehlo.reduce", "stablehlo.reshape", "stablehlo.reverse", "stablehlo.rsqrt",
      "stablehlo.scatter", "stablehlo.select", "stablehlo.sine", "stablehlo.slice", "stablehlo.sqrt",
      "stablehlo.subtract", "stablehlo.tan", "stablehlo.tanh", "stablehlo.transpose", "stablehlo.logistic",
      "stablehlo.reduce_window", "chlo.acos", "chlo.acosh", "chlo.asin", "chlo.asinh", "chlo.atan", "chlo.atanh",
      "chlo.cosh", "chlo.sinh", "chlo.tan",
      // A function lowered elsewhere (JAX) has its own complex semantics.
      "func.call"};
  if (n.op == "stablehlo.convert") return c10::isComplexType(g.type(n.first_result).dtype);
  if (n.op == "stablehlo.compare")
    return n.attrs.str().find("comparison_direction EQ>") != std::string::npos ||
           n.attrs.str().find("comparison_direction NE>") != std::string::npos;
  return ops.count(n.op.str()) > 0;
}
}  // namespace

// Kernels are written for real dtypes unless they say otherwise in how they
// lower: an op whose program applies anything else to a complex value raises
// here, naming itself, instead of computing something else.
void Op::check_complex_support() const {
  const ir::Graph& graph = rec_->graph();
  for (size_t i = std::min(first_node_, graph.num_nodes()); i < graph.num_nodes(); ++i) {
    const ir::Node& n = graph.node(i);
    bool complex = false;
    for (uint32_t r = 0; r < n.num_results; ++r) complex |= c10::isComplexType(graph.type(n.first_result + r).dtype);
    for (ir::Value v : graph.operands(n)) complex |= c10::isComplexType(graph.type(v).dtype);
    TORCH_CHECK_NOT_IMPLEMENTED(!complex || complex_capable(graph, n), "tpu: ", runtime::OpNameScope::current(),
                                " does not support complex tensors yet (it would apply ", n.op.str(),
                                " to complex values)");
  }
}

// In strict and debug mode an op that threw dies with its own Recording; the
// storages it marked point at a recording that no longer exists.
Op::~Op() = default;

void Op::use_device(int device) {
  // In fused mode the shared program may belong to another device: binding
  // runs it first (see FusedOpScope::bind_device).
  if (fused_) fused_->bind_device(device);
  rec_->use_device(device);
}

Value Op::storage_value(const at::Tensor& t) {
  use_device(storage_data(t).device);
  Value base = rec_->read(t.storage());
  if (base < 0) {
    int64_t len = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
    return constant(g(), 0, t.scalar_type(), {len});
  }
  return bitcast(g(), base, t.scalar_type());
}

Value Op::in(const at::Tensor& t) {
  TORCH_CHECK(t.defined(), "tpu: undefined tensor argument");
  if (t.device().is_cpu()) {
    TORCH_CHECK(t.dim() == 0, "Expected all tensors to be on the same device, but found at least two devices, tpu:",
                device(), " and cpu!");
    return scalar(t.item(), t.scalar_type());
  }
  check_tpu(t, "input");
  note_dtype(t.scalar_type());
  Value base = storage_value(t);
  return apply_math_bits(t, read_view(g(), base, view_start(t), t.sizes(), t.strides()));
}

// A view that covers less than its whole storage starts at a runtime offset,
// whatever the offset (0 included): x[i] and x[:, i] are one program for
// every i, and a loop over them compiles once.
ViewStart Op::view_start(const at::Tensor& t) {
  ViewStart at{t.storage_offset()};
  int64_t last = at.offset;  // the last element the view touches
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) == 0) return at;
    else last += (t.size(d) - 1) * t.stride(d);
  int64_t len = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
  // A slot of its own, not shared with an equal scalar (see scalar()): a
  // read and a write at the same offset are the same program as at two.
  if (at.offset != 0 || last + 1 < len) at.runtime = host_values(&at.offset, c10::kLong, {});
  return at;
}

// A conjugate or negative view (x.conj(), its .imag) holds its base's data; its
// values are that data conjugated or negated. The mapping is its own inverse,
// so reads and writes both apply it.
Value Op::apply_math_bits(const at::Tensor& t, Value v) {
  if (t.is_conj()) v = conj(g(), v);
  if (t.is_neg()) v = unary(g(), "negate", v);
  return v;
}

Value Op::host_values(const void* data, c10::ScalarType dtype, const Shape& shape) {
  int64_t count = numel_of(shape);
  auto [pool, start] = rec_->host_value(data, dtype, count);
  return reshape(g(), slice_of_growing(g(), pool, start, start + count), shape);
}

Value Op::scalar(const c10::Scalar& s, c10::ScalarType dtype) {
  note_dtype(dtype);
  // A foreach op passes its scalar once per tensor: one pool slot serves all.
  HostScalar key{s.type(), dtype, {}};
  if (s.isComplex()) {
    c10::complex<double> z = s.toComplexDouble();
    key.bits[0] = z.real();
    key.bits[1] = z.imag();
  } else if (s.isFloatingPoint()) {
    key.bits[0] = s.toDouble();
  } else {
    // Bits of the integer: uint64 values past INT64_MAX keep theirs (s.type() tells them apart).
    uint64_t i = s.isBoolean() ? s.toBool() : s.isUnsigned() ? s.toUInt64() : static_cast<uint64_t>(s.toLong());
    std::memcpy(&key.bits[0], &i, sizeof(i));
  }
  for (const auto& [seen, value] : scalars_)
    if (seen.type == key.type && seen.dtype == key.dtype && std::memcmp(seen.bits, key.bits, sizeof(key.bits)) == 0)
      return value;
  alignas(16) char bytes[16];
  AT_DISPATCH_V2(dtype, "tpu scalar", AT_WRAP([&] { *reinterpret_cast<scalar_t*>(bytes) = s.to<scalar_t>(); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), c10::kHalf, c10::kBFloat16, c10::kBool, c10::kComplexHalf,
                 AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES), c10::kFloat8_e5m2, c10::kFloat8_e4m3fn, c10::kFloat8_e5m2fnuz,
                 c10::kFloat8_e4m3fnuz, c10::kFloat8_e8m0fnu);
  Value v = host_values(bytes, dtype, {});
  scalars_.emplace_back(key, v);
  return v;
}

Value Op::rng_state(std::optional<at::Generator> gen, const at::Tensor& like) {
  check_tpu(like, "self");
  use_device(like.device().index());
  at::Generator generator = gen.has_value() && gen->defined() ? *gen : default_generator(device());
  auto [pool, start] = rec_->rng_state(generator);
  return reshape(g(), slice_of_growing(g(), pool, start, start + 2), {2});
}

at::Tensor Op::result(Value v) {
  const ir::Type& t = g().type(v);
  note_dtype(t.dtype);
  auto out = at::empty(t.shape, at::TensorOptions().dtype(t.dtype).device(c10::DeviceType::PrivateUse1, device()));
  if (out.numel() > 0) {
    use_device(device());
    rec_->write(out.storage(), reshape(g(), v, {out.numel()}));
  }
  return out;
}

at::Tensor Op::result(Value v, at::MemoryFormat format) {
  if (format == at::MemoryFormat::Contiguous) return result(v);
  const ir::Type& t = g().type(v);
  auto out = at::empty(t.shape, at::TensorOptions().dtype(t.dtype).device(c10::DeviceType::PrivateUse1, device()),
                       format);
  write(out, v);
  return out;
}

at::Tensor Op::result_like(Value v, const at::Tensor& like) {
  if (like.is_contiguous()) return result(v);
  auto strides = like.is_non_overlapping_and_dense() ? like.strides().vec()
                                                     : at::infer_dense_strides(like.sizes(), like.strides());
  if (at::IntArrayRef(strides).equals(c10::contiguous_strides(like.sizes()))) return result(v);
  const ir::Type& t = g().type(v);
  auto out = at::empty_strided(like.sizes(), strides,
                               at::TensorOptions().dtype(t.dtype).device(c10::DeviceType::PrivateUse1, device()));
  write(out, v);
  return out;
}

void Op::write(const at::Tensor& dst, Value v) {
  check_tpu(dst, "out");
  if (dst.numel() == 0) return;
  note_dtype(dst.scalar_type());
  note_dtype(g().type(v).dtype);
  // Writing complex values into a real tensor keeps their real parts (PyTorch's cast).
  if (!dst.is_complex()) v = real_part(g(), v);
  v = apply_math_bits(dst, broadcast_to(g(), convert(g(), v, dst.scalar_type()), to_shape(dst.sizes())));
  Value base = storage_value(dst);
  Value updated = write_view(g(), base, v, view_start(dst), dst.sizes(), dst.strides());
  rec_->write(dst.storage(), updated);
  // Written through a view of another dtype (view_as_real(z).uniform_(), how
  // make_tensor fills complex tensors): the contents are computed before z is
  // read. XLA would compute them again in the fusion of each reader of z,
  // where converting them rounds differently (z.clone() != z by an ulp).
  if (fused_ && dst.is_view() && dst._base().scalar_type() != dst.scalar_type()) fused_->flush_after("converting_write");
}

void Op::run() {
  if (complex_) check_complex_support();
  if (fused_) {
    fused_->done();
    return;
  }
  if (!rec_->has_writes()) return;
  rec_->execute();
}

// Device-side checks' state (see "device checks" below).
namespace {

struct DeviceChecks {
  std::mutex mutex;
  std::atomic<bool> enabled{env::flag(env::kCheckIndices, true)};
  std::vector<std::string> messages;  // by id - 1
  std::unordered_map<std::string, int32_t> ids;
  std::unordered_map<int, at::Tensor> flags;       // by device
  std::unordered_map<int, uint64_t> read_version;  // the flag contents last read
};
DeviceChecks& device_checks() {
  static auto* checks = new DeviceChecks();  // flags may outlive static destruction
  return *checks;
}
}  // namespace

std::shared_ptr<const HostCopy> kept_host_copy(const StorageData& sd) {
  auto copy = std::atomic_load(&sd.host_copy);
  return copy && copy->version == sd.version && sd.pending_in == 0 ? copy : nullptr;
}

void keep_host_copy(StorageData& sd, const void* bytes, size_t nbytes) {
  const char* begin = static_cast<const char*>(bytes);
  std::atomic_store(&sd.host_copy, std::shared_ptr<const HostCopy>(new HostCopy{sd.version, {begin, begin + nbytes}}));
}

namespace {
// `t` (a view of plain contents whose host copy is `copy`) read from that copy.
at::Tensor view_of_host_copy(const at::Tensor& t, const std::shared_ptr<const HostCopy>& copy) {
  int64_t n = static_cast<int64_t>(copy->bytes.size() / t.element_size());
  auto keep = std::make_shared<std::shared_ptr<const HostCopy>>(copy);
  at::Tensor flat = at::from_blob(const_cast<char*>(copy->bytes.data()), {n}, [keep](void*) {},
                                  at::TensorOptions().dtype(t.scalar_type()));
  return flat.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

// Host copies of storages read a piece at a time stay below this size.
constexpr size_t kHostCopyLimit = size_t{16} << 20;
}  // namespace

Value wrap_index(Op& op, const at::Tensor& index_tensor, Value index, int64_t size) {
  using namespace lower;
  Graph& g = op.g();
  auto t = g.type(index);
  index = convert(g, index, c10::kLong);
  Value neg = compare(g, index, constant(g, 0, c10::kLong, t.shape), "LT", c10::kLong);
  Value wrapped = select(g, neg, binary(g, "add", index, constant(g, size, c10::kLong, t.shape)), index);
  std::string name = runtime::OpNameScope::current();
  check_index_values(
      op, index_tensor, index, -size, size,
      [&](int64_t bad) {
        return name + ": index " + std::to_string(bad) + " is out of bounds for dimension with size " +
               std::to_string(size);
      },
      /*index_error=*/true,
      name + ": index out of bounds for a dimension of size " + std::to_string(size) +
          " (a tpu index tensor held a value outside [" + std::to_string(-size) + ", " + std::to_string(size) + "))");
  return wrapped;
}

void check_index_values(Op& op, const at::Tensor& index_tensor, Value index, int64_t lo, int64_t hi,
                        const std::function<std::string(int64_t)>& host_error, bool index_error,
                        const std::string& device_error) {
  using namespace lower;
  Graph& g = op.g();
  Shape shape = g.type(index).shape;
  if (index_tensor.device().type() != c10::DeviceType::PrivateUse1 || numel_of(shape) == 0) return;
  // An index tensor whose values the host holds is checked here, at once, as
  // a CPU index tensor is.
  const StorageData& sd = storage_data(index_tensor);
  auto copy = device_checks().enabled ? kept_host_copy(sd) : nullptr;
  if (copy && sd.dtype == index_tensor.scalar_type() && !index_tensor.is_neg()) {
    at::Tensor values = view_of_host_copy(index_tensor, copy).to(at::kLong);
    int64_t lowest = values.min().item<int64_t>(), highest = values.max().item<int64_t>();
    if (lowest >= lo && highest < hi) return;
    std::string message = host_error(lowest < lo ? lowest : highest);
    if (index_error) TORCH_CHECK_INDEX(false, message);
    TORCH_CHECK(false, message);
  }
  // index - lo lies in [0, hi - lo) exactly when index lies in [lo, hi).
  Value shifted = binary(g, "subtract", index, constant(g, lo, c10::kLong, shape));
  Value outside = compare(g, convert(g, shifted, c10::kUInt64), constant(g, hi - lo, c10::kUInt64, shape), "GE",
                          c10::kUInt64);
  op.check_on_device(outside, device_error);
}

// ------------------------------------------------------------ device checks
//
// Each device has one int32 flag tensor: 0 while every check passed, else the
// id of the first failed check's message. An op's check writes
// flag ? flag : (failed ? id : 0) into it, so a fused program of many checks
// outputs 4 bytes, and a loop's programs stay the same (a message keeps its id).

bool set_device_checks(bool enabled) {
  return device_checks().enabled.exchange(enabled);
}

void Op::check_on_device(Value failed, const std::string& message) {
  // A compiled graph's outputs are fixed by its capture: it does not check.
  if (exec::capture_active()) return;
  DeviceChecks& c = device_checks();
  at::Tensor flag;
  int32_t id;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (!c.enabled) return;
    auto [it, added] = c.ids.emplace(message, static_cast<int32_t>(c.messages.size() + 1));
    if (added) c.messages.push_back(message);
    id = it->second;
    at::Tensor& slot = c.flags[device()];
    if (!slot.defined())
      slot = at::empty({}, at::TensorOptions().dtype(c10::kInt).device(c10::DeviceType::PrivateUse1, device()));
    flag = slot;
  }
  using namespace lower;
  Graph& graph = g();
  size_t rank = graph.type(failed).shape.size();
  if (rank > 0) {
    std::vector<int64_t> all(rank);
    for (size_t d = 0; d < rank; ++d) all[d] = static_cast<int64_t>(d);
    failed = reduce(graph, failed, all, ReduceKind::Or);
  }
  Value zero = constant(graph, 0, c10::kInt);
  Value earlier = in(flag);
  Value mine = select(graph, failed, constant(graph, id, c10::kInt), zero);
  write(flag, select(graph, compare(graph, earlier, zero, "NE", c10::kInt), earlier, mine));
}

void raise_device_check_failure(int device) {
  DeviceChecks& c = device_checks();
  std::unique_lock<std::mutex> lock(c.mutex);
  auto it = c.flags.find(device);
  if (it == c.flags.end()) return;
  const StorageData& sd = storage_data(it->second);
  if (sd.pending_in != 0 || !sd.buffer || c.read_version[device] == sd.version) return;
  c.read_version[device] = sd.version;
  runtime::BufferPtr buffer = sd.buffer;
  lock.unlock();
  int32_t id = 0;
  exec::download(*buffer, c10::kInt, &id, sizeof(id));
  if (id == 0) return;
  lock.lock();
  std::string message = c.messages.at(id - 1);
  // Reported once; later checks start from a fresh flag, whose versions say
  // nothing about this one's.
  c.flags.erase(device);
  c.read_version.erase(device);
  lock.unlock();
  TORCH_CHECK_INDEX(false, message, ". Set TORCH_TPU_CHECK_INDICES=0 to skip these checks.");
}

at::Tensor& write_out(at::Tensor& out, const at::Tensor& result) {
  check_tpu(out, "out");
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

std::tuple<at::Tensor&, at::Tensor&> write_values_indices(const char* name, const at::Tensor& self,
                                                          std::tuple<at::Tensor, at::Tensor> result,
                                                          at::Tensor& values, at::Tensor& indices) {
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), name, ": expected scalar type ", self.scalar_type(),
              " but got ", values.scalar_type(), " for values");
  TORCH_CHECK(indices.scalar_type() == c10::kLong, name, ": expected scalar type Long but got ",
              indices.scalar_type(), " for indices");
  write_out(values, std::get<0>(result));
  write_out(indices, std::get<1>(result));
  return {values, indices};
}

void Dest::resize_out(at::IntArrayRef sizes) const {
  if (form_ != Out) return;
  check_tpu(*target_, "out");
  at::native::resize_output(*target_, sizes);
}

at::Tensor Dest::deliver(Op& op, Value v) const {
  if (form_ == New) {
    at::Tensor out = op.result(v);
    op.run();
    return out;
  }
  op.write(*target_, v);
  op.run();
  return *target_;
}

at::Tensor Dest::deliver(const at::Tensor& result) const {
  switch (form_) {
    case New: return result;
    case InPlace: return target_->copy_(result);
    case Out: return write_out(const_cast<at::Tensor&>(*target_), result);  // the out= kernel's own tensor
  }
  return result;
}

at::Tensor to_cpu(const at::Tensor& t, const char* reason) {
  auto out = at::empty(t.sizes(), at::TensorOptions().dtype(t.scalar_type()));
  if (t.numel() == 0) return out;
  at::Tensor src = t;
  StorageData& contents = storage_data(t);
  size_t storage_bytes = t.storage().nbytes(), view_bytes = static_cast<size_t>(t.numel()) * t.element_size();
  bool plain = !t.is_conj() && !t.is_neg() && exec::contents_dtype(contents) == t.scalar_type();
  bool whole = plain && t.is_contiguous() && t.storage_offset() == 0 && view_bytes == storage_bytes;
  // A view of computed contents read from a copy of its storage's bytes costs
  // neither a program nor a flush of pending fused work (x[idx[i]] reads idx[i]
  // every iteration). The copy is made when the storage is small or not much
  // larger than the view, or when its contents are read a second piece at a
  // time (all(t), `for x in t`), and kept while they stay as they are.
  if (plain && !whole && contents.pending_in == 0 && contents.buffer && contents.buffer->nbytes() == storage_bytes) {
    auto copy = kept_host_copy(contents);
    bool recurring = contents.piece_read_version == contents.version;
    contents.piece_read_version = contents.version;
    if (!copy && storage_bytes <= kHostCopyLimit &&
        (recurring || storage_bytes <= std::max<size_t>(size_t{64} << 10, 4 * view_bytes))) {
      std::vector<char> bytes(storage_bytes);
      exec::download(*contents.buffer, t.scalar_type(), bytes.data(), storage_bytes);
      copy = std::make_shared<const HostCopy>(HostCopy{contents.version, std::move(bytes)});
      std::atomic_store(&contents.host_copy, copy);
    }
    if (copy) {
      out.copy_(view_of_host_copy(t, copy));
      raise_device_check_failure(contents.device);
      return out;
    }
  }
  // Pending fused work runs first, so a view's contents are computed before
  // it is copied out, not in the copy's program: XLA computes a value in the
  // fusion of each of its users, with different rounding (contracted
  // multiply-adds), so a first read fused with the computation could differ
  // from the stored contents every later read sees.
  exec::host_read(reason);
  if (!whole) {
    Op op("copy to host");
    src = op.result(op.in(t));
    op.run();
    // The read's own copy is not another boundary of the loop's iterations.
    exec::flush(reason, /*user_boundary=*/false);
  }
  StorageData& sd = storage_data(src);
  if (!sd.buffer) {
    out.zero_();
    return out;
  }
  exec::download(*sd.buffer, t.scalar_type(), out.data_ptr(), out.nbytes());
  raise_device_check_failure(sd.device);
  return out;
}

}  // namespace torch_tpu::aten
