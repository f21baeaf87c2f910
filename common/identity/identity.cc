// Copyright 2026 The kbisect Authors.
#include "common/identity/identity.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/identity/clock_events.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
      }
    }
  }
  return "";
}

std::string OsName() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "PRETTY_NAME=")) {
      std::string value = line.substr(12);
      return std::string(absl::StripSuffix(absl::StripPrefix(value, "\""), "\""));
    }
  }
  return "";
}

bool IsUnavailable(absl::string_view field) {
  return field.empty() || absl::StartsWith(field, "[") || field == "N/A";
}

std::string RunQuiet(CommandRunner* runner, std::vector<std::string> argv) {
  ExecRequest request;
  request.argv = std::move(argv);
  request.timeout = absl::Seconds(10);
  absl::StatusOr<ExecResult> result = runner->Run(request);
  if (!result.ok() || !result->ok()) return "";
  return result->output;
}

using Json = nlohmann::json;

// Parses the JSON document in `text`, skipping anything before the first '{' or '[' and after
// the last '}' or ']' (the AMD tools may print warnings around it). Returns a discarded value
// for text that is not JSON.
Json ParseJsonDocument(std::string_view text_in) {
  const absl::string_view text(text_in.data(), text_in.size());
  const size_t begin = text.find_first_of("[{");
  const size_t end = text.find_last_of("]}");
  if (begin == absl::string_view::npos || end == absl::string_view::npos || end < begin) {
    return Json(Json::value_t::discarded);
  }
  const absl::string_view doc = text.substr(begin, end - begin + 1);
  return Json::parse(doc.begin(), doc.end(), nullptr, /*allow_exceptions=*/false);
}

// The per-GPU objects of amd-smi output: a top-level array, or the array under "gpu_data".
std::vector<const Json*> AmdSmiGpuObjects(const Json& doc) {
  const Json* list = &doc;
  if (doc.is_object()) {
    auto it = doc.find("gpu_data");
    if (it == doc.end()) return {&doc};
    list = &*it;
  }
  std::vector<const Json*> gpus;
  if (!list->is_array()) return gpus;
  for (const Json& entry : *list) {
    if (entry.is_object()) gpus.push_back(&entry);
  }
  return gpus;
}

// Returns the member `key` of `object`, or nullptr when `object` is not an object without it.
const Json* Member(const Json* object, const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

// Returns `value` as text ("" for null, "N/A" and non-scalars).
std::string Text(const Json* value) {
  if (value == nullptr) return "";
  std::string text;
  if (value->is_string()) {
    text = std::string(absl::StripAsciiWhitespace(value->get<std::string>()));
  } else if (value->is_number_integer()) {
    text = absl::StrCat(value->get<int64_t>());
  } else if (value->is_number()) {
    text = absl::StrCat(value->get<double>());
  }
  return IsUnavailable(text) ? "" : text;
}

// Returns the number in `value`: a JSON number, a {"value": N, "unit": U} object, or text
// starting with a number ("196592 MB", "(1420Mhz)", "45.0"). nullopt when there is none.
std::optional<double> Number(const Json* value) {
  if (value == nullptr) return std::nullopt;
  if (value->is_number()) return value->get<double>();
  if (value->is_object()) return Number(Member(value, "value"));
  if (!value->is_string()) return std::nullopt;
  absl::string_view text = absl::StripAsciiWhitespace(value->get_ref<const std::string&>());
  absl::ConsumePrefix(&text, "(");
  size_t end = 0;
  while (end < text.size() &&
         (absl::ascii_isdigit(text[end]) || text[end] == '.' || (end == 0 && text[end] == '-'))) {
    ++end;
  }
  double number = 0;
  if (end == 0 || !absl::SimpleAtod(text.substr(0, end), &number)) return std::nullopt;
  return number;
}

// Returns the member of `object` whose key equals `key` ignoring case, or nullptr.
const Json* MemberIgnoringCase(const Json& object, absl::string_view key) {
  if (!object.is_object()) return nullptr;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (absl::EqualsIgnoreCase(it.key(), key)) return &it.value();
  }
  return nullptr;
}

// Parses "card3" (rocm-smi's per-GPU key) into 3.
bool RocmCardIndex(absl::string_view key, int* index) {
  return absl::ConsumePrefix(&key, "card") && absl::SimpleAtoi(key, index);
}

