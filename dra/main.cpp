// gpuslice-kubelet-plugin: gpuslice's DRA driver on one node (docs/kubernetes.md).
#include "gpuslice/dra/command.hpp"

int main(int argc, char **argv) { return gpuslice::dra::run_kubelet_plugin(argc, argv); }
