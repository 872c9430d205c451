// Declarations of the tpu kernels registered in registration.cpp (each
// signature matches its ATen schema exactly: the dispatcher checks it at load),
// and of the one the Python package registers itself.
#pragma once

#include <variant>

#include <ATen/ATen.h>

namespace torch_tpu::aten {

// An op with several forms is declared once, with a Dest first (aten/op.h):
// the registration table binds Forms<&op>::functional / in_place / out.
class Dest;

// Memory, copies, views (memory.cpp)
at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format);
at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory);
at::Tensor lazy_clone(const at::Tensor& self);
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from);
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
at::Scalar local_scalar_dense(const at::Tensor& self);
at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value);
at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value);
at::Tensor& zero_(at::Tensor& self);
const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format);
at::Tensor& set_storage(at::Tensor& self, at::Storage source, int64_t storage_offset, at::IntArrayRef size,
                        at::IntArrayRef stride);
at::Tensor& set_source_storage(at::Tensor& self, at::Storage source);
at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source);
at::Tensor& set_empty(at::Tensor& self);

// Elementwise (elementwise.cpp)
at::Tensor add(Dest d, const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
at::Tensor sub(Dest d, const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
#define TPU_DECLARE_BINARY(name) at::Tensor name(Dest d, const at::Tensor& self, const at::Tensor& other);
// Python's << and >> on tensors (__lshift__, __ilshift__, ...), operators of
// their own in PyTorch: the bitwise shifts, with a tensor or a number.
template <class Other>
at::Tensor python_lshift(const at::Tensor& self, const Other& other) { return at::bitwise_left_shift(self, other); }
template <class Other>
at::Tensor python_rshift(const at::Tensor& self, const Other& other) { return at::bitwise_right_shift(self, other); }
template <class Other>
at::Tensor& python_ilshift(at::Tensor& self, const Other& other) { return self.bitwise_left_shift_(other); }
template <class Other>
at::Tensor& python_irshift(at::Tensor& self, const Other& other) { return self.bitwise_right_shift_(other); }
TPU_DECLARE_BINARY(mul)
TPU_DECLARE_BINARY(div)
TPU_DECLARE_BINARY(maximum)
TPU_DECLARE_BINARY(minimum)
TPU_DECLARE_BINARY(pow)
TPU_DECLARE_BINARY(eq)
TPU_DECLARE_BINARY(ne)
TPU_DECLARE_BINARY(lt)
TPU_DECLARE_BINARY(le)
TPU_DECLARE_BINARY(gt)
TPU_DECLARE_BINARY(ge)
TPU_DECLARE_BINARY(logical_and)
TPU_DECLARE_BINARY(logical_or)
TPU_DECLARE_BINARY(logical_xor)
TPU_DECLARE_BINARY(bitwise_and)
TPU_DECLARE_BINARY(bitwise_or)
TPU_DECLARE_BINARY(bitwise_xor)
TPU_DECLARE_BINARY(sigmoid_backward)
TPU_DECLARE_BINARY(tanh_backward)
TPU_DECLARE_BINARY(silu_backward)
TPU_DECLARE_BINARY(atan2)
TPU_DECLARE_BINARY(fmod)
TPU_DECLARE_BINARY(remainder)
TPU_DECLARE_BINARY(floor_divide)
TPU_DECLARE_BINARY(hypot)
TPU_DECLARE_BINARY(copysign)
TPU_DECLARE_BINARY(nextafter)
TPU_DECLARE_BINARY(xlogy)
TPU_DECLARE_BINARY(bitwise_left_shift)
TPU_DECLARE_BINARY(bitwise_right_shift)
TPU_DECLARE_BINARY(heaviside)
TPU_DECLARE_BINARY(gcd)
TPU_DECLARE_BINARY(lcm)
TPU_DECLARE_BINARY(clamp_min_tensor)
TPU_DECLARE_BINARY(clamp_max_tensor)
TPU_DECLARE_BINARY(logaddexp)
TPU_DECLARE_BINARY(logaddexp2)
TPU_DECLARE_BINARY(fmax)
TPU_DECLARE_BINARY(fmin)
TPU_DECLARE_BINARY(special_xlog1py)
TPU_DECLARE_BINARY(special_zeta)
TPU_DECLARE_BINARY(special_chebyshev_polynomial_t)
TPU_DECLARE_BINARY(special_chebyshev_polynomial_u)
TPU_DECLARE_BINARY(special_chebyshev_polynomial_v)
TPU_DECLARE_BINARY(special_chebyshev_polynomial_w)
TPU_DECLARE_BINARY(special_shifted_chebyshev_polynomial_t)
TPU_DECLARE_BINARY(special_shifted_chebyshev_polynomial_u)
TPU_DECLARE_BINARY(special_shifted_chebyshev_polynomial_v)
TPU_DECLARE_BINARY(special_shifted_chebyshev_polynomial_w)
TPU_DECLARE_BINARY(special_hermite_polynomial_h)
TPU_DECLARE_BINARY(special_hermite_polynomial_he)
TPU_DECLARE_BINARY(special_laguerre_polynomial_l)
TPU_DECLARE_BINARY(special_legendre_polynomial_p)
#undef TPU_DECLARE_BINARY
#define TPU_DECLARE_SCALAR_CMP(name) at::Tensor name##_scalar(Dest d, const at::Tensor& self, const at::Scalar& other);
TPU_DECLARE_SCALAR_CMP(eq)
TPU_DECLARE_SCALAR_CMP(ne)
TPU_DECLARE_SCALAR_CMP(lt)
TPU_DECLARE_SCALAR_CMP(le)
TPU_DECLARE_SCALAR_CMP(gt)
TPU_DECLARE_SCALAR_CMP(ge)
#undef TPU_DECLARE_SCALAR_CMP
at::Tensor pow_tensor_scalar(Dest d, const at::Tensor& self, const at::Scalar& exponent);
#define TPU_DECLARE_UNARY(name) at::Tensor name(Dest d, const at::Tensor& self);
TPU_DECLARE_UNARY(neg)
TPU_DECLARE_UNARY(i0)
TPU_DECLARE_UNARY(abs)
TPU_DECLARE_UNARY(exp)
TPU_DECLARE_UNARY(log)
TPU_DECLARE_UNARY(sqrt)
TPU_DECLARE_UNARY(rsqrt)
TPU_DECLARE_UNARY(tanh)
TPU_DECLARE_UNARY(sigmoid)
TPU_DECLARE_UNARY(sin)
TPU_DECLARE_UNARY(cos)
TPU_DECLARE_UNARY(reciprocal)
TPU_DECLARE_UNARY(logical_not)
TPU_DECLARE_UNARY(bitwise_not)
TPU_DECLARE_UNARY(floor)
TPU_DECLARE_UNARY(ceil)
TPU_DECLARE_UNARY(round)
TPU_DECLARE_UNARY(trunc)
TPU_DECLARE_UNARY(sign)
TPU_DECLARE_UNARY(sgn)
TPU_DECLARE_UNARY(erf)
TPU_DECLARE_UNARY(log1p)
TPU_DECLARE_UNARY(expm1)
TPU_DECLARE_UNARY(silu)
TPU_DECLARE_UNARY(tan)
TPU_DECLARE_UNARY(asin)
TPU_DECLARE_UNARY(acos)
TPU_DECLARE_UNARY(atan)
TPU_DECLARE_UNARY(sinh)
TPU_DECLARE_UNARY(cosh)
TPU_DECLARE_UNARY(asinh)
TPU_DECLARE_UNARY(acosh)
TPU_DECLARE_UNARY(atanh)
TPU_DECLARE_UNARY(erfc)
TPU_DECLARE_UNARY(erfinv)
TPU_DECLARE_UNARY(lgamma)
TPU_DECLARE_UNARY(digamma)
TPU_DECLARE_UNARY(exp2)
TPU_DECLARE_UNARY(log2)
TPU_DECLARE_UNARY(log10)
TPU_DECLARE_UNARY(sinc)
TPU_DECLARE_UNARY(frac)
// Activations without parameters (same dtype in and out).
TPU_DECLARE_UNARY(hardsigmoid)
TPU_DECLARE_UNARY(hardswish)
TPU_DECLARE_UNARY(mish)
TPU_DECLARE_UNARY(signbit)
TPU_DECLARE_UNARY(isposinf)
TPU_DECLARE_UNARY(isneginf)
TPU_DECLARE_UNARY(angle)
TPU_DECLARE_UNARY(conj_physical)
TPU_DECLARE_UNARY(special_entr)
TPU_DECLARE_UNARY(special_i1e)
TPU_DECLARE_UNARY(special_i0e)
TPU_DECLARE_UNARY(special_i1)
TPU_DECLARE_UNARY(special_ndtri)
TPU_DECLARE_UNARY(special_log_ndtr)
TPU_DECLARE_UNARY(special_erfcx)
TPU_DECLARE_UNARY(special_bessel_j0)
TPU_DECLARE_UNARY(special_bessel_j1)
TPU_DECLARE_UNARY(special_bessel_y0)
TPU_DECLARE_UNARY(special_bessel_y1)
TPU_DECLARE_UNARY(special_modified_bessel_i0)
TPU_DECLARE_UNARY(special_modified_bessel_i1)
TPU_DECLARE_UNARY(special_modified_bessel_k0)
TPU_DECLARE_UNARY(special_modified_bessel_k1)
TPU_DECLARE_UNARY(special_scaled_modified_bessel_k0)
TPU_DECLARE_UNARY(special_scaled_modified_bessel_k1)
TPU_DECLARE_UNARY(special_spherical_bessel_j0)
TPU_DECLARE_UNARY(special_airy_ai)
#undef TPU_DECLARE_UNARY
at::Tensor isnan(const at::Tensor& self);
// Complex numbers from parts: real + i imag, and abs * (cos angle + i sin angle).
at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out);
at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out);
at::Tensor polygamma(Dest d, int64_t n, const at::Tensor& self);
at::Tensor& polygamma_(at::Tensor& self, int64_t n);
at::Tensor rsub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
at::Tensor round_decimals(Dest d, const at::Tensor& self, int64_t decimals);
at::Tensor pow_scalar_base(Dest d, const at::Scalar& base, const at::Tensor& exponent);
at::Tensor& linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, at::Tensor& out);
at::Tensor& logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base, at::Tensor& out);
at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out);
at::Tensor& eye_out(int64_t n, at::Tensor& out);
at::Tensor hardsigmoid_backward(const at::Tensor& grad, const at::Tensor& self);
at::Tensor hardswish_backward(const at::Tensor& grad, const at::Tensor& self);
at::Tensor mish_backward(const at::Tensor& grad, const at::Tensor& self);
at::Tensor relu(Dest d, const at::Tensor& self);
at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& threshold);
at::Tensor where_self(Dest d, const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other);
std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self);
at::Tensor log_sigmoid_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& buffer);
at::Tensor hardshrink(Dest d, const at::Tensor& self, const at::Scalar& lambd);
at::Tensor hardshrink_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& lambd);
at::Tensor softshrink(Dest d, const at::Tensor& self, const at::Scalar& lambd);
at::Tensor softshrink_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& lambd);
// Ops with scalar parameters: functional, in-place and out= forms.
#define TPU_DECLARE_FORMS(name, params) at::Tensor name(Dest d, const at::Tensor& self, params);
#define TPU_COMMA ,
TPU_DECLARE_FORMS(clamp, const std::optional<at::Scalar>& min TPU_COMMA const std::optional<at::Scalar>& max)
TPU_DECLARE_FORMS(clamp_tensor, const std::optional<at::Tensor>& min TPU_COMMA const std::optional<at::Tensor>& max)
TPU_DECLARE_FORMS(clamp_min, const at::Scalar& min)
TPU_DECLARE_FORMS(clamp_max, const at::Scalar& max)
TPU_DECLARE_FORMS(div_mode, const at::Tensor& other TPU_COMMA std::optional<c10::string_view> rounding_mode)
TPU_DECLARE_FORMS(addcmul, const at::Tensor& t1 TPU_COMMA const at::Tensor& t2 TPU_COMMA const at::Scalar& value)
TPU_DECLARE_FORMS(addcdiv, const at::Tensor& t1 TPU_COMMA const at::Tensor& t2 TPU_COMMA const at::Scalar& value)
// addcdiv's refusal of integer division (also for _foreach_addcdiv_).
void check_addcdiv_operands(const at::Tensor& t1, const at::Tensor& t2);
TPU_DECLARE_FORMS(lerp_scalar, const at::Tensor& end TPU_COMMA const at::Scalar& weight)
TPU_DECLARE_FORMS(lerp_tensor, const at::Tensor& end TPU_COMMA const at::Tensor& weight)
TPU_DECLARE_FORMS(nan_to_num, std::optional<double> nan TPU_COMMA std::optional<double> posinf TPU_COMMA
                                  std::optional<double> neginf)