uint64_t Fnv1a(absl::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

std::vector<v1::GpuInfo> ParseNvidiaSmiQuery(std::string_view csv_text,
                                             std::string* driver_version) {
  const absl::string_view csv(csv_text.data(), csv_text.size());
  std::vector<v1::GpuInfo> gpus;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipWhitespace())) {
    std::vector<std::string> fields;
    for (absl::string_view field : absl::StrSplit(line, ',')) {
      fields.emplace_back(absl::StripAsciiWhitespace(field));
    }
    if (fields.size() < 11) continue;
    v1::GpuInfo gpu;
    int index = 0;
    if (absl::SimpleAtoi(fields[0], &index)) gpu.set_index(index);
    gpu.set_model(fields[1]);
    if (!IsUnavailable(fields[2])) gpu.set_uuid(fields[2]);
    if (!IsUnavailable(fields[3])) gpu.set_serial(fields[3]);
    if (!IsUnavailable(fields[4])) gpu.set_pci_bus_id(fields[4]);
    if (!IsUnavailable(fields[5]) && driver_version != nullptr) *driver_version = fields[5];
    if (!IsUnavailable(fields[6])) gpu.set_vbios_version(fields[6]);
    int64_t memory = 0;
    if (absl::SimpleAtoi(fields[7], &memory)) gpu.set_memory_total_mib(memory);
    double power = 0;
    if (absl::SimpleAtod(fields[8], &power)) gpu.set_power_limit_watts(power);
    int clock = 0;
    if (absl::SimpleAtoi(fields[9], &clock)) gpu.set_max_sm_clock_mhz(clock);
    if (absl::SimpleAtoi(fields[10], &clock)) gpu.set_max_memory_clock_mhz(clock);
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

namespace {

// A setting as nvidia-smi printed it, or "" for "[N/A]", "[Not Supported]" and the like.
std::string Setting(absl::string_view field) {
  field = absl::StripAsciiWhitespace(field);
  return IsUnavailable(field) || absl::StartsWith(field, "[") ? "" : std::string(field);
}

// The settings of `gpu` a person reads in a class label: "ECC on, MIG, power limit 500 W
// (default 700 W), application clock 1410 MHz".
std::string GpuSettingsLabel(const v1::GpuInfo& gpu) {
  std::vector<std::string> parts;
  if (!gpu.ecc_mode().empty()) {
    parts.push_back(gpu.ecc_mode() == "Enabled" ? "ECC on" : "ECC off");
  }
  if (gpu.mig_mode() == "Enabled") parts.push_back("MIG");
  // An AMD GPU's partitions ("CPX/NPS4"; the whole GPU is not recorded).
  if (absl::StrContains(gpu.mig_mode(), "/")) {
    parts.push_back(absl::StrCat("partition ", gpu.mig_mode()));
  }
  if (gpu.default_power_limit_watts() > 0 &&
      std::lround(gpu.power_limit_watts()) != std::lround(gpu.default_power_limit_watts())) {
    parts.push_back(absl::StrFormat("power limit %.0f W (default %.0f W)", gpu.power_limit_watts(),
                                    gpu.default_power_limit_watts()));
  }
  if (gpu.default_application_sm_clock_mhz() > 0 &&
      gpu.application_sm_clock_mhz() != gpu.default_application_sm_clock_mhz()) {
    parts.push_back(absl::StrFormat("application clock %d MHz", gpu.application_sm_clock_mhz()));
  }
  if (gpu.locked_sm_clock_mhz() > 0) {
    parts.push_back(absl::StrCat("clocks locked at ", gpu.locked_sm_clock_mhz(), " MHz",
                                 gpu.locked_memory_clock_mhz() > 0
                                     ? absl::StrCat(" / ", gpu.locked_memory_clock_mhz(), " MHz")
                                     : ""));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

void ParseNvidiaGpuSettings(std::string_view csv_text, std::vector<v1::GpuInfo>* gpus) {
  const absl::string_view csv(csv_text.data(), csv_text.size());
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    int index = 0;
    if (fields.size() != 9 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[0]), &index)) {
      continue;
    }
    for (v1::GpuInfo& gpu : *gpus) {
      if (gpu.index() != index) continue;
      gpu.set_ecc_mode(Setting(fields[1]));
      gpu.set_ecc_mode_pending(Setting(fields[2]));
      gpu.set_mig_mode(Setting(fields[3]));
      gpu.set_persistence_mode(Setting(fields[4]));
      double watts = 0;
      if (absl::SimpleAtod(Setting(fields[5]), &watts)) gpu.set_power_limit_watts(watts);
      if (absl::SimpleAtod(Setting(fields[6]), &watts)) gpu.set_default_power_limit_watts(watts);
      int clock = 0;
      if (absl::SimpleAtoi(Setting(fields[7]), &clock)) gpu.set_application_sm_clock_mhz(clock);
      if (absl::SimpleAtoi(Setting(fields[8]), &clock)) {
        gpu.set_default_application_sm_clock_mhz(clock);
      }
    }
  }
}

std::string GpuSettingsKey(const v1::GpuInfo& gpu) {
  std::vector<std::string> parts;
  if (!gpu.ecc_mode().empty()) parts.push_back(absl::StrCat("ecc=", gpu.ecc_mode()));
  if (!gpu.mig_mode().empty()) parts.push_back(absl::StrCat("mig=", gpu.mig_mode()));
  if (gpu.default_power_limit_watts() > 0 &&
      std::lround(gpu.power_limit_watts()) != std::lround(gpu.default_power_limit_watts())) {
    parts.push_back(absl::StrCat("power=", std::lround(gpu.power_limit_watts())));
  }
  if (gpu.default_application_sm_clock_mhz() > 0 &&
      gpu.application_sm_clock_mhz() != gpu.default_application_sm_clock_mhz()) {
    parts.push_back(absl::StrCat("appclock=", gpu.application_sm_clock_mhz()));
  }
  if (gpu.locked_sm_clock_mhz() > 0) {
    parts.push_back(
        absl::StrCat("lock=", gpu.locked_sm_clock_mhz(), "/", gpu.locked_memory_clock_mhz()));
  }
  return absl::StrJoin(parts, ";");
}

std::vector<std::string> ParseNvidiaComputeApps(std::string_view csv_text) {
  const absl::string_view csv(csv_text.data(), csv_text.size());
  std::vector<std::string> apps;
  for (absl::string_view line : absl::StrSplit(csv, '\n', absl::SkipWhitespace())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    int pid = 0;
    if (fields.size() != 3 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[0]), &pid)) {
      continue;
    }
    const std::string memory = Setting(fields[2]);
    apps.push_back(absl::StrCat("pid ", pid, " ", absl::StripAsciiWhitespace(fields[1]),
                                memory.empty() ? "" : absl::StrCat(" (", memory, " MiB)")));
  }
  return apps;
}

