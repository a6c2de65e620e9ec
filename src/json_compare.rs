//! JSON compared as a client means it: numbers by value, objects by key, and a pattern
//! matched as a subset. The oracle, the tool backend and replay drift all compare so.

use serde_json::Value;

/// True when every key of `pattern` is in `value` with an equal value.
pub fn matches_subset(pattern: &Value, value: &Value) -> bool {
    match (pattern, value) {
        (Value::Object(pattern), Value::Object(value)) => pattern.iter().all(|(key, expected)| {
            value
                .get(key)
                .is_some_and(|actual| matches_subset(expected, actual))
        }),
        (pattern, value) => json_equal(pattern, value),
    }
}

/// JSON equality with numbers compared by value: `1200.0` and `1200` are the same number,
/// and a JavaScript or Python client may write either.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(x), Some(y), _, _) => x == y,
                (_, _, Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, a)| y.get(key).is_some_and(|b| json_equal(a, b)))
        }
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_compare_by_value_everything_else_exactly() {
        assert!(json_equal(
            &json!({"a": [1200.0, 2]}),
            &json!({"a": [1200, 2.0]})
        ));
        assert!(json_equal(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!json_equal(&json!(1200.5), &json!(1200)));
        assert!(!json_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_equal(&json!("1"), &json!(1)));
        assert!(matches_subset(
            &json!({"amount": 10}),
            &json!({"amount": 10.0, "to": "EUR"})
        ));
    }
}
