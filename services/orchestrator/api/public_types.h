// The public API's own types (omniforge/orchestrator/v1/chat_types.proto)
// made from the services' types. What a client sees is chosen here: an
// analysis field for field as the intent service made it, a risk, an
// executor agent's outcome, and a conversation's history without the
// orchestrator's routing metadata, tenant or user.
#pragma once

#include "omniforge/conversation/v1/conversation_service.pb.h"
#include "omniforge/executor/v1/executor_service.pb.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "omniforge/orchestrator/v1/chat_types.pb.h"

namespace omniforge::orchestrator {

// The intent service's analysis as the public type: the two messages have
// the same fields (chat_types_test checks it), so this copies every field; a
// field the intent service has and the public type does not is dropped.
::omniforge::orchestrator::v1::IntentAnalysis PublicAnalysis(
    const ::omniforge::intent::v1::IntentAnalysis& analysis);

::omniforge::orchestrator::v1::ToolRisk PublicRisk(::omniforge::executor::v1::ToolRisk risk);
::omniforge::orchestrator::v1::TaskStatus PublicTaskStatus(
    ::omniforge::executor::v1::TaskStatus status);
::omniforge::orchestrator::v1::ExecutorErrorCode PublicExecutorError(
    ::omniforge::executor::v1::ErrorCode code);

// What a message was understood to want, as the public type shows it (the
// same values); UNSPECIFIED for a value the public type lacks.
::omniforge::orchestrator::v1::ActionType PublicActionType(
    ::omniforge::intent::v1::ActionType action);

// A plan's context as the public type shows it.
::omniforge::orchestrator::v1::ContextType PublicContextType(
    ::omniforge::intent::v1::ContextType context);

// A request's context as the intent service reads it (the request was
// checked: an unknown value never gets here).
::omniforge::intent::v1::ContextType InternalContextType(
    ::omniforge::orchestrator::v1::ContextType context);

// A conversation as the caller reads it: id, title, times, message count.
::omniforge::orchestrator::v1::Conversation PublicConversation(
    const ::omniforge::conversation::v1::Conversation& conversation);

// A message as the caller reads it: the text and where it stands, the turn
// it belongs to and whether a credential was masked in it; never the routing
// metadata stored with it.
::omniforge::orchestrator::v1::Message PublicMessage(
    const ::omniforge::conversation::v1::Message& message);

}  // namespace omniforge::orchestrator
