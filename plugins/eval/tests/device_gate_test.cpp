// Admission to a device by memory (DeviceGate), with made-up budgets and needs: no device,
// no harness.
#include "device_gate.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

namespace kforge::eval {
namespace {

using Use = DeviceGate::Use;
using std::nullopt;

std::chrono::steady_clock::time_point soon() {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
}
std::chrono::steady_clock::time_point later() { return std::chrono::steady_clock::now() + std::chrono::seconds(10); }

TEST(DeviceGate, AdmitsJobsWhileTheirNeedsFitTheBudget) {
  DeviceGate gate;
  gate.record_need("task", 300);  // + 100 per job: 400 each
  const auto a = gate.enter(Use::Shared, "task", 100, 1000.0, soon());
  const auto b = gate.enter(Use::Shared, "task", 100, 1000.0, soon());
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(a->alone);
  EXPECT_DOUBLE_EQ(a->charged_mb, 400);
  EXPECT_DOUBLE_EQ(a->share_mb, 1000);  // admitted first: the whole budget was free
  EXPECT_DOUBLE_EQ(b->share_mb, 600);   // beside a: what a's need leaves
  EXPECT_FALSE(gate.enter(Use::Shared, "task", 100, 1000.0, soon()));  // 1200 > 1000
  EXPECT_TRUE(a->company->load());
  EXPECT_TRUE(b->company->load());
  gate.leave(*a);
  const auto c = gate.enter(Use::Shared, "task", 100, 1000.0, soon());
  ASSERT_TRUE(c);
  gate.leave(*b);
  gate.leave(*c);
}

TEST(DeviceGate, NothingMeasuredYetOrTooBigRunsAlone) {
  DeviceGate gate;
  const auto first = gate.enter(Use::Shared, "new", 0, 1000.0, soon());
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->alone);
  EXPECT_DOUBLE_EQ(first->share_mb, 1000);
  EXPECT_FALSE(gate.enter(Use::Shared, "other", 0, 1000.0, soon()));
  gate.record_need("new", 10);  // what the first job measured, before it leaves
  gate.leave(*first);
  EXPECT_FALSE(first->company->load());

