#include "errors.h"

namespace platform::addon {

Napi::Error make_error(Napi::Env env, ErrorKind kind, const char* code, const std::string& message) {
  Napi::Error e = kind == ErrorKind::kType    ? Napi::TypeError::New(env, message)
                  : kind == ErrorKind::kRange ? Napi::RangeError::New(env, message)
                                              : Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  return e;
}

void throw_error(Napi::Env env, ErrorKind kind, const char* code, const std::string& message) {
  throw make_error(env, kind, code, message);
}

CallerError::CallerError(Napi::Env env, bool capture) : env_(env) {
  if (!capture) return;
  napi_value empty = nullptr, error = nullptr;
  if (napi_create_string_utf8(env_, "", 0, &empty) == napi_ok && napi_create_error(env_, nullptr, empty, &error) == napi_ok) {
    napi_create_reference(env_, error, 1, &error_);
  }
}

CallerError::~CallerError() {
  if (error_ != nullptr) napi_delete_reference(env_, error_);
}

Napi::Value CallerError::with(const char* code, const std::string& message) {
  napi_value value = nullptr;
  if (error_ != nullptr) napi_get_reference_value(env_, error_, &value);
  // Without one (not captured, or creating it failed), a new error still carries the code.
  Napi::Object e = value != nullptr ? Napi::Object(env_, value) : Napi::Error::New(env_, message).Value();
  e.Set("message", Napi::String::New(env_, message));
  e.Set("code", Napi::String::New(env_, code));
  return e;
}

}  // namespace platform::addon
