//! Schemas that refer to themselves without reaching a value.
//!
//! `{"$defs": {"A": {"allOf": [{"$ref": "#/$defs/B"}]}, "B": {"anyOf":
//! [{"$ref": "#/$defs/A"}]}}}` compiles, but checking any value against `A`
//! checks it against `B`, then `A` again, for ever: the validator overflowed
//! the stack and took the whole process with it, so one MCP server with such
//! a schema killed the agent at its tool's first call. A reference reached
//! through `properties` or `items` is fine: it moves into the value, which
//! ends.

use std::collections::HashMap;

use serde_json::Value;

use super::coerce::{escape_pointer_token, local_pointer};

/// Keywords whose subschemas (one, a list, or a map of them) apply to the
/// same value as the schema holding them.
const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];
const IN_PLACE_LIST: &[&str] = &["allOf", "anyOf", "oneOf"];
const IN_PLACE_MAP: &[&str] = &["dependentSchemas"];

/// A chain of subschemas (JSON pointers into `root`) that leads back to its
/// first one while staying on the same value, when `root` holds one.
pub(super) fn in_place_cycle(root: &Value) -> Option<Vec<String>> {
    let mut state: HashMap<String, Visit> = HashMap::new();
    for start in schema_pointers(root) {
        if state.contains_key(&start) {
            continue;
        }
        // Depth first without recursion: a schema nested thousands deep
        // must not overflow the stack this check is there to protect.
        let mut path: Vec<(String, std::vec::IntoIter<String>)> = Vec::new();
        state.insert(start.clone(), Visit::Open);
        let next = in_place_steps(root, &start).into_iter();
        path.push((start, next));
        while let Some((_, next)) = path.last_mut() {
            match next.next() {
                Some(step) => match state.get(&step) {
                    Some(Visit::Open) => {
                        let from = path.iter().position(|(at, _)| *at == step)?;
                        let mut cycle: Vec<String> =
                            path[from..].iter().map(|(at, _)| at.clone()).collect();
                        cycle.push(step);
                        return Some(cycle);
                    }
                    Some(Visit::Done) => {}
                    None => {
                        state.insert(step.clone(), Visit::Open);
                        let next = in_place_steps(root, &step).into_iter();
                        path.push((step, next));
                    }
                },
                None => {
                    if let Some((done, _)) = path.pop() {
                        state.insert(done, Visit::Done);
                    }
                }
            }
        }
    }
    None
}

#[derive(Clone, Copy)]
enum Visit {
    Open,
    Done,
}

/// The subschemas that check the same value as the one at `pointer`.
fn in_place_steps(root: &Value, pointer: &str) -> Vec<String> {
    let Some(Value::Object(schema)) = root.pointer(pointer) else {
        return Vec::new();
    };
    let mut steps = Vec::new();
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(local_pointer)
    {
        steps.push(target);
    }
    for key in IN_PLACE_ONE {
        if schema.get(*key).is_some_and(Value::is_object) {
            steps.push(format!("{pointer}/{key}"));
        }
    }
    for key in IN_PLACE_LIST {
        if let Some(Value::Array(items)) = schema.get(*key) {
            steps.extend((0..items.len()).map(|index| format!("{pointer}/{key}/{index}")));
        }
    }
    for key in IN_PLACE_MAP {
        if let Some(Value::Object(map)) = schema.get(*key) {
            steps.extend(
                map.keys()
                    .map(|name| format!("{pointer}/{key}/{}", escape_pointer_token(name))),
            );
        }
    }
    steps
}

/// The pointer of every object in `root` (each may be a schema a cycle
/// starts from), the root first.
fn schema_pointers(root: &Value) -> Vec<String> {
    let mut pointers = Vec::new();
    let mut waiting = vec![(String::new(), root)];
    while let Some((pointer, value)) = waiting.pop() {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    waiting.push((format!("{pointer}/{}", escape_pointer_token(key)), child));
                }
                pointers.push(pointer);
            }
            Value::Array(items) => {
                for (index, child) in items.iter().enumerate() {
                    waiting.push((format!("{pointer}/{index}"), child));
                }
            }
            _ => {}
        }
    }
    pointers
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn references_that_stay_on_one_value_make_a_cycle() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {
                "A": {"allOf": [{"$ref": "#/$defs/B"}]},
                "B": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/A"}]}
            }
        });
        let cycle = in_place_cycle(&schema).unwrap();
        assert_eq!(cycle.first(), cycle.last());
        assert!(cycle.contains(&"/$defs/B".to_owned()), "{cycle:?}");
        assert_eq!(in_place_cycle(&json!({"$ref": "#"})).unwrap(), ["", ""]);
    }

    #[test]
    fn references_that_move_into_the_value_make_none() {
        let tree = json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {
                "type": "object",
                "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
                }
            }}
        });
        assert_eq!(in_place_cycle(&tree), None);
    }
}
