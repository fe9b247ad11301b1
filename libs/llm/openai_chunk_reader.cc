#include "libs/llm/openai_chunk_reader.h"

#include <array>
#include <cstddef>
#include <limits>

#include "libs/llm/json_scan.h"

namespace omniforge::llm::wire_internal {
namespace {

// Where the reader is: the containers whose members it keeps, and kIgnored
// for anything inside a value it does not use.
enum class Place {
  kRoot,
  kUsage,
  kUsageDetails,
  kChoices,
  kChoice,
  kDelta,
  kToolCalls,
  kToolCall,
  kFunction,
  kIgnored,
};

// The member names the reader acts on (in whichever object it expects them).
enum class Key : uint8_t {
  kOther,
  kId,
  kModel,
  kError,
  kUsage,
  kChoices,
  kPromptTokens,
  kCompletionTokens,
  kPromptTokensDetails,
  kCachedTokens,
  kIndex,
  kFinishReason,
  kDelta,
  kContent,
  kRefusal,
  kToolCalls,
  kFunction,
  kName,
  kArguments,
};

// Called for every member of every chunk: candidates are told apart by
// length first, so most names cost one or two comparisons.
Key KeyOf(std::string_view name) {
  auto is = [&](std::string_view text, Key key) { return name == text ? key : Key::kOther; };
  switch (name.size()) {
    case 2:
      return is("id", Key::kId);
    case 4:
      return is("name", Key::kName);
    case 5:
      switch (name[0]) {
        case 'm':
          return is("model", Key::kModel);
        case 'e':
          return is("error", Key::kError);
        case 'u':
          return is("usage", Key::kUsage);
        case 'i':
          return is("index", Key::kIndex);
        case 'd':
          return is("delta", Key::kDelta);
        default:
          return Key::kOther;
      }
    case 7:
      switch (name[0]) {
        case 'c':
          return name[1] == 'h' ? is("choices", Key::kChoices) : is("content", Key::kContent);
        case 'r':
          return is("refusal", Key::kRefusal);
        default:
          return Key::kOther;
      }
    case 8:
      return is("function", Key::kFunction);
    case 9:
      return is("arguments", Key::kArguments);
    case 10:
      return is("tool_calls", Key::kToolCalls);
    case 13:
      switch (name[0]) {
        case 'p':
          return is("prompt_tokens", Key::kPromptTokens);
        case 'c':
          return is("cached_tokens", Key::kCachedTokens);
        case 'f':
          return is("finish_reason", Key::kFinishReason);
        default:
          return Key::kOther;
      }
    case 17:
      return is("completion_tokens", Key::kCompletionTokens);
    case 21:
      return is("prompt_tokens_details", Key::kPromptTokensDetails);
    default:
      return Key::kOther;
  }
}

struct Scalar {
  enum class Type { kNull, kBool, kInteger, kFloat, kString };
  Type type;
  int64_t integer = 0;
  std::string* text = nullptr;
};

class ChunkSax final {
 public:
  explicit ChunkSax(OpenAiChunk& chunk) : chunk_(chunk) {}

  bool null() { return OnScalar({Scalar::Type::kNull}); }
  bool boolean(bool) { return OnScalar({Scalar::Type::kBool}); }
  bool number_integer(int64_t value) { return OnScalar({Scalar::Type::kInteger, value}); }
  bool number_unsigned(uint64_t value) {
    // Beyond int64 a document's get<int64_t>() wraps too; no provider sends one.
    return OnScalar({Scalar::Type::kInteger, static_cast<int64_t>(value)});
  }
  bool number_float(double, const std::string&) { return OnScalar({Scalar::Type::kFloat}); }
  bool string(std::string& value) { return OnScalar({Scalar::Type::kString, 0, &value}); }

