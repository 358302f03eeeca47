// Core-internal entry points of core/team.cpp beside the C interface.
#pragma once

#include <stdint.h>

#include "gpucoll_core.h"

namespace gpucoll {

// How ranks share the team's control block: `Memfd` first (rank 0's
// anonymous file, opened by the peers through /proc: no name anywhere),
// else a shm_open object with an unguessable name; `NamedOnly` skips the
// first (the tests of the fallback).
enum class TeamShm { MemfdFirst, NamedOnly };

// gpucoll_team_create with the choice above.
gpucoll_status_t team_create(const gpucoll_oob_t *oob, gpucoll_team_t **out, TeamShm shm);

// Tests of the agreement (tests/core/test_team_agree.cpp), which needs no
// GPU: the next call's agreement alone, for an allreduce of one float that
// this rank can (ok) or cannot take down the peer path; *all_ok as the peer
// path would see it; *any_busy: some rank posted `busy` (see agree). Ranks
// that pass different counts fail the call (TRUNCATE or MISMATCH).
gpucoll_status_t team_agree(gpucoll_team_t *t, bool ok, bool *all_ok, bool busy = false, bool *any_busy = nullptr,
                            size_t count = 1);
// Tests only: when set, called by every agreement right after this rank
// posted call `seq`, to hold a rank where a scheduler might.
extern void (*team_test_after_post)(int rank, uint64_t seq);
// Tests only: when set, called by every call that runs a peer kernel, after
// the agreement and before the launch (tests/core/peer_give_up.cpp).
extern void (*team_test_before_launch)(int rank, uint64_t seq);

} // namespace gpucoll
