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
  const auto a = gate.enter(Use::Shared, 400.0, 1000.0, soon());
  const auto b = gate.enter(Use::Shared, 400.0, 1000.0, soon());
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(a->alone);
  EXPECT_DOUBLE_EQ(a->share_mb, 1000);  // admitted first: the whole budget was free
  EXPECT_DOUBLE_EQ(b->share_mb, 600);   // beside a: what a's need leaves
  EXPECT_FALSE(gate.enter(Use::Shared, 400.0, 1000.0, soon()));  // 1200 > 1000
  EXPECT_TRUE(a->company->load());
  EXPECT_TRUE(b->company->load());
  gate.leave(*a);
  const auto c = gate.enter(Use::Shared, 400.0, 1000.0, soon());
  ASSERT_TRUE(c);
  gate.leave(*b);
  gate.leave(*c);
}

TEST(DeviceGate, UnknownOrTooBigNeedsRunAlone) {
  DeviceGate gate;
  const auto unknown = gate.enter(Use::Shared, nullopt, 1000.0, soon());
  ASSERT_TRUE(unknown);
  EXPECT_TRUE(unknown->alone);
  EXPECT_DOUBLE_EQ(unknown->share_mb, 1000);
  EXPECT_FALSE(gate.enter(Use::Shared, 1.0, 1000.0, soon()));
  gate.leave(*unknown);
  EXPECT_FALSE(unknown->company->load());

  const auto small = gate.enter(Use::Shared, 10.0, 1000.0, soon());
  ASSERT_TRUE(small);
  EXPECT_FALSE(gate.enter(Use::Shared, 5000.0, 1000.0, soon()));  // bigger than the budget: alone, later
  gate.leave(*small);
  const auto big = gate.enter(Use::Shared, 5000.0, 1000.0, soon());
  ASSERT_TRUE(big);
  EXPECT_TRUE(big->alone);
  gate.leave(*big);
}

TEST(DeviceGate, WithoutABudgetOnlyTimingIsAlone) {
  DeviceGate gate;
  const auto a = gate.enter(Use::Shared, nullopt, nullopt, soon());
  const auto b = gate.enter(Use::Shared, 1e9, nullopt, soon());
  ASSERT_TRUE(a && b);
  EXPECT_DOUBLE_EQ(a->share_mb, 0);  // no budget, no share to hand to the harness
  gate.leave(*a);
  gate.leave(*b);
}

TEST(DeviceGate, AdmitsInArrivalOrderSoABigJobIsNotStarved) {
  DeviceGate gate;
  const auto small = gate.enter(Use::Shared, 300.0, 1000.0, soon());
  ASSERT_TRUE(small);
  auto big = std::async(std::launch::async, [&] { return gate.enter(Use::Shared, 900.0, 1000.0, later()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Would fit beside `small`, but the big job came first.
  EXPECT_FALSE(gate.enter(Use::Shared, 100.0, 1000.0, soon()));
  gate.leave(*small);
  const auto admitted = big.get();
  ASSERT_TRUE(admitted);
  EXPECT_DOUBLE_EQ(admitted->share_mb, 1000);
  gate.leave(*admitted);
}

TEST(DeviceGate, LearnsNeedsAndTheDevicesMemory) {
  DeviceGate gate;
  EXPECT_FALSE(gate.need("task-a"));
  EXPECT_FALSE(gate.largest_need());
  gate.record_need("task-a", 120);
  gate.record_need("task-b", 3000);
  EXPECT_EQ(gate.need("task-a"), 120);
  EXPECT_EQ(gate.largest_need(), 3000);
  EXPECT_FALSE(gate.memory_mb());
  gate.record_memory(81559);
  EXPECT_EQ(gate.memory_mb(), 81559);
}

}  // namespace
}  // namespace kforge::eval
