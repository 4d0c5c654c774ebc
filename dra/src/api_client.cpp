#include "gpuslice/dra/api_client.hpp"

#include "gpuslice/cdi/yaml_json.hpp"
#include "gpuslice/common/error.hpp"
#include "gpuslice/common/fs.hpp"
#include "gpuslice/common/json_text.hpp"
#include "gpuslice/common/strings.hpp"

#include <curl/curl.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace gpuslice::dra {

namespace {

using nlohmann::json;

constexpr long kConnectTimeoutMs = 5000;
constexpr long kRequestTimeoutMs = 15000;
constexpr int kAttempts = 3;
constexpr std::size_t kMaxAnswer = 16 << 20;

std::string base64_decode(const std::string &text, const std::string &what) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ')
      continue;
    const auto at = alphabet.find(c);
    if (at == std::string::npos)
      throw Error(what + " is not base64");
    buffer = (buffer << 6) | static_cast<unsigned>(at);
    if ((bits += 6) >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return out;
}

// The entry of `list` (kubeconfig's clusters, users, contexts) named `name`.
const json &named(const json &doc, const char *list, const std::string &name) {
  if (doc.contains(list) && doc[list].is_array())
    for (const auto &entry : doc[list])
      if (entry.is_object() && entry.value("name", json()).is_string() && entry["name"] == name)
        return entry;
  throw Error(std::string("no entry ") + quote(name) + " in " + list);
}

std::string text_of(const json &obj, const char *key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A path the kubeconfig names: relative ones are to the kubeconfig's dir.
std::string beside(const std::string &base_dir, const std::string &file) {
  return fs::is_absolute(file) ? file : base_dir + "/" + file;
}

// The file `key` names, or the inline `key-data` written to secrets_dir/name.
std::string file_or_data(const json &obj, const std::string &key, const std::string &secrets_dir,
                         const std::string &name, const std::string &base_dir) {
  if (std::string file = text_of(obj, key.c_str()); !file.empty())
    return beside(base_dir, file);
  const std::string data = text_of(obj, (key + "-data").c_str());
  if (data.empty())
    return {};
  fs::make_dir(secrets_dir, 0750);
  const std::string path = secrets_dir + "/" + name;
  fs::write_file_atomic(path, base64_decode(data, key + "-data"), 0600, fs::Durability::atomic);
  return path;
}

size_t collect(char *data, size_t size, size_t count, void *out) {
  auto *answer = static_cast<std::string *>(out);
  if (answer->size() + size * count > kMaxAnswer)
    return 0; // curl fails the transfer
  answer->append(data, size * count);
  return size * count;
}

// The API's own message in a Status answer, else the text's start.
std::string message_of(const std::string &answer) {
  try {
    const json status = parse_json<json>(answer);
    if (status.is_object() && status.contains("message") && status["message"].is_string())
      return status["message"].get<std::string>();
  } catch (const Error &) {
  }
  return answer.substr(0, 200);
}

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

} // namespace

ApiServer from_kubeconfig(const std::string &path, const std::string &secrets_dir) {
  return with_context("kubeconfig " + quote(path), [&] {
    const json doc = cdi::yaml_to_json(fs::read_file(path));
    if (!doc.is_object())
      throw Error("not a kubeconfig");
    const std::string current = text_of(doc, "current-context");
    if (current.empty())
      throw Error("no current-context");
    const json &context = named(doc, "contexts", current).value("context", json::object());
    const json &cluster = named(doc, "clusters", text_of(context, "cluster")).value("cluster", json::object());
    const json &user = named(doc, "users", text_of(context, "user")).value("user", json::object());
    const std::string base = fs::dirname(fs::absolute(path));
    ApiServer s;
    s.server = text_of(cluster, "server");
    if (s.server.rfind("https://", 0) != 0)
      throw Error("cluster server " + quote(s.server) + " is not https://");
    if (text_of(cluster, "insecure-skip-tls-verify") == "true")
      throw Error("insecure-skip-tls-verify: gpuslice-kubelet-plugin verifies the API server, give its CA");
    s.ca_file = file_or_data(cluster, "certificate-authority", secrets_dir, "ca.crt", base);
    s.token = text_of(user, "token");
    if (const std::string token_file = text_of(user, "tokenFile"); s.token.empty() && !token_file.empty())
      s.token_file = beside(base, token_file);
    s.client_cert = file_or_data(user, "client-certificate", secrets_dir, "client.crt", base);
    s.client_key = file_or_data(user, "client-key", secrets_dir, "client.key", base);
    if (s.token.empty() && s.token_file.empty() && (s.client_cert.empty() || s.client_key.empty()))
      throw Error("user " + quote(text_of(context, "user")) + " has neither a token nor a client certificate and key");
    return s;
  });
}

ApiServer in_cluster(const std::string &account_dir) {
  const char *host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char *port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port)
    throw Error("not in a cluster (no KUBERNETES_SERVICE_HOST/PORT): give --kubeconfig");
  ApiServer s;
  const std::string h = host;
  s.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  s.ca_file = account_dir + "/ca.crt";
  s.token_file = account_dir + "/token";
  return s;
}

