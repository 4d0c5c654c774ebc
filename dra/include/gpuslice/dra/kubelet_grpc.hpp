// gpuslice-kubelet-plugin on the wire: kubelet's plugin registration
// service on <registrar-dir>/<driver>-reg.sock (GetInfo says: a DRA plugin,
// this driver, its endpoint, the DRA versions served), and the DRA service,
// v1 and v1beta1 alike, on <plugin-dir>/dra.sock, both gRPC over unix
// sockets (proto/ holds the wire-compatible definitions).
#pragma once

#include "gpuslice/dra/plugin.hpp"

#include <functional>
#include <memory>
#include <string>

namespace gpuslice::dra {

struct Sockets {
  std::string registration; // <registrar-dir>/<driver>-reg.sock
  std::string dra;          // <plugin-dir>/dra.sock
};

Sockets sockets_of(const std::string &registrar_dir, const std::string &plugin_dir, const std::string &driver_name);

// Serves both until `wait` returns (a stop signal), then stops them and
// removes the sockets. A socket file left by an earlier run is replaced.
// Throws Error when a socket cannot be served.
void serve(Plugin &plugin, const Sockets &sockets, const std::function<void()> &wait);

} // namespace gpuslice::dra
