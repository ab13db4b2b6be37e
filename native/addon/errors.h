// The one error contract of the addons: every error that reaches JavaScript is an Error,
// TypeError (an argument of the wrong type) or RangeError (the right type, an unusable value)
// with a string `code` from the list below (typed as NativeErrorCode in src/native/surface.ts).
// A failure found later, on a worker thread, rejects with an error created when the call was
// made, so its stack is the caller's JavaScript stack (as sharp does for its pipelines). One
// exception: a tabular model's run(), the per-batch hot path of predict, where recording a stack
// costs 4-9 us per call (15 % of a one-row run); its failures carry their code and message only.
#pragma once

#include <napi.h>

#include <string>

namespace platform::addon {

namespace code {
constexpr const char* kInvalidArgument = "invalid_argument";  // TypeError / RangeError
constexpr const char* kOutOfMemory = "out_of_memory";
constexpr const char* kUnavailable = "unavailable";  // the asked-for device cannot be used here
constexpr const char* kLoadFailed = "load_failed";   // llmLoadModel
constexpr const char* kUnloaded = "unloaded";        // the LLM model was unloaded
constexpr const char* kModelRefused = "model_refused";  // tabularCompile
constexpr const char* kRunFailed = "run_failed";        // a tabular run
constexpr const char* kDisposed = "disposed";           // the tabular model was disposed
constexpr const char* kInternal = "internal";
}  // namespace code

enum class ErrorKind { kError, kType, kRange };

Napi::Error make_error(Napi::Env env, ErrorKind kind, const char* code, const std::string& message);
[[noreturn]] void throw_error(Napi::Env env, ErrorKind kind, const char* code, const std::string& message);

// An Error created on the caller's stack when an asynchronous call starts (creating it records
// the stack; it is formatted only if the error is ever read), rejected with later on the
// JavaScript thread once the work has failed. Construct and use it on the JavaScript thread only.
class CallerError {
 public:
  // capture = false: no stack is recorded (the error is made when it is needed).
  CallerError(Napi::Env env, bool capture);
  ~CallerError();
  CallerError(const CallerError&) = delete;
  CallerError& operator=(const CallerError&) = delete;
  // The error, now carrying `message` and `code`.
  Napi::Value with(const char* code, const std::string& message);

 private:
  // Plain N-API rather than Napi::Error: that class keeps a reference of its own, and this runs
  // once per asynchronous call.
  napi_env env_;
  napi_ref error_ = nullptr;
};

// The outcome of work on a worker thread: the code and message of its failure, if any. Workers
// fill it in Execute() and reject with a CallerError in OnError().
struct WorkFailure {
  std::string code;
  std::string message;
  bool failed() const { return !code.empty(); }
};

}  // namespace platform::addon
