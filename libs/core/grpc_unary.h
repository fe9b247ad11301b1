// Unary gRPC methods on the callback API, the way every omniforge service
// serves them: the request arrives as raw bytes and is parsed here (so a
// string field with invalid UTF-8 gets a clear INVALID_ARGUMENT instead of
// gRPC's silent drop), the caller's identity is read from the metadata, and
// the handler finishes the call exactly once, on any thread, with an
// absl::Status. Per-RPC metrics come from the server's interceptor
// (grpc_metrics.h). The handler runs
// under the call's server span (a child of the caller's `traceparent`,
// ended by `done`) and log fields naming the caller's tenant.
//
// Include only from a service's gRPC layer (.cc files): it pulls in grpcpp.
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/callback_common.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <chrono>
#include <functional>
#include <memory>

#include "libs/core/call_cancellation.h"
#include "libs/core/call_deadline.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/grpc_status.h"
#include "libs/core/grpc_trace.h"
#include "libs/core/identity.h"
#include "libs/core/server.h"
#include "libs/core/thread_pool.h"
#include "libs/trace/span.h"

namespace omniforge::core {

// One unary call: its parsed request, the response being built, the caller.
template <typename Request, typename Response>
struct UnaryCall {
  Request request;
  Response response;
  Identity who;
  grpc::CallbackServerContext* context = nullptr;  // valid until the call finishes
  // Cancelled when the client cancels the call or gives up on it; valid
  // until the call finishes. The handlers below run their body in its scope
  // (call_cancellation.h), so the calls the body makes further down stop too.
  CancelSignal* cancel = nullptr;
  // The call's server span (inactive with tracing off), ended by `done`.
  trace::Span span;
};

// The ambient a unary call's handler starts under: its server span (or,
// with tracing off, the caller's trace context, passed on as it came) and
// the caller's tenant in every log line.
inline Ambient UnaryAmbient(const trace::Span& span, IncomingTrace incoming, const Identity& who) {
  Ambient ambient;
  ambient.span = span.active() ? span.context() : incoming.parent;
  if (ambient.span.valid()) ambient.tracestate = std::move(incoming.tracestate);
  ambient.log = std::make_shared<const LogContext>(LogContext{"", "", who.tenant_id});
  return ambient;
}

// The reactor of every unary call: the default one, plus the call's cancel
// signal. Deletes itself when gRPC is done with the call. A passed deadline
// reaches it as a cancel too (the client's RST_STREAM or the server's own
// copy of the deadline, whichever comes first).
class CancellableUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  CancelSignal& cancel() { return cancel_; }
  void OnCancel() override { cancel_.Cancel(); }
  void OnDone() override { delete this; }

 private:
  CancelSignal cancel_;
};

template <typename Request, typename Response>
using UnaryHandler = std::function<void(std::shared_ptr<UnaryCall<Request, Response>> call,
                                        std::function<void(absl::Status)> done)>;

// Parses the request and the identity, then runs `handler`, which calls
// `done` exactly once (on any thread) to finish the call.
template <typename Request, typename Response>
grpc::ServerUnaryReactor* ServeUnary(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* raw, grpc::ByteBuffer* raw_response,
                                     const char* method, UnaryHandler<Request, Response> handler) {
  auto* reactor = new CancellableUnaryReactor();
  auto call = std::make_shared<UnaryCall<Request, Response>>();
  auto done = [reactor, call, raw_response](absl::Status status) {
    if (status.ok()) {
      bool own_buffer = false;
      grpc::Status serialized =
          grpc::SerializationTraits<Response>::Serialize(call->response, raw_response, &own_buffer);
      if (!serialized.ok()) status = absl::InternalError("cannot serialize the response");
    }
    if (!status.ok()) call->span.SetError(status.ToString());
    call->span.End();
    reactor->Finish(ToGrpcStatus(status));
  };
  grpc::ByteBuffer copy(*raw);  // shares the slices; the reader consumes its own view
  grpc::ProtoBufferReader reader(&copy);
  if (!call->request.ParseFromZeroCopyStream(&reader)) {
    done(absl::InvalidArgumentError("request is not a valid " + Request::descriptor()->full_name() +
                                    ": every string field must be valid UTF-8"));
    return reactor;
  }
  auto who = IdentityFromContext(*context);
  if (!who.ok()) {
    done(who.status());
    return reactor;
  }
  call->who = *std::move(who);
  call->context = context;
  call->cancel = &reactor->cancel();
  IncomingTrace incoming = TraceFromContext(*context);
  call->span = trace::Span::StartUnder(method, trace::SpanKind::kServer, incoming.parent);
  call->span.SetAttribute("rpc.method", method);
  // Handlers that move to a pool carry it there (core::ThreadPool).
  const ScopedAmbient ambient(UnaryAmbient(call->span, std::move(incoming), call->who));
  handler(std::move(call), std::move(done));
  return reactor;
}

// A handler running `body` on the calling gRPC thread: for work that never
// blocks (microseconds of CPU).
template <typename Request, typename Response>
UnaryHandler<Request, Response> Inline(
    std::function<absl::Status(const Identity&, const Request&, Response*)> body) {
  return [body = std::move(body)](std::shared_ptr<UnaryCall<Request, Response>> call,
                                  const std::function<void(absl::Status)>& done) {
    ScopedCallDeadline deadline(call->context->deadline());
    const ScopedCallCancellation cancellable(call->cancel);
    done(body(call->who, call->request, &call->response));
  };
}

// A handler running `body` on a worker thread, for work that blocks (the
// database, a model call). `overloaded` is the RESOURCE_EXHAUSTED message when
// the pool's queue is full.
template <typename Request, typename Response>
UnaryHandler<Request, Response> OnWorker(
    ThreadPool& workers, const char* overloaded,
    std::function<absl::Status(const Identity&, const Request&, Response*)> body) {
  return [&workers, overloaded, body = std::move(body)](
             std::shared_ptr<UnaryCall<Request, Response>> call,
             const std::function<void(absl::Status)>& done) {
    auto task = [body, call, done] {
      // A call its client gave up on while it waited for a worker gets no
      // work: under overload that work would only delay the calls still
      // being waited for.
      if (call->context->deadline() <= std::chrono::system_clock::now()) {
        done(absl::DeadlineExceededError("the call's deadline passed before it was served"));
        return;
      }
      if (call->context->IsCancelled()) {
        done(absl::CancelledError("the call was cancelled before it was served"));
        return;
      }
      ScopedCallDeadline deadline(call->context->deadline());
      const ScopedCallCancellation cancellable(call->cancel);
      done(body(call->who, call->request, &call->response));
    };
    if (!workers.Submit(task)) done(absl::ResourceExhaustedError(overloaded));
  };
}

}  // namespace omniforge::core
