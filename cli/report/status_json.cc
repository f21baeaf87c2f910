// Copyright 2026 The kbisect Authors.
#include "cli/report/status_json.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
// Keeps the keys in the order the protobuf printer wrote them (field-number order).
using Json = nlohmann::ordered_json;


// Well-known types (Timestamp, Duration, ...) have their own JSON forms; leave them alone.
bool IsWellKnown(const Descriptor& type) { return type.file()->package() == "google.protobuf"; }

bool IsDuration(const FieldDescriptor& field) {
  return !field.is_repeated() && field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
         field.message_type()->full_name() == "google.protobuf.Duration";
}

// The number of seconds of a proto3 JSON duration ("0.179s", "-1.5s"), or null.
Json DurationSeconds(const Json& value) {
  if (!value.is_string()) return nullptr;
  const std::string& string = value.get_ref<const std::string&>();
  absl::string_view text = string;
  double seconds = 0;
  if (!absl::ConsumeSuffix(&text, "s") || !absl::SimpleAtod(text, &seconds)) return nullptr;
  return seconds;
}

// Git's author date ("2026-01-02 15:04:05 +0100", as CommitRef.date holds it) as RFC 3339 with
// the author's offset ("2026-01-02T15:04:05+01:00"); "" when it is not in git's form.
std::string GitDateToRfc3339(absl::string_view date) {
  absl::Time parsed;
  std::string error;
  if (date.size() != 25 || date[10] != ' ' || date[19] != ' ' ||
      !absl::ParseTime("%Y-%m-%d %H:%M:%S %z", date, &parsed, &error)) {
    return "";
  }
  return absl::StrCat(date.substr(0, 10), "T", date.substr(11, 8), date.substr(20, 3), ":",
                      date.substr(23, 2));
}

bool IsCommitDate(const Descriptor& type, const FieldDescriptor& field) {
  return type.full_name() == "kbisect.v1.CommitRef" && field.name() == "date";
}

void ValueToJson(const FieldDescriptor& field, Json* value);

void MessageToJsonObject(const Descriptor& type, Json* object) {
  if (!object->is_object()) return;
  // Rebuilt in field-number order, so that the nulls added for unset messages sit where the
  // field is declared rather than at the end.
  Json rebuilt = Json::object();
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor& field = *type.field(i);
    auto it = object->find(field.name());
    if (it == object->end()) {
      // always_print_primitive_fields prints scalars and repeated fields; unset messages are
      // omitted by proto3 JSON. Scripts get a stable shape with null instead.
      if (!field.is_repeated() && field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE &&
          field.containing_oneof() == nullptr) {
        rebuilt[field.name()] = nullptr;
        if (IsDuration(field)) rebuilt[field.name() + "_seconds"] = nullptr;
      }
      continue;
    }
    Json value = std::move(*it);
    if (field.is_map()) {
      const FieldDescriptor& value_field = *field.message_type()->map_value();
      if (value.is_object()) {
        for (auto& item : value.items()) ValueToJson(value_field, &item.value());
      }
    } else if (field.is_repeated()) {
      if (value.is_array()) {
        for (Json& element : value) ValueToJson(field, &element);
      }
    } else {
      ValueToJson(field, &value);
    }
    // Durations also as a number of seconds, and git's commit dates also as RFC 3339
    // (docs/protocol.md, "Times, durations and percentages"); the parser ignores both.
    Json seconds = IsDuration(field) ? DurationSeconds(value) : Json();
    std::string rfc3339 = IsCommitDate(type, field) && value.is_string()
                              ? GitDateToRfc3339(value.get<std::string>())
                              : "";
    rebuilt[field.name()] = std::move(value);
    if (IsDuration(field)) rebuilt[field.name() + "_seconds"] = std::move(seconds);
    if (IsCommitDate(type, field)) rebuilt["date_rfc3339"] = std::move(rfc3339);
  }
  *object = std::move(rebuilt);
}

void ValueToJson(const FieldDescriptor& field, Json* value) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_ENUM:
      if (value->is_string()) {
        const EnumValueDescriptor* enum_value =
            field.enum_type()->FindValueByName(value->get<std::string>());
        if (enum_value != nullptr) *value = EnumValueJsonName(*enum_value);
      }
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      if (!IsWellKnown(*field.message_type())) MessageToJsonObject(*field.message_type(), value);
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      if (value->is_string()) {
        int64_t number = 0;
        if (absl::SimpleAtoi(value->get<std::string>(), &number)) *value = number;
      }
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      if (value->is_string()) {
        uint64_t number = 0;
        if (absl::SimpleAtoi(value->get<std::string>(), &number)) *value = number;
      }
      break;
    default:
      break;
  }
}

