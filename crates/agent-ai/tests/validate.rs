//! Argument validation as Pi 0.73.1 does it: the coercion table of
//! `docs/tool-behaviour.md` §1 (its coercion table and error texts), the `val_*`
//! parity fixtures (written out here, not read), and deviation #1 (`null`).
//!
//! The schemas are the built-in tools' schemas as Pi sends them, inline as JSON.

// The helpers below are test code too: a failure there is a failed test.
#![allow(clippy::unwrap_used)]

use agent_ai::{SchemaError, Tool, ToolValidator};
use serde_json::{Value, json};

fn tool(name: &str, parameters: Value) -> Tool {
    Tool {
        name: name.to_owned(),
        description: String::new(),
        parameters,
    }
}

fn validator(name: &str, parameters: Value) -> ToolValidator {
    ToolValidator::new(&tool(name, parameters)).unwrap()
}

fn read() -> ToolValidator {
    validator(
        "read",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                "limit": {"type": "number", "description": "Maximum number of lines to read"}
            },
            "required": ["path"]
        }),
    )
}

fn bash() -> ToolValidator {
    validator(
        "bash",
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "Bash command to execute"},
                "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}
            },
            "required": ["command"]
        }),
    )
}

fn edit() -> ToolValidator {
    validator(
        "edit",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "oldText": {"type": "string", "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},
                            "newText": {"type": "string", "description": "Replacement text for this targeted edit."}
                        },
                        "required": ["oldText", "newText"],
                        "additionalProperties": false
                    },
                    "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead."
                }
            },
            "required": ["path", "edits"],
            "additionalProperties": false
        }),
    )
}

fn grep() -> ToolValidator {
    validator(
        "grep",
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
                "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
                "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
                "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
                "literal": {"type": "boolean", "description": "Treat pattern as literal string instead of regex (default: false)"},
                "context": {"type": "number", "description": "Number of lines to show before and after each match (default: 0)"},
                "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"}
            },
            "required": ["pattern"]
        }),
    )
}

