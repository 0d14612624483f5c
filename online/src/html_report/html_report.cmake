# report.html (online/src/html_report): the page generator, and its stylesheet and script embedded
# at build time. The CSS and JS stay files of their own (report_page.css, report_charts.js,
# report_page.js); a generated source holds them as raw strings, regenerated when they change.
set(SP_HTML_DIR ${CMAKE_CURRENT_LIST_DIR})
set(_sp_html_assets ${SP_HTML_DIR}/report_page.css ${SP_HTML_DIR}/report_charts.js
                    ${SP_HTML_DIR}/report_page.js)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_sp_html_assets})
file(READ ${SP_HTML_DIR}/report_page.css SP_PAGE_CSS)
file(READ ${SP_HTML_DIR}/report_charts.js _sp_charts_js)
file(READ ${SP_HTML_DIR}/report_page.js _sp_page_js)
set(SP_PAGE_JS "${_sp_charts_js}\n${_sp_page_js}")
# The assets go inside <style>/<script> and a C++ raw string: none of them may end those early.
foreach(_sp_asset IN ITEMS SP_PAGE_CSS SP_PAGE_JS)
  string(TOLOWER "${${_sp_asset}}" _sp_lower)
  foreach(_sp_bad IN ITEMS "</script" "</style" "<!--" ")sp_asset")
    string(FIND "${_sp_lower}" "${_sp_bad}" _sp_at)
    if(NOT _sp_at EQUAL -1)
      message(FATAL_ERROR "online/src/html_report: ${_sp_asset} contains '${_sp_bad}'")
    endif()
  endforeach()
endforeach()
set(_sp_generated ${CMAKE_CURRENT_BINARY_DIR}/generated/html_report_page_assets.cpp)
configure_file(${SP_HTML_DIR}/page_assets.cpp.in ${_sp_generated} @ONLY)
# The JS is one literal, longer than the 64 KiB -Wpedantic's ISO minimum may one day make it.
set_source_files_properties(${_sp_generated} PROPERTIES COMPILE_OPTIONS "-Wno-overlength-strings")
target_sources(sp_online PRIVATE ${SP_HTML_DIR}/step_history.cpp ${SP_HTML_DIR}/html_page.cpp
                                 ${_sp_generated})