absl::Status ValueFromJson(const FieldDescriptor& field, Json* value);

absl::Status MessageFromJsonObject(const Descriptor& type, Json* object) {
  if (!object->is_object()) return absl::OkStatus();  // The protobuf parser reports the error.
  std::vector<std::string> nulls;
  for (auto& item : object->items()) {
    if (item.value().is_null()) {
      nulls.push_back(item.key());
      continue;
    }
    const FieldDescriptor* field = type.FindFieldByName(item.key());
    for (int i = 0; field == nullptr && i < type.field_count(); ++i) {
      if (type.field(i)->json_name() == item.key()) field = type.field(i);
    }
    if (field == nullptr) continue;  // Unknown fields are ignored by the parser.
    Json& value = item.value();
    if (field->is_map()) {
      const FieldDescriptor& value_field = *field->message_type()->map_value();
      if (value.is_object()) {
        for (auto& entry : value.items()) {
          absl::Status status = ValueFromJson(value_field, &entry.value());
          if (!status.ok()) return status;
        }
      }
    } else if (field->is_repeated()) {
      if (value.is_array()) {
        for (Json& element : value) {
          absl::Status status = ValueFromJson(*field, &element);
          if (!status.ok()) return status;
        }
      }
    } else {
      absl::Status status = ValueFromJson(*field, &value);
      if (!status.ok()) return status;
    }
  }
  for (const std::string& key : nulls) object->erase(key);
  return absl::OkStatus();
}

absl::Status ValueFromJson(const FieldDescriptor& field, Json* value) {
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    if (IsWellKnown(*field.message_type())) return absl::OkStatus();
    return MessageFromJsonObject(*field.message_type(), value);
  }
  if (field.cpp_type() != FieldDescriptor::CPPTYPE_ENUM || !value->is_string()) {
    return absl::OkStatus();
  }
  const EnumDescriptor& type = *field.enum_type();
  const std::string text = value->get<std::string>();
  const EnumValueDescriptor* found = type.FindValueByName(text);
  if (found == nullptr)
    found = type.FindValueByName(EnumPrefix(type) + absl::AsciiStrToUpper(text));
  if (found == nullptr) {
    const std::string lower = absl::AsciiStrToLower(text);
    for (int i = 0; i < type.value_count() && found == nullptr; ++i) {
      if (EnumValueJsonName(*type.value(i)) == lower) found = type.value(i);
    }
  }
  if (found == nullptr) {
    std::vector<std::string> names;
    for (int i = 0; i < type.value_count(); ++i) names.push_back(EnumValueJsonName(*type.value(i)));
    return absl::InvalidArgumentError(
        absl::StrCat("unknown value \"", text, "\" for field ", field.name(), " (",
                     type.full_name(), "); expected one of: ", absl::StrJoin(names, ", ")));
  }
  *value = found->name();
  return absl::OkStatus();
}

}  // namespace


std::string MessageToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string text;
  const auto status = google::protobuf::util::MessageToJsonString(message, &text, options);
  if (!status.ok()) {
    return Json{{"error", absl::StrCat("cannot print ", message.GetTypeName(),
                                       " as JSON: ", std::string(status.message()))}}
        .dump(2, ' ', false, Json::error_handler_t::replace);
  }
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return text;
  MessageToJsonObject(*message.GetDescriptor(), &json);
  return json.dump(2, ' ', false, Json::error_handler_t::replace);
}

absl::Status MessageFromJson(std::string_view text, google::protobuf::Message* message) {
  message->Clear();
  Json json = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not valid JSON for ", message->GetTypeName(), ": the text does not parse"));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON for ", message->GetTypeName(), " must be an object"));
  }
  absl::Status adjusted = MessageFromJsonObject(*message->GetDescriptor(), &json);
  if (!adjusted.ok()) return adjusted;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      json.dump(-1, ' ', false, Json::error_handler_t::replace), message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON for ", message->GetTypeName(),
                                                   ": ", std::string(status.message())));
  }
  return absl::OkStatus();
}

std::string StatusToJson(const v1::JobStatus& job) { return MessageToJson(job); }

absl::StatusOr<v1::JobStatus> StatusFromJson(std::string_view json) {
  v1::JobStatus job;
  absl::Status status = MessageFromJson(json, &job);
  if (!status.ok()) return status;
  return job;
}

}  // namespace kbisect