TPU_DECLARE_FORMS(logit, std::optional<double> eps)
TPU_DECLARE_FORMS(hardtanh, const at::Scalar& min TPU_COMMA const at::Scalar& max)
TPU_DECLARE_FORMS(leaky_relu, const at::Scalar& negative_slope)
TPU_DECLARE_FORMS(elu, const at::Scalar& alpha TPU_COMMA const at::Scalar& scale TPU_COMMA const at::Scalar& input_scale)
TPU_DECLARE_FORMS(threshold, const at::Scalar& threshold TPU_COMMA const at::Scalar& value)
#undef TPU_COMMA
#undef TPU_DECLARE_FORMS
at::Tensor softplus(Dest d, const at::Tensor& self, const at::Scalar& beta, const at::Scalar& threshold);
at::Tensor hardtanh_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& min,
                             const at::Scalar& max);
at::Tensor leaky_relu_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& negative_slope,
                               bool self_is_result);
at::Tensor elu_backward(const at::Tensor& grad, const at::Scalar& alpha, const at::Scalar& scale,
                        const at::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result);
at::Tensor softplus_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& beta,
                             const at::Scalar& threshold);

// Reductions, matmul, nn (reduction.cpp)
at::Tensor sum_dim(Dest d, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype);
at::Tensor mean_dim(Dest d, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype);
at::Tensor amax(Dest d, const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor amin(Dest d, const at::Tensor& self, at::IntArrayRef dim, bool keepdim);
at::Tensor rrelu_with_noise(Dest d, const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                            const at::Scalar& upper, bool training, std::optional<at::Generator> generator);
at::Tensor rrelu_with_noise_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& noise,
                                     const at::Scalar& lower, const at::Scalar& upper, bool training,
                                     bool self_is_result);
