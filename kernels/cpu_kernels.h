// The CPU kernels behind run_cpu (kernel.h), each over raw pointers in the order of
// cpu_operands. Internal to kernels/; tests check each against a naive reference.
#pragma once

#include <cstdint>
#include <string_view>

#include "sim/op_signature.h"

namespace dtsim::kernels {

// A generic elementwise op moves 3 streams (a + b = y: residual adds) or 2 (x + bias = y,
// the bias broadcast along rows), as the workload model counted its bytes.
int elementwise_streams(const OpSignature& op);
// The exclusive bound of an integer operand's values: embedding ids (the table's rows),
// labels (a row's classes).
int64_t op_bound(const OpSignature& op, std::string_view operand);

namespace cpu {

// C = op(A) op(B) for each of g.batch GEMMs (OpenBLAS sgemm); with `accumulate`, C += ...
void gemm(const GemmDims& g, bool accumulate, const float* a, const float* b, float* c);

void layer_norm_forward(int64_t rows, int64_t width, const float* x, const float* gamma,
                        const float* beta, float* y, float* mean, float* rstd);
void layer_norm_backward(int64_t rows, int64_t width, const float* dy, const float* x,
                         const float* gamma, const float* mean, const float* rstd, float* dx,
                         float* dgamma, float* dbeta);
void rms_norm_forward(int64_t rows, int64_t width, const float* x, const float* gamma, float* y,
                      float* rstd);
void rms_norm_backward(int64_t rows, int64_t width, const float* dy, const float* x,
                       const float* gamma, const float* rstd, float* dx, float* dgamma);
void softmax_forward(int64_t rows, int64_t width, const float* x, float* y);
void softmax_backward(int64_t rows, int64_t width, const float* y, const float* dy, float* dx);
void gelu_forward(int64_t n, const float* x, float* y);
void gelu_backward(int64_t n, const float* x, const float* dy, float* dx);
void relu_forward(int64_t n, const float* x, float* y);
void relu_backward(int64_t n, const float* x, const float* dy, float* dx);
void swiglu_forward(int64_t n, const float* gate, const float* up, float* y);
void swiglu_backward(int64_t n, const float* gate, const float* up, const float* dy,
                     float* dgate, float* dup);
inline constexpr float kDropoutKeep = 0.9f;
void dropout_forward(int64_t n, const float* x, float* y, uint8_t* mask);
void dropout_backward(int64_t n, const float* dy, const uint8_t* mask, float* dx);
void add_forward(int64_t n, const float* a, const float* b, float* y);
void add_backward(int64_t n, const float* dy, float* da, float* db);
void bias_forward(int64_t rows, int64_t width, const float* x, const float* bias, float* y);
void bias_backward(int64_t rows, int64_t width, const float* dy, float* dx, float* dbias);
void embedding_forward(int64_t rows, int64_t width, const float* table, const int32_t* ids,
                       float* y);
void embedding_backward(int64_t rows, int64_t width, const float* dy, const int32_t* ids,
                        float* dtable);
void cross_entropy_forward(int64_t rows, int64_t width, const float* logits,
                           const int32_t* labels, float* probs, float* loss);
void cross_entropy_backward(int64_t rows, int64_t width, const float* probs,
                            const int32_t* labels, float* dlogits);
// AdamW with PyTorch's defaults (lr 1e-3, betas 0.9 and 0.999, eps 1e-8, weight decay 0.01).
void adamw_step(int64_t n, const float* grad, float* param, float* m, float* v);

}  // namespace cpu
}  // namespace dtsim::kernels
