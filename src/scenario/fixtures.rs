//! The built-in fixture toolset: tool definitions a scenario names by `name`.

use serde_json::{Value, json};

/// What the approver says when a scripted refusal gives no reason.
pub const DEFAULT_REFUSAL: &str = "denied by the approver";

fn function(name: &str, description: &str, parameters: Value) -> Value {
    json!({
        "type": "function",
        "name": name,
        "description": description,
        "strict": true,
        "parameters": parameters,
    })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Names of the fixture tools.
pub fn names() -> Vec<&'static str> {
    vec![
        "get_stock",
        "get_weather",
        "get_invoice",
        "issue_refund",
        "send_email",
        "search_docs",
        "get_order",
        "convert_currency",
    ]
}

/// The definition of a fixture tool, as sent in a request's `tools`.
pub fn definition(name: &str) -> Option<Value> {
    let def = match name {
        "get_stock" => function(
            name,
            "Read the available units for one SKU.",
            object(
                json!({"sku": {"type": "string", "pattern": "^[A-Z][0-9]+$"}}),
                &["sku"],
            ),
        ),
        "get_weather" => function(
            name,
            "Current weather for a city.",
            object(
                json!({"city": {"type": "string", "minLength": 1}}),
                &["city"],
            ),
        ),
        "get_invoice" => function(
            name,
            "Read one invoice of the caller's tenant.",
            object(
                json!({"invoice_id": {"type": "string", "pattern": "^INV-[0-9]+$"}}),
                &["invoice_id"],
            ),
        ),
        "issue_refund" => function(
            name,
            "Refund part or all of an invoice. Moves money: needs an approval.",
            object(
                json!({
                    "invoice_id": {"type": "string", "pattern": "^INV-[0-9]+$"},
                    "amount_cents": {"type": "integer", "minimum": 1}
                }),
                &["invoice_id", "amount_cents"],
            ),
        ),
        "send_email" => function(
            name,
            "Send an email on the user's behalf.",
            object(
                json!({
                    "to": {"type": "string", "format": "email"},
                    "subject": {"type": "string"},
                    "body": {"type": "string"}
                }),
                &["to", "subject", "body"],
            ),
        ),
        "search_docs" => function(
            name,
            "Search the knowledge base.",
            object(
                json!({"query": {"type": "string", "minLength": 1}}),
                &["query"],
            ),
        ),
        "get_order" => function(
            name,
            "Read one order.",
            object(json!({"order_id": {"type": "string"}}), &["order_id"]),
        ),
        "convert_currency" => function(
            name,
            "Convert an amount between currencies.",
            object(
                json!({
                    "amount": {"type": "number"},
                    "from": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY"]},
                    "to": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY"]}
                }),
                &["amount", "from", "to"],
            ),
        ),
        _ => return None,
    };
    Some(def)
}