at::Tensor tril_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool> pin_memory);
at::Tensor triu_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool> pin_memory);
std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim);
std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& values,
                                              at::Tensor& indices);
at::Tensor logit_backward(const at::Tensor& grad_output, const at::Tensor& self, std::optional<double> eps);
at::Tensor _efficientzerotensor(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                                std::optional<at::Layout> layout, std::optional<at::Device> device,
                                std::optional<bool> pin_memory);
std::tuple<at::Tensor, at::Tensor> unique(const at::Tensor& self, bool sorted, bool return_inverse);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm(const at::Tensor& input,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, c10::SymInt N,
                                                                 c10::SymInt C, c10::SymInt HxW, int64_t group,
                                                                 double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& rstd,
    const std::optional<at::Tensor>& weight, c10::SymInt N, c10::SymInt C, c10::SymInt HxW, int64_t group,
    std::array<bool, 3> output_mask);
at::Tensor _cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p, std::optional<int64_t> compute_mode);
at::Tensor _cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                           const at::Tensor& cdist);
at::Tensor _pdist_forward(const at::Tensor& self, double p);
at::Tensor _pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p, const at::Tensor& pdist);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _embedding_bag(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, bool scale_grad_by_freq,
    int64_t mode, bool sparse, const std::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx);
at::Tensor _embedding_bag_dense_backward(const at::Tensor& grad, const at::Tensor& indices,
                                         const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                         const at::Tensor& maximum_indices, c10::SymInt num_weights,
                                         bool scale_grad_by_freq, int64_t mode,
                                         const std::optional<at::Tensor>& per_sample_weights, int64_t padding_idx);