  bool start_object(std::size_t) { return Open(/*object=*/true); }
  bool start_array(std::size_t) { return Open(/*object=*/false); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(std::string& name) {
    if (ignored_depth_ > 0) return true;
    Frame& frame = frames_[depth_ - 1];
    frame.key = frame.place == Place::kIgnored ? Key::kOther : KeyOf(name);
    if (frame.key == Key::kOther) return true;
    // A document keeps the last of repeated keys; leave such text to one.
    const uint32_t bit = uint32_t{1} << static_cast<int>(frame.key);
    if ((frame.seen & bit) != 0) return false;
    frame.seen |= bit;
    return true;
  }

 private:
  struct Frame {
    Place place;
    Key key = Key::kOther;  // of the member being read (objects only)
    uint32_t seen = 0;      // keys met so far (objects only)
  };

  // Containers the reader keeps members of, under at most one ignored one:
  // root, choices, choice, delta, tool_calls, call, function, ignored.
  static constexpr size_t kMaxDepth = 8;

  OpenAiChunkChoice& choice() { return chunk_.choices.back(); }
  OpenAiChunkToolCall& call() { return choice().tool_calls.back(); }

  // A new container begins: where it is, or false when the chunk is unusual.
  bool Open(bool object) {
    if (depth_ == 0) {
      if (!object) return false;  // the chunk must be an object
      frames_[depth_++] = {Place::kRoot};
      return true;
    }
    const Frame& parent = frames_[depth_ - 1];
    if (parent.place == Place::kIgnored) {
      ++ignored_depth_;
      return true;
    }
    Place place = Place::kIgnored;
    switch (parent.place) {
      case Place::kRoot:
        if (parent.key == Key::kError) return false;  // a non-null error
        if (parent.key == Key::kUsage && object) {
          chunk_.usage = TokenUsage();
          place = Place::kUsage;
        }
        if (parent.key == Key::kChoices) {
          if (object) return false;
          place = Place::kChoices;
        }
        break;
      case Place::kUsage:
        if (parent.key == Key::kPromptTokensDetails && object) place = Place::kUsageDetails;
        break;
      case Place::kChoices:
        if (!object) return false;
        chunk_.choices.emplace_back();
        place = Place::kChoice;
        break;
      case Place::kChoice:
        if (parent.key == Key::kDelta) {
          if (!object) return false;
          place = Place::kDelta;
        }
        break;
      case Place::kDelta:
        if (parent.key == Key::kToolCalls) {
          if (object) return false;
          place = Place::kToolCalls;
        }
        break;
      case Place::kToolCalls:
        if (!object) return false;
        choice().tool_calls.emplace_back();
        place = Place::kToolCall;
        break;
      case Place::kToolCall:
        if (parent.key == Key::kFunction && object) place = Place::kFunction;
        break;
      case Place::kFunction:
        if (parent.key == Key::kArguments) return false;  // arguments as a JSON value
        break;
      case Place::kUsageDetails:
      case Place::kIgnored:
        break;
    }
    frames_[depth_++] = {place};  // kMaxDepth holds: only kIgnored has no child frame
    return true;
  }

  bool Close() {
    if (ignored_depth_ > 0) {
      --ignored_depth_;
    } else {
      --depth_;
    }
    return true;
  }

  bool OnScalar(const Scalar& value) {
    if (depth_ == 0) return false;  // the chunk must be an object
    if (ignored_depth_ > 0) return true;
    const Frame& frame = frames_[depth_ - 1];
    const bool is_string = value.type == Scalar::Type::kString;
    const bool is_integer = value.type == Scalar::Type::kInteger;
    const bool is_null = value.type == Scalar::Type::kNull;
    switch (frame.place) {
      case Place::kRoot:
        if (frame.key == Key::kId && is_string) chunk_.id = *value.text;
        if (frame.key == Key::kModel && is_string) chunk_.model = *value.text;
        if (frame.key == Key::kError && !is_null) return false;
        if (frame.key == Key::kChoices && !is_null) return false;
        break;
      case Place::kUsage:
        if (frame.key == Key::kPromptTokens && is_integer) {
          chunk_.usage->prompt_tokens = value.integer;
        }
        if (frame.key == Key::kCompletionTokens && is_integer) {
          chunk_.usage->completion_tokens = value.integer;
        }
        break;
      case Place::kUsageDetails:
        if (frame.key == Key::kCachedTokens && is_integer) {
          chunk_.usage->cached_tokens = value.integer;
        }
        break;
      case Place::kChoices:
      case Place::kToolCalls:
        return false;  // an element that is not an object
      case Place::kChoice:
        if (frame.key == Key::kIndex && is_integer) choice().index = value.integer;
        if (frame.key == Key::kFinishReason && is_string) choice().finish_reason = *value.text;
        if (frame.key == Key::kDelta && !is_null) return false;
        break;
      case Place::kDelta:
        if (frame.key == Key::kContent && is_string) choice().content = *value.text;
        if (frame.key == Key::kRefusal && is_string && !value.text->empty()) {
          choice().refusal = true;
        }
        if (frame.key == Key::kToolCalls && !is_null) return false;
        break;
      case Place::kToolCall:
        if (frame.key == Key::kIndex && is_integer) call().index = value.integer;
        if (frame.key == Key::kId && is_string) call().id = *value.text;
        break;
      case Place::kFunction:
        if (frame.key == Key::kName && is_string) call().name = *value.text;
        if (frame.key == Key::kArguments) {
          if (is_string) {
            call().arguments = *value.text;
          } else if (!is_null) {
            return false;  // arguments as a JSON value
          }
        }
        break;
      case Place::kIgnored:
        break;
    }
    return true;
  }

  OpenAiChunk& chunk_;
  std::array<Frame, kMaxDepth> frames_;
  size_t depth_ = 0;
  int ignored_depth_ = 0;  // containers open inside an ignored one
};

}  // namespace

bool ReadOpenAiChunk(std::string_view data, OpenAiChunk& chunk) {
  // Cleared rather than replaced: a chunk read again and again keeps the
  // capacity of its strings and vector.
  chunk.id.clear();
  chunk.model.clear();
  chunk.usage.reset();
  chunk.choices.clear();
  ChunkSax sax(chunk);
  thread_local std::string scratch;
  return ScanJson(data, sax, scratch);
}

}  // namespace omniforge::llm::wire_internal
