// The memory floor of gpuslice-kubelet-plugin's libraries: a program that
// links what the plugin links (gRPC, protobuf, libcurl with OpenSSL), serves
// kubelet's registration service (unimplemented: a server needs a service)
// on a unix socket as the plugin does, and makes one HTTPS request to the
// API server, and nothing else. bench_prepare.py prints the plugin's RSS
// beside this one's: what the plugin's own code adds.
//   rss_floor SOCKET URL CA_FILE TOKEN  (prints "ready", waits for stdin's end)
#include "registration.grpc.pb.h"

#include <grpcpp/grpcpp.h>
#include <curl/curl.h>

#include <malloc.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace {
size_t discard(char *, size_t size, size_t n, void *) { return size * n; }
} // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::cerr << "usage: rss_floor SOCKET URL CA_FILE TOKEN\n";
    return 2;
  }
  mallopt(M_ARENA_MAX, 1); // as the plugin does
  pluginregistration::Registration::Service registration;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(std::string("unix://") + argv[1], grpc::InsecureServerCredentials());
  builder.RegisterService(&registration);
  auto server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "rss_floor: cannot serve on " << argv[1] << "\n";
    return 1;
  }
  CURL *curl = curl_easy_init();
  const std::string auth = std::string("Authorization: Bearer ") + argv[4];
  curl_slist *headers = curl_slist_append(nullptr, auth.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, argv[2]);
  curl_easy_setopt(curl, CURLOPT_CAINFO, argv[3]);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    std::cerr << "rss_floor: " << curl_easy_strerror(rc) << "\n";
    return 1;
  }
  std::cout << "ready" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  server->Shutdown();
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return 0;
}