std::string ParseCudaVersion(std::string_view output_text) {
  const absl::string_view output(output_text.data(), output_text.size());
  const absl::string_view key = "CUDA Version:";
  const size_t at = output.find(key);
  if (at == absl::string_view::npos) return "";
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(output.substr(at + key.size()));
  size_t end = 0;
  while (end < rest.size() && (absl::ascii_isdigit(rest[end]) || rest[end] == '.')) ++end;
  return std::string(rest.substr(0, end));
}

std::optional<v1::GpuState> ParseNvidiaGpuState(std::string_view csv_text) {
  const absl::string_view csv =
      absl::StripAsciiWhitespace(absl::string_view(csv_text.data(), csv_text.size()));
  std::vector<std::string> fields;
  for (absl::string_view field : absl::StrSplit(csv.substr(0, csv.find('\n')), ',')) {
    fields.emplace_back(absl::StripAsciiWhitespace(field));
  }
  if (fields.size() < 3) return std::nullopt;
  v1::GpuState state;
  double temperature = 0;
  if (absl::SimpleAtod(fields[0], &temperature)) state.set_temperature_c(temperature);
  int clock = 0;
  if (absl::SimpleAtoi(fields[1], &clock)) state.set_sm_clock_mhz(clock);
  uint64_t mask = 0;
  absl::string_view hex = fields[2];
  if (!absl::ConsumePrefix(&hex, "0x") || !absl::SimpleHexAtoi(hex, &mask)) return std::nullopt;
  // NVML clocks-event reasons (common/identity/clock_events.h); any software or hardware one
  // makes the sample suspect.
  for (const std::string& name : ClockEventReasonNames(mask)) state.add_throttle_reasons(name);
  if (WorstClockEvent(mask) != ClockEventSeverity::kBenign) state.set_throttled(true);
  return state;
}

