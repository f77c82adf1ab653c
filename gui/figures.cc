// Writing figures for the GUI.
#include "gui/figures.h"

#include <cmath>

namespace dtsim::gui {
namespace {

QString three_digits(double v) {
  const double a = std::fabs(v);
  const int decimals = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  return QString::number(v, 'f', decimals);
}

}  // namespace

QString seconds_text(double s) {
  const double a = std::fabs(s);
  if (a == 0) return QStringLiteral("0 s");
  if (a < 1e-6) return three_digits(s * 1e9) + QStringLiteral(" ns");
  if (a < 1e-3) return three_digits(s * 1e6) + QStringLiteral(" µs");
  if (a < 1) return three_digits(s * 1e3) + QStringLiteral(" ms");
  if (a < 120) return three_digits(s) + QStringLiteral(" s");
  if (a < 7200) return three_digits(s / 60) + QStringLiteral(" min");
  if (a < 172800) return three_digits(s / 3600) + QStringLiteral(" h");
  if (a < 2 * 365.25 * 86400) return three_digits(s / 86400) + QStringLiteral(" days");
  return three_digits(s / (365.25 * 86400)) + QStringLiteral(" years");
}

QString bytes_text(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return (u == 0 ? QString::number(v, 'f', 0) : three_digits(v)) + " " + units[u];
}

QString count_text(double n) {
  const double a = std::fabs(n);
  if (a >= 1e12) return three_digits(n / 1e12) + QStringLiteral(" T");
  if (a >= 1e9) return three_digits(n / 1e9) + QStringLiteral(" G");
  if (a >= 1e6) return three_digits(n / 1e6) + QStringLiteral(" M");
  if (a >= 1e3) return three_digits(n / 1e3) + QStringLiteral(" k");
  return n == std::floor(n) ? QString::number(n, 'f', 0) : three_digits(n);
}

QString rate_text(double per_second, const QString& what) {
  return count_text(per_second) + " " + what + "/s";
}

QString percent_text(double fraction) {
  return QString::number(fraction * 100, 'f', 1) + QStringLiteral(" %");
}

}  // namespace dtsim::gui
