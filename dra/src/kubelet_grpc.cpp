#include "gpuslice/dra/kubelet_grpc.hpp"

#include "gpuslice/common/error.hpp"
#include "gpuslice/common/log.hpp"

#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"
#include "registration.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace gpuslice::dra {

namespace {

// Each API version's types, by the names of its package.
#define GPUSLICE_DRA_API(Name, package)                                                                                \
  struct Name {                                                                                                        \
    using DRAPlugin = package::DRAPlugin;                                                                              \
    using NodePrepareResourcesRequest = package::NodePrepareResourcesRequest;                                          \
    using NodePrepareResourcesResponse = package::NodePrepareResourcesResponse;                                        \
    using NodeUnprepareResourcesRequest = package::NodeUnprepareResourcesRequest;                                      \
    using NodeUnprepareResourcesResponse = package::NodeUnprepareResourcesResponse;                                    \
  };
GPUSLICE_DRA_API(V1, k8s::io::kubelet::pkg::apis::dra::v1)
GPUSLICE_DRA_API(V1beta1, k8s::io::kubelet::pkg::apis::dra::v1beta1)
#undef GPUSLICE_DRA_API

// One DRA service per API version: the messages are the same, field for
// field, in each version's own package.
template <class Api> class DraService final : public Api::DRAPlugin::Service {
public:
  explicit DraService(Plugin &plugin) : plugin_(plugin) {}

  grpc::Status NodePrepareResources(grpc::ServerContext *, const typename Api::NodePrepareResourcesRequest *request,
                                    typename Api::NodePrepareResourcesResponse *response) override {
    for (const auto &[uid, result] : plugin_.prepare(claims_of(*request))) {
      auto &answer = (*response->mutable_claims())[uid];
      if (!result.error.empty()) {
        answer.set_error(result.error);
        continue;
      }
      for (const auto &d : result.devices) {
        auto *device = answer.add_devices();
        device->add_request_names(d.request);
        device->set_pool_name(d.pool);
        device->set_device_name(d.device);
        for (const auto &id : d.cdi_ids)
          device->add_cdi_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status NodeUnprepareResources(grpc::ServerContext *, const typename Api::NodeUnprepareResourcesRequest *request,
                                      typename Api::NodeUnprepareResourcesResponse *response) override {
    for (const auto &[uid, error] : plugin_.unprepare(claims_of(*request)))
      (*response->mutable_claims())[uid].set_error(error);
    return grpc::Status::OK;
  }

private:
  template <class Request> static std::vector<ClaimRef> claims_of(const Request &request) {
    std::vector<ClaimRef> out;
    for (const auto &c : request.claims())
      out.push_back({c.namespace_(), c.uid(), c.name()});
    return out;
  }

  Plugin &plugin_;
};

class RegistrationService final : public pluginregistration::Registration::Service {
public:
  RegistrationService(std::string driver_name, std::string endpoint)
      : driver_name_(std::move(driver_name)), endpoint_(std::move(endpoint)) {}

  grpc::Status GetInfo(grpc::ServerContext *, const pluginregistration::InfoRequest *,
                       pluginregistration::PluginInfo *info) override {
    info->set_type("DRAPlugin");
    info->set_name(driver_name_);
    info->set_endpoint(endpoint_);
    info->add_supported_versions("v1.DRAPlugin");
    info->add_supported_versions("v1beta1.DRAPlugin");
    return grpc::Status::OK;
  }

  grpc::Status NotifyRegistrationStatus(grpc::ServerContext *, const pluginregistration::RegistrationStatus *status,
                                        pluginregistration::RegistrationStatusResponse *) override {
    if (status->plugin_registered())
      log::line("info", "registered with kubelet as " + driver_name_);
    else
      log::line("error", "kubelet refused the registration: " + status->error());
    return grpc::Status::OK;
  }

private:
  std::string driver_name_, endpoint_;
};

std::unique_ptr<grpc::Server> start(const std::string &path, const std::vector<grpc::Service *> &services) {
  constexpr std::size_t kMaxSocketPath = sizeof(sockaddr_un::sun_path) - 1;
  if (path.size() > kMaxSocketPath)
    throw Error("cannot serve on " + quote(path) + ": a unix socket's path holds at most " +
                std::to_string(kMaxSocketPath) + " bytes");
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw system_error("cannot remove the old socket " + quote(path));
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + path, grpc::InsecureServerCredentials());
  for (auto *s : services)
    builder.RegisterService(s);
  auto server = builder.BuildAndStart();
  if (!server)
    throw Error("cannot serve on " + quote(path));
  ::chmod(path.c_str(), 0600); // kubelet runs as root
  return server;
}

} // namespace

Sockets sockets_of(const std::string &registrar_dir, const std::string &plugin_dir, const std::string &driver_name) {
  return {registrar_dir + "/" + driver_name + "-reg.sock", plugin_dir + "/dra.sock"};
}

void serve(Plugin &plugin, const Sockets &sockets, const std::function<void()> &wait) {
  DraService<V1> dra_v1(plugin);
  DraService<V1beta1> dra_v1beta1(plugin);
  RegistrationService registration(plugin.options().driver_name, sockets.dra);
  auto dra = start(sockets.dra, {&dra_v1, &dra_v1beta1});
  // registered last: kubelet calls the endpoint as soon as it sees this socket
  auto reg = start(sockets.registration, {&registration});
  log::line("info", "serving " + sockets.registration + " and " + sockets.dra);
  wait();
  reg->Shutdown();
  dra->Shutdown();
  ::unlink(sockets.registration.c_str());
  ::unlink(sockets.dra.c_str());
}

} // namespace gpuslice::dra
