// The names the unit tests of the turn's stages (tests/turn_*_test.cc on
// TurnHarness) take from the fakes of this folder, gmock and nlohmann::json,
// declared once for all of them. For those test files only: it brings the
// names into omniforge::orchestrator.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "services/orchestrator/testing/scripted_model.h"
#include "services/orchestrator/testing/turn_harness.h"

namespace omniforge::orchestrator {

using nlohmann::json;
using ::testing::Contains;
using testing::ConversationOf;
using ::testing::ElementsAre;
using testing::FakePlanStore;
using testing::FakeUnderstanding;
using ::testing::HasSubstr;
using testing::kAlice;
using testing::kBob;
using ::testing::Not;
using testing::RecordingSink;
using testing::ScriptedModel;
using testing::SeenCall;
using testing::TurnHarness;
using testing::UsageRow;

}  // namespace omniforge::orchestrator