  const auto small = gate.enter(Use::Shared, "new", 0, 1000.0, soon());
  ASSERT_TRUE(small);
  gate.record_need("huge", 5000);
  EXPECT_FALSE(gate.enter(Use::Shared, "huge", 0, 1000.0, soon()));  // bigger than the budget: alone, later
  gate.leave(*small);
  const auto big = gate.enter(Use::Shared, "huge", 0, 1000.0, soon());
  ASSERT_TRUE(big);
  EXPECT_TRUE(big->alone);
  gate.leave(*big);
}

TEST(DeviceGate, AnUnknownTaskIsChargedTheBiggestNeedSeen) {
  DeviceGate gate;
  gate.record_need("small", 100);
  gate.record_need("big", 600);
  const auto unknown = gate.enter(Use::Shared, "unmeasured", 0, 1000.0, soon());
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(unknown->alone);
  EXPECT_DOUBLE_EQ(unknown->charged_mb, 600);
  EXPECT_TRUE(gate.enter(Use::Shared, "small", 0, 1000.0, soon()));     // 700 fits
  EXPECT_FALSE(gate.enter(Use::Shared, "unmeasured", 0, 1000.0, soon()));  // 1300 does not
}

TEST(DeviceGate, AWaitingJobIsChargedWhatWasLearntWhileItWaited) {
  DeviceGate gate;
  const auto first = gate.enter(Use::Shared, "task", 0, 1000.0, soon());  // nothing known: alone
  ASSERT_TRUE(first);
  auto second = std::async(std::launch::async, [&] { return gate.enter(Use::Shared, "task", 0, 1000.0, later()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  gate.record_need("task", 300);
  gate.leave(*first);
  const auto admitted = second.get();
  ASSERT_TRUE(admitted);
  EXPECT_FALSE(admitted->alone);
  EXPECT_DOUBLE_EQ(admitted->charged_mb, 300);
  EXPECT_TRUE(gate.enter(Use::Shared, "task", 0, 1000.0, soon()));  // a second one fits beside
}

TEST(DeviceGate, WithoutABudgetNothingIsAlone) {
  DeviceGate gate;
  const auto a = gate.enter(Use::Shared, "x", 0, nullopt, soon());
  const auto b = gate.enter(Use::Shared, "y", 0, nullopt, soon());
  ASSERT_TRUE(a && b);
  EXPECT_DOUBLE_EQ(a->share_mb, 0);  // no budget, no share to hand to the harness
  gate.leave(*a);
  gate.leave(*b);
}

// A job retried after running out of memory beside others.
TEST(DeviceGate, ExclusiveWaitsForIdleDeviceAndHoldsOthersBack) {
  DeviceGate gate;
  const auto a = gate.enter(Use::Shared, "x", 0, nullopt, soon());
  const auto b = gate.enter(Use::Shared, "x", 0, nullopt, soon());  // correctness work shares
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(gate.enter(Use::Exclusive, "x", 0, nullopt, soon()));
  auto timing = std::async(std::launch::async, [&] { return gate.enter(Use::Exclusive, "x", 0, nullopt, later()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(gate.enter(Use::Shared, "x", 0, nullopt, soon()));  // a waiting timing run goes first
  gate.leave(*a);
  gate.leave(*b);
  const auto timed = timing.get();
  ASSERT_TRUE(timed);
  EXPECT_TRUE(timed->alone);
  EXPECT_FALSE(gate.enter(Use::Shared, "x", 0, nullopt, soon()));
  gate.leave(*timed);
  EXPECT_TRUE(gate.enter(Use::Shared, "x", 0, nullopt, soon()));
}

// A timed job's server takes turns on the device itself (turns.py): its own jobs share
// with it, no other server's job runs beside it.
TEST(DeviceGate, TimedSharesOnlyWithItsOwnServer) {
  DeviceGate gate;
  const auto timed = gate.enter(Use::Timed, "x", 0, nullopt, soon(), "server-1");
  ASSERT_TRUE(timed);
  EXPECT_FALSE(timed->alone);
  const auto own = gate.enter(Use::Shared, "y", 0, nullopt, soon(), "server-1");
  const auto own_timed = gate.enter(Use::Timed, "z", 0, nullopt, soon(), "server-1");
  ASSERT_TRUE(own && own_timed);
  EXPECT_FALSE(gate.enter(Use::Shared, "y", 0, nullopt, soon(), "server-2"));
  gate.leave(*timed);
  gate.leave(*own_timed);
  // No timed job left: another server's correctness work shares again, and a timed job of
  // the first server then waits for it.
  const auto other = gate.enter(Use::Shared, "y", 0, nullopt, soon(), "server-2");
  ASSERT_TRUE(other);
  auto second = std::async(std::launch::async, [&] { return gate.enter(Use::Timed, "x", 0, nullopt, later(), "server-1"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(second.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  gate.leave(*other);
  const auto admitted = second.get();
  ASSERT_TRUE(admitted);
  gate.leave(*admitted);
  gate.leave(*own);
}

TEST(DeviceGate, TimedJobsAreAdmittedByMemoryToo) {
  DeviceGate gate;
  gate.record_need("task", 500);
  const auto a = gate.enter(Use::Timed, "task", 100, 1000.0, soon(), "s");
  ASSERT_TRUE(a);
  EXPECT_FALSE(gate.enter(Use::Timed, "task", 100, 1000.0, soon(), "s"));  // 600 + 600 > 1000
  gate.leave(*a);
}

TEST(DeviceGate, ARunningJobsNeedLetsOthersInBesideIt) {
  DeviceGate gate;
  const auto first = gate.enter(Use::Shared, "new", 0, 1000.0, soon());  // nothing known: alone
  ASSERT_TRUE(first && first->alone);
  EXPECT_FALSE(gate.enter(Use::Shared, "other", 0, 1000.0, soon()));
  auto pass = *first;
  gate.record_need("new", 300);
  gate.recharge(pass, 300, 1000.0);  // its need line
  EXPECT_FALSE(pass.alone);
  // Unknown, "other" is charged the most any task needs (300): it fits beside.
  const auto other = gate.enter(Use::Shared, "other", 0, 1000.0, soon());
  ASSERT_TRUE(other);
  EXPECT_DOUBLE_EQ(other->share_mb, 700);
  gate.leave(pass);
  gate.recharge(pass, 900, 1000.0);  // too late: it left, nothing changes
  const auto third = gate.enter(Use::Shared, "other", 0, 1000.0, soon());
  EXPECT_TRUE(third);
  gate.leave(*other);
  gate.leave(*third);
}

TEST(DeviceGate, ADetectedBudgetIsReadWhenAJobIsLookedAtNotWhenItBeganToWait) {
  DeviceGate gate;
  const auto detected = DeviceGate::Budget::of_detected_memory(0);
  const auto first = gate.enter(Use::Shared, "a", 0, detected, soon());  // memory unknown: alone
  ASSERT_TRUE(first && first->alone);
  auto second = std::async(std::launch::async, [&] { return gate.enter(Use::Shared, "b", 0, detected, later()); });
  auto third = std::async(std::launch::async, [&] { return gate.enter(Use::Shared, "c", 0, detected, later()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  gate.record_need("a", 100);
  gate.record_memory(1000);  // learnt from the first answer
  gate.leave(*first);
  const auto b = second.get();
  const auto c = third.get();
  ASSERT_TRUE(b && c);  // both beside each other, charged 100 each
  EXPECT_FALSE(b->alone || c->alone);
  gate.leave(*b);
  gate.leave(*c);
}

TEST(DeviceGate, TheDevicesMemoryToldWithTheFirstNeedLineLetsOthersInBesideIt) {
  DeviceGate gate;
  const auto detected = DeviceGate::Budget::of_detected_memory(0);
  const auto first = gate.enter(Use::Shared, "a", 0, detected, soon());  // memory unknown: alone
  ASSERT_TRUE(first && first->alone);
  auto second = std::async(std::launch::async, [&] { return gate.enter(Use::Shared, "b", 0, detected, later()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // The first job's need line, with the device's memory (harness_pool.cpp's listener),
  // long before its answer: the second job runs beside it.
  auto pass = *first;
  gate.record_memory(1000);
  gate.record_need("a", 100);
  gate.recharge(pass, 100, detected);
  EXPECT_FALSE(pass.alone);
  const auto b = second.get();
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->alone);
  EXPECT_DOUBLE_EQ(b->share_mb, 900);
  gate.leave(pass);
  gate.leave(*b);
}

TEST(DeviceGate, AdmitsInArrivalOrderSoABigJobIsNotStarved) {
  DeviceGate gate;
  gate.record_need("small", 300);
  gate.record_need("big", 900);
  gate.record_need("tiny", 100);
  const auto small = gate.enter(Use::Shared, "small", 0, 1000.0, soon());
  ASSERT_TRUE(small);
  auto big = std::async(std::launch::async, [&] { return gate.enter(Use::Shared, "big", 0, 1000.0, later()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Would fit beside `small`, but the big job came first.
  EXPECT_FALSE(gate.enter(Use::Shared, "tiny", 0, 1000.0, soon()));
  gate.leave(*small);
  const auto admitted = big.get();
  ASSERT_TRUE(admitted);
  EXPECT_DOUBLE_EQ(admitted->share_mb, 1000);
  gate.leave(*admitted);
}

TEST(DeviceGate, LearnsNeedsAndTheDevicesMemory) {
  DeviceGate gate;
  EXPECT_FALSE(gate.need("task-a"));
  gate.record_need("task-a", 120);
  EXPECT_EQ(gate.need("task-a"), 120);
  EXPECT_FALSE(gate.memory_mb());
  gate.record_memory(81559);
  EXPECT_EQ(gate.memory_mb(), 81559);
}

}  // namespace
}  // namespace kforge::eval
