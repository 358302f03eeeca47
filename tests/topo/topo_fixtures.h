/* Where the hwloc XML fixtures are (tests/topo/fixtures, see make_fixtures.py). */
#ifndef GPUCOLL_TOPO_FIXTURES_H
#define GPUCOLL_TOPO_FIXTURES_H

#include <string>

#ifndef TOPO_FIXTURE_DIR
#error "TOPO_FIXTURE_DIR must be defined by the build"
#endif

inline std::string fixture_path(const char *name) { return std::string(TOPO_FIXTURE_DIR) + "/" + name; }

#endif
