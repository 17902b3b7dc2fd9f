#include "printable.h"

#include <cstdio>

namespace tarn::cli {

std::string Printable(const std::string& text) {
  std::string shown;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next =
        static_cast<unsigned char>(i + 1 < text.size() ? text[i + 1] : 0);
    char escape[8];
    if (c < 0x20 || c == 0x7f) {
      std::snprintf(escape, sizeof escape, "\\x%02x", c);
      shown += escape;
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {
      std::snprintf(escape, sizeof escape, "\\u%04x", next);
      shown += escape;
      ++i;
    } else {
      shown += text[i];
    }
  }
  return shown;
}

}  // namespace tarn::cli