// The settings of an AMD GPU that change a measurement (issue 49), from its `amd-smi static
// --json` entry: the power cap (limit.socket_power, else limit.max_power) against its maximum
// (limit.max_power), and, only where they depart from an Instinct GPU's defaults, memory ECC off
// (ras.ecc_block_state.UMC) and a partition other than the whole GPU (compute/memory partitions
// other than "SPX/NPS1", in mig_mode, AMD's counterpart of MIG). Departures only: a host read
// through rocm-smi, which tells none of these, keeps the class of the same host read through
// amd-smi.
void ReadAmdSettings(const Json* entry, v1::GpuInfo* gpu) {
  const Json* limit = Member(entry, "limit");
  const std::optional<double> max_power = Number(Member(limit, "max_power"));
  std::optional<double> cap = Number(Member(limit, "socket_power"));
  if (!cap.has_value()) cap = max_power;
  if (cap.has_value()) gpu->set_power_limit_watts(*cap);
  if (max_power.has_value()) gpu->set_default_power_limit_watts(*max_power);
  const std::string umc = Text(Member(Member(Member(entry, "ras"), "ecc_block_state"), "UMC"));
  if (absl::EqualsIgnoreCase(umc, "DISABLED")) gpu->set_ecc_mode("Disabled");
  const Json* partition = Member(entry, "partition");
  const std::string compute = Text(Member(partition, "compute_partition"));
  const std::string memory = Text(Member(partition, "memory_partition"));
  if (!compute.empty() && !memory.empty() && (compute != "SPX" || memory != "NPS1")) {
    gpu->set_mig_mode(absl::StrCat(compute, "/", memory));
  }
}