at::Tensor _embedding_bag_per_sample_weights_backward(const at::Tensor& grad, const at::Tensor& weight,
                                                      const at::Tensor& indices, const at::Tensor& offsets,
                                                      const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx);
at::Tensor _embedding_bag_backward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
                                   const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                   const at::Tensor& maximum_indices, c10::SymInt num_weights, bool scale_grad_by_freq,
                                   int64_t mode, bool sparse, const std::optional<at::Tensor>& per_sample_weights,
                                   int64_t padding_idx);
at::Tensor& embedding_renorm_(at::Tensor& self, const at::Tensor& indices, double max_norm, double norm_type);
std::tuple<at::Tensor, at::Tensor> weight_norm_interface(const at::Tensor& v, const at::Tensor& g, int64_t dim);
std::tuple<at::Tensor, at::Tensor> weight_norm_interface_backward(const at::Tensor& grad_w, const at::Tensor& saved_v,
                                                                  const at::Tensor& saved_g,
                                                                  const at::Tensor& saved_norms, int64_t dim);
at::Tensor _prelu_kernel(const at::Tensor& self, const at::Tensor& weight);
std::tuple<at::Tensor, at::Tensor> _prelu_kernel_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                                          const at::Tensor& weight);
std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa, at::Tensor& exponent);
at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                          const std::optional<at::Tensor>& indices, const std::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const std::optional<at::Scalar>& initial);
at::Tensor _segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                    c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                    const std::optional<at::Tensor>& offsets, int64_t axis,
                                    const std::optional<at::Scalar>& initial);
at::Tensor hash_tensor(Dest d, const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode);
at::Tensor renorm(Dest d, const at::Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm);
at::Tensor linalg_vector_norm(const at::Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype);
at::Tensor norm_dim(const at::Tensor& self, const std::optional<at::Scalar>& p, at::IntArrayRef dim, bool keepdim);
at::Tensor norm_dim_dtype(const at::Tensor& self, const std::optional<at::Scalar>& p, at::IntArrayRef dim, bool keepdim,
                          at::ScalarType dtype);
at::Tensor max_all(const at::Tensor& self);
std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim);
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim);
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim);
at::Tensor var_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<at::Scalar>& correction, bool keepdim);
at::Tensor std_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<at::Scalar>& correction, bool keepdim);
at::Tensor min_all(const at::Tensor& self);
at::Tensor any_all(const at::Tensor& self);
at::Tensor all_all(const at::Tensor& self);
at::Tensor any_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor all_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction);
at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction);
at::Tensor huber_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta);
at::Tensor huber_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               int64_t reduction, double delta);
at::Tensor smooth_l1_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta);
at::Tensor smooth_l1_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                   int64_t reduction, double beta);
at::Tensor binary_cross_entropy(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                int64_t reduction);
at::Tensor binary_cross_entropy_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                         const std::optional<at::Tensor>& weight, int64_t reduction);
at::Tensor& arange_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step, at::Tensor& out);
at::Tensor mm(Dest d, const at::Tensor& self, const at::Tensor& mat2);
at::Tensor bmm(Dest d, const at::Tensor& self, const at::Tensor& mat2);
at::Tensor addmm(Dest d, const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha);
#define TPU_DECLARE_ADD_PRODUCT(name, a, b)                                                                   \
  at::Tensor name(Dest d, const at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const at::Scalar& beta, \
                  const at::Scalar& alpha);
