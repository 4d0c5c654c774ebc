/* $PATH where the environment has none: where gpuslice looks for runc and
 * what it gives the hooks it adds. C, for gpuslice-runtime's front too. */
#ifndef GPUSLICE_COMMON_DEFAULT_PATH_H
#define GPUSLICE_COMMON_DEFAULT_PATH_H

#define GS_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#endif