std::vector<v1::GpuInfo> ParseAmdSmiStatic(std::string_view json, std::string* driver_version) {
  const Json doc = ParseJsonDocument(json);
  std::vector<v1::GpuInfo> gpus;
  if (doc.is_discarded()) return gpus;
  bool have_driver = false;
  for (const Json* entry : AmdSmiGpuObjects(doc)) {
    const Json* asic = Member(entry, "asic");
    const Json* board = Member(entry, "board");
    if (asic == nullptr && board == nullptr) continue;
    v1::GpuInfo gpu;
    if (std::optional<double> index = Number(Member(entry, "gpu"))) {
      gpu.set_index(static_cast<int>(*index));
    } else {
      gpu.set_index(static_cast<int>(gpus.size()));
    }
    std::string model = Text(Member(asic, "market_name"));
    if (model.empty()) model = Text(Member(board, "product_name"));
    if (model.empty() && !Text(Member(asic, "device_id")).empty()) {
      model = absl::StrCat("AMD GPU ", Text(Member(asic, "device_id")));
    }
    gpu.set_model(model);
    std::string serial = Text(Member(board, "product_serial"));
    if (serial.empty()) serial = Text(Member(asic, "asic_serial"));
    gpu.set_serial(serial);
    const Json* bus = Member(entry, "bus");
    gpu.set_pci_bus_id(Text(Member(bus, "bdf")));
    const Json* vbios = Member(entry, "vbios");
    std::string vbios_version = Text(Member(vbios, "version"));
    if (vbios_version.empty()) vbios_version = Text(Member(vbios, "vbios_version"));
    gpu.set_vbios_version(vbios_version);
    if (std::optional<double> size = Number(Member(Member(entry, "vram"), "size"))) {
      gpu.set_memory_total_mib(static_cast<int64_t>(*size));
    }
    ReadAmdSettings(entry, &gpu);
    const Json* driver = Member(entry, "driver");
    std::string version = Text(Member(driver, "version"));
    if (version.empty()) version = Text(Member(driver, "driver_version"));
    if (!have_driver && !version.empty() && driver_version != nullptr) {
      *driver_version = version;
      have_driver = true;
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::optional<v1::GpuState> ParseAmdSmiMetric(std::string_view json, int gpu) {
  const Json doc = ParseJsonDocument(json);
  if (doc.is_discarded()) return std::nullopt;
  const Json* entry = nullptr;
  for (const Json* candidate : AmdSmiGpuObjects(doc)) {
    std::optional<double> index = Number(Member(candidate, "gpu"));
    if (gpu < 0 || (index.has_value() && static_cast<int>(*index) == gpu)) {
      entry = candidate;
      break;
    }
  }
  if (entry == nullptr) return std::nullopt;
  const Json* temperature = Member(entry, "temperature");
  const Json* clock = Member(entry, "clock");
  if (temperature == nullptr && clock == nullptr) return std::nullopt;
  v1::GpuState state;
  std::optional<double> celsius = Number(Member(temperature, "hotspot"));
  if (!celsius.has_value()) celsius = Number(Member(temperature, "edge"));
  if (celsius.has_value()) state.set_temperature_c(*celsius);
  if (std::optional<double> memory = Number(Member(temperature, "mem"))) {
    state.set_memory_temperature_c(*memory);
  }
  for (const char* domain : {"gfx_0", "gfx"}) {
    if (std::optional<double> mhz = Number(Member(Member(clock, domain), "clk"))) {
      state.set_sm_clock_mhz(static_cast<int>(*mhz));
      break;
    }
  }
  const Json* power = Member(entry, "power");
  for (const char* field : {"socket_power", "average_socket_power", "current_socket_power"}) {
    if (std::optional<double> watts = Number(Member(power, field))) {
      state.set_power_watts(*watts);
      break;
    }
  }
  // Violation statuses: amd-smi 6.x "throttle": {"ppt_violation_status": "ACTIVE", ...};
  // later releases "violation": {"active_ppt_pwr": "ACTIVE", ...}. All are power or thermal.
  for (const char* section : {"throttle", "violation"}) {
    const Json* statuses = Member(entry, section);
    if (statuses == nullptr || !statuses->is_object()) continue;
    for (auto it = statuses->begin(); it != statuses->end(); ++it) {
      absl::string_view name = it.key();
      if (!absl::ConsumeSuffix(&name, "_violation_status") &&
          !absl::ConsumePrefix(&name, "active_")) {
        continue;
      }
      if (!absl::EqualsIgnoreCase(Text(&it.value()), "ACTIVE")) continue;
      state.add_throttle_reasons(
          std::string(CanonicalAmdViolation(std::string_view(name.data(), name.size()))));
      state.set_throttled(true);
    }
  }
  if (absl::EqualsIgnoreCase(Text(Member(power, "throttle_status")),
                             "THROTTLED")) {
    state.add_throttle_reasons("throttle_status");
    state.set_throttled(true);
  }
  return state;
}

std::optional<v1::GpuState> ParseRocmSmiState(std::string_view json) {
  const Json doc = ParseJsonDocument(json);
  if (!doc.is_object()) return std::nullopt;
  const Json* card = nullptr;
  int best = -1;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    int index = 0;
    if (!RocmCardIndex(it.key(), &index) || !it.value().is_object()) continue;
    if (card == nullptr || index < best) {
      card = &it.value();
      best = index;
    }
  }
  if (card == nullptr) return std::nullopt;
  v1::GpuState state;
  std::optional<double> celsius =
      Number(MemberIgnoringCase(*card, "Temperature (Sensor junction) (C)"));
  if (!celsius.has_value()) {
    celsius = Number(MemberIgnoringCase(*card, "Temperature (Sensor edge) (C)"));
  }
  if (celsius.has_value()) state.set_temperature_c(*celsius);
  if (std::optional<double> mhz = Number(MemberIgnoringCase(*card, "sclk clock speed:"))) {
    state.set_sm_clock_mhz(static_cast<int>(*mhz));
  }
  if (!celsius.has_value() && !state.sm_clock_mhz()) return std::nullopt;
  for (auto it = card->begin(); it != card->end(); ++it) {
    const std::string key = absl::AsciiStrToLower(it.key());
    if (!absl::StrContains(key, "throttle_status") && !absl::StrContains(key, "throttle status")) {
      continue;
    }
    const std::string value = Text(&it.value());
    std::optional<double> mask = Number(&it.value());
    if (absl::EqualsIgnoreCase(value, "THROTTLED") || (mask.has_value() && *mask != 0)) {
      state.add_throttle_reasons("throttle_status");
      state.set_throttled(true);
      break;
    }
  }
  return state;
}

std::vector<v1::GpuInfo> ParseRocmSmiIdentity(std::string_view json, std::string* driver_version) {
  const Json doc = ParseJsonDocument(json);
  std::vector<std::pair<int, v1::GpuInfo>> cards;
  if (!doc.is_object()) return {};
  std::string driver;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const Json& object = it.value();
    if (!object.is_object()) continue;
    if (driver.empty()) driver = Text(MemberIgnoringCase(object, "Driver version"));
    int index = 0;
    if (!RocmCardIndex(it.key(), &index)) continue;
    v1::GpuInfo gpu;
    gpu.set_index(index);
    std::string model = Text(MemberIgnoringCase(object, "Card Series"));
    if (model.empty()) model = Text(MemberIgnoringCase(object, "Card Model"));
    gpu.set_model(model);
    gpu.set_serial(Text(MemberIgnoringCase(object, "Serial Number")));
    gpu.set_pci_bus_id(Text(MemberIgnoringCase(object, "PCI Bus")));
    gpu.set_vbios_version(Text(MemberIgnoringCase(object, "VBIOS version")));
    cards.emplace_back(index, std::move(gpu));
  }
  std::sort(cards.begin(), cards.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<v1::GpuInfo> gpus;
  for (auto& card : cards) gpus.push_back(std::move(card.second));
  if (!gpus.empty() && !driver.empty() && driver_version != nullptr) *driver_version = driver;
  return gpus;
}

std::string ParseRocmVersion(std::string_view content_in) {
  const absl::string_view content(content_in.data(), content_in.size());
  absl::string_view line = absl::StripAsciiWhitespace(content.substr(0, content.find('\n')));
  line = line.substr(0, line.find('-'));
  if (line.empty() || !absl::ascii_isdigit(line.front())) return "";
  for (char c : line) {
    if (!absl::ascii_isdigit(c) && c != '.') return "";
  }
  return std::string(line);
}

std::vector<std::string> ProbeComputeApps(CommandRunner* runner, const std::string& device) {
  return ParseNvidiaComputeApps(
      RunQuiet(runner, {"nvidia-smi", "--query-compute-apps=pid,process_name,used_memory",
                        "--format=csv,noheader,nounits", absl::StrCat("--id=", device)}));
}

std::optional<v1::GpuState> ProbeGpuState(CommandRunner* runner, const std::string& slot) {
  for (const char* reasons : {"clocks_event_reasons.active", "clocks_throttle_reasons.active"}) {
    std::vector<std::string> query = {
        "nvidia-smi", absl::StrCat("--query-gpu=temperature.gpu,clocks.sm,", reasons),
        "--format=csv,noheader,nounits"};
    if (!slot.empty()) query.push_back(absl::StrCat("--id=", slot));
    const std::string output = RunQuiet(runner, query);
    if (output.empty()) continue;
    if (std::optional<v1::GpuState> state = ParseNvidiaGpuState(output)) return state;
  }
  std::vector<std::string> amd_smi = {"amd-smi", "metric", "--json"};
  if (!slot.empty()) amd_smi.insert(amd_smi.end(), {"-g", slot});
  if (std::optional<v1::GpuState> state = ParseAmdSmiMetric(RunQuiet(runner, amd_smi))) {
    return state;
  }
  std::vector<std::string> rocm_smi = {"rocm-smi", "--showtemp", "--showclocks", "--showpower",
                                       "--json"};
  if (!slot.empty()) rocm_smi.insert(rocm_smi.end(), {"-d", slot});
  return ParseRocmSmiState(RunQuiet(runner, rocm_smi));
}

int CountLocalGpus(CommandRunner* runner) {
  const std::string nvidia = RunQuiet(runner, {"nvidia-smi", "-L"});
  int count = 0;
  for (absl::string_view line : absl::StrSplit(nvidia, '\n', absl::SkipWhitespace())) {
    if (absl::StartsWith(line, "GPU ")) ++count;
  }
  if (count > 0) return count;
  const Json list = ParseJsonDocument(RunQuiet(runner, {"amd-smi", "list", "--json"}));
  if (!list.is_discarded()) {
    for (const Json* entry : AmdSmiGpuObjects(list)) {
      if (Member(entry, "gpu") != nullptr) ++count;
    }
  }
  if (count > 0) return count;
  const std::string rocm = RunQuiet(runner, {"rocm-smi", "--showid"});
  for (absl::string_view line : absl::StrSplit(rocm, '\n', absl::SkipWhitespace())) {
    if (absl::StartsWith(line, "GPU[") && absl::StrContains(line, "Device ID")) ++count;
  }
  return count;
}

const std::vector<std::string>& AllHardwareClassKeys() {
  static const auto* const kKeys =
      new std::vector<std::string>{"gpu_model", "gpu_count", "driver", "toolkit", "gpu_settings",
                                   "vbios",     "cpu_model", "kernel", "host"};
  return *kKeys;
}

const std::vector<std::string>& DefaultHardwareClassKeys() {
  static const auto* const kKeys =
      new std::vector<std::string>{"gpu_model", "gpu_count", "driver", "toolkit", "gpu_settings"};
  return *kKeys;
}

absl::StatusOr<std::vector<std::string>> ParseHardwareClassKeys(std::string_view spec_in) {
  const absl::string_view spec(spec_in.data(), spec_in.size());
  std::vector<std::string> keys;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    const std::string key(absl::StripAsciiWhitespace(part));
    if (key.empty()) continue;
    const std::vector<std::string>& known = AllHardwareClassKeys();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown hardware-class key '", key, "' in '", spec,
                       "'; known keys: ", absl::StrJoin(known, ", ")));
    }
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  if (keys.empty()) return DefaultHardwareClassKeys();
  return keys;
}