TPU_DECLARE_ADD_PRODUCT(addmv, mat, vec)
TPU_DECLARE_ADD_PRODUCT(baddbmm, batch1, batch2)
TPU_DECLARE_ADD_PRODUCT(addbmm, batch1, batch2)
TPU_DECLARE_ADD_PRODUCT(addr, vec1, vec2)
#undef TPU_DECLARE_ADD_PRODUCT
at::Tensor dot(const at::Tensor& self, const at::Tensor& other);
at::Tensor convert_weight_to_int4pack(const at::Tensor& weight, int64_t inner_k_tiles);
at::Tensor weight_int4pack_mm(const at::Tensor& a, const at::Tensor& packed, int64_t group_size,
                              const at::Tensor& scales_and_zeros);
at::Tensor vdot(const at::Tensor& self, const at::Tensor& other);
at::Tensor prod(const at::Tensor& self, std::optional<at::ScalarType> dtype);
at::Tensor prod_dim(Dest d, const at::Tensor& self, int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype);
at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype);
std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<at::Scalar>& correction, bool keepdim);
std::tuple<at::Tensor, at::Tensor> std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<at::Scalar>& correction, bool keepdim);
std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim);
at::Tensor count_nonzero(const at::Tensor& self, at::IntArrayRef dim);
bool equal(const at::Tensor& self, const at::Tensor& other);
std::tuple<at::Tensor, at::Tensor> linalg_cholesky_ex(const at::Tensor& self, bool upper, bool check_errors);
std::tuple<at::Tensor, at::Tensor> triangular_solve(const at::Tensor& self, const at::Tensor& a, bool upper,
                                                    bool transpose, bool unitriangular);
at::Tensor linalg_solve_triangular(const at::Tensor& a, const at::Tensor& b, bool upper, bool left, bool unitriangular);
at::Tensor cholesky_solve_helper(const at::Tensor& self, const at::Tensor& factor, bool upper);
std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_lu_factor_ex(const at::Tensor& A, bool pivot, bool check_errors);
std::tuple<at::Tensor, at::Tensor, at::Tensor> lu_unpack(const at::Tensor& LU, const at::Tensor& pivots,
                                                         bool unpack_data, bool unpack_pivots);
std::tuple<at::Tensor, at::Tensor, at::Tensor> linalg_lu(const at::Tensor& A, bool pivot);
std::tuple<at::Tensor, at::Tensor, at::Tensor> _linalg_det(const at::Tensor& A);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _linalg_slogdet(const at::Tensor& A);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _linalg_solve_ex(const at::Tensor& A, const at::Tensor& B,
                                                                            bool left, bool check_errors);
at::Tensor linalg_lu_solve(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left, bool adjoint);
std::tuple<at::Tensor, at::Tensor> linalg_inv_ex(const at::Tensor& A, bool check_errors);
std::tuple<at::Tensor, at::Tensor> geqrf(const at::Tensor& self);
std::tuple<at::Tensor, at::Tensor> linalg_qr(const at::Tensor& A, c10::string_view mode);
at::Tensor linalg_householder_product(const at::Tensor& input, const at::Tensor& tau);
at::Tensor ormqr(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left, bool transpose);
std::tuple<at::Tensor, at::Tensor> _linalg_eigh(const at::Tensor& A, c10::string_view UPLO, bool compute_v);
std::tuple<at::Tensor, at::Tensor, at::Tensor> _linalg_svd(const at::Tensor& A, bool full_matrices, bool compute_uv,
                                                           std::optional<c10::string_view> driver);
