#include "libs/llm/usage_collection.h"

namespace omniforge::llm {
namespace {

thread_local std::vector<UsageRecord>* current_collection = nullptr;

}  // namespace

void CollectingUsageSink::Record(const UsageRecord& record) {
  if (current_collection != nullptr) current_collection->push_back(record);
}

ScopedUsageCollection::ScopedUsageCollection(std::vector<UsageRecord>* calls)
    : previous_(current_collection) {
  current_collection = calls;
}

ScopedUsageCollection::~ScopedUsageCollection() { current_collection = previous_; }

}  // namespace omniforge::llm
