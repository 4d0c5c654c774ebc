// gpuslice-kubelet-plugin's command line and its life: flags, the node's
// GPUs, the API server, then serving kubelet until SIGTERM.
#pragma once

namespace gpuslice::dra {

// The program's exit status.
int run_kubelet_plugin(int argc, char **argv);

} // namespace gpuslice::dra