at::Tensor cholesky(const at::Tensor& self, bool upper);
at::Tensor linalg_matrix_exp(const at::Tensor& self);
// Discrete Fourier transforms: complex to complex, real to complex, complex to real.
at::Tensor _fft_c2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool forward);
at::Tensor _fft_r2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool onesided);
at::Tensor _fft_c2r(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, int64_t last_dim_size);
at::Tensor cholesky_inverse(const at::Tensor& factor, bool upper);
at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float);
at::Tensor log_softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                at::ScalarType input_dtype);
at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float);
at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                            at::ScalarType input_dtype);
at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen);
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen);
at::Tensor& random_from(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen);
at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen);
at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen);
at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen);
at::Tensor normal_tensor_tensor(Dest d, const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen);
at::Tensor normal_tensor_float(Dest d, const at::Tensor& mean, double std, std::optional<at::Generator> gen);
at::Tensor normal_float_tensor(Dest d, double mean, const at::Tensor& std, std::optional<at::Generator> gen);
at::Tensor& bernoulli_float_(at::Tensor& self, double p, std::optional<at::Generator> gen);
at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen);
at::Tensor bernoulli(const at::Tensor& self, std::optional<at::Generator> gen);
at::Tensor& exponential_(at::Tensor& self, double lambd, std::optional<at::Generator> gen);
at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen);
at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> gen);
at::Tensor multinomial(const at::Tensor& self, int64_t num_samples, bool replacement, std::optional<at::Generator> gen);
at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& out);

// Losses, normalization, activations, dropout, distances, embedding bags (nn.cpp)
std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index);
std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                            at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                            int64_t blank, bool zero_infinity);
std::tuple<at::Tensor, at::Tensor> ctc_loss_tensor(const at::Tensor& log_probs, const at::Tensor& targets,
                                                   const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                                   int64_t blank, bool zero_infinity);
at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                             at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                             const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                             bool zero_infinity);
at::Tensor multi_margin_loss(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                             const at::Scalar& margin, const std::optional<at::Tensor>& weight, int64_t reduction);
at::Tensor multi_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                      const at::Scalar& p, const at::Scalar& margin,
                                      const std::optional<at::Tensor>& weight, int64_t reduction);
std::tuple<at::Tensor, at::Tensor> multilabel_margin_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                                  int64_t reduction);
at::Tensor multilabel_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, int64_t reduction, const at::Tensor& is_target);
at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight);
std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      int64_t ignore_index);
at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                 at::IntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    std::array<bool, 3> output_mask);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    bool training, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps);
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask);
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve);
at::Tensor gelu(const at::Tensor& self, c10::string_view approximate);
at::Tensor glu(const at::Tensor& self, int64_t dim);
at::Tensor glu_backward(const at::Tensor& grad, const at::Tensor& self, int64_t dim);
at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate);
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train);
at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale);

// Advanced indexing, selection, reordering, triangles, scans, cat, gather /
// scatter, index_select, masked_fill (indexing.cpp)
at::Tensor cat(Dest d, const at::ITensorListRef& tensors, int64_t dim);
at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad);
at::Tensor scatter_add(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src);
at::Tensor scatter_src(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src);
at::Tensor scatter_value(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value);
at::Tensor scatter_reduce(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                          c10::string_view reduce);
at::Tensor scatter_value_reduce(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const at::Scalar& value, c10::string_view reduce);
at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index);
at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq);
at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask, const at::Scalar& value);
at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value);
at::Tensor index_tensor(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices);
at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate, bool unsafe);
at::Tensor sparse_to_dense(const at::Tensor& self, std::optional<at::ScalarType> dtype,
                           std::optional<bool> masked_grad);
at::Tensor nonzero(Dest d, const at::Tensor& self);
at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask);
at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims);
at::Tensor roll(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims);
at::Tensor triu(Dest d, const at::Tensor& self, int64_t diagonal);
at::Tensor tril(Dest d, const at::Tensor& self, int64_t diagonal);
std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                               bool descending);
std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, c10::SymInt k, int64_t dim, bool largest, bool sorted);
std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, c10::SymInt k, int64_t dim, bool largest,
                                              bool sorted, at::Tensor& values, at::Tensor& indices);
std::tuple<at::Tensor&, at::Tensor&> sort_stable_out(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                                     bool descending, at::Tensor& values, at::Tensor& indices);
at::Tensor cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype);
at::Tensor cumprod(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype);
std::tuple<at::Tensor, at::Tensor> kthvalue(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim);
std::tuple<at::Tensor, at::Tensor> median_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor median(const at::Tensor& self);
std::tuple<at::Tensor, at::Tensor> nanmedian_dim(const at::Tensor& self, int64_t dim, bool keepdim);
at::Tensor nanmedian(const at::Tensor& self);
void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim);
void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim);
at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim);
at::Tensor trace(const at::Tensor& self);
at::Tensor searchsorted(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                        std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter);
at::Tensor bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right);
at::Tensor isin(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique, bool invert);
at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value);
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool sorted, bool return_inverse,
                                                       bool return_counts);
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts, std::optional<int64_t> dim);
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim(const at::Tensor& self, int64_t dim, bool sorted,
                                                          bool return_inverse, bool return_counts);
