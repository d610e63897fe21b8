# The web dashboard (issue 18, docs/dashboard.md):
#   ui/                      the front end (Preact, bundled by esbuild; package-lock.json pins it)
#   carve_server_ui_core     its server side: /ui/ assets, /v1/ui/* and /v1/catalog routes,
#                            the metrics history
#   carve_server_ui          the above plus the built front end embedded (generated table)
# The front end is built at build time: `npm ci` when the lockfile changes, then ui/build.mjs,
# then tools/embed_assets.py turns its output into a C++ table linked into `carve`.
find_program(CARVE_NODE node)
find_program(CARVE_NPM npm)
if(NOT CARVE_NODE OR NOT CARVE_NPM)
  message(FATAL_ERROR "The dashboard (ui/) is built with Node.js (18.19 or later) and npm; "
                      "scripts/setup.sh installs them (apt-get install nodejs npm).")
endif()
find_package(Python3 REQUIRED COMPONENTS Interpreter)

set(ui_src ${CMAKE_CURRENT_SOURCE_DIR}/ui)
set(ui_web ${PROJECT_SOURCE_DIR}/ui)
set(ui_out ${CMAKE_BINARY_DIR}/ui)
file(MAKE_DIRECTORY ${ui_out})

# node_modules lives in ui/ (gitignored) so that node resolves it from the sources; the stamp in
# the build tree re-runs `npm ci` whenever package.json or the lockfile changes.
add_custom_command(
  OUTPUT ${ui_out}/npm-ci.stamp
  COMMAND ${CMAKE_COMMAND} -E env PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
          ${CARVE_NPM} ci --no-audit --no-fund --loglevel=error
  COMMAND ${CMAKE_COMMAND} -E touch ${ui_out}/npm-ci.stamp
  WORKING_DIRECTORY ${ui_web}
  DEPENDS ${ui_web}/package.json ${ui_web}/package-lock.json
  COMMENT "dashboard: npm ci (locked dependencies)"
  VERBATIM)
file(GLOB_RECURSE ui_web_sources CONFIGURE_DEPENDS ${ui_web}/src/*)
add_custom_command(
  OUTPUT ${ui_out}/dist/manifest.json
  COMMAND ${CARVE_NODE} ${ui_web}/build.mjs --out ${ui_out}/dist
  DEPENDS ${ui_out}/npm-ci.stamp ${ui_web}/build.mjs ${ui_web_sources}
  COMMENT "dashboard: bundling ui/ with esbuild"
  VERBATIM)
add_custom_command(
  OUTPUT ${ui_out}/ui_assets.cc
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/embed_assets.py ${ui_out}/dist
          ${ui_out}/ui_assets.cc
  DEPENDS ${ui_out}/dist/manifest.json ${PROJECT_SOURCE_DIR}/tools/embed_assets.py
  COMMENT "dashboard: embedding the built files"
  VERBATIM)

carve_library(carve_server_ui_core
  SRCS ${ui_src}/prom_text.cc ${ui_src}/metrics_history.cc ${ui_src}/static_assets.cc
       ${ui_src}/catalog_json.cc ${ui_src}/ui_routes.cc
  DEPS carve_http carve_catalog nlohmann_json::nlohmann_json
       spdlog::spdlog Threads::Threads)
carve_library(carve_server_ui SRCS ${ui_src}/register_ui_routes.cc ${ui_out}/ui_assets.cc
  DEPS carve_server_ui_core)

carve_test(server_ui_test
  SRCS ${ui_src}/prom_text_test.cc ${ui_src}/metrics_history_test.cc
       ${ui_src}/static_assets_test.cc ${ui_src}/catalog_json_test.cc ${ui_src}/ui_routes_test.cc
       ${ui_src}/test_assets.cc
  DEPS carve_server_ui_core PkgConfig::HTTPLIB)

# The front end's own tests: unit tests of its layout, strip, cost and signing logic (node:test,
# no browser), and the browser tests: a real `carve server`, the stock aws CLI, and Debian's
# Chromium driven by playwright-core, each test saving a screenshot under build/ui/artifacts.
file(GLOB ui_unit_tests CONFIGURE_DEPENDS ${ui_web}/test/unit/*.test.js)
add_test(NAME ui_unit_test COMMAND ${CARVE_NODE} --test ${ui_unit_tests})
set_tests_properties(ui_unit_test PROPERTIES LABELS "unit;ui" TIMEOUT 120)
add_test(NAME ui_browser_test
         COMMAND ${CARVE_NODE} --test ${ui_web}/test/browser/dashboard.test.mjs)
set_tests_properties(ui_browser_test PROPERTIES LABELS "integration;browser" TIMEOUT 480
  ENVIRONMENT "CARVE_BIN=$<TARGET_FILE:carve>;CARVE_SOURCE_DIR=${PROJECT_SOURCE_DIR};CARVE_SANDBOX_READ_ONLY=${PROJECT_SOURCE_DIR}:${CMAKE_BINARY_DIR};CARVE_UI_ARTIFACTS=${ui_out}/artifacts")
# The dashboard over https at a name that is not localhost, and the notice over plain http.
add_test(NAME ui_browser_tls_test
         COMMAND ${CARVE_NODE} --test ${ui_web}/test/browser/tls.test.mjs)
set_tests_properties(ui_browser_tls_test PROPERTIES LABELS "integration;browser" TIMEOUT 240
  ENVIRONMENT "CARVE_BIN=$<TARGET_FILE:carve>;CARVE_SOURCE_DIR=${PROJECT_SOURCE_DIR};CARVE_UI_ARTIFACTS=${ui_out}/artifacts")
