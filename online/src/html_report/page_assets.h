// report.html's stylesheet and script (report_page.css, report_charts.js, report_page.js beside
// this file), compiled in from a file generated at build time (html_report.cmake), so the page
// needs nothing from disk or the network and the JS stays a file of its own.
#pragma once

namespace sp::online::html_report {

extern const char kPageCss[];
extern const char kPageJs[];

}  // namespace sp::online::html_report