at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max);
at::Tensor index_reduce(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                        c10::string_view reduce, bool include_self);
at::Tensor linalg_cross(Dest d, const at::Tensor& self, const at::Tensor& other, int64_t dim);
at::Tensor channel_shuffle(const at::Tensor& self, int64_t groups);
at::Tensor index_add(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                     const at::Scalar& alpha);
at::Tensor index_copy(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source);
at::Tensor& index_fill_scalar_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value);
at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value);
at::Tensor take(const at::Tensor& self, const at::Tensor& index);
at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate);
at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source);
at::Tensor scatter_reduce_two(Dest d, const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                              c10::string_view reduce, bool include_self);

// Convolutions (conv.cpp)
at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                                    at::IntArrayRef output_padding, int64_t groups);
std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask);
#define TPU_DECLARE_POOLING(n)                                                                                     \
  std::tuple<at::Tensor, at::Tensor> max_pool##n##d_with_indices(const at::Tensor& self, at::IntArrayRef kernel_size, \
                                                                 at::IntArrayRef stride, at::IntArrayRef padding,     \
                                                                 at::IntArrayRef dilation, bool ceil_mode);           \
  at::Tensor max_pool##n##d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,              \
                                                  at::IntArrayRef kernel_size, at::IntArrayRef stride,                \
                                                  at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,  \
                                                  const at::Tensor& indices);                                         \
  at::Tensor avg_pool##n##d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,              \
                            at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,                          \
                            std::optional<int64_t> divisor_override);                                                 \
  at::Tensor avg_pool##n##d_backward(const at::Tensor& grad_output, const at::Tensor& self,                           \
                                     at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding,    \
                                     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override); \
  at::Tensor adaptive_avg_pool##n##d(const at::Tensor& self, at::IntArrayRef output_size);                            \
  at::Tensor adaptive_avg_pool##n##d_backward(const at::Tensor& grad_output, const at::Tensor& self);                \
  std::tuple<at::Tensor, at::Tensor> adaptive_max_pool##n##d(const at::Tensor& self, at::IntArrayRef output_size);   \
  at::Tensor adaptive_max_pool##n##d_backward(const at::Tensor& grad_output, const at::Tensor& self,                 \
                                              const at::Tensor& indices);
TPU_DECLARE_POOLING(2)
TPU_DECLARE_POOLING(3)
#undef TPU_DECLARE_POOLING
at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                           int64_t padding_mode, bool align_corners);
at::Tensor grid_sampler_3d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                           int64_t padding_mode, bool align_corners);
at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride);
at::Tensor col2im(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride);
at::Tensor unfold_backward(const at::Tensor& grad_in, c10::SymIntArrayRef input_sizes, int64_t dim, int64_t size,
                           int64_t step);
std::tuple<at::Tensor, at::Tensor> fractional_max_pool2d(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                         at::IntArrayRef output_size, const at::Tensor& random_samples);
at::Tensor fractional_max_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                          at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                          const at::Tensor& indices);
std::tuple<at::Tensor, at::Tensor> fractional_max_pool3d(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                         at::IntArrayRef output_size, const at::Tensor& random_samples);
at::Tensor fractional_max_pool3d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                          at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                          const at::Tensor& indices);
at::Tensor max_unpool2d(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size);
at::Tensor max_unpool3d(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size,
                        at::IntArrayRef stride, at::IntArrayRef padding);
// Resampling and edge padding (conv.cpp)
at::Tensor upsample_nearest1d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scale);
at::Tensor upsample_nearest1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           std::optional<double> scale);
at::Tensor _upsample_nearest_exact1d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scale);
at::Tensor _upsample_nearest_exact1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           std::optional<double> scale);
at::Tensor upsample_nearest2d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor _upsample_nearest_exact2d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor _upsample_nearest_exact2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_nearest3d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scale_d, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_nearest3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           std::optional<double> scale_d, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor _upsample_nearest_exact3d(const at::Tensor& self, at::IntArrayRef output_size, std::optional<double> scale_d, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor _upsample_nearest_exact3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           std::optional<double> scale_d, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_linear1d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scale);
at::Tensor upsample_linear1d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           bool align_corners, std::optional<double> scale);
at::Tensor _upsample_bilinear2d_aa(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners,
                                   std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor _upsample_bilinear2d_aa_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                            at::IntArrayRef input_size, bool align_corners, std::optional<double> scale_h,
                                            std::optional<double> scale_w);
at::Tensor _upsample_bicubic2d_aa(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners,
                                  std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor _upsample_bicubic2d_aa_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                           at::IntArrayRef input_size, bool align_corners, std::optional<double> scale_h,
                                           std::optional<double> scale_w);
at::Tensor upsample_bilinear2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_bilinear2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           bool align_corners, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_trilinear3d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scale_d, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_trilinear3d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           bool align_corners, std::optional<double> scale_d, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_bicubic2d(const at::Tensor& self, at::IntArrayRef output_size, bool align_corners, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor upsample_bicubic2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                           bool align_corners, std::optional<double> scale_h, std::optional<double> scale_w);
at::Tensor reflection_pad1d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor reflection_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor reflection_pad2d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor reflection_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor reflection_pad3d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor reflection_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor replication_pad1d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor replication_pad1d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor replication_pad2d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor replication_pad2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);
at::Tensor replication_pad3d(const at::Tensor& self, at::IntArrayRef padding);
at::Tensor replication_pad3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding);