/// Parses model output exactly as received, so key order is the model's.
fn args(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn error_text(validator: &ToolValidator, arguments: &Value) -> String {
    validator.validate(arguments).unwrap_err().to_string()
}

// ---- the coercion table (docs/tool-behaviour.md §1) ----

#[test]
fn number_for_a_string_becomes_its_digits() {
    assert_eq!(
        read().validate(&json!({"path": 12345})).unwrap(),
        json!({"path": "12345"})
    );
}

#[test]
fn boolean_for_a_string_becomes_its_name() {
    assert_eq!(
        bash().validate(&json!({"command": true})).unwrap(),
        json!({"command": "true"})
    );
}

#[test]
fn numeric_strings_become_numbers() {
    assert_eq!(
        read()
            .validate(&json!({"path": "a", "offset": "10"}))
            .unwrap(),
        json!({"path": "a", "offset": 10})
    );
    assert_eq!(
        read()
            .validate(&json!({"path": "a", "offset": "2.5"}))
            .unwrap(),
        json!({"path": "a", "offset": 2.5})
    );
}

#[test]
fn non_numeric_string_for_a_number_is_rejected_in_pis_words() {
    assert_eq!(
        error_text(&read(), &args(r#"{"path":"a","offset":"abc"}"#)),
        "Validation failed for tool \"read\":\n  - offset: must be number\n\nReceived arguments:\n{\n  \"path\": \"a\",\n  \"offset\": \"abc\"\n}"
    );
}

#[test]
fn true_for_a_number_becomes_one() {
    assert_eq!(
        read()
            .validate(&json!({"path": "a", "limit": true}))
            .unwrap(),
        json!({"path": "a", "limit": 1})
    );
}

#[test]
fn empty_string_for_a_number_becomes_zero() {
    assert_eq!(
        bash()
            .validate(&json!({"command": "ls", "timeout": ""}))
            .unwrap(),
        json!({"command": "ls", "timeout": 0})
    );
}

#[test]
fn true_and_one_in_any_form_become_boolean_true() {
    for given in [json!("true"), json!("1"), json!(1)] {
        assert_eq!(
            grep()
                .validate(&json!({"pattern": "m", "ignoreCase": given}))
                .unwrap(),
            json!({"pattern": "m", "ignoreCase": true}),
            "{given}"
        );
    }
}

#[test]
fn yes_for_a_boolean_is_rejected() {
    assert_eq!(
        error_text(&grep(), &args(r#"{"pattern":"m","ignoreCase":"yes"}"#)),
        "Validation failed for tool \"grep\":\n  - ignoreCase: must be boolean\n\nReceived arguments:\n{\n  \"pattern\": \"m\",\n  \"ignoreCase\": \"yes\"\n}"
    );
}

#[test]
fn arrays_and_objects_for_a_string_are_rejected() {
    assert_eq!(
        error_text(&bash(), &args(r#"{"command":["a"]}"#)),
        "Validation failed for tool \"bash\":\n  - command: must be string\n\nReceived arguments:\n{\n  \"command\": [\n    \"a\"\n  ]\n}"
    );
    assert_eq!(
        error_text(&bash(), &args(r#"{"command":{"x":1}}"#)),
        "Validation failed for tool \"bash\":\n  - command: must be string\n\nReceived arguments:\n{\n  \"command\": {\n    \"x\": 1\n  }\n}"
    );
}

#[test]
fn json_string_for_an_array_is_not_parsed() {
    let given = args(r#"{"path":"f.txt","edits":"[{\"oldText\":\"a\",\"newText\":\"b\"}]"}"#);
    assert_eq!(
        error_text(&edit(), &given),
        "Validation failed for tool \"edit\":\n  - edits.0: must be object\n\nReceived arguments:\n{\n  \"path\": \"f.txt\",\n  \"edits\": \"[{\\\"oldText\\\":\\\"a\\\",\\\"newText\\\":\\\"b\\\"}]\"\n}"
    );
}

#[test]
fn lone_edit_object_becomes_a_one_item_array() {
    assert_eq!(
        edit()
            .validate(&json!({"path": "f", "edits": {"oldText": "a", "newText": "b"}}))
            .unwrap(),
        json!({"path": "f", "edits": [{"oldText": "a", "newText": "b"}]})
    );
}

#[test]
fn extra_property_is_kept_when_the_schema_allows_it() {
    assert_eq!(
        read()
            .validate(&json!({"path": "a", "mode": "fast"}))
            .unwrap(),
        json!({"path": "a", "mode": "fast"})
    );
}

#[test]
fn non_object_arguments_fail_at_root() {
    assert_eq!(
        error_text(&read(), &json!("notanobject")),
        "Validation failed for tool \"read\":\n  - root: must be object\n\nReceived arguments:\n\"notanobject\""
    );
}

// ---- Pi's key validation cases, re-run against 0.73.1 ----

#[test]
fn missing_required_property_names_it_in_typebox_words() {
    assert_eq!(
        error_text(&read(), &json!({})),
        "Validation failed for tool \"read\":\n  - path: must have required properties path\n\nReceived arguments:\n{}"
    );
}

#[test]
fn extra_key_in_a_strict_object_gives_two_lines() {
    let given = args(r#"{"path":"f.txt","edits":[{"oldText":"a","newText":"b","extra":1}]}"#);
    assert_eq!(
        error_text(&edit(), &given),
        "Validation failed for tool \"edit\":\n  - edits.0.extra: schema is false\n  - edits.0: must not have additional properties\n\nReceived arguments:\n{\n  \"path\": \"f.txt\",\n  \"edits\": [\n    {\n      \"oldText\": \"a\",\n      \"newText\": \"b\",\n      \"extra\": 1\n    }\n  ]\n}"
    );
}

#[test]
fn extra_keys_come_before_bad_properties_in_a_strict_object() {
    let given = args(r#"{"path":"f","edits":[{"newText":[1],"oldText":[2],"extra":3}]}"#);
    assert_eq!(
        error_text(&edit(), &given),
        "Validation failed for tool \"edit\":\n  - edits.0.extra: schema is false\n  - edits.0: must not have additional properties\n  - edits.0.oldText: must be string\n  - edits.0.newText: must be string\n\nReceived arguments:\n{\n  \"path\": \"f\",\n  \"edits\": [\n    {\n      \"newText\": [\n        1\n      ],\n      \"oldText\": [\n        2\n      ],\n      \"extra\": 3\n    }\n  ]\n}"
    );
}

// ---- parity fixtures val_*.json (and edit_edits_bad_json_string) ----

#[test]
fn parity_val_bash_command_array() {
    assert_eq!(
        error_text(&bash(), &args(r#"{"command":["echo","hi"]}"#)),
        "Validation failed for tool \"bash\":\n  - command: must be string\n\nReceived arguments:\n{\n  \"command\": [\n    \"echo\",\n    \"hi\"\n  ]\n}"
    );
}

#[test]
fn parity_val_edit_missing_new_text() {
    assert_eq!(
        error_text(
            &edit(),
            &args(r#"{"path":"f.txt","edits":[{"oldText":"a"}]}"#)
        ),
        "Validation failed for tool \"edit\":\n  - edits.0.newText: must have required properties newText\n\nReceived arguments:\n{\n  \"path\": \"f.txt\",\n  \"edits\": [\n    {\n      \"oldText\": \"a\"\n    }\n  ]\n}"
    );
}

#[test]
fn parity_val_grep_ignore_case_string() {
    assert_eq!(
        grep()
            .validate(&args(r#"{"pattern":"m","ignoreCase":"true"}"#))
            .unwrap(),
        json!({"pattern": "m", "ignoreCase": true})
    );
}

#[test]
fn parity_val_read_limit_bad_string() {
    assert_eq!(
        error_text(&read(), &args(r#"{"path":"ten.txt","limit":"ten"}"#)),
        "Validation failed for tool \"read\":\n  - limit: must be number\n\nReceived arguments:\n{\n  \"path\": \"ten.txt\",\n  \"limit\": \"ten\"\n}"
    );
}

#[test]
fn parity_val_read_missing_path() {
    assert_eq!(
        error_text(&read(), &json!({})),
        "Validation failed for tool \"read\":\n  - path: must have required properties path\n\nReceived arguments:\n{}"
    );
}

#[test]
fn parity_edit_edits_bad_json_string() {
    assert_eq!(
        error_text(&edit(), &args(r#"{"path":"f.py","edits":"[{oops"}"#)),
        "Validation failed for tool \"edit\":\n  - edits.0: must be object\n\nReceived arguments:\n{\n  \"path\": \"f.py\",\n  \"edits\": \"[{oops\"\n}"
    );
}

// ---- deviation #1: null ----

#[test]
fn deviation_1_null_optional_property_means_absent() {
    assert_eq!(
        read()
            .validate(&json!({"path": "a", "offset": null, "limit": null}))
            .unwrap(),
        json!({"path": "a"})
    );
    assert_eq!(
        grep()
            .validate(&json!({"pattern": "m", "path": null, "ignoreCase": null}))
            .unwrap(),
        json!({"pattern": "m"})
    );
}

#[test]
fn deviation_1_null_required_property_is_an_error() {
    assert_eq!(
        error_text(&read(), &json!({"path": null})),
        "Validation failed for tool \"read\":\n  - path: must be string\n\nReceived arguments:\n{\n  \"path\": null\n}"
    );
    assert_eq!(
        error_text(
            &edit(),
            &args(r#"{"path":"f","edits":[{"oldText":null,"newText":"b"}]}"#)
        ),
        "Validation failed for tool \"edit\":\n  - edits.0.oldText: must be string\n\nReceived arguments:\n{\n  \"path\": \"f\",\n  \"edits\": [\n    {\n      \"oldText\": null,\n      \"newText\": \"b\"\n    }\n  ]\n}"
    );
}

#[test]
fn deviation_1_null_stays_where_the_schema_accepts_it() {
    let nullable = validator(
        "t",
        json!({"type": "object", "properties": {"note": {"type": ["string", "null"]}}}),
    );
    assert_eq!(
        nullable.validate(&json!({"note": null})).unwrap(),
        json!({"note": null})
    );
}

// ---- error list shape ----

#[test]
fn several_missing_properties_share_one_line() {
    assert_eq!(
        error_text(&edit(), &json!({})),
        "Validation failed for tool \"edit\":\n  - path: must have required properties path, edits\n\nReceived arguments:\n{}"
    );
}

#[test]
fn problems_are_listed_in_typebox_order() {
    // required before properties; properties in schema order, not the model's.
    let given = args(r#"{"edits":"x","limit":1}"#);
    let strict = validator(
        "edit",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "edits": {"type": "array", "items": {"type": "object"}},
                "limit": {"type": "number"}
            },
            "required": ["path", "edits"],
            "additionalProperties": false
        }),
    );
    assert_eq!(
        error_text(&strict, &given),
        "Validation failed for tool \"edit\":\n  - path: must have required properties path\n  - edits.0: must be object\n\nReceived arguments:\n{\n  \"edits\": \"x\",\n  \"limit\": 1\n}"
    );
    let given = args(r#"{"offset":"x"}"#);
    assert_eq!(
        error_text(&read(), &given),
        "Validation failed for tool \"read\":\n  - path: must have required properties path\n  - offset: must be number\n\nReceived arguments:\n{\n  \"offset\": \"x\"\n}"
    );
    let given = args(r#"{"limit":"many","path":"a","offset":"x"}"#);
    assert_eq!(
        error_text(&read(), &given),
        "Validation failed for tool \"read\":\n  - offset: must be number\n  - limit: must be number\n\nReceived arguments:\n{\n  \"limit\": \"many\",\n  \"path\": \"a\",\n  \"offset\": \"x\"\n}"
    );
}

#[test]
fn received_arguments_print_numbers_as_javascript_does() {
    let given = args(r#"{"path":"a","offset":"x","limit":10.0}"#);
    assert_eq!(
        error_text(&read(), &given),
        "Validation failed for tool \"read\":\n  - offset: must be number\n\nReceived arguments:\n{\n  \"path\": \"a\",\n  \"offset\": \"x\",\n  \"limit\": 10\n}"
    );
}

// ---- coercion reaches nested schemas ----

#[test]
fn integer_schema_takes_only_integral_results() {
    let counter = validator(
        "t",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
    );
    assert_eq!(
        counter.validate(&json!({"n": "3"})).unwrap(),
        json!({"n": 3})
    );
    assert_eq!(
        counter.validate(&json!({"n": 3.0})).unwrap(),
        json!({"n": 3})
    );
    assert_eq!(
        error_text(&counter, &json!({"n": "2.5"})),
        "Validation failed for tool \"t\":\n  - n: must be integer\n\nReceived arguments:\n{\n  \"n\": \"2.5\"\n}"
    );
}

#[test]
fn union_member_that_already_matches_is_not_coerced() {
    let either = validator(
        "t",
        json!({"type": "object", "properties": {
            "a": {"anyOf": [{"type": "number"}, {"type": "string"}]},
            "b": {"type": ["number", "string"]}
        }}),
    );
    assert_eq!(
        either.validate(&json!({"a": "10", "b": "10"})).unwrap(),
        json!({"a": "10", "b": "10"})
    );
}

#[test]
fn first_union_branch_that_validates_after_coercion_wins() {
    let either = validator(
        "t",
        json!({"type": "object", "properties": {
            "a": {"anyOf": [{"type": "boolean"}, {"type": "number"}]},
            "b": {"oneOf": [{"type": "boolean"}, {"type": "number"}]}
        }}),
    );
    assert_eq!(
        either.validate(&json!({"a": "5", "b": "1"})).unwrap(),
        json!({"a": 5, "b": true})
    );
}

#[test]
fn failed_union_lists_its_branches_then_itself() {
    let either = validator(
        "t",
        json!({"type": "object", "properties": {
            "a": {"anyOf": [{"type": "number"}, {"type": "boolean"}]}
        }}),
    );
    assert_eq!(
        error_text(&either, &json!({"a": "x"})),
        "Validation failed for tool \"t\":\n  - a: must be number\n  - a: must be boolean\n  - a: must match a schema in anyOf\n\nReceived arguments:\n{\n  \"a\": \"x\"\n}"
    );
}

#[test]
fn several_types_are_named_in_schema_order() {
    let either = validator(
        "t",
        json!({"type": "object", "properties": {"a": {"type": ["number", "boolean"]}}}),
    );
    assert_eq!(
        error_text(&either, &json!({"a": "x"})),
        "Validation failed for tool \"t\":\n  - a: must be either number or boolean\n\nReceived arguments:\n{\n  \"a\": \"x\"\n}"
    );
}

#[test]
fn coercion_reaches_additional_properties_and_all_of() {
    let map = validator(
        "t",
        json!({"type": "object", "additionalProperties": {"type": "number"}}),
    );
    assert_eq!(
        map.validate(&json!({"a": "1", "b": 2})).unwrap(),
        json!({"a": 1, "b": 2})
    );
    let both = validator(
        "t",
        json!({"allOf": [{"type": "object", "properties": {"n": {"type": "number"}}}]}),
    );
    assert_eq!(both.validate(&json!({"n": "2"})).unwrap(), json!({"n": 2}));
}

/// Python MCP servers (pydantic) put every nested model in `$defs` behind a
/// `$ref`; an optional one becomes `anyOf: [{$ref}, {type: null}]`.
#[test]
fn coercion_follows_local_references() {
    let reffed = validator(
        "t",
        json!({"type": "object", "properties": {
            "o": {"$ref": "#/$defs/O"},
            "maybe": {"anyOf": [{"$ref": "#/$defs/O"}, {"type": "null"}], "default": null},
            "old": {"$ref": "#/definitions/Old"},
            "alias": {"$ref": "#/properties/o"},
            "odd": {"$ref": "#/$defs/a~1b%20c"},
            "50% off": {"anyOf": [{"$ref": "#/$defs/O"}, {"type": "null"}]}
        },
        "$defs": {"O": {"type": "object", "properties": {"n": {"type": "integer"}}},
                  "a/b c": {"type": "boolean"}},
        "definitions": {"Old": {"type": "array", "items": {"type": "number"}}}}),
    );
    assert_eq!(
        reffed
            .validate(
                &json!({"o": {"n": "5"}, "maybe": {"n": "6"}, "old": ["1", 2],
                              "alias": {"n": "7"}, "odd": "true", "50% off": {"n": "8"}})
            )
            .unwrap(),
        json!({"o": {"n": 5}, "maybe": {"n": 6}, "old": [1, 2], "alias": {"n": 7}, "odd": true,
               "50% off": {"n": 8}})
    );
}

/// A self-referencing schema (a tree) is coerced at every depth.
#[test]
fn recursive_schemas_are_coerced_without_looping() {
    let tree = validator(
        "t",
        json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {
            "v": {"type": "integer"},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
        }}}}),
    );
    let mut given = json!({"v": "0"});
    let mut expected = json!({"v": 0});
    for depth in 1..40 {
        (given, expected) = if depth % 2 == 0 {
            (
                json!({"v": depth.to_string(), "kids": [given]}),
                json!({"v": depth, "kids": [expected]}),
            )
        } else {
            (
                json!({"v": depth.to_string(), "next": given}),
                json!({"v": depth, "next": expected}),
            )
        };
    }
    assert_eq!(
        tree.validate(&json!({"root": given})).ok(),
        Some(json!({"root": expected}))
    );
}

#[test]
fn validation_never_changes_the_callers_arguments() {
    let given = json!({"path": 12345, "offset": "10", "limit": null});
    let before = given.clone();
    assert_eq!(
        read().validate(&given).unwrap(),
        json!({"path": "12345", "offset": 10})
    );
    assert_eq!(given, before);
}

// ---- compiling ----

#[test]
fn one_validator_serves_a_thousand_calls() {
    let read = read();
    for n in 0..1000 {
        let given = json!({"path": format!("f{n}.txt"), "offset": n.to_string()});
        assert_eq!(
            read.validate(&given).unwrap(),
            json!({"path": format!("f{n}.txt"), "offset": n})
        );
        if n % 100 == 0 {
            assert_eq!(
                error_text(&read, &json!({"offset": n})),
                format!(
                    "Validation failed for tool \"read\":\n  - path: must have required properties path\n\nReceived arguments:\n{{\n  \"offset\": {n}\n}}"
                )
            );
        }
    }
}

#[test]
fn validator_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ToolValidator>();
}

#[test]
fn broken_schema_is_a_schema_error_not_a_panic() {
    let broken = tool(
        "broken",
        json!({"type": "object", "properties": {"a": {"type": "nonsense"}}}),
    );
    // At the crate root, and `Clone` like `ValidationError`, so a caller can
    // keep it (a tool left out with a warning) and still return it.
    let error: SchemaError = ToolValidator::new(&broken).unwrap_err().clone();
    assert_eq!(error.tool, "broken");
    assert!(
        error
            .to_string()
            .starts_with("invalid JSON Schema for tool \"broken\": "),
        "{error}"
    );
}

/// References that lead back to themselves on one value compiled, and the
/// first check overflowed the stack: an MCP server with such a schema killed
/// the agent at its tool's first call. Such a schema is refused instead (the
/// tool is then left out with a warning), and one that recurses into the
/// value is not.
#[test]
fn a_schema_that_refers_to_itself_on_one_value_is_refused() {
    let looping = tool(
        "looping",
        json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {
                "A": {"allOf": [{"$ref": "#/$defs/B"}]},
                "B": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}
            }
        }),
    );
    let error = ToolValidator::new(&looping).unwrap_err().to_string();
    assert!(
        error.starts_with("invalid JSON Schema for tool \"looping\": it refers to itself without reaching a value (")
            && error.contains("#/$defs/A -> #/$defs/A/allOf/0 -> #/$defs/B"),
        "{error}"
    );
    // The chain is written the way `$ref` writes it: the root printed as
    // nothing, `( -> )`, left the reader nothing to look for.
    let itself = ToolValidator::new(&tool("itself", json!({"$ref": "#"}))).unwrap_err();
    assert_eq!(
        itself.to_string(),
        "invalid JSON Schema for tool \"itself\": it refers to itself without reaching a value (# -> #), so checking arguments against it would never end"
    );
    let tree = validator(
        "tree",
        json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {
                "type": "object",
                "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}
            }}
        }),
    );
    assert!(
        tree.validate(&json!({"node": {"next": {"next": null}}}))
            .is_ok()
    );
}

#[test]
fn remote_reference_is_never_fetched() {
    let remote = tool(
        "remote",
        json!({"$ref": "https://example.com/schemas/args.json"}),
    );
    let error = ToolValidator::new(&remote).unwrap_err();
    assert_eq!(error.tool, "remote");
}

// ---- schemas generated from argument types ----

/// One replacement, as the edit tool declares it.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct Replacement {
    /// Exact text for one targeted replacement.
    old_text: String,
    /// Replacement text for this targeted edit.
    new_text: String,
}

/// Edit-like arguments: a path, optional numbers and flags, strict items.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct EditArgs {
    /// Path to the file to edit.
    path: String,
    /// One or more targeted replacements.
    edits: Vec<Replacement>,
    /// A number the model may leave out.
    offset: Option<f64>,
    /// A flag the model may leave out.
    verbose: Option<bool>,
}

#[test]
fn schema_generated_from_an_argument_type_validates_like_pis() {
    let generated =
        ToolValidator::new(&Tool::for_args::<EditArgs>("edit", "Edit a file.")).unwrap();
    assert_eq!(
        generated
            .validate(&args(
                r#"{"path":7,"edits":[{"oldText":"a","newText":"b"}],"offset":"3","verbose":null}"#
            ))
            .unwrap(),
        json!({"path": "7", "edits": [{"oldText": "a", "newText": "b"}], "offset": 3})
    );
    assert_eq!(
        error_text(
            &generated,
            &args(r#"{"path":"f","edits":[{"oldText":"a","extra":1}],"verbose":"yes"}"#)
        ),
        "Validation failed for tool \"edit\":\n  - edits.0.newText: must have required properties newText\n  - edits.0.extra: schema is false\n  - edits.0: must not have additional properties\n  - verbose: must be boolean\n\nReceived arguments:\n{\n  \"path\": \"f\",\n  \"edits\": [\n    {\n      \"oldText\": \"a\",\n      \"extra\": 1\n    }\n  ],\n  \"verbose\": \"yes\"\n}"
    );
}
