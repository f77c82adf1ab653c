// How the GUI writes figures: times, sizes, rates and shares in the units a reader expects
// at their size ("27.3 s", "46.3 GiB", "39.6 k tokens/s", "30.2 %").
#pragma once

#include <QString>

namespace dtsim::gui {

QString seconds_text(double s);                             // ns .. years
QString bytes_text(double bytes);                           // B .. TiB (powers of 1024)
QString rate_text(double per_second, const QString& what);  // "39.6 k tokens/s"
QString percent_text(double fraction);                      // "30.2 %"
QString count_text(double n);                               // "28.6 M"

}  // namespace dtsim::gui