// Optimizer multi-tensor ops (foreach.cpp)
void foreach_add_scalar_(at::TensorList self, const at::Scalar& scalar);
void foreach_add_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha);
void foreach_sub_list_(at::TensorList self, at::TensorList other, const at::Scalar& alpha);
void foreach_mul_scalar_(at::TensorList self, const at::Scalar& scalar);
void foreach_mul_list_(at::TensorList self, at::TensorList other);
void foreach_div_scalar_list_(at::TensorList self, at::ArrayRef<at::Scalar> scalars);
void foreach_lerp_scalar_(at::TensorList self, at::TensorList end, const at::Scalar& weight);
void foreach_addcmul_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value);
void foreach_addcdiv_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const at::Scalar& value);
void foreach_addcdiv_scalar_list_(at::TensorList self, at::TensorList t1, at::TensorList t2,
                                  at::ArrayRef<at::Scalar> scalars);
std::vector<at::Tensor> foreach_sqrt(at::TensorList self);
void foreach_sqrt_(at::TensorList self);
// The optimizers' fused steps (fused=True): `lr` is a number, or a tensor in
// the .tensor_lr forms, which register fused_adam<false, const at::Tensor&> etc.
using LearningRate = std::variant<double, at::Tensor>;
void fused_adam_step(bool decoupled_weight_decay, at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                     at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs, at::TensorList state_steps,
                     const LearningRate& lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                     bool maximize, const std::optional<at::Tensor>& grad_scale,
                     const std::optional<at::Tensor>& found_inf);
void fused_sgd_step(at::TensorList self, at::TensorList grads, at::TensorList momentum_buffer_list,
                    double weight_decay, double momentum, const LearningRate& lr, double dampening, bool nesterov,
                    bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                    const std::optional<at::Tensor>& found_inf);
void fused_adagrad_step(at::TensorList self, at::TensorList grads, at::TensorList state_sums,
                        at::TensorList state_steps, const LearningRate& lr, double lr_decay, double weight_decay,
                        double eps, bool maximize, const std::optional<at::Tensor>& grad_scale,
                        const std::optional<at::Tensor>& found_inf);
template <bool decoupled_weight_decay, class Lr>
void fused_adam(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                at::TensorList max_exp_avg_sqs, at::TensorList state_steps, Lr lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize,
                const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_adam_step(decoupled_weight_decay, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1,
                  beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}
template <class Lr>
void fused_sgd(at::TensorList self, at::TensorList grads, at::TensorList momentum_buffer_list, double weight_decay,
               double momentum, Lr lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
               const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_sgd_step(self, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize,
                 is_first_step, grad_scale, found_inf);
}
template <class Lr>
void fused_adagrad(at::TensorList self, at::TensorList grads, at::TensorList state_sums, at::TensorList state_steps,
                   Lr lr, double lr_decay, double weight_decay, double eps, bool maximize,
                   const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_adagrad_step(self, grads, state_sums, state_steps, lr, lr_decay, weight_decay, eps, maximize, grad_scale,
                     found_inf);
}
// GradScaler's two ops.
void amp_foreach_non_finite_check_and_unscale_(at::TensorList self, at::Tensor& found_inf,
                                               const at::Tensor& inv_scale);
at::Tensor& amp_update_scale_(at::Tensor& self, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                              double growth_factor, double backoff_factor, int64_t growth_interval);
// The fused LSTM and GRU cells (rnn.cpp).
std::tuple<at::Tensor, at::Tensor, at::Tensor> thnn_fused_lstm_cell(const at::Tensor& input_gates,
                                                                    const at::Tensor& hidden_gates,
                                                                    const at::Tensor& cx,
                                                                    const std::optional<at::Tensor>& input_bias,
                                                                    const std::optional<at::Tensor>& hidden_bias);
std::tuple<at::Tensor, at::Tensor> thnn_fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                       const at::Tensor& hx,
                                                       const std::optional<at::Tensor>& input_bias,
                                                       const std::optional<at::Tensor>& hidden_bias);

// A function lowered by another framework, `name` defined by the MLIR text
// `definition`, called on `args`; `results` (meta tensors) give the dtypes and
// shapes it returns (external.cpp; torch_tpu/jax_ops.py registers it as the
// op torch_tpu::jax_call).
std::vector<at::Tensor> call_function(const std::string& name, const std::string& definition,
                                      const std::vector<at::Tensor>& args, const std::vector<at::Tensor>& results);

}  // namespace torch_tpu::aten
