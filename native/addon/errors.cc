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

CallerError::CallerError(Napi::Env env) : error_(Napi::Persistent(Napi::Error::New(env, "").Value())) {}

Napi::Value CallerError::with(const char* code, const std::string& message) {
  Napi::Object e = error_.Value();
  e.Set("message", Napi::String::New(e.Env(), message));
  e.Set("code", Napi::String::New(e.Env(), code));
  return e;
}

}  // namespace platform::addon
