// Core-internal entry points of core/team.cpp beside the C interface.
#pragma once

#include "gpucoll_core.h"

namespace gpucoll {

// How ranks share the team's control block: `Memfd` first (rank 0's
// anonymous file, opened by the peers through /proc: no name anywhere),
// else a shm_open object with an unguessable name; `NamedOnly` skips the
// first (the tests of the fallback).
enum class TeamShm { MemfdFirst, NamedOnly };

// gpucoll_team_create with the choice above.
gpucoll_status_t team_create(const gpucoll_team_oob_t *oob, gpucoll_team_t **out, TeamShm shm);

} // namespace gpucoll
