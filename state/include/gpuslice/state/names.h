/* The names of the state dir (runtime.state-dir, /run/gpuslice), in C for
 * gpuslice-runtime's front too, which looks at a container's dir before
 * the C library starts.
 *
 *   <state-dir>/containers/<id>/   one per container gpuslice prepared
 *     state.json      the container's record (record.hpp): gpuslice's own
 *     limits          bind-mounted read-only at /run/gpuslice/limits
 *     ld.so.preload   bind-mounted read-only at /etc/ld.so.preload
 *     run/            bind-mounted read-only at /run/gpuslice: the region
 *                     socket, mount points for the files bound inside it.
 *                     Only a container with limits (and so a monitor) has it.
 *     init.pid        runc's --pid-file where the caller named none: runc's
 *                     output, read for the init's pid
 *   <state-dir>/activity          the node's activity table (burst policy)
 *   <state-dir>/gpu-memory        each GPU's memory, as NVML gave it
 *   <state-dir>/stale-collected   when stale dirs were last looked for */
#ifndef GPUSLICE_STATE_NAMES_H
#define GPUSLICE_STATE_NAMES_H

#define GS_STATE_CONTAINERS "containers"
#define GS_STATE_RECORD "state.json"
#define GS_STATE_LIMITS "limits"
#define GS_STATE_PRELOAD "ld.so.preload"
#define GS_STATE_RUN_DIR "run"
#define GS_STATE_REGION_SOCKET "region.sock"
#define GS_STATE_INIT_PID_FILE "init.pid"
#define GS_STATE_ACTIVITY "activity"
#define GS_STATE_GPU_MEMORY "gpu-memory"
#define GS_STATE_GPU_MEMORY_UNKNOWN "gpu-memory-unknown"
#define GS_STATE_STALE_COLLECTED "stale-collected"

#endif
