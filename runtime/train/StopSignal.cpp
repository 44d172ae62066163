//===- StopSignal.cpp - Graceful stop on SIGINT/SIGTERM -------------------===//
#include "runtime/train/StopSignal.h"

#include <csignal>
#include <cstring>

static std::atomic<int> stopRequested{0};
static_assert(std::atomic<int>::is_always_lock_free,
              "the signal handler needs a lock-free atomic");

static void onStopSignal(int sig) {
  int none = 0; // the first signal wins
  stopRequested.compare_exchange_strong(none, sig);
}

const std::atomic<int> *tcc::rt::installStopHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return &stopRequested;
}
