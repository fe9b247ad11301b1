// Concepts: many surface words that mean the same thing to the intent model
// ("bot", "agent", "assistant", "automation" are all an agent; "inbox",
// "gmail", "mail" are all e-mail). The model reads a shared concept token
// beside each such word, so what it learned from one word carries over to
// the others, including words the training data never used.
#pragma once

#include <string_view>

namespace omniforge::intent {

// The concept token for a normalized word ("bots" -> "_agent"; any emoji
// -> "_emoji"), or empty. Concept tokens start with '_' so they never
// collide with a user's word.
std::string_view ConceptOf(std::string_view word);

// True for a word that reads as noise rather than language: keyboard mash
// ("asdfgh", "qwerty"), one letter repeated ("kkkkk"), no vowel in a long
// word, symbols only. Numbers are not noise.
bool LooksLikeNoise(std::string_view word);

}  // namespace omniforge::intent