void AssignHardwareClass(v1::RunnerIdentity* identity) {
  AssignHardwareClass(identity, DefaultHardwareClassKeys());
}

void AssignHardwareClass(v1::RunnerIdentity* identity, const std::vector<std::string>& keys_in) {
  const std::vector<std::string>& wanted = keys_in.empty() ? DefaultHardwareClassKeys() : keys_in;
  auto has = [&wanted](absl::string_view key) {
    return std::find(wanted.begin(), wanted.end(), key) != wanted.end();
  };
  const bool gpus = identity->gpus_size() > 0;
  // Fingerprint parts and label parts, in the canonical key order (the default keys produce
  // "gpu=...;count=...;driver=...;toolkit=..." as the class has always been computed).
  std::vector<std::string> keys;
  std::vector<std::string> label;
  if (gpus) {
    const std::string& model = identity->gpus(0).model();
    if (has("gpu_model")) keys.push_back(absl::StrCat("gpu=", model));
    if (has("gpu_count")) keys.push_back(absl::StrCat("count=", identity->gpu_count()));
    if (has("gpu_model") && has("gpu_count")) {
      label.push_back(absl::StrCat(model, " x", identity->gpu_count()));
    } else if (has("gpu_model")) {
      label.push_back(model);
    } else if (has("gpu_count")) {
      label.push_back(absl::StrCat(identity->gpu_count(), " GPUs"));
    }
    if (has("driver")) {
      keys.push_back(absl::StrCat("driver=", identity->driver_version()));
      label.push_back(absl::StrCat("driver ", identity->driver_version()));
    }
    if (has("toolkit")) {
      std::string toolkit;
      if (!identity->cuda_version().empty()) {
        toolkit = absl::StrCat("CUDA ", identity->cuda_version());
      } else if (!identity->rocm_version().empty()) {
        toolkit = absl::StrCat("ROCm ", identity->rocm_version());
      } else {
        toolkit = identity->gpu_vendor() == v1::GPU_VENDOR_NVIDIA ? "CUDA unknown" : "ROCm unknown";
      }
      keys.push_back(absl::StrCat("toolkit=", toolkit));
      label.push_back(toolkit);
    }
    if (has("gpu_settings")) {
      std::set<std::string> settings;
      for (const v1::GpuInfo& gpu : identity->gpus()) settings.insert(GpuSettingsKey(gpu));
      settings.erase("");
      if (!settings.empty()) {
        const std::string joined = absl::StrJoin(settings, "+");
        keys.push_back(absl::StrCat("settings=", joined));
        const std::string words = GpuSettingsLabel(identity->gpus(0));
        if (!words.empty()) label.push_back(words);
      }
    }
    if (has("vbios")) {
      std::set<std::string> versions;
      for (const v1::GpuInfo& gpu : identity->gpus()) versions.insert(gpu.vbios_version());
      const std::string vbios = absl::StrJoin(versions, "+");
      keys.push_back(absl::StrCat("vbios=", vbios));
      label.push_back(absl::StrCat("VBIOS ", vbios));
    }
  }
  if (!gpus || has("cpu_model")) {
    keys.push_back(absl::StrCat("cpu=", identity->cpu_model(), ";cores=", identity->cpu_cores()));
    label.push_back(absl::StrCat(gpus ? "CPU " : "CPU only: ", identity->cpu_model(), " (",
                                 identity->cpu_cores(), " cores)"));
  }
  if (has("kernel")) {
    keys.push_back(absl::StrCat("kernel=", identity->kernel()));
    label.push_back(absl::StrCat("kernel ", identity->kernel()));
  }
  if (has("host")) {
    keys.push_back(absl::StrCat("host=", identity->host()));
    label.push_back(absl::StrCat("host ", identity->host()));
  }
  identity->set_hardware_class(absl::StrFormat("hc-%016x", Fnv1a(absl::StrJoin(keys, ";"))));
  identity->set_hardware_class_label(absl::StrJoin(label, ", "));
}

