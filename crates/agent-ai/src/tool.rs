//! The bare tool as a model sees it: a name, a description and a JSON Schema.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as it is sent to a model.
///
/// `parameters` is a plain JSON Schema object. Build it with [`Tool::for_args`] from
/// the argument struct the tool deserializes, so the schema the model sees, the
/// validator and the parsed value all come from one type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
}

impl Tool {
    /// A tool whose parameters are the JSON Schema of `T`.
    ///
    /// The schema is generated the way Pi's TypeBox schemas look on the wire:
    /// subschemas inlined (no `$defs`), `Option<T>` fields merely not required
    /// (no `null` in their type or `enum`), and no `$schema`, `title` or top-level
    /// description (the tool's own description says what it does).
    pub fn for_args<T: JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Tool {
            name: name.into(),
            description: description.into(),
            parameters: schema_of::<T>(),
        }
    }
}

/// The JSON Schema of `T`, in the shape described at [`Tool::for_args`].
pub fn schema_of<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        for key in ["$schema", "title", "description"] {
            object.remove(key);
        }
    }
    tidy(&mut value);
    value
}

/// Makes schemars' output look like a hand-written schema: drops integer
/// `format` annotations (`uint64`, `double`, ...) that models do not need, and
/// `null` from the schemas of optional properties (absent is how a model leaves
/// them out; the validator treats an explicit `null` as absent).
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("format").and_then(Value::as_str).is_some_and(|f| {
                matches!(
                    f,
                    "int8"
                        | "int16"
                        | "int32"
                        | "int64"
                        | "uint"
                        | "uint8"
                        | "uint16"
                        | "uint32"
                        | "uint64"
                        | "float"
                        | "double"
                )
            }) {
                map.remove("format");
            }
            let required: Vec<String> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    if !required.contains(name) {
                        drop_null_type(property);
                    }
                }
            }
            map.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Undoes what schemars does to make `Option<T>` nullable, in each of its three
/// shapes: `{"type": ["number", "null"]}` becomes `{"type": "number"}`;
/// `"enum": ["fast", null]` (a unit enum, or a `const` turned into a list)
/// becomes `"enum": ["fast"]`; an `anyOf: [X, {"type": "null"}]` (an enum with
/// data) becomes X. A `null` left in `enum` contradicted the `type` beside it,
/// so the model read `{"type": "string", "enum": ["fast", null]}`.
fn drop_null_type(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && values.iter().any(|v| !v.is_null())
    {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        let kept: Vec<Value> = branches
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
            .cloned()
            .collect();
        if kept.len() == 1 && branches.len() == 2 {
            map.remove("anyOf");
            if let Some(Value::Object(inner)) = kept.into_iter().next() {
                for (k, v) in inner {
                    map.entry(k).or_insert(v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Arguments of a read-like tool.
    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct ReadArgs {
        /// Path to the file to read (relative or absolute)
        path: String,
        /// Line number to start reading from (1-indexed)
        offset: Option<f64>,
    }

    #[test]
    fn schema_from_args_type_looks_like_pis() {
        let tool = Tool::for_args::<ReadArgs>("read", "Read a file.");
        assert_eq!(
            tool.parameters,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                    "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"}
                },
                "required": ["path"]
            })
        );
    }

    #[derive(JsonSchema, Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        SlowAndSteady,
    }

    /// Arguments whose optional properties are unit enums.
    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct ModeArgs {
        mode: Mode,
        opt_mode: Option<Mode>,
        opt_modes: Option<Vec<Mode>>,
    }

    #[test]
    fn optional_enum_lists_only_its_values() {
        let tool = Tool::for_args::<ModeArgs>("run", "Run.");
        let modes = json!({"type": "string", "enum": ["fast", "slowAndSteady"]});
        assert_eq!(
            tool.parameters,
            json!({
                "type": "object",
                "properties": {
                    "mode": modes,
                    "opt_mode": modes,
                    "opt_modes": {"type": "array", "items": modes}
                },
                "required": ["mode"]
            })
        );
    }
}
