/* Where the hwloc XML fixtures are (tests/topo/fixtures, see make_fixtures.py). */
#ifndef GPUCOLL_TOPO_FIXTURES_H
#define GPUCOLL_TOPO_FIXTURES_H

#include <cstdio>
#include <string>

#include "gpucoll_topo.h"

#ifndef TOPO_FIXTURE_DIR
#error "TOPO_FIXTURE_DIR must be defined by the build"
#endif

inline std::string fixture_path(const char *name) { return std::string(TOPO_FIXTURE_DIR) + "/" + name; }

/* Loads fixture `name` into *t; false (and why, printed) if it cannot. */
inline bool load_fixture(const char *name, gpucoll::topo::Topology *t)
{
    if (gpucoll::topo::load_xml_topology(fixture_path(name), t) == GPUCOLL_SUCCESS) return true;
    std::printf("  load of %s failed: %s\n", name, gpucoll_last_error());
    return false;
}

#endif
