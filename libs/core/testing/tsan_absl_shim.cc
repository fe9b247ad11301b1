// ThreadSanitizer's view of Abseil's synchronization, for ThreadSanitizer
// builds only (OMNIFORGE_TSAN, `make tsan`; docs/tests.md).
//
// Debian's libabsl_synchronization is built without -fsanitize=thread, so
// its Mutex, CondVar and Notification carry no TSan annotations: TSan sees
// no happens-before through them and would report every access they guard
// as a race. This shared library defines the same out-of-line entry points;
// a TSan build links it into every executable ahead of Abseil, so the
// dynamic linker binds every caller to it (our code, gRPC's, and Abseil's
// own calls between its functions). Each one tells TSan what the call does
// to the mutex, with the annotations Abseil itself makes when it is built
// with TSan, and forwards to Abseil's definition (dlsym(RTLD_NEXT)).
//
// Not covered (docs/tests.md, "ThreadSanitizer"): a Condition's predicate
// runs inside the lock operation, where TSan ignores memory accesses, so a
// race in a predicate goes unseen; Notification::HasBeenNotified() is
// inline (there is no call to hook), so a thread that only polls it gets no
// happens-before from Notify() (WaitForNotification*() do); CondVar waits
// and Await*() assume the mutex is held exclusively, not as a reader.
// A symbol missing from Abseil aborts the program at its first call.

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/synchronization/barrier.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define OMNIFORGE_STRINGIFY_INNER(x) #x
#define OMNIFORGE_STRINGIFY(x) OMNIFORGE_STRINGIFY_INNER(x)

// The Itanium mangling of `absl::<inline namespace>::<rest>`, where `rest`
// is already mangled ("5Mutex4LockEv"); `prefix` is "_ZN" or "_ZNK" (const).
std::string AbslSymbol(const char* prefix, const char* rest) {
  std::string name = std::string(prefix) + "4absl";
#if ABSL_OPTION_USE_INLINE_NAMESPACE
  const std::string inline_namespace = OMNIFORGE_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  name += std::to_string(inline_namespace.size()) + inline_namespace;
#endif
  return name + rest;
}

// Abseil's own definition of the function this shim replaces.
template <typename Fn>
Fn Real(const char* prefix, const char* rest) {
  const std::string name = AbslSymbol(prefix, rest);
  void* symbol = dlsym(RTLD_NEXT, name.c_str());
  if (symbol == nullptr) {
    std::fprintf(stderr, "tsan_absl_shim: %s not found after the shim: %s\n", name.c_str(),
                 dlerror());
    std::abort();
  }
  Fn fn = nullptr;
  static_assert(sizeof(fn) == sizeof(symbol));
  std::memcpy(&fn, &symbol, sizeof(fn));
  return fn;
}

void* Addr(const void* object) { return const_cast<void*>(object); }

// Set while this thread runs an Abseil function through the shim. Abseil's
// functions call one another through the shim too (AwaitWithTimeout calls
// AwaitWithDeadline, Notification locks its own Mutex): only the outermost
// call is annotated.
thread_local bool in_abseil = false;

class AbseilCall final {
 public:
  AbseilCall() : outermost_(!in_abseil) { in_abseil = true; }
  ~AbseilCall() {
    if (outermost_) in_abseil = false;
  }
  AbseilCall(const AbseilCall&) = delete;
  AbseilCall& operator=(const AbseilCall&) = delete;
  bool outermost() const { return outermost_; }

 private:
  const bool outermost_;
};

// A lock operation: TSan ignores the accesses between pre and post (among
// them a Condition's predicate).
template <typename Call>
auto Locking(absl::Mutex* mu, unsigned flags, Call call) {
  const AbseilCall scope;
  if (!scope.outermost()) return call();
  __tsan_mutex_pre_lock(mu, flags);
  auto result = call();
  __tsan_mutex_post_lock(mu, flags, 0);
  return result;
}

// The thread holds `mu` exclusively and gives it up inside the call (a
// CondVar wait, an Await), to hold it again when the call returns.
template <typename Call>
auto Releasing(absl::Mutex* mu, Call call) {
  const AbseilCall scope;
  if (!scope.outermost()) return call();
  __tsan_mutex_pre_unlock(mu, 0);
  __tsan_mutex_post_unlock(mu, 0);
  __tsan_mutex_pre_lock(mu, 0);
  auto result = call();
  __tsan_mutex_post_lock(mu, 0, 0);
  return result;
}

template <typename Call>
bool TryLocking(absl::Mutex* mu, unsigned flags, Call call) {
  const AbseilCall scope;
  if (!scope.outermost()) return call();
  __tsan_mutex_pre_lock(mu, flags | __tsan_mutex_try_lock);
  const bool locked = call();
  const unsigned outcome = locked ? 0 : __tsan_mutex_try_lock_failed;
  __tsan_mutex_post_lock(mu, flags | __tsan_mutex_try_lock | outcome, 0);
  return locked;
}

template <typename Call>
void Unlocking(absl::Mutex* mu, unsigned flags, Call call) {
  const AbseilCall scope;
  if (!scope.outermost()) return call();
  __tsan_mutex_pre_unlock(mu, flags);
  call();
  __tsan_mutex_post_unlock(mu, flags);
}

// A hand-off that is no lock (Notification, BlockingCounter, Barrier):
// `release` before the call, `acquire` after it when it returns true.
template <typename Call>
bool HandingOff(const void* object, bool release, bool acquire, Call call) {
  const AbseilCall scope;
  if (!scope.outermost()) return call();
  if (release) __tsan_release(Addr(object));
  const bool handed = call();
  if (acquire && handed) __tsan_acquire(Addr(object));
  return handed;
}

