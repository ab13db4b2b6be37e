// Work that runs on a libuv worker thread and settles a promise: the one shape of every
// asynchronous entry point (gemm*Async, llmLoadModel, llmUnload, a tabular model's run). A
// failure on the worker becomes a coded error (errors.h) that carries the stack of the
// JavaScript call that started the work, not an empty one.
#pragma once

#include <napi.h>

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "errors.h"

namespace platform::addon {

// Thrown by work() for a failure with its own code (otherwise the worker's failure_code applies).
class CodedFailure : public std::runtime_error {
 public:
  CodedFailure(const char* code, const std::string& message) : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;
};

class PromiseWorker : public Napi::AsyncWorker {
 public:
  enum class CallerStack { kRecord, kSkip };  // kSkip: hot paths only (errors.h)

  // `failure_code`: the code of an exception work() throws that says nothing more specific.
  PromiseWorker(Napi::Env env, const char* resource, const char* failure_code, CallerStack stack = CallerStack::kRecord)
      : Napi::AsyncWorker(env, resource), deferred_(Napi::Promise::Deferred::New(env)),
        caller_(env, stack == CallerStack::kRecord), failure_code_(failure_code) {}

  Napi::Promise promise() const { return deferred_.Promise(); }

 protected:
  // On the worker thread: the work itself; throws on failure.
  virtual void work() = 0;
  // On the JavaScript thread after work() succeeded: the promise's value.
  virtual Napi::Value result() = 0;
  // On the JavaScript thread after work() failed, before the promise rejects.
  virtual void failed() {}

 private:
  void Execute() final {
    try {
      work();
      return;
    } catch (const CodedFailure& e) {
      failure_ = {e.code(), e.what()};
    } catch (const std::bad_alloc&) {
      failure_ = {code::kOutOfMemory, "out of memory"};
    } catch (const std::exception& e) {
      failure_ = {failure_code_, e.what()};
    } catch (...) {
      failure_ = {code::kInternal, "unknown native error"};
    }
    SetError(failure_.message);
  }

  void OnOK() final {
    try {
      deferred_.Resolve(result());
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    } catch (const std::exception& e) {
      deferred_.Reject(caller_.with(code::kInternal, e.what()));
    }
  }

  void OnError(const Napi::Error&) final {
    failed();
    deferred_.Reject(caller_.with(failure_.code.c_str(), failure_.message));
  }

  Napi::Promise::Deferred deferred_;
  CallerError caller_;
  const char* failure_code_;
  WorkFailure failure_;
};

}  // namespace platform::addon
