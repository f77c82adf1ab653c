// What the kernel tests share: doubles from a buffer, an element-wise comparison, and the
// finite-difference gradient that every backward kernel is checked against.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace dtsim::kernels::test {

using Vec = std::vector<double>;

inline Vec as_double(const float* p, int64_t n) { return {p, p + n}; }

inline void expect_near_all(const float* got, const Vec& want, double tol) {
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
  }
}

// The gradient of sum(dy * f(x)) with respect to x, by central differences in double.
inline Vec numeric_grad(const std::function<Vec(Vec)>& f, Vec x, const Vec& dy, double h = 1e-5) {
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const Vec up = f(x);
    x[i] = keep - h;
    const Vec down = f(x);
    x[i] = keep;
    double d = 0;
    for (size_t j = 0; j < dy.size(); ++j) d += dy[j] * (up[j] - down[j]);
    g[i] = d / (2 * h);
  }
  return g;
}

}  // namespace dtsim::kernels::test
