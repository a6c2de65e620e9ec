# loopcheck-mutant
# defect: makes no request and reports an empty final answer
# caught-by: terminal/reached-outcome
# cases: */*
# supports: previous_response_id, stateless, conversation, replay, stream, background, programmatic, approvals, budgets
# passes: none
printf '%s\n' '{"status":"completed","output_text":""}'