v1::RunnerIdentity ProbeRunnerIdentity(CommandRunner* runner, const std::string& slot) {
  v1::RunnerIdentity identity;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) identity.set_host(host);
  struct utsname uts;
  if (uname(&uts) == 0) identity.set_kernel(uts.release);
  identity.set_os(OsName());
  identity.set_cpu_model(CpuModel());
  identity.set_cpu_cores(static_cast<int>(std::thread::hardware_concurrency()));
  identity.set_cpu_governor(ReadFirstLine("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"));
  identity.set_worker_version(kWorkerVersion);
  if (const char* image = std::getenv("KBISECT_CONTAINER_IMAGE")) {
    identity.set_container_image(image);
  }
  identity.set_slot(slot);

  std::vector<std::string> query = {
      "nvidia-smi",
      "--query-gpu=index,name,uuid,serial,pci.bus_id,driver_version,vbios_version,memory.total,"
      "power.limit,clocks.max.sm,clocks.max.mem",
      "--format=csv,noheader,nounits"};
  if (!slot.empty()) query.push_back(absl::StrCat("--id=", slot));
  const std::string csv = RunQuiet(runner, query);
  std::string driver;
  std::vector<v1::GpuInfo> gpus = ParseNvidiaSmiQuery(csv, &driver);
  if (!gpus.empty()) {
    identity.set_gpu_vendor(v1::GPU_VENDOR_NVIDIA);
    identity.set_driver_version(driver);
    identity.set_cuda_version(ParseCudaVersion(RunQuiet(runner, {"nvidia-smi"})));
    std::vector<std::string> settings = {"nvidia-smi",
                                         absl::StrCat("--query-gpu=", kNvidiaSettingsFields),
                                         "--format=csv,noheader,nounits"};
    if (!slot.empty()) settings.push_back(absl::StrCat("--id=", slot));
    ParseNvidiaGpuSettings(RunQuiet(runner, settings), &gpus);
    for (v1::GpuInfo& gpu : gpus) *identity.add_gpus() = std::move(gpu);
    identity.set_gpu_count(identity.gpus_size());
  } else {
    std::vector<std::string> amd_smi = {"amd-smi", "static", "--json"};
    if (!slot.empty()) amd_smi.insert(amd_smi.end(), {"-g", slot});
    gpus = ParseAmdSmiStatic(RunQuiet(runner, amd_smi), &driver);
    if (gpus.empty()) {
      std::vector<std::string> rocm_smi = {"rocm-smi",  "--showproductname", "--showserial",
                                           "--showbus", "--showvbios",       "--showdriverversion",
                                           "--json"};
      if (!slot.empty()) rocm_smi.insert(rocm_smi.end(), {"-d", slot});
      gpus = ParseRocmSmiIdentity(RunQuiet(runner, rocm_smi), &driver);
    }
    if (!gpus.empty()) {
      identity.set_gpu_vendor(v1::GPU_VENDOR_AMD);
      identity.set_driver_version(driver);
      const char* rocm_path = std::getenv("ROCM_PATH");
      std::ifstream version_file(absl::StrCat(
          rocm_path != nullptr && *rocm_path != '\0' ? rocm_path : "/opt/rocm", "/.info/version"));
      std::stringstream content;
      content << version_file.rdbuf();
      identity.set_rocm_version(ParseRocmVersion(content.str()));
      for (v1::GpuInfo& gpu : gpus) *identity.add_gpus() = std::move(gpu);
      identity.set_gpu_count(identity.gpus_size());
    } else {
      identity.set_gpu_vendor(v1::GPU_VENDOR_NONE);
    }
  }
  AssignHardwareClass(&identity);
  return identity;
}

}  // namespace kbisect
