// A client of the Kubernetes API server for gpuslice-kubelet-plugin: JSON
// over HTTPS (libcurl), the server verified with the cluster's CA, the
// plugin authenticated by a bearer token or a client certificate. Where it
// comes from: a kubeconfig (--kubeconfig), or the pod's service account
// (in-cluster). Bounded: each request times out, and a failed connection or
// a 5xx/429 answer is tried again a few times. The token is never logged
// nor put in an error.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace gpuslice::dra {

struct ApiServer {
  std::string server;      // "https://host:port"
  std::string ca_file;     // PEM; empty: the system's CAs
  std::string token;       // a bearer token, or empty
  std::string token_file;  // or a file holding it, read for each request:
                           // kubelet rotates a service account's token
  std::string client_cert; // PEM files, or empty
  std::string client_key;
};

// The kubeconfig's current context. Certificates and keys given inline
// (*-data) are written as files (0600) under `secrets_dir`, made when
// missing. Throws Error
// naming the file and the field.
ApiServer from_kubeconfig(const std::string &path, const std::string &secrets_dir);

// The pod's service account: KUBERNETES_SERVICE_HOST/PORT, and the token
// and CA under `account_dir` (default /var/run/secrets/kubernetes.io/serviceaccount).
ApiServer in_cluster(const std::string &account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// An HTTP answer other than 2xx: its status and the API's message.
struct ApiError : std::runtime_error {
  ApiError(long status, const std::string &what) : std::runtime_error(what), status(status) {}
  long status;
};

class ApiClient {
public:
  explicit ApiClient(ApiServer server);
  ~ApiClient();
  ApiClient(const ApiClient &) = delete;
  ApiClient &operator=(const ApiClient &) = delete;

  // GET of an API path ("/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/name").
  // Throws ApiError for an answer that is no success, Error when there is none.
  nlohmann::json get(const std::string &path) const;
  // POST, PUT or DELETE, with a JSON body (none for DELETE).
  nlohmann::json send(const std::string &method, const std::string &path, const nlohmann::json *body = nullptr) const;

private:
  std::string token() const;

  ApiServer server_;
  // One handle for every request: libcurl keeps its connection (and TLS
  // session) open between them, as a Kubernetes client does.
  mutable std::mutex mutex_;
  std::unique_ptr<void, void (*)(void *)> handle_;
};

} // namespace gpuslice::dra
