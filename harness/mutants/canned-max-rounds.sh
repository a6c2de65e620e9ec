# loopcheck-mutant
# defect: makes no request and prints a canned failure with reason max_rounds
# caught-by: terminal/reached-outcome
# cases: */*
# supports: previous_response_id, stateless, conversation, replay, stream, background, programmatic, approvals, budgets
# passes: none
printf '%s\n' '{"status":"failed","reason":"max_rounds"}'
