//! Every check, declared once: its id, level and rule. The oracle's families judge by
//! these declarations; docs/checks.md's check table, `loopcheck list --checks` and the
//! reports read them, so a check's wording lives in one place.

use crate::scenario::Level;

/// A check: a stable id (`family/name`), its RFC 2119 level, and the rule a controller
/// must follow, worded to follow "the controller must".
#[derive(Debug, PartialEq, Eq)]
pub struct Check {
    /// `family/name`, stable once published.
    pub id: &'static str,
    /// MUST, SHOULD or MAY.
    pub level: Level,
    /// What the controller must do.
    pub rule: &'static str,
}

impl Check {
    /// The family: the part of the id before the `/`.
    pub fn family(&self) -> &'static str {
        self.id.split('/').next().unwrap_or(self.id)
    }
}

macro_rules! checks {
    ($($name:ident = $id:literal, $level:ident, $rule:literal;)*) => {
        $(
            #[doc = concat!("`", $id, "`: ", $rule)]
            pub const $name: Check = Check { id: $id, level: Level::$level, rule: $rule };
        )*
        /// Every check, in the order reports list them.
        pub const ALL: &[&Check] = &[$(&$name),*];
    };
}

checks! {
    WIRE_ACCEPTED = "wire/accepted", Must,
        "send requests the real API accepts (strict emulation of its 400/401/404 errors)";
    CALL_ID_ANSWERED = "call-id/answered", Must,
        "answer every pending call exactly once in the next request";
    CALL_ID_OWN_ID = "call-id/own-id", Must,
        "answer with the call's `call_id`, not its `fc_` item id, a name or an index";
    CALL_ID_EXECUTED_AS_ISSUED = "call-id/executed-as-issued", Must,
        "execute a call's own tool and arguments under its call_id";
    CALL_ID_RESULT_MATCHES = "call-id/result-matches", Must,
        "send each call the backend's result for that very call (as it is, or in a one-level envelope such as `{\"result\": ...}`), and no other call's";
    CALL_ID_ANSWER_KIND = "call-id/answer-kind", Must,
        "answer each call with the item of its kind: a `custom_tool_call` with a `custom_tool_call_output`, a `function_call` with a `function_call_output`, a `shell_call`, `local_shell_call` or `apply_patch_call` with its own `*_output`";
    REASONING_REPLAYED = "reasoning/replayed", Must,
        "(stateless, replay) replay every reasoning item with its `encrypted_content` intact (in replay, its stored id is enough)";
    REASONING_ITEMS_IN_ORDER = "reasoning/items-in-order", Must,
        "(stateless, replay) replay every prior output item, in order, reasoning right before its item";
    REASONING_INPUT_SHAPE = "reasoning/input-shape", Must,
        "(stateless, replay) send no output-only fields (`status` on reasoning, even as null)";
    REASONING_ITEMS_UNALTERED = "reasoning/items-unaltered", Must,
        "(stateless, replay) replay the model's calls and messages as it produced them: a call's name and arguments, a message's text";
    REASONING_ITEMS_COMPLETE = "reasoning/items-complete", Should,
        "(stateless, replay) replay what the model put beside its text: a message sent as parts keeps its output_text annotations, a reasoning item its reasoning_text content";
    REASONING_CALL_IDS_KEPT = "reasoning/call-ids-kept", Should,
        "(stateless, replay) replay a function_call that follows its reasoning item with its `fc_` id";
    STATE_CONFIG_RESENT = "state/config-resent", Must,
        "send the task's model and exact tool set on every request (the tools the model may call: the definitions, narrowed by `tool_choice.allowed_tools` when sent), each definition meaning what the task's does (description, `strict`, `allowed_callers`, parameters; an omitted `strict` is true), and give the model the task's instructions on every request: as `instructions`, or as a system or developer message in the context the request carries (its input plus what its chain or conversation holds)";
    STATE_CHAINED = "state/chained", Must,
        "(previous_response_id) chain to the latest response";
    STATE_NO_RESEND = "state/no-resend", Should,
        "(previous_response_id) send only new items";
    STATE_STORE_FALSE = "state/store-false", Must,
        "(stateless) send `store: false`";
    STATE_INCLUDE_ENCRYPTED = "state/include-encrypted", Should,
        "(stateless) ask for `reasoning.encrypted_content` where a response would otherwise serve reasoning without it (the API populates it by default on every create)";
    STATE_INPUT_REPLAYED = "state/input-replayed", Must,
        "(stateless, replay) replay the task's own input on every request";
    DISPATCH_REGISTERED_ONLY = "dispatch/registered-only", Must,
        "never execute a tool outside the task's registry";
    DISPATCH_ARGUMENTS_PARSED = "dispatch/arguments-parsed", Must,
        "never execute a call whose arguments are not a JSON object";
    DISPATCH_SCHEMA_VALID = "dispatch/schema-valid", Must,
        "never execute a call whose arguments break the tool's schema";
    DISPATCH_CALLER_ALLOWED = "dispatch/caller-allowed", Must,
        "never execute a call from a caller the tool's `allowed_callers` excludes";
    DISPATCH_INPUT_GRAMMAR = "dispatch/input-grammar", Must,
        "never execute a custom tool call whose input breaks the tool's `regex` grammar (`lark` grammars are not checked)";
    DISPATCH_LOADED_FROM_CATALOGUE = "dispatch/loaded-from-catalogue", Must,
        "answer a client `tool_search_call` with a `tool_search_output` whose tools are the task's deferred tools (`defer_loading: true`) that the search found, each as the task defines it";
    DISPATCH_HOSTED_NOT_ANSWERED = "dispatch/hosted-not-answered", Must,
        "never answer a server-executed tool search (`execution: \"server\"`, no `call_id`): replay its `tool_search_call` and `tool_search_output` as the server made them";
    DISPATCH_REJECTION_ANSWERED = "dispatch/rejection-answered", Must,
        "answer rejected calls with an error output and go on";
    DISPATCH_VALID_EXECUTED = "dispatch/valid-executed", Must,
        "really execute the valid calls";
    AUTHZ_DENIAL_RELAYED = "authz/denial-relayed", Must,
        "relay a backend 403 as an error output that carries the backend's message or code, never retry it";
    AUTHZ_APPROVAL_ASKED = "authz/approval-asked", Must,
        "ask the approver before an approval-required tool";
    AUTHZ_APPROVAL_BEFORE_EXECUTION = "authz/approval-before-execution", Must,
        "never execute it without the approval granted for that call";
    AUTHZ_APPROVAL_DENIED = "authz/approval-denied", Must,
        "never execute a refused call; answer it with an error output that carries the approver's reason";
    AUTHZ_PRINCIPAL_FORWARDED = "authz/principal-forwarded", Must,
        "run every tool and approval for the task's principal";
    AUTHZ_APPROVAL_REQUEST_MATCHES = "authz/approval-request-matches", Must,
        "ask the approver about the call's own tool and arguments";
    AUTHZ_SAFETY_CHECKS_APPROVED = "authz/safety-checks-approved", Must,
        "put a `computer_call` with `pending_safety_checks` to the approver before performing it, perform it only with the approval granted for it, and never perform one the approver refused";
    AUTHZ_SAFETY_CHECKS_ACKNOWLEDGED = "authz/safety-checks-acknowledged", Must,
        "list a computer call's pending safety checks in its `computer_call_output`'s `acknowledged_safety_checks` if, and only if, the approver approved the call, and never acknowledge a check the model did not raise";
    AUTHZ_TOOL_TEXT_AS_DATA = "authz/tool-text-as-data", Must,
        "send what a tool returns only as its call's output, never as a system, developer or user message or in `instructions`";
    EFFECTS_AT_MOST_ONCE = "effects/at-most-once", Must,
        "execute each call at most once, only calls the model issued";
    EFFECTS_TOOL_RETRY_BOUNDED = "effects/tool-retry-bounded", Must,
        "send one call to a failing tool backend (429, 5xx) at most 10 times, under its call_id, and when it never succeeds answer the call with an error output that carries the backend's error (message, code or status) and go on";
    EFFECTS_TOOL_RETRY_SPACED = "effects/tool-retry-spaced", Must,
        "wait as long as a tool backend's 429 asks (`retry-after-ms`, else `retry-after` in seconds) before sending that call again";
    BUDGET_MAX_ROUNDS = "budget/max-rounds", Must,
        "make at most `max_rounds` model requests";
    BUDGET_LAST_ROUND_IDLE = "budget/last-round-idle", Must,
        "execute nothing whose result could never be sent back";
    BUDGET_MAX_TOOL_CALLS = "budget/max-tool-calls", Must,
        "execute at most `max_tool_calls` tool calls (distinct call_ids) in the whole case";
    BUDGET_DEADLINE = "budget/deadline", Must,
        "start no model request and no tool execution after `deadline_ms` (measured leniently: from the first API request, plus 500 ms)";
    BUDGET_TOOL_TIMEOUT = "budget/tool-timeout", Must,
        "not wait for a tool longer than `tool_timeout_ms`: answer the call with an error output, or retry it under the same call_id";
    TERMINAL_OUTCOME = "terminal/outcome", Must,
        "report the final message's text, or a failure when there is no answer";
    TERMINAL_REASON = "terminal/reason", Should,
        "use the recognised reason word (`max_rounds`, `incomplete`, ...)";
    TERMINAL_REFUSAL_TEXT = "terminal/refusal-text", Should,
        "report a refusal with the model's refusal text in the result line (its `detail`)";
    TERMINAL_CALLS_BESIDE_MESSAGE = "terminal/calls-beside-message", Must,
        "not take a message as the answer while calls arrive beside it";
    TERMINAL_UNFINISHED_NOT_EXECUTED = "terminal/unfinished-not-executed", Must,
        "not execute calls from an incomplete or failed response (in a stream, a call run whole at its `output_item.done`, before the ending arrived, is excused; the loop still stops at the ending)";
    TERMINAL_REACHED_OUTCOME = "terminal/reached-outcome", Must,
        "report an outcome only after reaching the turn that produces it: the model requests it rests on must reach the API (a result printed without them proves nothing, whatever the case's level)";
    TERMINAL_STOPPED_AT_ANSWER = "terminal/stopped-at-answer", Must,
        "stop at the turn that ends the loop: a final answer, or an incomplete, failed, refused or broken response; after an empty answer (no message, no calls) one nudge is allowed, not more";
    TRANSPORT_RETRIED = "transport/retried", Must,
        "retry transient errors (429, 5xx, dropped connections)";
    TRANSPORT_NO_RETRY_4XX = "transport/no-retry-4xx", Must,
        "not retry client errors or an `x-should-retry: false` answer";
    TRANSPORT_RETRY_BOUNDED = "transport/retry-bounded", Must,
        "attempt one request at most 5 times";
    TRANSPORT_RETRY_AFTER_HONOURED = "transport/retry-after-honoured", Must,
        "wait as long as `retry-after` / `retry-after-ms` ask";
    STREAM_REQUESTED = "stream/requested", Must,
        "send `stream: true` when the task streams";
    STREAM_EXECUTED_AFTER_DONE = "stream/executed-after-done", Must,
        "execute a streamed call only after its `output_item.done`";
    STREAM_BROKEN_NOT_ANSWER = "stream/broken-not-answer", Must,
        "never take a cut stream or an `error` event as an answer";
    WEBSOCKET_OVER_THE_SOCKET = "websocket/over-the-socket", Must,
        "send every model request of a WebSocket run as a `response.create` event over the socket";
    WEBSOCKET_CONNECTION_KEPT = "websocket/connection-kept", Should,
        "keep one connection for the loop, opening a new one only when the last was lost";
    WEBSOCKET_RECONNECTS = "websocket/reconnects", Must,
        "open a new connection and carry on when the server closes one between turns";
    WEBSOCKET_CACHED_CHAIN = "websocket/cached-chain", Must,
        "continue a `store: false` response only on the connection that made it (after a reconnect, resend the context)";
    WEBSOCKET_ONE_IN_FLIGHT = "websocket/one-in-flight", Must,
        "send the next `response.create` only after the last one's terminal event (or on its own `stream_id`)";
    WEBSOCKET_WARM_UP_NOT_A_TURN = "websocket/warm-up-not-a-turn", Must,
        "never take a warm-up's empty response (`generate: false`) for the model's turn";
    BACKGROUND_REQUESTED = "background/requested", Must,
        "send `background: true` when the task runs in the background";
    BACKGROUND_POLLED_TO_TERMINAL = "background/polled-to-terminal", Must,
        "read a queued response again once it has ended, by polling or after its webhook";
    BACKGROUND_WEBHOOK_VERIFIED = "background/webhook-verified", Must,
        "act on no webhook event whose signature does not verify";
    PROGRAM_CALLER_ECHOED = "program/caller-echoed", Must,
        "answer a program-owned call with its `caller` unchanged";
    PROGRAM_REPLAYED = "program/replayed", Must,
        "(stateless, replay) replay `program` items verbatim, fingerprint included";
    PROGRAM_CONTINUED = "program/continued", Must,
        "go on past `program_output` to the model's final message";
    MCP_APPROVAL_ANSWERED = "mcp/approval-answered", Must,
        "answer every `mcp_approval_request` exactly once, in the next request, with an `mcp_approval_response` naming its id";
    MCP_APPROVAL_ASKED = "mcp/approval-asked", Must,
        "put every MCP approval request to the approver (its id, tool and arguments) before answering it";
    MCP_APPROVAL_DECISION = "mcp/approval-decision", Must,
        "answer an MCP approval request with the approver's decision: `approve: true` only when it granted it, `approve: false` with its reason when it refused";
    HOSTED_REPLAYED = "hosted/replayed", Must,
        "(stateless, replay) replay every hosted tool item (`web_search_call`, `file_search_call`, `code_interpreter_call`, `image_generation_call`, `mcp_call`, `mcp_list_tools`) and MCP approval request as the server sent it";
    HOSTED_NOT_DISPATCHED = "hosted/not-dispatched", Must,
        "never run a hosted tool or an MCP tool itself: no backend request for a hosted item or an MCP tool, no output item answering one";
    STATE_CONVERSATION = "state/conversation", Must,
        "(conversation) name the same conversation on every request";
    TERMINAL_RESULT_LINE = "terminal/result-line", Must,
        "print a valid result line last on stdout";
    TERMINAL_FINISHED = "terminal/finished", Must,
        "finish within the case timeout";
    COMPACTION_COMPACTED = "compaction/compacted", Must,
        "compact when the task asks: send its `context_management` with every request; (stateless, replay) call `/responses/compact` once `compact_after_rounds` responses were answered, and carry on from the compacted output";
    COMPACTION_REPLAYED = "compaction/replayed", Must,
        "(stateless, replay) send the latest compaction item back in every later request, byte for byte (`id` and `encrypted_content`)";
    COMPACTION_NOTHING_RESENT = "compaction/nothing-resent", Must,
        "(stateless, replay) after `/responses/compact`, never send again an item the compacted output replaced";
    TERMINAL_STRUCTURED_OUTPUT = "terminal/structured-output", Must,
        "with a `text_format` task, send the format with every request and report a final message that breaks it (not JSON, or against the schema) as `failed`, never as the answer";
}

/// The declaration of a check id, if there is one.
pub fn find(id: &str) -> Option<&'static Check> {
    ALL.iter().copied().find(|check| check.id == id)
}
