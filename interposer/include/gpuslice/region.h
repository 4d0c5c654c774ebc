/* Layout of the shared usage region and names of the limits file: the one
 * contract between the interposer (C, in every GPU process of a container) and
 * the host side (C++: gpuslice exec, gpuslice-runtime, gpuslice-shim).
 * docs/region.md describes it in prose; bump GS_REGION_VERSION on any change.
 *
 * The region is writable by the tenant, so every reader validates what it
 * reads (magic, version, sizes, indexes, counters) and no reader ever waits on
 * something a writer could leave half-done: there is no lock in it. No
 * header field bounds what is summed. A process owns slot i while it holds
 * an open-file-description lock on byte GS_SLOT_LOCK_BASE + i of the region;
 * the kernel drops that lock when the process dies, which is how a dead
 * process's slot is recognised.
 */
#ifndef GPUSLICE_REGION_H
#define GPUSLICE_REGION_H

#include <stdint.h>

#define GS_REGION_MAGIC 0x314e4f4947455347ULL /* "GSEGION1" little-endian */
#define GS_REGION_VERSION 2u
#define GS_MAX_DEVICES 16u
#define GS_MAX_SLOTS 256u
#define GS_SLOT_LOCK_BASE 0x40000000LL /* lock offsets, beyond the data */
/* A slot's counter is masked to this many bits when summed: far above any
 * GPU's memory, low enough that 256 of them cannot wrap the sum. */
#define GS_USED_BITS 50

#define GS_DEFAULT_LIMITS_PATH "/run/gpuslice/limits"
#define GS_DEFAULT_REGION_SOCKET "/run/gpuslice/region.sock"
#define GS_ENV_LIMITS "GPUSLICE_LIMITS"
#define GS_ENV_REGION "GPUSLICE_REGION" /* the region socket's path */
#define GS_ENV_DEBUG "GPUSLICE_DEBUG"

/* The region is not a file anyone can name: it is a sealed memfd
 * (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) that the container's monitor
 * hands to each process over the region socket (SCM_RIGHTS, one descriptor
 * per connection). Sealed, it can neither shrink under a mapping (SIGBUS)
 * nor grow; unnamed, it is no other tenant's and dies with its last user. */
#define GS_REGION_SEALS_REQUIRED 6 /* F_SEAL_SHRINK | F_SEAL_GROW */

/* A device the container uses, identified by the physical GPU's UUID so that
 * processes with different CUDA_VISIBLE_DEVICES agree. Claimed word by word
 * with compare-and-swap from zero (a half-claimed entry is finished by the next
 * process with the same UUID). */
struct gs_region_device {
  uint64_t uuid_lo; /* bytes 0..7 of the UUID, 0 = free */
  uint64_t uuid_hi; /* bytes 8..15 */
  /* compute share bookkeeping, container-wide (docs/compute-shares.md) */
  int64_t tokens_ns;   /* GPU time this container may still use */
  uint64_t refill_ns;  /* CLOCK_MONOTONIC of the last refill */
  uint64_t busy_until; /* burst: busy on this GPU until (CLOCK_MONOTONIC ns); read by the monitor */
  uint64_t reserved[3];
};

struct gs_region_slot {
  uint32_t pid;  /* informational only (pid namespace of the container) */
  uint32_t gen;  /* bumped at each claim */
};

struct gs_region {
  uint64_t magic;
  uint32_t version;
  uint32_t header_size; /* sizeof(struct gs_region) */
  uint64_t size;        /* total size */
  uint32_t ndevices;    /* GS_MAX_DEVICES */
  uint32_t nslots;      /* GS_MAX_SLOTS */
  uint64_t reserved[12];
  struct gs_region_device devices[GS_MAX_DEVICES];
  struct gs_region_slot slots[GS_MAX_SLOTS];
  /* bytes charged, per device entry and slot; a device's usage is the sum of
   * its whole row, whatever any header field says */
  uint64_t used[GS_MAX_DEVICES][GS_MAX_SLOTS];
};

#define GS_REGION_SIZE ((uint64_t)sizeof(struct gs_region))

/* What names a container in the activity table: its region's inode, the same
 * for the monitor (which created the memfd) and for the processes. */
#define GS_CONTAINER_ID(dev, ino) ((((uint64_t)(dev)) << 40) ^ (uint64_t)(ino))

/* Limits file (read-only to the container; docs/region.md):
 *   gpuslice-limits 1
 *   device <*|ordinal|GPU-uuid> memory <bytes> compute <0-100> policy <native|fixed|burst>
 *   activity <path>
 * Lines in any order; fields after the key optional; later lines override
 * earlier ones for the same key; "*" applies to devices without their own line.
 */
#define GS_LIMITS_HEADER "gpuslice-limits 1"
#define GS_LIMITS_MAX_SIZE 65536
#define GS_LIMITS_MAX_ENTRIES 32

/* Activity table (node-wide, for the burst policy): GS_ACTIVITY_ENTRIES
 * entries saying until when a container is busy on a GPU. Written only by
 * the host (each container's monitor copies its container's busy_until from
 * the region into its own entries), read-only in containers, read there with
 * pread: never mapped, so nothing a writer does can fault a reader. An entry
 * belongs to the monitor holding an OFD write lock on byte
 * GS_ACTIVITY_LOCK_BASE + i of the table. */
#define GS_ACTIVITY_ENTRIES 256u
#define GS_ACTIVITY_LOCK_BASE 0x40000000LL
struct gs_activity_entry {
  uint64_t owner;      /* container id (device and inode of its region), 0 = free */
  uint64_t uuid_lo;    /* GPU, as in struct gs_region_device */
  uint64_t uuid_hi;
  uint64_t busy_until; /* CLOCK_MONOTONIC ns */
};
#define GS_ACTIVITY_SIZE ((uint64_t)GS_ACTIVITY_ENTRIES * sizeof(struct gs_activity_entry))

#endif
