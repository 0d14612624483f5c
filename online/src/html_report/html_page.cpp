// The page's skeleton: the data as JSON in an inert <script type="application/json">, the
// stylesheet and the script that draws everything from it (report_page.js). The skeleton holds
// no text from the data: the script puts names on the page through textContent only.
#include "straggler_probe/online/html_report.h"

#include "page_assets.h"

namespace sp::online {

std::string json_for_script(const nlohmann::ordered_json& data) {
  const std::string text = data.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (const char c : text) {
    // Outside strings JSON has none of these; inside one, the \u escape means the same.
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string html_report_page(const nlohmann::ordered_json& report, const nlohmann::ordered_json& history) {
  const nlohmann::ordered_json data = {{"report", report}, {"history", history}};
  std::string page;
  page.reserve(64 * 1024);
  page +=
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // Nothing may be fetched: the page is read from disk, often where there is no network.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
      "<title>straggler_probe report</title>\n<style>\n";
  page += html_report::kPageCss;
  page +=
      "</style>\n</head>\n<body>\n<main id=\"sp-report\">\n<h1>straggler_probe report</h1>\n"
      "<noscript><p>This report draws its plots with JavaScript; report.json beside it has the "
      "same numbers.</p></noscript>\n</main>\n<script type=\"application/json\" id=\"sp-data\">";
  page += json_for_script(data);
  page += "</script>\n<script>\n";
  page += html_report::kPageJs;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace sp::online
