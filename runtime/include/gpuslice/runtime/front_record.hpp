// The record gpuslice-runtime's front relies on (front/front.h): what
// this build made of one config file's exact bytes, for the questions the
// front asks before the C library starts. Written by the full program, the
// config's only parser, whenever the record on disk is not that.
#pragma once

#include "gpuslice/common/config.hpp"

#include <optional>
#include <string>

namespace gpuslice::runtime {

// The record's bytes (front.h's format): `config` as parsed from
// `config_text` (nullopt: no file) at `config_path`, by build `build_id`.
// nullopt when the front could not use one: no build id, a relative path,
// a value holding a newline, a config larger than the front reads, more
// runtimes or create triggers than it holds.
std::optional<std::string> front_record(const std::string &build_id, const std::string &config_path,
                                        const std::optional<std::string> &config_text, const Config &config);

// Records kept in the records' dir: one per config path, and a node uses
// one (tests and benches make hundreds). A save that writes one removes the
// oldest past this many.
inline constexpr std::size_t kMaxFrontRecords = 64;

// Writes this build's record of the config into `dir` unless the same
// bytes lie there already. Root only; best effort and silent: a record
// not written only leaves the next calls to the full program.
void save_front_record(const std::string &config_path, const std::optional<std::string> &config_text,
                       const Config &config, const std::string &dir);

} // namespace gpuslice::runtime
