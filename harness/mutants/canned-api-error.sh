# loopcheck-mutant
# defect: makes no request and reports failed (api_error), as a loop that ignores OPENAI_BASE_URL and gives up on a dead endpoint does
# caught-by: terminal/reached-outcome
# cases: */*
# supports: previous_response_id, stateless, conversation, replay, stream, background, programmatic, approvals, budgets
# passes: none
printf '%s\n' '{"status":"failed","reason":"api_error"}'