constexpr unsigned kRead = __tsan_mutex_read_lock;
constexpr char kMember[] = "_ZN";
constexpr char kConstMember[] = "_ZNK";

using MuFn = void (*)(absl::Mutex*);
using MuTryFn = bool (*)(absl::Mutex*);
using MuCondFn = void (*)(absl::Mutex*, const absl::Condition&);
using MuCondTimeoutFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Duration);
using MuCondDeadlineFn = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

Mutex::~Mutex() {
  static const auto real = Real<MuFn>(kMember, "5MutexD1Ev");
  const AbseilCall scope;
  if (scope.outermost()) __tsan_mutex_destroy(this, 0);
  real(this);
}

void Mutex::Lock() {
  static const auto real = Real<MuFn>(kMember, "5Mutex4LockEv");
  Locking(this, 0, [&] { return (real(this), 0); });
}

void Mutex::ReaderLock() {
  static const auto real = Real<MuFn>(kMember, "5Mutex10ReaderLockEv");
  Locking(this, kRead, [&] { return (real(this), 0); });
}

bool Mutex::TryLock() {
  static const auto real = Real<MuTryFn>(kMember, "5Mutex7TryLockEv");
  return TryLocking(this, 0, [&] { return real(this); });
}

bool Mutex::ReaderTryLock() {
  static const auto real = Real<MuTryFn>(kMember, "5Mutex13ReaderTryLockEv");
  return TryLocking(this, kRead, [&] { return real(this); });
}

void Mutex::Unlock() {
  static const auto real = Real<MuFn>(kMember, "5Mutex6UnlockEv");
  Unlocking(this, 0, [&] { real(this); });
}

void Mutex::ReaderUnlock() {
  static const auto real = Real<MuFn>(kMember, "5Mutex12ReaderUnlockEv");
  Unlocking(this, kRead, [&] { real(this); });
}

void Mutex::LockWhen(const Condition& cond) {
  static const auto real = Real<MuCondFn>(kMember, "5Mutex8LockWhenERKNS0_9ConditionE");
  Locking(this, 0, [&] { return (real(this, cond), 0); });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto real = Real<MuCondFn>(kMember, "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Locking(this, kRead, [&] { return (real(this, cond), 0); });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real =
      Real<MuCondTimeoutFn>(kMember, "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Locking(this, 0, [&] { return real(this, cond, timeout); });
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real = Real<MuCondTimeoutFn>(
      kMember, "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Locking(this, kRead, [&] { return real(this, cond, timeout); });
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real =
      Real<MuCondDeadlineFn>(kMember, "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Locking(this, 0, [&] { return real(this, cond, deadline); });
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  static const auto real = Real<MuCondDeadlineFn>(
      kMember, "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Locking(this, kRead, [&] { return real(this, cond, deadline); });
}

void Mutex::Await(const Condition& cond) {
  static const auto real = Real<MuCondFn>(kMember, "5Mutex5AwaitERKNS0_9ConditionE");
  Releasing(this, [&] { return (real(this, cond), 0); });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static const auto real =
      Real<MuCondTimeoutFn>(kMember, "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Releasing(this, [&] { return real(this, cond, timeout); });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static const auto real =
      Real<MuCondDeadlineFn>(kMember, "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Releasing(this, [&] { return real(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  static const auto real = Real<void (*)(CondVar*, Mutex*)>(kMember, "7CondVar4WaitEPNS0_5MutexE");
  Releasing(mu, [&] { return (real(this, mu), 0); });
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Duration)>(
      kMember, "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return Releasing(mu, [&] { return real(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, Time)>(
      kMember, "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return Releasing(mu, [&] { return real(this, mu, deadline); });
}

// Notify() releases on the object and a successful wait acquires on it, so
// a waiter that finds the notification already given still sees the writes
// made before it (Abseil's fast path reads an atomic TSan cannot see set).
void Notification::Notify() {
  static const auto real = Real<void (*)(Notification*)>(kMember, "12Notification6NotifyEv");
  HandingOff(this, true, false, [&] { return (real(this), true); });
}

void Notification::WaitForNotification() const {
  static const auto real =
      Real<void (*)(const Notification*)>(kConstMember, "12Notification19WaitForNotificationEv");
  HandingOff(this, false, true, [&] { return (real(this), true); });
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static const auto real = Real<bool (*)(const Notification*, Duration)>(
      kConstMember, "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  return HandingOff(this, false, true, [&] { return real(this, timeout); });
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static const auto real = Real<bool (*)(const Notification*, Time)>(
      kConstMember, "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  return HandingOff(this, false, true, [&] { return real(this, deadline); });
}

bool BlockingCounter::DecrementCount() {
  static const auto real =
      Real<bool (*)(BlockingCounter*)>(kMember, "15BlockingCounter14DecrementCountEv");
  return HandingOff(this, true, false, [&] { return real(this); });
}

void BlockingCounter::Wait() {
  static const auto real = Real<void (*)(BlockingCounter*)>(kMember, "15BlockingCounter4WaitEv");
  HandingOff(this, false, true, [&] { return (real(this), true); });
}

// Every thread's writes before Block() happen before every thread's return.
bool Barrier::Block() {
  static const auto real = Real<bool (*)(Barrier*)>(kMember, "7Barrier5BlockEv");
  bool last = false;
  HandingOff(this, true, true, [&] { return (last = real(this), true); });
  return last;
}

ABSL_NAMESPACE_END
}  // namespace absl