ApiClient::ApiClient(ApiServer server)
    : server_(std::move(server)), handle_(nullptr, [](void *c) { curl_easy_cleanup(static_cast<CURL *>(c)); }) {
  static CurlGlobal global;
  handle_.reset(curl_easy_init());
  if (!handle_)
    throw Error("cannot start an HTTPS client (libcurl)");
}

ApiClient::~ApiClient() = default;

json ApiClient::get(const std::string &path) const { return send("GET", path); }

std::string ApiClient::token() const {
  if (server_.token_file.empty())
    return server_.token;
  return with_context("the token file " + quote(server_.token_file),
                      [&] { return std::string(trim_space(fs::read_file(server_.token_file, 64 << 10))); });
}

json ApiClient::send(const std::string &method, const std::string &path, const json *body) const {
  const std::string url = server_.server + path, what = method + " " + url;
  const std::string bearer = token();
  const std::string text = body ? body->dump() : std::string();
  std::string failure;
  std::lock_guard lock(mutex_);
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    if (attempt > 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(200 * (attempt - 1)));
    CURL *c = static_cast<CURL *>(handle_.get());
    curl_easy_reset(c); // the options below, none left from the last request; the connection stays
    std::string answer;
    char error[CURL_ERROR_SIZE] = "";
    curl_slist *headers = curl_slist_append(nullptr, "Accept: application/json");
    if (body)
      headers = curl_slist_append(headers, "Content-Type: application/json");
    if (!bearer.empty())
      headers = curl_slist_append(headers, ("Authorization: Bearer " + bearer).c_str());
    std::unique_ptr<curl_slist, void (*)(curl_slist *)> header_list(headers, curl_slist_free_all);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (body) {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, text.c_str());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(text.size()));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!server_.ca_file.empty())
      curl_easy_setopt(c, CURLOPT_CAINFO, server_.ca_file.c_str());
    if (!server_.client_cert.empty()) {
      curl_easy_setopt(c, CURLOPT_SSLCERT, server_.client_cert.c_str());
      curl_easy_setopt(c, CURLOPT_SSLKEY, server_.client_key.c_str());
    }
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, kRequestTimeoutMs);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
    const CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
      failure = what + ": " + (*error ? error : curl_easy_strerror(rc));
      continue;
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
      return with_context(what, [&] { return parse_json<json>(answer); });
    if (status >= 500 || status == 429) {
      failure = what + ": HTTP " + std::to_string(status) + ": " + message_of(answer);
      continue;
    }
    throw ApiError(status, what + ": HTTP " + std::to_string(status) + ": " + message_of(answer));
  }
  throw Error(failure + " (tried " + std::to_string(kAttempts) + " times)");
}

} // namespace gpuslice::dra
