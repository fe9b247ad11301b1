// The keys of the entities of an email to send (email_request.h in the
// intent service; values documented with IntentAnalysis.entities in
// intent_service.proto), for the callers that read them (the
// orchestrator's email flow): to whom, its subject line and the sentence
// it says (the sender adds the greeting).
#pragma once

namespace omniforge::intent {

inline constexpr char kEmailToEntity[] = "email_to";            // "Sarah, John Smith"
inline constexpr char kEmailSubjectEntity[] = "email_subject";  // "The agenda for ..."
inline constexpr char kEmailBodyEntity[] = "email_body";        // "Here is the agenda ..."

}  // namespace omniforge::intent
