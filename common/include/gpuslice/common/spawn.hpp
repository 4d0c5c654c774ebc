// Starting a program from a large process without copying it.
//
// fork() copies the caller's page tables and then takes a copy-on-write
// fault on each page either side writes: dear for gpuslice-runtime (a
// large static binary), twice for a daemon's double fork.
// The child here borrows the caller's memory until it execs, as
// posix_spawn's does (CLONE_VM | CLONE_VFORK); the caller waits in the
// clone meanwhile.
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace gpuslice {

// Runs `child(arg)` in a new process on a stack of its own, sharing this
// process's memory until it execs or exits, with every signal blocked (no
// handler may run on the borrowed memory). `child` may only make system
// calls: nothing that allocates, locks, or writes memory other than what
// `arg` points to for the caller to read back; it sets the signal mask its
// program should start with (the caller's is in `caller_mask`) before it
// execs, and _exits when the exec fails. Returns the child's pid once it has
// exec'd or exited, -1 (errno set) when it could not be made. One child at
// a time: the stack is static.
pid_t spawn_sharing_memory(int (*child)(void *), void *arg, sigset_t &caller_mask);

} // namespace gpuslice
